// Operator health through real HTTP, on SQLite (one node) and on two nodes sharing one PostgreSQL
// (docs/payments.md, "Operator health"). An operator forces the sandbox connector (`sika admin
// operator-health`, what the dashboard's form does):
//   - CLOSED: new collection intents are refused with 503 provider_unavailable and precise details
//     on every node, and GET /provider/list shows availability CLOSED on every node; cleared, they
//     are accepted again;
//   - DELAYED: payouts are accepted (PENDING, funds reserved) but not sent; cleared, each is sent
//     once and completes; the ledger check is clean.
// scripts/with-postgres.sh node --test tests/e2e/operator_health.test.mjs
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, merchantToken, backends, admin, checkLedger, sqlRows, waitFor } from './lib/server.mjs';

const args = ['--set', 'payments.sandbox_delay_ms=200', '--set', 'payments.health_publish_ms=200'];

for (const backend of backends()) {
  describe(`operator health on ${backend}${backend === 'postgres' ? ' (two nodes)' : ''}`, () => {
    let running, first, ports, token;
    before(async () => {
      running = await startTwoNodes({ backend, args });
      ({ first, ports } = running);
      token = await merchantToken(first, 0);
    });
    after(() => running?.stop());

    const call = async (port, method, p, body) => {
      const r = await fetch(`http://127.0.0.1:${port}/api${p}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const intent = (port, wallet = first.demo.sandbox.msisdn.success, amount = 20000) =>
      call(port, 'POST', '/collection/intent', {
        amount, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: wallet, description: 'health' });
    const availability = async (port) => {
      const r = await call(port, 'GET', '/provider/list?country=CMR');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return Object.fromEntries(r.body.data.map((p) => [p.code, p.availability]));
    };
    const statusOf = (ref) => sqlRows(first, `SELECT status FROM pay_transactions WHERE reference = '${ref}'`)[0][0];

    test('forced CLOSED: intents refused with 503 and the provider list says CLOSED on every node', { timeout: 60000 }, async () => {
      for (const port of ports) {
        const list = await availability(port);
        assert.ok(Object.keys(list).length > 0);
        for (const a of Object.values(list)) assert.equal(a, 'OPERATIONAL');
      }
      admin(first, 'operator-health', '--connector', 'sandbox', '--force', 'CLOSED');
      for (const port of ports) {
        const refused = await waitFor(async () => {
          const r = await intent(port);
          return r.status === 503 ? r : null;
        }, 10000);
        assert.ok(refused, `node ${port} still accepts collection intents`);
        assert.equal(refused.body.message, 'provider_unavailable');
        assert.match(refused.body.error.details.provider, /is unavailable \(operator CLOSED\); try another provider or later$/);
        assert.ok(await waitFor(async () => Object.values(await availability(port)).every((a) => a === 'CLOSED'), 10000));
      }
      const health = admin(first, 'operator-health');
      assert.equal(health.find((h) => h.connector === 'sandbox').forced, 'CLOSED');
      admin(first, 'operator-health', '--connector', 'sandbox', '--clear');
      for (const port of ports) {
        assert.ok(await waitFor(async () => (await intent(port)).status === 200, 10000));
        assert.ok(await waitFor(async () => Object.values(await availability(port)).every((a) => a === 'OPERATIONAL'), 10000));
      }
    });

    test('forced DELAYED: payouts wait with their funds reserved, then are sent once on recovery', { timeout: 90000 }, async () => {
      // Earn first.
      const earned = await intent(ports[0], first.demo.sandbox.msisdn.success, 100000);
      assert.equal(earned.status, 200, JSON.stringify(earned.body));
      const ref = earned.body.data.transaction_reference;
      assert.equal((await call(ports[0], 'POST', '/collection/execute', { transaction_reference: ref })).status, 200);
      assert.ok(await waitFor(() => statusOf(ref) === 'COMPLETED', 20000));

      admin(first, 'operator-health', '--connector', 'sandbox', '--force', 'DELAYED');
      assert.ok(await waitFor(async () => {
        for (const port of ports) if (Object.values(await availability(port)).some((a) => a !== 'DELAYED')) return false;
        return true;
      }, 10000));
      const payouts = [];
      for (let i = 0; i < 6; i++) {
        const r = await call(ports[i % ports.length], 'POST', '/disbursement/intent', {
          amount: 2000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
          customer_wallet: first.demo.sandbox.msisdn.success, description: `queued ${i}` });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.data.status, 'PENDING');
        payouts.push(r.body.data.transaction_reference);
      }
      const queued = () => Number(sqlRows(first, 'SELECT COUNT(*) FROM pay_transactions WHERE queued_at IS NOT NULL')[0][0]);
      assert.equal(queued(), 6);
      const balance = (await call(ports[0], 'GET', '/balance')).body.data.find((b) => b.currency === 'XAF');
      assert.ok(balance.pending >= 6 * 2000, JSON.stringify(balance));
      for (const p of payouts) assert.equal(statusOf(p), 'PENDING');

      admin(first, 'operator-health', '--connector', 'sandbox', '--clear');
      assert.ok(await waitFor(() => queued() === 0, 20000));
      assert.ok(await waitFor(() => payouts.every((p) => statusOf(p) === 'COMPLETED'), 30000));
      for (const p of payouts) {
        const moves = sqlRows(first, 'SELECT x.to_status FROM pay_transitions x JOIN pay_transactions t ON ' +
          `t.id = x.transaction_id WHERE t.reference = '${p}' ORDER BY x.id`).map((r) => r[0]);
        assert.deepEqual(moves, ['PENDING', 'COMPLETED'], p);
        const sent = sqlRows(first, 'SELECT COUNT(*) FROM sandbox_operator_requests r JOIN pay_transactions t ON ' +
          `t.provider_reference = r.provider_reference WHERE t.reference = '${p}'`)[0][0];
        assert.equal(Number(sent), 1, `${p} sent once`);
      }
      checkLedger(first);
    });
  });
}
