// The Wave connector end to end, against the Wave double (doubles/wave.mjs, a separate process
// over real HTTP that checks what Wave checks). The live demo merchant of Côte d'Ivoire
// (demo.json live_merchants, connector "wave") collects through checkout sessions and pays out,
// on SQLite and on two nodes sharing PostgreSQL: a session's wave_launch_url is the customer's
// link on the confirmation page; signed webhooks complete payments; an unsigned, forged or stale
// webhook moves nothing (401); a duplicate moves nothing; a lost webhook is recovered by polling;
// a POST whose answer never came is not sent twice (idempotency-key).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends, checkLedger, sqlRows, waitFor } from './lib/server.mjs';
import { availability, operatorNodes, collector, statusOf, until, providerReference, callbackOutcomes,
  assertRecoveredByPolling } from './lib/operator.mjs';

// A Côte d'Ivoire number (07 …) whose last three digits tell the double what the customer does.
const number = (tail) => `22507${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}${tail}`;

const collect = collector('WAVE_CIV', 'XOF', 'wave e2e');
const sessionsOf = (double, server, reference) =>
  double.control(`/sessions?client_reference=${providerReference(server, reference)}`);

for (const backend of backends()) {
  describe(`Wave through its double (${backend})`, () => {
    let run, double, nodes, server, posts, token;
    before(async () => {
      run = await operatorNodes(backend, 'wave', {
        callback: (s) => ({ webhook_url: `${s.baseUrl}/operator/callback/wave`.replace(/([^:])\/\//g, '$1/') }),
      });
      ({ double, nodes, server, posts, token } = run);
    });
    after(async () => { await run?.stop(); });

    test('demo.json lists the live merchant of Côte d\'Ivoire whose Wave payments go through the connector', () => {
      const live = server.demo.live_merchants.filter((l) => l.connector === 'wave');
      assert.equal(live.length, 1);
      assert.deepEqual(live[0].countries, ['CIV']);
    });

    test('a collection is a checkout session: its link is kept, the signed webhook completes it on every node', async () => {
      for (const post of posts) {
        const reference = await collect(post, number('100'), 2500);
        const done = await until(post, reference, 'COMPLETED');
        assert.equal(done.status, 'COMPLETED');
        const held = await sessionsOf(double, server, reference);
        assert.equal(held.length, 1, 'one session');
        assert.equal(held[0].amount, '2525', 'the total to pay, fee included, in whole XOF');
        assert.equal(held[0].currency, 'XOF');
        assert.match(held[0].restrict_payer_mobile, /^\+22507\d{8}$/);
        assert.match(held[0].success_url, /\/confirm\/.+\?sig=/);
        const [[url, state]] = sqlRows(server, `SELECT customer_url, operator_state FROM pay_transactions WHERE reference = '${reference}'`);
        assert.equal(url, held[0].wave_launch_url);
        assert.equal(state, held[0].id);
        assert.ok(callbackOutcomes(server, reference).includes('applied'));
      }
      checkLedger(server);
    });

    test("Wave's failures become ours: the session is expired first, then the order fails", async () => {
      for (const [tail, reason] of [['455', 'INSUFFICIENT_FUNDS'], ['457', 'LIMIT_EXCEEDED'], ['458', 'OPERATOR_REFUSED']]) {
        const reference = await collect(posts[0], number(tail));
        const done = await until(posts[0], reference, 'FAILED');
        assert.equal(done.failure_reason, reason, tail);
        assert.equal((await sessionsOf(double, server, reference))[0].checkout_status, 'expired');
      }
      checkLedger(server);
    });

    test('an expired session fails with TIMEOUT (found by polling, no webhook is sent for it)', async () => {
      const reference = await collect(posts[0], number('452'));
      const done = await until(posts[0], reference, 'FAILED', 20000);
      assert.equal(done.failure_reason, 'TIMEOUT');
      checkLedger(server);
    });

    test('an unsigned, forged or stale webhook moves nothing (401); a duplicate moves nothing', async () => {
      const reference = await collect(posts[0], number('454'));  // open for ever at the double
      const [session] = await sessionsOf(double, server, reference);
      const paid = { checkout_status: 'complete', payment_status: 'succeeded', transaction_id: 'T_FORGED' };
      for (const mode of ['unsigned', 'forged', 'stale']) {
        const r = await double.control('/webhook', { session: session.id, mode, data: paid });
        assert.equal(r.status, 401, `${mode}: ${r.body}`);
        assert.ok(JSON.parse(r.body).error.details.wave_signature, r.body);
      }
      assert.equal((await statusOf(posts[0], reference)).status, 'PENDING');
      // The customer pays: the genuine webhook completes it once; its duplicate moves nothing.
      await double.control(`/sessions/${session.id}/pay`, {});
      await until(posts[0], reference, 'COMPLETED');
      const again = await double.control('/webhook', { mode: 'duplicate' });
      assert.equal(again.status, 200, again.body);
      const outcomes = callbackOutcomes(server, reference);
      assert.equal(outcomes.filter((o) => o === 'applied').length, 1, JSON.stringify(outcomes));
      checkLedger(server);
    });

    test('a lost webhook is recovered by polling the session', async () => {
      await double.behave({ webhooks: 'none' });
      try {
        const reference = await collect(posts[posts.length - 1], number('200'));
        await until(posts[0], reference, 'COMPLETED', 20000);
        assertRecoveredByPolling(server, reference);
      } finally {
        await double.behave({ webhooks: 'once' });
      }
      checkLedger(server);
    });

    test('a session whose answer never came is found by its client_reference, never created twice', async () => {
      await double.behave({ hang_after_accept: 1 });
      const reference = await collect(posts[0], number('300'));
      await until(posts[0], reference, 'COMPLETED', 60000);
      assert.equal((await sessionsOf(double, server, reference)).length, 1);
      assert.ok((await double.stats()).idempotent_replays >= 1, 'sent again with the same idempotency-key');
      checkLedger(server);
    });

    test('an operator answering 500 leaves the collection PENDING; it completes once Wave is back', async () => {
      await double.behave({ fail_next: 100 });
      const reference = await collect(posts[0], number('400'));
      assert.equal((await statusOf(posts[0], reference)).status, 'PENDING');
      await double.behave({ fail_next: 0 });
      await until(posts[0], reference, 'COMPLETED', 30000);
      assert.equal((await sessionsOf(double, server, reference)).length, 1);
      // Its failures made it CLOSED (payouts queued, collections refused); back, it is OPERATIONAL.
      assert.ok(await waitFor(async () => (await availability(server, token)).WAVE === 'OPERATIONAL', 20000));
      checkLedger(server);
    });

    test('payouts: succeeded, and failed with our reason', async () => {
      const funding = await collect(posts[0], number('500'), 100000);
      await until(posts[0], funding, 'COMPLETED');
      for (const [tail, status, reason] of [['600', 'COMPLETED'], ['456', 'FAILED', 'INVALID_ACCOUNT'], ['455', 'FAILED', 'INSUFFICIENT_FUNDS']]) {
        const payout = await posts[0]('/disbursement/intent', { amount: 5000, currency: 'XOF', provider: 'WAVE_CIV',
          customer_wallet: number(tail), transaction_uuid: randomUUID(), description: 'wave payout' });
        assert.equal(payout.status, 200, JSON.stringify(payout.body));
        const reference = payout.body.data.transaction_reference;
        const done = await until(posts[0], reference, status, 20000, '/disbursement/status');
        if (reason) assert.equal(done.failure_reason, reason);
        const held = await double.control(`/payouts?client_reference=${providerReference(server, reference)}`);
        assert.equal(held.length, 1);
        assert.equal(held[0].receive_amount, '5000');
        const [[state]] = sqlRows(server, `SELECT operator_state FROM pay_transactions WHERE reference = '${reference}'`);
        assert.equal(state, held[0].id);
      }
      checkLedger(server);
    });
  });
}
