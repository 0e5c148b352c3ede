// The Airtel Money connector end to end, against the Airtel double (doubles/airtel_money.mjs, a
// separate process over real HTTP that checks what Airtel checks: token, X-Country, X-Currency,
// the subscriber's number without the country code, unique transaction ids, the disbursement PIN
// decrypted with its own private key). The live demo merchant (a prod merchant of Gabon,
// demo.json live_merchants) collects and pays out through it, on SQLite and on two nodes sharing
// PostgreSQL: payments complete by Airtel's callback, verified with its status enquiry; TA
// (ambiguous) stays PENDING and is asked again; TIP stays PENDING; a forged callback moves
// nothing; a lost callback is recovered by polling; an initiation whose answer never came is
// neither lost nor sent twice; one token serves many payments and is renewed before it expires.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, checkLedger, sqlRows, waitFor, sleep } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { FAST_RECOVERY, connectorSetup, liveToken, gateway, availability, operatorNodes, collector, statusOf, until,
  providerReference, callbackOutcomes, statusCheckOutcomes } from './lib/operator.mjs';

// An Airtel Gabon number (74…), international digits; its last three digits pick the outcome.
export const number = (tail) => `24174${String(Math.floor(Math.random() * 1e3)).padStart(3, '0')}${tail}`;

const collect = collector('AIRTEL_MONEY_GAB', 'XAF', 'airtel e2e');

