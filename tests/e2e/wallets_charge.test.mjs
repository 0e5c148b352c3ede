// link/charge answered from its write unit's completion, black-box, on SQLite and on PostgreSQL
// when SIKA_TEST_PG_DSN is set: on a server without the shared limiter (SQLite then runs the route
// on the I/O thread) and on one with it (authenticated on the handler pool first). Concurrent
// charges all complete, concurrent duplicates of one transaction_uuid are one payment, a refusal
// of the consent answers limit_exceeded, a browser's later answer carries its CORS headers, and an
// unlinked key stops at once. The ledger check is clean at the end.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startServer, backends, sikaBinary } from './lib/server.mjs';

const secret = 'e2e-test-secret-key-0123456789abcdef';
const origin = 'https://partner.example';

for (const backend of backends()) {
  for (const limiter of [false, true]) {
    describe(`wallet link charges (${backend}, ${limiter ? 'with' : 'without'} the limiter)`, () => {
      let server, key, apikey, msisdn;
      const admin = (...args) => JSON.parse(execFileSync(sikaBinary, ['admin', ...args, '--json', '--db', server.dsn],
        { env: { ...process.env, SIKA_SECRET_KEY: secret }, encoding: 'utf8' }));
      const available = () => admin('wallets', 'show', '--msisdn', msisdn).balances[0].available;

      before(async () => {
        server = await startServer({ backend, env: {
          SIKA_WALLETS_LINK_API_PER_HOUR: limiter ? '100000' : '0', SIKA_CORS_LINK: origin,
          SIKA_WALLETS_LINK_PER_PAYMENT: '5000', SIKA_WALLETS_LINK_PER_PERIOD: '1000000' } });
        key = server.demo.link_api_key;
        apikey = server.demo.wallet_link.apikey;
        msisdn = server.demo.wallet_link.msisdn;
      });
      after(async () => {
        if (server) execFileSync(sikaBinary, ['admin', 'check-ledger', '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
        await server?.stop();
      });

      const charge = async (body, headers = {}) => {
        const r = await fetch(`${server.linkUrl}/api/agent/link/charge`, {
          method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key, ...headers },
          body: JSON.stringify({ apikey, ...body }),
        });
        return { status: r.status, headers: r.headers, body: await r.json() };
      };

      test('concurrent charges complete, concurrent duplicates are one payment', async () => {
        const before = available();
        const many = await Promise.all(Array.from({ length: 40 }, () => charge({ amount: 10, transaction_uuid: randomUUID() })));
        for (const r of many) {
          assert.equal(r.status, 200, JSON.stringify(r.body));
          assert.equal(r.body.data.status, 'COMPLETED');
        }
        assert.equal(new Set(many.map((r) => r.body.data.transaction_reference)).size, 40);
        const uuid = randomUUID();
        const same = await Promise.all(Array.from({ length: 10 }, () => charge({ amount: 25, transaction_uuid: uuid })));
        for (const r of same) assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(new Set(same.map((r) => r.body.data.transaction_reference)).size, 1);
        assert.equal(available(), before - 40 * 10 - 25);
      });

      test('a refusal answers limit_exceeded; a later answer carries the CORS headers', async () => {
        const before = available();
        const over = await charge({ amount: 6000, transaction_uuid: randomUUID() }, { origin });
        assert.equal(over.status, 400);
        assert.equal(over.body.message, 'limit_exceeded');
        assert.ok(over.body.error.details.amount);
        assert.equal(over.headers.get('access-control-allow-origin'), origin);
        const ok = await charge({ amount: 10, transaction_uuid: randomUUID() }, { origin });
        assert.equal(ok.status, 200);
        assert.equal(ok.headers.get('access-control-allow-origin'), origin);
        const bad = await charge({ amount: 10, transaction_uuid: 'nope' });
        assert.equal(bad.status, 400);
        assert.ok(bad.body.error.details.transaction_uuid);
        assert.equal(available(), before - 10);
      });

      test('an unlinked key stops at once', async () => {
        const before = available();
        assert.equal((await charge({ amount: 10, transaction_uuid: randomUUID() })).status, 200);
        const r = await fetch(`${server.linkUrl}/api/agent/link/unlink`, {
          method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ apikey }),
        });
        assert.equal(r.status, 200);
        const refused = await charge({ amount: 10, transaction_uuid: randomUUID() });
        assert.equal(refused.status, 409);
        assert.ok(refused.body.error.details.apikey);
        assert.equal(available(), before - 10);
      });
    });
  }
}

// The limiter on the route that runs on the I/O thread: hits come from this node's block there,
// and a hit that needs a reservation runs the request again on a handler thread. On one node the
// limit is exact: 24 charges answered, then 429 with Retry-After, the first request included.
for (const backend of backends()) {
  describe(`wallet link charges under a small hourly limit (${backend})`, () => {
    let server;
    before(async () => {
      server = await startServer({ backend, env: {
        SIKA_WALLETS_LINK_API_PER_HOUR: '24', SIKA_WALLETS_LINK_API_BLOCK_AFTER: '1000',
        SIKA_WALLETS_LINK_PER_PAYMENT: '5000', SIKA_WALLETS_LINK_PER_PERIOD: '1000000' } });
    });
    after(async () => {
      if (server) execFileSync(sikaBinary, ['admin', 'check-ledger', '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
      await server?.stop();
    });

    test('exactly the limit is charged, in blocks, then 429', async () => {
      const statuses = [];
      for (let i = 0; i < 30; ++i) {
        const r = await fetch(`${server.linkUrl}/api/agent/link/charge`, {
          method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': server.demo.link_api_key },
          body: JSON.stringify({ apikey: server.demo.wallet_link.apikey, amount: 1, transaction_uuid: randomUUID() }),
        });
        const body = await r.json();
        statuses.push(r.status);
        if (r.status === 429) {
          assert.ok(Number(r.headers.get('retry-after')) >= 1);
          assert.equal(body.code, 429);
        } else {
          assert.equal(r.status, 200, JSON.stringify(body));
          assert.equal(body.data.status, 'COMPLETED');
        }
      }
      assert.deepEqual(statuses, [...Array(24).fill(200), ...Array(6).fill(429)]);
    });
  });
}
