// The MTN MoMo connector end to end, against the MTN double (doubles/mtn_momo.mjs, a separate
// process over real HTTP that checks what MTN checks). The live demo merchant (a prod merchant of
// Cameroon, demo.json live_merchants) collects and pays out through it, on SQLite and on two nodes
// sharing PostgreSQL: collections and payouts complete by the operator's callback, verified with
// its status query; a forged callback moves nothing; a lost callback is recovered by polling; an
// initiation whose answer never came is neither lost nor sent twice; one token serves many
// payments; a wrong subscription key is the operator's refusal, never a 500.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, checkLedger, waitFor } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { FAST_RECOVERY, connectorSetup, liveToken, gateway, availability, operatorNodes, collector, statusOf, until,
  providerReference, callbackOutcomes, assertRecoveredByPolling } from './lib/operator.mjs';

const number = (tail) => `23767${String(Math.floor(Math.random() * 1e4)).padStart(4, '0')}${tail}`;  // an MTN Cameroon number (67…)

const collect = collector('MTN_MOMO_CMR', 'XAF', 'mtn e2e');
const atDouble = (double, server, reference) =>
  double.control(`/payments?externalId=${providerReference(server, reference)}`);

for (const backend of backends()) {
  describe(`MTN MoMo through its double (${backend})`, () => {
    let run, double, nodes, server, token, posts;
    before(async () => {
      run = await operatorNodes(backend, 'mtn_momo', { options: { 'status-rps': 1000 } });
      ({ double, nodes, server, token, posts } = run);
    });
    after(async () => { await run?.stop(); });

    test('demo.json lists the live merchant, a prod merchant whose MTN payments go through the connector', () => {
      const live = server.demo.live_merchants;
      assert.equal(live.length, 1);
      assert.equal(live[0].connector, 'mtn_momo');
      for (const k of ['client_id', 'client_secret', 'api_key', 'matricule']) assert.ok(live[0][k], k);
      assert.deepEqual(live[0].countries, ['CMR']);
    });

    test('a collection completes on every node: requesttopay, callback, status check, COMPLETED', async () => {
      for (const post of posts) {
        const reference = await collect(post, number('100'), 2500);
        const done = await until(post, reference, 'COMPLETED', 15000);
        assert.equal(done.status, 'COMPLETED');
        const held = await atDouble(double, server, reference);
        assert.equal(held.length, 1, 'sent once');
        assert.equal(held[0].status, 'SUCCESSFUL');
        assert.equal(held[0].currency, 'XAF');
        assert.equal(typeof held[0].amount, 'string');
        assert.equal(held[0].payer.partyId.length, 12);
        // The callback was verified with the operator before the money moved.
        const cb = callbackOutcomes(server, reference);
        assert.ok(cb.includes('applied'), JSON.stringify(cb));
      }
      checkLedger(server);
    });

    test("MTN's failure reasons become ours", async () => {
      const cases = [['455', 'INSUFFICIENT_FUNDS'], ['451', 'REJECTED_BY_CUSTOMER'], ['456', 'INVALID_ACCOUNT'],
        ['452', 'TIMEOUT'], ['450', 'OPERATOR_ERROR']];
      for (const [tail, reason] of cases) {
        const reference = await collect(posts[0], number(tail));
        const done = await until(posts[0], reference, 'FAILED', 15000);
        assert.equal(done.failure_reason, reason, tail);
      }
      checkLedger(server);
    });

    test('a forged callback moves nothing: the operator is asked, and says PENDING', async () => {
      const reference = await collect(posts[0], number('454'));  // pending for ever at the double
      const forged = JSON.stringify({ externalId: providerReference(server, reference), status: 'SUCCESSFUL',
        amount: '1500', currency: 'XAF', financialTransactionId: '123' });
      for (const method of ['PUT', 'POST']) {
        const r = await fetch(`${server.baseUrl}/operator/callback/mtn_momo`, {
          method, headers: { 'content-type': 'application/json' }, body: forged,
        });
        assert.equal(r.status, 200);
        const body = await r.json();
        assert.equal(body.outcome, 'contradicted', JSON.stringify(body));
      }
      assert.equal((await statusOf(posts[0], reference)).status, 'PENDING');
      // Nor does a callback naming a transaction that does not exist.
      const unknown = await fetch(`${server.baseUrl}/operator/callback/mtn_momo`, {
        method: 'PUT', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ externalId: randomUUID(), status: 'SUCCESSFUL' }),
      });
      assert.equal(unknown.status, 200);
      // And a body that is not one is a 400 with the error envelope.
      const bad = await fetch(`${server.baseUrl}/operator/callback/mtn_momo`, {
        method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"status":"SUCCESSFUL"}',
      });
      assert.equal(bad.status, 400);
      assert.ok((await bad.json()).error.details.externalId);
      checkLedger(server);
    });

    test('a lost callback is recovered by polling the operator', async () => {
      await double.behave({ callbacks: 'none' });
      try {
        const reference = await collect(posts[posts.length - 1], number('200'));
        const done = await until(posts[0], reference, 'COMPLETED', 20000);
        assert.equal(done.status, 'COMPLETED');
        assertRecoveredByPolling(server, reference);
      } finally {
        await double.behave({ callbacks: 'once' });
      }
      checkLedger(server);
    });

    test('an initiation whose answer never came is neither lost nor sent twice', async () => {
      // The double records the request and never answers it: the connector times out, sends it
      // again with the same X-Reference-Id (409: MTN holds it), and the payment completes once.
      await double.behave({ hang_after_accept: 1 });
      const reference = await collect(posts[0], number('300'));
      const done = await until(posts[0], reference, 'COMPLETED', 60000);
      assert.equal(done.status, 'COMPLETED');
      const held = await atDouble(double, server, reference);
      assert.equal(held.length, 1, JSON.stringify(held));
      checkLedger(server);
    });

    test('an unreachable operator leaves the collection PENDING, is judged CLOSED, and all completes once it is back', async () => {
      await double.behave({ fail_next: 100 });  // every answer a 500 for a while
      const reference = await collect(posts[0], number('400'));
      assert.equal((await statusOf(posts[0], reference)).status, 'PENDING');
      // Its failures (three attempts of the initiation, then recovery's questions) close it: new
      // collections are refused at intent, and merchants see it in the provider list.
      assert.ok(await waitFor(async () => (await availability(server, token)).MTN === 'CLOSED', 20000));
      const refused = await posts[0]('/collection/intent', {
        amount: 1500, currency: 'XAF', provider: 'MTN_MOMO_CMR', customer_wallet: number('100'),
        transaction_uuid: randomUUID(),
      });
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.ok(refused.body.error.details.provider, JSON.stringify(refused.body));
      await double.behave({ fail_next: 0 });
      const done = await until(posts[0], reference, 'COMPLETED', 30000);
      assert.equal(done.status, 'COMPLETED');
      assert.equal((await atDouble(double, server, reference)).length, 1);
      assert.ok(await waitFor(async () => (await availability(server, token)).MTN === 'OPERATIONAL', 20000));
      checkLedger(server);
    });

    test('a payout completes through Disbursement', async () => {
      // Funds to pay out: a collection completed first.
      const funding = await collect(posts[0], number('500'), 100000);
      await waitFor(async () => (await statusOf(posts[0], funding)).status === 'COMPLETED', 15000);
      const payout = await posts[0]('/disbursement/intent', {
        amount: 5000, currency: 'XAF', provider: 'MTN_MOMO_CMR', customer_wallet: number('600'), transaction_uuid: randomUUID(),
        description: 'mtn payout',
      });
      assert.equal(payout.status, 200, JSON.stringify(payout.body));
      const reference = payout.body.data.transaction_reference;
      const done = await until(posts[0], reference, 'COMPLETED', 15000, '/disbursement/status');
      assert.equal(done.status, 'COMPLETED');
      const held = await atDouble(double, server, reference);
      assert.equal(held.length, 1);
      assert.equal(held[0].kind, 'transfer');
      assert.equal(held[0].payee.partyIdType, 'MSISDN');
      checkLedger(server);
    });

    test('tokens are shared: a burst of payments uses one token per product and node', async () => {
      const before = (await double.stats()).tokens_issued.collection;
      const refs = await Promise.all(Array.from({ length: 40 }, (_, i) => collect(posts[i % posts.length], number('700'))));
      await waitFor(async () => {
        for (const r of refs) if ((await statusOf(posts[0], r)).status !== 'COMPLETED') return false;
        return true;
      }, 30000);
      const after = (await double.stats()).tokens_issued.collection;
      assert.equal(after - before, 0, 'the token fetched earlier is still in use');
      assert.ok(after <= nodes.ports.length, `tokens: ${after}`);
    });
  });
}

