// `kill -9` of sika while Wave checkout sessions are open at the Wave double, some still being
// created: after the restart every collection reaches the double's own outcome (a paid session is
// COMPLETED, an expired one FAILED; one whose creation never reached Wave is created again, once,
// by its idempotency key and client_reference), none is created twice, and the ledger is clean.
// Wave's webhooks sent while sika was down are lost: recovery's status queries find the outcomes.
// On SQLite and on PostgreSQL.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, checkLedger, sqlRows, waitFor, sleep } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { CRASH_RECOVERY, connectorSetup, liveToken, gateway } from './lib/operator.mjs';

const PAYMENTS = 24;

for (const backend of backends()) {
  describe(`Wave: kill -9 with sessions open at the operator (${backend})`, () => {
    test('after the restart every collection reaches the operator\'s outcome once', async () => {
      const double = await startDouble('wave');
      await double.behave({ settle_ms: 2500, latency_ms: 150 });
      const setup = connectorSetup('wave', double);
      const start = (reuse) => startServer({ backend, reuse, env: setup.env, args: [...CRASH_RECOVERY, ...setup.args] });
      let server = await start();
      try {
        await double.behave({ webhook_url: `${server.baseUrl}/operator/callback/wave` });
        const post = gateway(server, await liveToken(server, 'wave'));
        const tails = ['100', '452', '200', '101'];
        const created = [];
        for (let i = 0; i < PAYMENTS; i++) {
          const wallet = `22507${String(10000 + i).padStart(5, '0')}${tails[i % tails.length]}`;
          const intent = await post('/collection/intent', {
            amount: 1000 + i, currency: 'XOF', provider: 'WAVE_CIV', customer_wallet: wallet,
            transaction_uuid: randomUUID(), description: 'wave crash',
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

        const rows = () => sqlRows(server, "SELECT reference, status, provider_reference FROM pay_transactions " +
          "WHERE description = 'wave crash'");
        await waitFor(async () => rows().every(([, status]) => status !== 'PENDING'), 60000);
        let submitted = 0;
        for (const [reference, status, providerReference] of rows()) {
          const held = await double.control(`/sessions?client_reference=${providerReference}`);
          assert.ok(held.length <= 1, `${reference} has ${held.length} sessions`);
          if (status === 'INITIATED') {
            assert.equal(held.length, 0, `${reference} is INITIATED but Wave holds a session`);
            continue;
          }
          submitted += 1;
          assert.equal(held.length, 1, `${reference} is ${status} but Wave never had its session`);
          const paid = held[0].payment_status === 'succeeded';
          assert.equal(status, paid ? 'COMPLETED' : 'FAILED', `${reference}: Wave says ${JSON.stringify(held[0])}`);
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
