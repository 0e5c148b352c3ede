// Scheduled settlement on real `sika serve` processes (docs/settlement.md): on PostgreSQL two nodes
// share one database, on SQLite one node runs alone; every node schedules due periods every
// 100 ms. The demo merchant is paid through the sandbox, then its owner sets a DAILY settlement to
// a mobile-money number on the dashboard. Checked on the committed effects: exactly one batch for
// the merchant and the period that ended, exactly one settle job, one payout, the batch PAID by it,
// exactly one `settlement.paid` webhook (verified with the `standardwebhooks` library) whose
// payload is the batch, and `sika admin check-ledger` clean.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Receiver } from './lib/receiver.mjs';
import { launchBrowser, noBrowser, signInMerchant } from './lib/browser.mjs';
import { backends, merchantToken, startTwoNodes, waitFor, sqlRows, checkLedger, sleep, admin, adminJson } from './lib/server.mjs';

const ARGS = ['--set', 'payments.sandbox_delay_ms=200',
  '--set', 'settlement.schedule_interval_ms=100',
  '--set', 'settlement.payout_watch_interval_ms=100',
  '--set', 'jobs.poll_interval_ms=50',
  '--set', 'webhooks.allow_private_targets=true',
  '--set', 'webhooks.poll_interval_ms=50'];

