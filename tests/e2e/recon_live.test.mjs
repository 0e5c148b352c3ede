// Reconciliation asks the operator again about every status mismatch, also when Sika's payment is
// already final (docs/reconciliation.md): real collections through the MTN double, then a
// statement whose statuses differ from Sika's, imported with `sika admin recon import`. The
// recovery engine (on PostgreSQL the loops of two nodes on one database race for each question)
// asks the double's status API once per item and records its live answer: one that agrees with
// Sika resolves the item (the statement was stale), one that confirms the statement leaves it open
// with the answer as evidence in `sika admin recon items`; no payment leaves its final state, no
// journal is posted until an operator accepts the figure; the ledger check is clean.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTwoNodes, backends, checkLedger, sqlRows, waitFor, admin, mtnConnector } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { liveToken, gateway } from './lib/operator.mjs';
import { launchBrowser, noBrowser, signInOperator } from './lib/browser.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

const ARGS = ['--set', 'log.access=false', '--set', 'payments.recovery_delays_ms=400,800,1500',
  '--set', 'payments.recovery_interval_ms=100', '--set', 'payments.recovery_lease_ms=3000',
  '--set', 'recon.grace_hours=0'];

const number = (tail) => `23767${String(Math.floor(Math.random() * 1e4)).padStart(4, '0')}${tail}`;

