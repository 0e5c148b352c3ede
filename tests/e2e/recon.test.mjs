// Operator reconciliation against the real binary, on SQLite and on PostgreSQL: real collections
// through the sandbox operator, then an operator statement with every kind of difference imported
// with `sika admin recon import`; the report; the same file again (the same run); decisions through
// the CLI and through the operators' dashboard pages (CSRF, audited), each accepted figure an
// adjustment journal in the ledger; the daily closing; the ledger check clean. The pages are
// checked with axe on a phone (390 px) and a desktop; screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { launchBrowser, noBrowser, signInOperator } from './lib/browser.mjs';
import { startServer, backends, merchantToken, waitFor, admin, adminJson, sqlRows, checkLedger, sikaBinary, secretKey } from './lib/server.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`operator reconciliation on ${backend}`, () => {
    let server, token, run;
    const txs = [];
    const post = async (p, body) => {
      const r = await fetch(`${server.baseUrl}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const itemOf = (items, reference) => items.find((i) => i.reference === reference);

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=200', '--set', 'recon.grace_hours=0'] });
      token = await merchantToken(server, 0);
      for (let i = 0; i < 3; i++) {
        const created = await post('/collection/intent', {
          amount: 5000 + i * 1000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
          channel: 'PROVIDER', customer_wallet: server.demo.sandbox.msisdn.success, description: 'recon', metadata: {},
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        const ex = await post('/collection/execute', { transaction_reference: created.body.data.transaction_reference });
        assert.equal(ex.status, 200, JSON.stringify(ex.body));
        txs.push(created.body.data.transaction_reference);
      }
      const done = await waitFor(() => {
        const rows = sqlRows(server, `SELECT COUNT(*) FROM pay_transactions WHERE status = 'COMPLETED'`);
        return Number(rows[0][0]) >= 3;
      }, 30000);
      assert.ok(done, 'the three collections completed');
    });
    after(async () => { if (server) await server.stop(); });

    test('a statement with every kind of difference is reported by kind; the same file again is the same run', () => {
      const rows = sqlRows(server, `SELECT reference, operator_reference, provider_reference, required_total FROM `
        + `pay_transactions WHERE reference IN ('${txs.join("','")}') ORDER BY id`);
      assert.equal(rows.length, 3);
      const at = new Date().toISOString();
      const start = new Date(Date.now() - 3600e3).toISOString();
      const end = new Date(Date.now() + 60e3).toISOString();
      // rows[0] matched; rows[1] 100 XAF short at the operator; rows[2] absent (missing at the operator);
      // OP-UNKNOWN: a collection Sika does not know.
      const text = [
        `#period,${start},${end}`,
        'operator_reference,our_reference,type,amount,currency,status,timestamp,fee',
        `${rows[0][1]},${rows[0][2]},collection,${rows[0][3]},XAF,succeeded,${at},10`,
        `${rows[1][1]},,collection,${Number(rows[1][3]) - 100},XAF,succeeded,${at},10`,
        `OP-UNKNOWN,,collection,2500,XAF,succeeded,${at},0`,
      ].join('\n') + '\n';
      const file = path.join(server.dir, 'statement.csv');
      writeFileSync(file, text);
      // No grace period: the payment absent from the statement is missing at the operator at once.
      const report = admin(server, 'recon', 'import', '--connector', 'sandbox', '--file', file, '--set', 'recon.grace_hours=0');
      assert.equal(report.replayed, false);
      assert.equal(report.status, 'done');
      assert.equal(report.lines, 3);
      assert.deepEqual(report.kinds, { matched: 1, missing_in_sika: 1, missing_at_operator: 1, timing: 0,
        mismatch_amount: 1, mismatch_currency: 0, mismatch_status: 0 });
      run = report.run;
      const again = admin(server, 'recon', 'import', '--connector', 'sandbox', '--file', file);
      assert.equal(again.replayed, true);
      assert.equal(again.run, run);
      assert.equal(admin(server, 'recon', 'runs').length, 1);
      // A refused file names its line and leaves no run.
      writeFileSync(path.join(server.dir, 'bad.csv'), 'operator_reference,type,amount,currency,status,timestamp\n'
        + `X,collection,12.5,XAF,succeeded,${at}\n`);
      const bad = adminJson(server.dsn, 'recon', 'import', '--connector', 'sandbox', '--file', path.join(server.dir, 'bad.csv'));
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /line 2/);
      assert.equal(admin(server, 'recon', 'runs').length, 1);
      const items = admin(server, 'recon', 'items', String(run));
      const missing = items.find((i) => i.kind === 'missing_at_operator');
      assert.equal(missing.transaction_reference, rows[2][0]);
      assert.equal(itemOf(items, rows[0][1]).state, 'resolved');
    });

    test('decisions through the CLI post adjustments; a second decision is refused; the ledger stays clean', () => {
      const items = admin(server, 'recon', 'items', String(run), '--state', 'open');
      const unknown = itemOf(items, 'OP-UNKNOWN');
      const before = admin(server, 'balances', '--owner', 'operator:MTN_MOMO_CMR');
      const decided = admin(server, 'recon', 'decide', String(unknown.id), '--accept', '--reason', 'operator receipt 42',
        '--actor', 'ops@example.com');
      assert.equal(decided.state, 'adjusted');
      assert.ok(decided.journal);
      const after = admin(server, 'balances', '--owner', 'operator:MTN_MOMO_CMR');
      assert.equal(after[0].balance, before[0].balance - 2500);
      const twice = adminJson(server.dsn, 'recon', 'decide', String(unknown.id), '--accept', '--reason', 'again');
      assert.notEqual(twice.code, 0);
      assert.equal(admin(server, 'balances', '--owner', 'operator:MTN_MOMO_CMR')[0].balance, after[0].balance);
      const recon = admin(server, 'balances', '--owner', 'platform:recon');
      assert.equal(recon[0].balance, 2500);
      checkLedger(server);
    });

    // Eight processes (each a node of its own on the shared database) accept one item at once.
    test('decisions racing from eight processes on one database: one wins, one journal, the ledger clean', async () => {
      const open = admin(server, 'recon', 'items', String(run), '--kind', 'missing_at_operator', '--state', 'open');
      assert.equal(open.length, 1);
      const journals = () => Number(sqlRows(server, `SELECT COUNT(*) FROM ledger_journals WHERE kind = 'RECON_ADJUSTMENT'`)[0][0]);
      const before = journals();
      const codes = await Promise.all(Array.from({ length: 8 }, (_, i) => new Promise((resolve) => {
        const p = spawn(sikaBinary, ['admin', '--db', server.dsn, 'recon', 'decide', String(open[0].id), '--accept',
          '--reason', `race ${i}`, '--actor', `op${i}@example.com`], { env: { ...process.env, SIKA_SECRET_KEY: secretKey } });
        p.on('close', resolve);
      })));
      assert.equal(codes.filter((c) => c === 0).length, 1, JSON.stringify(codes));
      assert.equal(journals(), before + 1);
      const decided = admin(server, 'recon', 'items', String(run), '--kind', 'missing_at_operator');
      assert.equal(decided[0].state, 'adjusted');
      checkLedger(server);
    });

    test('the operators\' pages: runs, items by kind, a decision and a closing, audited, on a phone and a desktop',
      { skip: noBrowser, timeout: 90000 }, async () => {
        const browser = await launchBrowser();
        try {
          const dashboard = server.demo.dashboard.url;
          const context = await browser.newContext({ locale: 'en-GB', javaScriptEnabled: false, ...phoneViewport });
          const page = await signInOperator(server, context);

          await page.goto(dashboard + '/operator/recon');
          assert.match(await page.textContent('#recon-runs'), /sandbox/);
          await assertPageStandards(page, 'reconciliation runs (phone)');
          if (shots) await page.screenshot({ path: `${shots}/recon-runs-phone.png`, fullPage: true });

          await page.goto(`${dashboard}/operator/recon/${run}?kind=mismatch_amount`);
          const rows = page.locator('#recon-items tbody tr');
          assert.equal(await rows.count(), 1);
          assert.equal(await rows.first().getAttribute('data-kind'), 'mismatch_amount');
          await assertPageStandards(page, 'reconciliation run (phone)');
          if (shots) await page.screenshot({ path: `${shots}/recon-run-phone.png`, fullPage: true });
          const id = (await rows.first().getAttribute('id')).slice('item-'.length);
          await page.fill(`#reason-${id}`, 'operator kept 100 XAF');
          await Promise.all([page.waitForURL(new RegExp(`/operator/recon/${run}`)), page.click(`#investigate-${id}`)]);
          await page.goto(`${dashboard}/operator/recon/${run}?state=under_investigation`);
          assert.equal(await page.locator('#recon-items tbody tr').count(), 1);
          await page.fill(`#reason-${id}`, 'confirmed by the operator');
          await Promise.all([page.waitForURL(new RegExp(`/operator/recon/${run}`)), page.click(`#accept-${id}`)]);
          await page.goto(`${dashboard}/operator/recon/${run}?state=adjusted`);
          assert.equal(await page.locator('#recon-items tbody tr').count(), 3);  // and the CLI's two

          // The day's closing against an entered balance.
          await page.goto(dashboard + '/operator/recon');
          await page.fill('#closing-connector', 'sandbox');
          await page.fill('#closing-day', new Date().toISOString().slice(0, 10));
          await page.fill('#closing-currency', 'XAF');
          await page.fill('#closing-balance', '15000');
          await Promise.all([page.waitForURL(/\/operator\/recon$/), page.click('#closing-apply')]);
          assert.match(await page.textContent('#recon-closings'), /sandbox/);
          if (shots) await page.screenshot({ path: `${shots}/recon-closing-phone.png`, fullPage: true });

          const desktop = await browser.newContext({ locale: 'fr-FR', ...desktopViewport, storageState: await context.storageState() });
          const wide = await desktop.newPage();
          await wide.goto(`${dashboard}/operator/recon/${run}`);
          assert.match(await wide.textContent('main, body'), /Montant différent/);
          await assertPageStandards(wide, 'reconciliation run (desktop)');
          if (shots) await wide.screenshot({ path: `${shots}/recon-run-desktop.png`, fullPage: true });
          await wide.goto(`${dashboard}/operator/recon`);
          await assertPageStandards(wide, 'reconciliation runs (desktop)');
          if (shots) await wide.screenshot({ path: `${shots}/recon-runs-desktop.png`, fullPage: true });
          await desktop.close();

          await page.goto(dashboard + '/audit');
          const audit = await page.textContent('table');
          assert.match(audit, /recon\.investigate/);
          assert.match(audit, /recon\.accept/);
          assert.match(audit, /recon\.closing/);
          await context.close();
        } finally {
          await browser.close();
        }
        checkLedger(server);
      });
  });
}