async function payout(post, wallet, amount = 5000) {
  const r = await post('/disbursement/intent', {
    amount, currency: 'XAF', provider: 'AIRTEL_MONEY_GAB', customer_wallet: wallet, transaction_uuid: randomUUID(),
    description: 'airtel payout',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data.transaction_reference;
}

const airtelId = (server, reference) => providerReference(server, reference).replaceAll('-', '');
const atDouble = (double, server, reference) => double.control(`/payments?id=${airtelId(server, reference)}`);

for (const backend of backends()) {
  describe(`Airtel Money through its double (${backend})`, () => {
    let run, double, nodes, server, token, posts;
    before(async () => {
      run = await operatorNodes(backend, 'airtel_money', {
        callback: (s) => ({ callback_url: `${s.baseUrl}/operator/callback/airtel_money` }),
      });
      ({ double, nodes, server, token, posts } = run);
    });
    after(async () => { await run?.stop(); });

    test('demo.json lists the live merchant of Gabon, whose Airtel payments go through the connector', () => {
      const live = server.demo.live_merchants.filter((m) => m.connector === 'airtel_money');
      assert.equal(live.length, 1);
      assert.deepEqual(live[0].countries, ['GAB']);
      for (const k of ['client_id', 'client_secret', 'api_key']) assert.ok(live[0][k], k);
    });

    test('a collection completes on every node: USSD push, callback, status enquiry, COMPLETED', async () => {
      for (const post of posts) {
        const wallet = number('100');
        const reference = await collect(post, wallet, 2500);
        const done = await until(post, reference, 'COMPLETED');
        assert.equal(done.status, 'COMPLETED');
        const held = await atDouble(double, server, reference);
        assert.equal(held.length, 1, 'sent once');
        assert.equal(held[0].status, 'TS');
        const total = sqlRows(server, `SELECT required_total FROM pay_transactions WHERE reference = '${reference}'`)[0][0];
        assert.equal(held[0].amount, Number(total), 'what the customer pays, fee included, in XAF units');
        assert.equal(held[0].msisdn, wallet.slice(3), 'the subscriber without the country code');
        assert.ok(callbackOutcomes(server, reference).includes('applied'));
        // The airtel_money_id is kept as the operator's reference (what a refund names).
        const opRef = sqlRows(server, `SELECT operator_reference FROM pay_transactions WHERE reference = '${reference}'`)[0][0];
        assert.equal(opRef, held[0].airtel_money_id);
      }
      const s = await double.stats();
      assert.equal(s.header_refusals, 0);
      assert.equal(s.refused.ESB000036 ?? 0, 0);
      checkLedger(server);
    });

    test("Airtel's response codes become our failure reasons", async () => {
      const cases = [['455', 'INSUFFICIENT_FUNDS'], ['451', 'REJECTED_BY_CUSTOMER'], ['456', 'INVALID_ACCOUNT'],
        ['452', 'TIMEOUT'], ['458', 'LIMIT_EXCEEDED'], ['450', 'OPERATOR_REFUSED'], ['457', 'OPERATOR_ERROR']];
      const refs = [];
      for (const [tail] of cases) refs.push(await collect(posts[0], number(tail)));
      for (let i = 0; i < cases.length; i++) {
        const done = await until(posts[0], refs[i], 'FAILED');
        assert.equal(done.failure_reason, cases[i][1], cases[i][0]);
      }
      checkLedger(server);
    });

    test('TA (ambiguous) stays PENDING and is asked again until Airtel resolves it', async () => {
      await double.behave({ callbacks: 'none', ambiguous_ms: 2500 });
      try {
        const reference = await collect(posts[0], number('453'));
        await sleep(1200);  // the first enquiries answer TA
        assert.equal((await statusOf(posts[0], reference)).status, 'PENDING');
        const done = await until(posts[0], reference, 'COMPLETED', 20000);
        assert.equal(done.status, 'COMPLETED');
        const checks = statusCheckOutcomes(server, reference);
        assert.ok(checks.length >= 2, JSON.stringify(checks));
        assert.ok(checks.includes('succeeded'), JSON.stringify(checks));
      } finally {
        await double.behave({ callbacks: 'once', ambiguous_ms: 1500 });
      }
      checkLedger(server);
    });

    test('a forged callback moves nothing: Airtel is asked, and says TIP', async () => {
      const reference = await collect(posts[0], number('454'));  // in progress for ever at the double
      const forged = JSON.stringify({ transaction: { id: airtelId(server, reference), message: 'Paid',
        status_code: 'TS', airtel_money_id: 'MP999' } });
      const r = await fetch(`${server.baseUrl}/operator/callback/airtel_money`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: forged,
      });
      assert.equal(r.status, 200);
      assert.equal((await r.json()).outcome, 'contradicted');
      await sleep(1000);
      assert.equal((await statusOf(posts[0], reference)).status, 'PENDING');
      const unknown = await fetch(`${server.baseUrl}/operator/callback/airtel_money`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ transaction: { id: randomUUID().replaceAll('-', ''), status_code: 'TS' } }),
      });
      assert.equal(unknown.status, 200);
      const bad = await fetch(`${server.baseUrl}/operator/callback/airtel_money`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"transaction":{"status_code":"TS"}}',
      });
      assert.equal(bad.status, 400);
      assert.ok((await bad.json()).error.details['transaction.id']);
      checkLedger(server);
    });

    test('callbacks twice or late complete the payment once', async () => {
      for (const mode of ['twice', 'late']) {
        await double.behave({ callbacks: mode, late_callback_ms: 800 });
        const reference = await collect(posts[posts.length - 1], number('210'));
        await until(posts[0], reference, 'COMPLETED');
        await sleep(1200);
        assert.equal((await statusOf(posts[0], reference)).status, 'COMPLETED');
      }
      await double.behave({ callbacks: 'once' });
      checkLedger(server);
    });

    test('a lost callback is recovered by the status enquiry', async () => {
      await double.behave({ callbacks: 'none' });
      try {
        const reference = await collect(posts[posts.length - 1], number('200'));
        const done = await until(posts[0], reference, 'COMPLETED', 20000);
        assert.equal(done.status, 'COMPLETED');
        assert.deepEqual(callbackOutcomes(server, reference), []);
      } finally {
        await double.behave({ callbacks: 'once' });
      }
      checkLedger(server);
    });

    test('an initiation whose answer never came is sent again with the same id and completes once', async () => {
      // The double records it and never answers: the connector times out, sends it again with the
      // same transaction id (ESB000041: Airtel holds it), and the payment completes once.
      await double.behave({ hang_after_accept: 1 });
      const before = (await double.stats()).duplicates;
      const reference = await collect(posts[0], number('300'));
      await until(posts[0], reference, 'COMPLETED', 60000);
      assert.equal((await atDouble(double, server, reference)).length, 1);
      assert.ok((await double.stats()).duplicates > before, 'the resend met the first');
      checkLedger(server);
    });

    test('an unreachable operator leaves the collection PENDING, is judged CLOSED, and all completes once it is back', async () => {
      await double.behave({ fail_next: 100 });
      const reference = await collect(posts[0], number('400'));
      assert.equal((await statusOf(posts[0], reference)).status, 'PENDING');
      assert.ok(await waitFor(async () => (await availability(server, token)).AIRTEL === 'CLOSED', 20000));
      await double.behave({ fail_next: 0 });
      await until(posts[0], reference, 'COMPLETED', 30000);
      assert.equal((await atDouble(double, server, reference)).length, 1);
      assert.ok(await waitFor(async () => (await availability(server, token)).AIRTEL === 'OPERATIONAL', 20000));
      checkLedger(server);
    });

    test('payouts go through disbursements with the encrypted PIN: success, ambiguous, invalid number', async () => {
      const funding = await collect(posts[0], number('500'), 200000);
      await until(posts[0], funding, 'COMPLETED');
      const ok = await payout(posts[0], number('600'));
      const done = await until(posts[0], ok, 'COMPLETED', 15000, '/disbursement/status');
      assert.equal(done.status, 'COMPLETED');
      const held = await atDouble(double, server, ok);
      assert.equal(held.length, 1);
      assert.equal(held[0].kind, 'disbursement');
      assert.equal(held[0].msisdn.length, 8);
      const ambiguous = await payout(posts[posts.length - 1], number('553'));
      await until(posts[0], ambiguous, 'COMPLETED', 20000, '/disbursement/status');
      const invalid = await payout(posts[0], number('556'));
      const failed = await until(posts[0], invalid, 'FAILED', 15000, '/disbursement/status');
      assert.equal(failed.failure_reason, 'INVALID_ACCOUNT');
      const s = await double.stats();
      assert.equal(s.refused.ROUTER115 ?? 0, 0, 'the PIN decrypted to the right one');
      assert.equal(s.refused.ROUTER116 ?? 0, 0);
      checkLedger(server);
    });

    test('one token per node serves a burst of payments', async () => {
      const before = (await double.stats()).tokens_issued;
      const refs = await Promise.all(Array.from({ length: 30 }, (_, i) => collect(posts[i % posts.length], number('700'))));
      await waitFor(async () => {
        for (const r of refs) if ((await statusOf(posts[0], r)).status !== 'COMPLETED') return false;
        return true;
      }, 30000);
      const after = (await double.stats()).tokens_issued;
      assert.equal(after - before, 0, 'the token fetched earlier is still in use');
      assert.ok(after <= nodes.ports.length, `tokens: ${after}`);
    });
  });
}

