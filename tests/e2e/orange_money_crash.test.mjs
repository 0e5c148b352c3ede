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
import { CRASH_RECOVERY, connectorSetup, liveToken, gateway } from './lib/operator.mjs';

const PAYMENTS = 24;
for (const backend of backends()) {
  describe(`Orange Money: kill -9 with push payments pending (${backend})`, () => {
    test('after the restart every payment reaches the operator\'s final state, none prompted twice', async () => {
      const double = await startDouble('orange_money', { 'status-rps': 1000 });
      await double.behave({ settle_ms: 2500, latency_ms: 150 });
      const setup = connectorSetup('orange_money', double);
      const start = (reuse) => startServer({ backend, reuse, env: setup.env, args: [...CRASH_RECOVERY, ...setup.args] });
      let server = await start();
      try {
        const post = gateway(server, await liveToken(server, 'orange_money_cm'));
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
        server = await start(server);

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
