// `kill -9` of sika while payments are pending at the MTN double, some of them still being sent:
// after the restart every one reaches the double's final state (COMPLETED for SUCCESSFUL, FAILED
// for FAILED, and one the double never received is sent again and then completes), none is sent
// twice, and the ledger is clean. The double's callbacks sent while sika was down are lost:
// recovery's status queries find the outcomes. On SQLite and on PostgreSQL.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, checkLedger, sqlRows, waitFor, sleep } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { CRASH_RECOVERY, connectorSetup, liveToken, gateway } from './lib/operator.mjs';

const PAYMENTS = 24;

for (const backend of backends()) {
  describe(`MTN MoMo: kill -9 with payments pending at the operator (${backend})`, () => {
    test('after the restart every payment reaches the operator\'s final state once', async () => {
      // Slow to settle (payments stay PENDING at the kill), slow to answer (some initiations are
      // in flight at the kill), and its callbacks go nowhere while sika is down.
      const double = await startDouble('mtn_momo', { 'status-rps': 1000 });
      await double.behave({ settle_ms: 2500, latency_ms: 150 });
      const setup = connectorSetup('mtn_momo', double);
      const start = (reuse) => startServer({ backend, reuse, env: setup.env, args: [...CRASH_RECOVERY, ...setup.args] });
      let server = await start();
      try {
        const post = gateway(server, await liveToken(server, 'mtn_momo'));
        const tails = ['100', '455', '200', '451'];
        const created = [];
        for (let i = 0; i < PAYMENTS; i++) {
          const wallet = `23767${String(1000 + i).padStart(4, '0')}${tails[i % tails.length]}`;
          const intent = await post('/collection/intent', {
            amount: 1000 + i, currency: 'XAF', provider: 'MTN_MOMO_CMR', customer_wallet: wallet,
            transaction_uuid: randomUUID(), description: 'mtn crash',
          });
          assert.equal(intent.status, 200, JSON.stringify(intent.body));
          created.push(intent.body.data.transaction_reference);
        }
        // Executes in flight when the kill lands: some sent, some on the wire, some not yet.
        const executing = created.map((reference) => post('/collection/execute', { transaction_reference: reference })
          .catch(() => null));
        await sleep(400);
        await server.crash();
        await Promise.all(executing);
        await double.behave({ latency_ms: 0 });
        server = await start(server);

        // Every executed collection reaches the double's own final state.
        const rows = () => sqlRows(server, "SELECT reference, status, provider_reference FROM pay_transactions " +
          "WHERE description = 'mtn crash'");
        await waitFor(async () => rows().every(([, status]) => status !== 'PENDING'), 60000);
        let submitted = 0;
        for (const [reference, status, providerReference] of rows()) {
          const held = await double.control(`/payments?externalId=${providerReference}`);
          assert.ok(held.length <= 1, `${reference} sent ${held.length} times`);
          if (status === 'INITIATED') {
            assert.equal(held.length, 0, `${reference} is INITIATED but the operator holds it`);
            continue;
          }
          submitted += 1;
          assert.equal(held.length, 1, `${reference} is ${status} but the operator never received it`);
          const expected = held[0].status === 'SUCCESSFUL' ? 'COMPLETED' : 'FAILED';
          assert.equal(status, expected, `${reference}: operator says ${held[0].status}`);
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
