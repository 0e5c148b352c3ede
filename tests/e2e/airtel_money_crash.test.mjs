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

const ARGS = ['--set', 'log.access=false', '--set', 'payments.recovery_delays_ms=500,1000,2000',
  '--set', 'payments.recovery_interval_ms=100', '--set', 'payments.recovery_lease_ms=2000',
  '--set', 'connectors.airtel_money.kind=airtel_money', '--set', 'connectors.airtel_money.country=GA',
  '--set', 'connectors.airtel_money.currency=XAF', '--set', 'connectors.airtel_money.client_id=airtel-client-id',
  '--set', 'connectors.airtel_money.client_secret=airtel-client-secret',
  '--set', 'connectors.airtel_money.status_queries_per_second=100'];
const PAYMENTS = 24;

async function token(server) {
  const m = server.demo.live_merchants.find((x) => x.connector === 'airtel_money');
  const r = await fetch(`${server.authUrl}/oauth/v2/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: m.client_id, client_secret: m.client_secret,
      scope: 'payments' }),
  });
  return (await r.json()).access_token;
}

function client(server, bearer) {
  return async (path, body) => {
    const r = await fetch(server.baseUrl + path, {
      method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
}

for (const backend of backends()) {
  describe(`Airtel Money: kill -9 with payments pending at the operator (${backend})`, () => {
    test("after the restart every payment reaches the operator's final state once", async () => {
      const double = await startDouble('airtel_money');
      await double.behave({ settle_ms: 2500, latency_ms: 150 });
      const args = () => [...ARGS, '--set', `connectors.airtel_money.base_url=${double.url}`];
      let server = await startServer({ backend, args: args() });
      try {
        await double.behave({ callback_url: `${server.baseUrl}/operator/callback/airtel_money` });
        const post = client(server, await token(server));
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
        server = await startServer({ reuse: server, args: args() });

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
