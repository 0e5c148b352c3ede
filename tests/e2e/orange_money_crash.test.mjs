// `kill -9` of sika while Orange Cameroon push payments are pending at the double, some of them
// still being sent: after the restart every one reaches the double's final state (COMPLETED for
// SUCCESSFULL, FAILED otherwise; one whose payToken was never taken FAILS OPERATOR_ERROR once the
// creation window has passed), none is prompted twice, and the ledger is clean. Notifications sent
// while sika was down are lost: recovery's status queries find the outcomes. Both backends.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, checkLedger, sqlRows, waitFor, sleep } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';

const PAYMENTS = 24;
const args = (double) => ['--set', 'log.access=false', '--set', 'payments.recovery_delays_ms=500,1000,2000',
  '--set', 'payments.recovery_interval_ms=100', '--set', 'payments.recovery_lease_ms=2000',
  '--set', 'connectors.orange_money_cm.kind=orange_money', '--set', `connectors.orange_money_cm.base_url=${double.url}`,
  '--set', 'connectors.orange_money_cm.country=cm', '--set', 'connectors.orange_money_cm.flow=push',
  '--set', 'connectors.orange_money_cm.channel_msisdn=699000001', '--set', 'connectors.orange_money_cm.timeout_ms=1000',
  '--set', 'connectors.orange_money_cm.client_id=orange-client-id',
  '--set', 'connectors.orange_money_cm.client_secret=orange-client-secret',
  '--set', 'connectors.orange_money_cm.pin=2580', '--set', 'connectors.orange_money_cm.x_auth_token=orange-x-auth-token'];

async function token(server) {
  const m = server.demo.live_merchants.find((x) => x.connector === 'orange_money_cm');
  const r = await fetch(`${server.authUrl}/oauth/v2/token`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: m.client_id, client_secret: m.client_secret, scope: 'payments' }) });
  return (await r.json()).access_token;
}

for (const backend of backends()) {
  describe(`Orange Money: kill -9 with push payments pending (${backend})`, () => {
    test('after the restart every payment reaches the operator\'s final state, none prompted twice', async () => {
      const double = await startDouble('orange_money', { 'status-rps': 1000 });
      await double.behave({ settle_ms: 2500, latency_ms: 150 });
      let server = await startServer({ backend, args: args(double) });
      try {
        const bearer = await token(server);
        const post = async (path, body) => {
          const r = await fetch(server.baseUrl + path, { method: 'POST',
            headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
          return { status: r.status, body: await r.json() };
        };
        const tails = ['100', '455', '200', '451'];
        const created = [];
        for (let i = 0; i < PAYMENTS; i++) {
          const intent = await post('/collection/intent', { amount: 1000 + i, currency: 'XAF', provider: 'ORANGE_MONEY_CMR',
            customer_wallet: `23769${String(1000 + i).padStart(4, '0')}${tails[i % tails.length]}`,
            transaction_uuid: randomUUID(), description: 'orange crash' });
          assert.equal(intent.status, 200, JSON.stringify(intent.body));
          created.push(intent.body.data.transaction_reference);
        }
        const executing = created.map((reference) => post('/collection/execute', { transaction_reference: reference }).catch(() => null));
        await sleep(400);
        await server.crash();
        await Promise.all(executing);
        // A payToken taken but never used (the kill fell between mp/init and mp/pay) expires at Orange.
        await double.behave({ latency_ms: 0, init_ttl_ms: 3000 });
        server = await startServer({ reuse: server, args: args(double) });

        const rows = () => sqlRows(server, "SELECT reference, status, operator_state, failure_reason FROM pay_transactions " +
          "WHERE description = 'orange crash'");
        await waitFor(async () => rows().every(([, status]) => status !== 'PENDING'), 90000);
        let submitted = 0;
        for (const [reference, status, state, reason] of rows()) {
          if (status === 'INITIATED') continue;
          submitted += 1;
          const payToken = state ? JSON.parse(state).pay_token : '';
          if (!payToken) {
            assert.equal(status, 'FAILED', reference);
            assert.equal(reason, 'OPERATOR_ERROR', reference);
            continue;
          }
          const held = await double.control(`/payments/${payToken}`);
          assert.ok((held.prompts ?? 0) <= 1, `${reference} prompted ${held.prompts} times`);
          const expected = held.status === 'SUCCESSFULL' ? 'COMPLETED' : 'FAILED';
          assert.equal(status, expected, `${reference}: operator says ${held.status}`);
        }
        assert.ok(submitted > 0, 'some collections were executed before the kill');
        checkLedger(server);
      } finally {
        await server.stop();
        await double.stop();
      }
    });
  });
}