describe('MTN MoMo connector configuration', () => {
  test('a wrong subscription key is a refusal with the error envelope, never a 500, and no payment is pending for ever', async () => {
    const double = await startDouble('mtn_momo');
    const setup = connectorSetup('mtn_momo', double);
    setup.env.SIKA_CONNECTORS_MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY = 'wrong';
    const nodes = await startTwoNodes({ backend: 'sqlite', env: setup.env,
      args: [...FAST_RECOVERY, ...setup.args, '--set', 'payments.callbacks_per_address_per_minute=5'] });
    try {
      const post = gateway(nodes.first, await liveToken(nodes.first, 'mtn_momo'));
      const intent = await post('/collection/intent', {
        amount: 1500, currency: 'XAF', provider: 'MTN_MOMO_CMR', customer_wallet: number('100'), transaction_uuid: randomUUID(),
      });
      assert.equal(intent.status, 200);
      const executed = await post('/collection/execute', { transaction_reference: intent.body.data.transaction_reference });
      assert.ok(executed.status < 500, JSON.stringify(executed.body));
      const s = await statusOf(post, intent.body.data.transaction_reference);
      assert.equal(s.status, 'FAILED');
      assert.equal(s.failure_reason, 'OPERATOR_REFUSED');
      assert.ok(!nodes.first.output().includes('wrong'), 'the subscription key is never logged');
      // The callback route is public: rate-limited per client address, with the error envelope.
      const statuses = [];
      for (let i = 0; i < 6; i++) {
        const r = await fetch(`${nodes.first.baseUrl}/operator/callback/mtn_momo`, {
          method: 'PUT', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ externalId: randomUUID(), status: 'SUCCESSFUL' }),
        });
        statuses.push(r.status);
        if (r.status === 429) assert.equal((await r.json()).success, false);
      }
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    } finally {
      await nodes.stop();
      await double.stop();
    }
  });
});
