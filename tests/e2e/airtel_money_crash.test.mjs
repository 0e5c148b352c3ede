// `kill -9` of sika while payments are pending at the Airtel double, some of them still being
// sent: after the restart every one reaches the double's final state (COMPLETED for TS, FAILED for
// TF, and one the double never received is sent again with the same transaction id and then
// completes), none is held twice, and the ledger is clean. The double's callbacks sent while sika
// was down are lost: recovery's status enquiries find the outcomes. On SQLite and on PostgreSQL.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, checkLedger, sqlRows, waitFor, sleep } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { CRASH_RECOVERY, connectorSetup, liveToken, gateway } from './lib/operator.mjs';

const PAYMENTS = 24;

for (const backend of backends()) {
  describe(`Airtel Money: kill -9 with payments pending at the operator (${backend})`, () => {
    test("after the restart every payment reaches the operator's final state once", async () => {
      const double = await startDouble('airtel_money');
      await double.behave({ settle_ms: 2500, latency_ms: 150 });
      const setup = connectorSetup('airtel_money', double);
      const start = (reuse) => startServer({ backend, reuse, env: setup.env, args: [...CRASH_RECOVERY, ...setup.args] });
      let server = await start();
      try {
        await double.behave({ callback_url: `${server.baseUrl}/operator/callback/airtel_money` });
        const post = gateway(server, await liveToken(server, 'airtel_money'));
        const tails = ['100', '455', '200', '451'];
        const created = [];
        for (let i = 0; i < PAYMENTS; i++) {
          const wallet = `24174${String(100 + i).padStart(3, '0')}${tails[i % tails.length]}`;
          const intent = await post('/collection/intent', {
            amount: 1000 + i, currency: 'XAF', provider: 'AIRTEL_MONEY_GAB', customer_wallet: wallet,
            transaction_uuid: randomUUID(), description: 'airtel crash',
          });
          assert.equal(intent.status, 200, JSON.stringify(intent.body));
          created.push(intent.body.data.transaction_reference);
        }
        const executing = created.map((reference) => post('/collection/execute', { transaction_reference: reference })
          .catch(() => null));
        await sleep(400);
        await server.crash();
        await Promise.all(executing);
        await double.behave({ latency_ms: 0 });
        server = await start(server);

        const rows = () => sqlRows(server, 'SELECT reference, status, provider_reference FROM pay_transactions ' +
          "WHERE description = 'airtel crash'");
        await waitFor(async () => rows().every(([, status]) => status !== 'PENDING'), 60000);
        let submitted = 0;
        for (const [reference, status, providerReference] of rows()) {
          const held = await double.control(`/payments?id=${providerReference.replaceAll('-', '')}`);
          assert.ok(held.length <= 1, `${reference} held ${held.length} times`);
          if (status === 'INITIATED') {
            assert.equal(held.length, 0, `${reference} is INITIATED but the operator holds it`);
            continue;
          }
          submitted += 1;
          assert.equal(held.length, 1, `${reference} is ${status} but the operator never received it`);
          assert.equal(status, held[0].status === 'TS' ? 'COMPLETED' : 'FAILED', `${reference}: operator says ${held[0].status}`);
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