for (const backend of backends()) {
  describe(`reconciliation asks the operator again (${backend})`, () => {
    let double, nodes, server, post;
    before(async () => {
      double = await startDouble('mtn_momo', { 'status-rps': 1000 });
      const setup = mtnConnector(double.url, ['--set', 'connectors.mtn_momo.status_queries_per_second=100']);
      nodes = await startTwoNodes({ backend, args: [...ARGS, ...setup.args], env: setup.env });
      server = nodes.first;
      post = gateway(server, await liveToken(server, 'mtn_momo'));
    });
    after(async () => {
      await nodes?.stop();
      await double?.stop();
    });

    // A collection through the double, ended as the number's tail says (455: not enough funds).
    async function collection(tail, amount) {
      const intent = await post('/collection/intent', { amount, currency: 'XAF', provider: 'MTN_MOMO_CMR',
        customer_wallet: number(tail), transaction_uuid: randomUUID(), description: 'recon live' });
      assert.equal(intent.status, 200, JSON.stringify(intent.body));
      const ref = intent.body.data.transaction_reference;
      assert.equal((await post('/collection/execute', { transaction_reference: ref })).status, 200);
      const done = await waitFor(async () => {
        const s = (await post('/collection/status', { transaction_reference: ref })).body.data;
        return ['COMPLETED', 'FAILED'].includes(s.status) ? s : null;
      }, 20000);
      assert.ok(done, 'the collection ended');
      const [provider, operatorRef, total, status] = sqlRows(server,
        `SELECT provider_reference, COALESCE(operator_reference, ''), required_total, status FROM pay_transactions WHERE reference = '${ref}'`)[0];
      const [held] = await double.control(`/payments?externalId=${provider}`);
      return { ref, provider, operatorRef: operatorRef || `MTN-${provider}`, total, status, atDouble: held.referenceId };
    }

    test('a stale statement resolves, a confirmed one waits for the operator with the live answer as evidence', async () => {
      const a = await collection('100', 3000);  // COMPLETED; the statement says failed, the operator still says succeeded
      const b = await collection('455', 4000);  // FAILED; the statement says succeeded, and so does the operator now
      const c = await collection('100', 5000);  // COMPLETED; the statement says failed, and so does the operator now
      assert.deepEqual([a.status, b.status, c.status], ['COMPLETED', 'FAILED', 'COMPLETED']);
      await double.control(`/payments/${b.atDouble}/status`, { status: 'SUCCESSFUL' });
      await double.control(`/payments/${c.atDouble}/status`, { status: 'FAILED', reason: 'INTERNAL_PROCESSING_ERROR' });
      const journals = sqlRows(server, 'SELECT COUNT(*) FROM ledger_journals')[0][0];

      const at = new Date().toISOString();
      const line = (x, status) => `${x.operatorRef},${x.provider},collection,${x.total},XAF,${status},${at}`;
      const file = path.join(server.dir, `live-${randomUUID()}.csv`);
      writeFileSync(file, ['operator_reference,our_reference,type,amount,currency,status,timestamp',
        line(a, 'failed'), line(b, 'succeeded'), line(c, 'failed')].join('\n') + '\n');
      const report = admin(server, 'recon', 'import', '--connector', 'mtn_momo', '--file', file);
      assert.equal(report.kinds.mismatch_status, 3, JSON.stringify(report));
      const run = String(report.run);

      const byRef = (items) => Object.fromEntries(items.map((i) => [i.transaction_reference, i]));
      const answered = await waitFor(() => {
        const items = byRef(admin(server, 'recon', 'items', run, '--kind', 'mismatch_status'));
        return [a, b, c].every((x) => items[x.ref]?.operator_live_status) ? items : null;
      }, 20000);
      assert.ok(answered, 'the operator was asked about every status mismatch');
      assert.equal(answered[a.ref].operator_live_status, 'succeeded');
      assert.equal(answered[a.ref].state, 'resolved', 'the statement was stale: Sika and the operator agree');
      assert.equal(answered[a.ref].decided_by, 'recovery');
      assert.equal(answered[b.ref].operator_live_status, 'succeeded');
      assert.equal(answered[b.ref].state, 'open', 'the operator confirms the statement: an operator decides');
      assert.ok(answered[b.ref].live_checked_at);
      assert.equal(answered[c.ref].operator_live_status, 'failed');
      assert.equal(answered[c.ref].state, 'open');
      // Asked once each, whatever the number of nodes; nothing left its final state, no journal.
      const checks = sqlRows(server, `SELECT live_checks FROM recon_items WHERE run_id = ${run} AND kind = 'mismatch_status'`);
      assert.deepEqual(checks.map((r) => r[0]), ['1', '1', '1']);
      const statuses = sqlRows(server, `SELECT reference, status FROM pay_transactions WHERE reference IN ('${a.ref}', '${b.ref}', '${c.ref}')`);
      assert.deepEqual(Object.fromEntries(statuses), { [a.ref]: 'COMPLETED', [b.ref]: 'FAILED', [c.ref]: 'COMPLETED' });
      assert.equal(sqlRows(server, 'SELECT COUNT(*) FROM ledger_journals')[0][0], journals);
      checkLedger(server);

      // The evidence on the operators' run page, on a phone in French and a desktop in English.
      if (!noBrowser) {
        const browser = await launchBrowser();
        try {
          const dashboard = server.demo.dashboard.url;
          const context = await browser.newContext({ locale: 'fr-FR', javaScriptEnabled: false, ...phoneViewport });
          const page = await signInOperator(server, context);
          for (const [name, size, lang, said] of [['phone', null, '', /interrogé.*réussie/],
            ['desktop', desktopViewport.viewport, '&lang=en', /live answer.*succeeded/]]) {
            if (size) await page.setViewportSize(size);
            await page.goto(`${dashboard}/operator/recon/${run}?kind=mismatch_status${lang}`);
            const live = page.locator(`#item-${answered[b.ref].id} .live`);
            assert.equal(await live.getAttribute('data-live'), 'succeeded');
            assert.match(await live.textContent(), said);
            assert.equal(await page.locator(`#item-${answered[a.ref].id}`).getAttribute('data-state'), 'resolved');
            await assertPageStandards(page, `reconciliation live answers (${name})`);
            if (shots) await page.screenshot({ path: `${shots}/recon-live-${backend}-${name}.png`, fullPage: true });
          }
          await context.close();
        } finally {
          await browser.close();
        }
      }

      // The operator's decision: its figure accepted, an audited adjustment of the clearing.
      const decided = admin(server, 'recon', 'decide', String(answered[b.ref].id), '--accept', '--reason', 'MTN confirms it live');
      assert.equal(decided.state, 'adjusted');
      assert.equal(decided.operator_live_status, 'succeeded');
      assert.ok(decided.journal);
      assert.equal(sqlRows(server, `SELECT status FROM pay_transactions WHERE reference = '${b.ref}'`)[0][0], 'FAILED');
      checkLedger(server);
    });
  });
}