describe('Airtel Money connector configuration and refusals', () => {
  test('the double refuses a subscriber number with the country code, and headers of another country', async () => {
    const double = await startDouble('airtel_money');
    try {
      const t = await (await fetch(`${double.url}/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'airtel-client-id', client_secret: 'airtel-client-secret', grant_type: 'client_credentials' }) })).json();
      const pay = (headers, msisdn) => fetch(`${double.url}/merchant/v1/payments/`, { method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${t.access_token}`, ...headers },
        body: JSON.stringify({ reference: 'ref1234', subscriber: { country: 'GA', currency: 'XAF', msisdn },
          transaction: { amount: 100, country: 'GA', currency: 'XAF', id: randomUUID().replaceAll('-', '') } }) });
      const withCc = await pay({ 'x-country': 'GA', 'x-currency': 'XAF' }, '24174123100');
      assert.equal(withCc.status, 400);
      assert.equal((await withCc.json()).status.result_code, 'ESB000036');
      const otherCountry = await pay({ 'x-country': 'CG', 'x-currency': 'XAF' }, '74123100');
      assert.equal((await otherCountry.json()).status.result_code, 'ROUTER006');
      const noBearer = await pay({ 'x-country': 'GA', 'x-currency': 'XAF', authorization: 'Bearer nope' }, '74123100');
      assert.equal(noBearer.status, 401);
    } finally {
      await double.stop();
    }
  });

  test('a token about to expire is renewed; a wrong PIN or another country is a refusal, never a 500', async () => {
    const double = await startDouble('airtel_money', { 'token-ttl': 2, country: 'GA' });
    const setup = connectorSetup('airtel_money', double, { pin: '9999' });
    const nodes = await startTwoNodes({ backend: 'sqlite', env: setup.env, args: [...FAST_RECOVERY, ...setup.args] });
    try {
      const server = nodes.first;
      await double.behave({ callback_url: `${server.baseUrl}/operator/callback/airtel_money` });
      const post = gateway(server, await liveToken(server, 'airtel_money'));
      const first = await collect(post, number('100'), 300000);
      await until(post, first, 'COMPLETED');
      await sleep(2200);  // the 2 s token expired meanwhile
      const second = await collect(post, number('100'));
      await until(post, second, 'COMPLETED');
      assert.ok((await double.stats()).tokens_issued >= 2, 'renewed');
      // The double's PIN is 4321: a payout with 9999 is refused (ROUTER115), FAILED, not a 500.
      const p = await payout(post, number('600'));
      const failed = await until(post, p, 'FAILED', 15000, '/disbursement/status');
      assert.equal(failed.failure_reason, 'OPERATOR_REFUSED');
      assert.equal((await double.stats()).refused.ROUTER115, 1);
      assert.ok(!server.output().includes('airtel-client-secret'), 'the client secret is never logged');
      checkLedger(server);
    } finally {
      await nodes.stop();
      await double.stop();
    }
  });
});