for (const backend of backends()) {
  describe(`scheduled settlement (${backend}${backend === 'postgres' ? ', two nodes' : ''})`, { skip: noBrowser }, () => {
    let nodes, server, token, receiver, browser;
    const post = async (path, body, port = server.port) => {
      const r = await fetch(`http://127.0.0.1:${port}/api${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };

    before(async () => {
      nodes = await startTwoNodes({ backend, args: ARGS });
      server = nodes.first;
      token = await merchantToken(server, 0);
      receiver = new Receiver();
      await receiver.listen();
      const ep = await post('/webhook/endpoints', { url: receiver.url, event_types: ['settlement.*'] });
      assert.equal(ep.status, 201, JSON.stringify(ep.body));
      receiver.secret = ep.body.data.secret;
      browser = await launchBrowser();
    });
    after(async () => {
      if (browser) await browser.close();
      if (receiver) await receiver.close();
      if (nodes) await nodes.stop();
    });

    test('every node schedules the period: one batch, one payout, one settlement.paid, ledger clean', async () => {
      // Collections on each node, completed by the sandbox operator.
      const refs = [];
      for (const [i, port] of nodes.ports.entries()) {
        const c = await post('/collection/intent', {
          amount: 20000 + i, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
          customer_wallet: server.demo.sandbox.msisdn.success, description: `settlement e2e ${i}`,
        }, port);
        assert.equal(c.status, 200, JSON.stringify(c.body));
        const ref = c.body.data.transaction_reference;
        assert.equal((await post('/collection/execute', { transaction_reference: ref }, port)).status, 200);
        refs.push(ref);
      }
      const completed = await waitFor(() => refs.every((ref) =>
        sqlRows(server, `SELECT status FROM pay_transactions WHERE reference = '${ref}'`)[0]?.[0] === 'COMPLETED'));
      assert.ok(completed, 'the collections completed');

      // The owner chooses a DAILY settlement to a number the sandbox pays, on the dashboard.
      const context = await browser.newContext({ locale: 'en-GB', javaScriptEnabled: false });
      const page = await signInMerchant(server, context);
      await page.goto(`${server.demo.dashboard.url}/settlement?lang=en`);
      await page.selectOption('#destination', 'MOBILE_MONEY');
      await page.fill('#provider', 'MTN_MOMO_CMR');
      await page.fill('#msisdn', '237670000100');
      await page.selectOption('#schedule', 'DAILY');
      await page.fill('#minimum', '0');
      await Promise.all([page.waitForURL(/settlement\?currency=XAF/), page.click('form.card button')]);
      await context.close();

      // Both nodes schedule every 100 ms: the period that ended is settled and paid once.
      const paid = await waitFor(() => sqlRows(server, 'SELECT status FROM stl_batches')[0]?.[0] === 'PAID', 40000);
      assert.ok(paid, 'the batch was paid: ' + JSON.stringify(sqlRows(server, 'SELECT reference, period, status, net FROM stl_batches')));
      const delivered = await waitFor(() => receiver.deliveries.some((d) => d.payload.event_type === 'settlement.paid'), 30000);
      assert.ok(delivered, 'settlement.paid was delivered');
      // More scheduling rounds on every node change nothing.
      await sleep(1500);
      const batches = sqlRows(server, 'SELECT reference, period, status, net, payout_reference FROM stl_batches');
      assert.equal(batches.length, 1, JSON.stringify(batches));
      const [reference, period, , net, payout] = batches[0];
      assert.match(period, /^D\d{4}-\d\d-\d\d$/);
      assert.ok(Number(net) >= 19000 * refs.length, `the batch settles every collection (less its fees): ${net}`);
      assert.ok(payout, 'the batch names its payout');
      const jobs = sqlRows(server, "SELECT COUNT(*) FROM jobs WHERE queue = 'settlement.settle'");
      assert.equal(jobs[0][0], '1', 'one settle job for the period, whatever the number of nodes');
      const payouts = sqlRows(server, "SELECT reference, status FROM pay_transactions WHERE operation = 'DISBURSEMENT'");
      assert.deepEqual(payouts, [[payout, 'COMPLETED']], 'one payout, completed');

      const hooks = receiver.deliveries.filter((d) => d.payload.event_type === 'settlement.paid');
      assert.equal(new Set(hooks.map((h) => h.id)).size, 1, `one settlement.paid event: ${JSON.stringify(hooks)}`);
      assert.deepEqual(receiver.invalid, [], 'every delivery verifies with standardwebhooks');
      const data = hooks[0].payload.data ?? hooks[0].payload;
      assert.equal(data.reference, reference, JSON.stringify(hooks[0].payload));
      assert.equal(data.period, period);
      assert.equal(Number(data.net), Number(net));
      checkLedger(server);
    });

    test('sika admin settlement: reserve, batches, pending bank batches, mark-paid; audited like the operator page', async () => {
      const matricule = server.demo.merchants[0].matricule;
      const audit = (action) => sqlRows(server, `SELECT actor, object, details FROM dsh_audit WHERE action = '${action}' ORDER BY id`);
      // The reserve, in one unit with its audit entry.
      const set = admin(server, 'settlement', 'reserve', '--merchant', matricule, '--currency', 'XAF', '--amount', '500');
      assert.deepEqual([set.merchant, set.currency, set.reserve], [matricule, 'XAF', 500]);
      assert.equal(sqlRows(server, "SELECT reserve FROM stl_settings WHERE currency = 'XAF'")[0][0], '500');
      const reserved = audit('settlement.reserve');
      assert.equal(reserved.length, 1);
      assert.deepEqual(reserved[0].slice(0, 2), ['sika admin', matricule]);
      assert.deepEqual(JSON.parse(reserved[0][2]), { currency: 'XAF', reserve: 500 });
      const refused = (args, code, field) => {
        const r = adminJson(server.dsn, 'settlement', ...args);
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, new RegExp(`error: ${code}: .*"${field}"`), r.stderr);
      };
      refused(['reserve', '--merchant', matricule, '--currency', 'EUR', '--amount', '1'], 'not_found', 'currency');
      refused(['reserve', '--merchant', matricule, '--currency', 'xaf!', '--amount', '1'], 'empty_data', 'currency');
      refused(['reserve', '--merchant', matricule, '--currency', 'XAF', '--amount', '-1'], 'empty_data', 'amount');
      refused(['reserve', '--merchant', 'NO-SUCH', '--currency', 'XAF', '--amount', '1'], 'not_found', 'merchant');
      assert.equal(audit('settlement.reserve').length, 1, 'a refused reserve is not audited');

      // The merchant's batches, newest first.
      const batches = admin(server, 'settlement', 'batches', '--merchant', matricule);
      assert.equal(batches.length, 1);
      assert.equal(batches[0].status, 'PAID');
      assert.match(batches[0].reference, /^ST-/);
      assert.equal(batches[0].destination, 'MOBILE_MONEY');

      // A bank batch: the owner switches to a bank account and asks for a settlement now.
      const c = await post('/collection/intent', {
        amount: 9000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: server.demo.sandbox.msisdn.success, description: 'bank settlement e2e' });
      assert.equal(c.status, 200, JSON.stringify(c.body));
      const ref = c.body.data.transaction_reference;
      assert.equal((await post('/collection/execute', { transaction_reference: ref })).status, 200);
      assert.ok(await waitFor(() => sqlRows(server, `SELECT status FROM pay_transactions WHERE reference = '${ref}'`)[0]?.[0] === 'COMPLETED'));
      const context = await browser.newContext({ locale: 'en-GB', javaScriptEnabled: false });
      const page = await signInMerchant(server, context);
      await page.goto(`${server.demo.dashboard.url}/settlement?lang=en`);
      await page.selectOption('#destination', 'BANK');
      await page.fill('#iban', 'DE89370400440532013000');
      await page.fill('#bic', 'DEUTDEFF');
      await page.fill('#holder', 'Boutique SARL');
      await page.selectOption('#schedule', 'ON_REQUEST');
      await page.fill('#minimum', '0');
      await Promise.all([page.waitForURL(/settlement\?currency=XAF/), page.click('form.card button')]);
      await Promise.all([page.waitForURL(/settlement\?currency=XAF/), page.click('#settle-now')]);
      await context.close();
      const pending = admin(server, 'settlement', 'pending-bank', '--environment', server.demo.merchants[0].environment ?? 'sandbox');
      assert.equal(pending.length, 1, JSON.stringify(pending));
      assert.equal(pending[0].iban, 'DE89370400440532013000');
      assert.equal(pending[0].status, 'PENDING');
      const bank = pending[0].reference;
      const paid = admin(server, 'settlement', 'mark-paid', bank);
      assert.equal(paid.status, 'PAID');
      assert.equal(paid.reference, bank);
      refused(['mark-paid', bank], 'conflict', 'status');
      refused(['mark-paid', 'ST-NONE'], 'not_found', 'reference');
      const markedPaid = audit('settlement.paid');
      assert.equal(markedPaid.length, 1, 'marked paid once, audited once');
      assert.deepEqual(markedPaid[0].slice(0, 2), ['sika admin', bank]);
      assert.equal(admin(server, 'settlement', 'pending-bank', '--environment', server.demo.merchants[0].environment ?? 'sandbox').length, 0);
      assert.equal(admin(server, 'settlement', 'batches', '--merchant', matricule).length, 2);
      const delivered = await waitFor(() => receiver.deliveries.some((d) => d.payload.event_type === 'settlement.paid'
        && (d.payload.data ?? d.payload).reference === bank), 30000);
      assert.ok(delivered, 'settlement.paid of the bank batch was delivered');
      checkLedger(server);
    });
  });
}
