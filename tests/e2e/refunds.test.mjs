// Black-box tests of refunds (docs/refunds.md) against the real binary, on each backend: a sandbox
// collection refunded in parts through the sandbox operator (its signed callback over HTTP) until it
// is REFUNDED; a WALLET collection refunded at once; every refusal with its code and details;
// idempotency on refund_uuid; GET /refunds filters and paging; the webhook `refund.status_changed`
// verified with the `standardwebhooks` library; concurrent refunds of one collection (on two nodes
// sharing one PostgreSQL) never beyond what was collected; the ledger check clean at the end.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Receiver } from './lib/receiver.mjs';
import { backends, merchantToken, waitFor, checkLedger, startTwoNodes } from './lib/server.mjs';

const REFUND_FIELDS = ['refund_reference', 'transaction_reference', 'refund_uuid', 'amount', 'currency', 'status',
  'reason', 'failure_reason', 'provider_reference', 'created_at', 'updated_at'];

for (const backend of backends()) {
  describe(`refunds on ${backend}`, () => {
    let nodes, server, token, otherToken, receiver;
    const api = (tok = token, base = () => server.baseUrl) => async (method, path, body) => {
      const r = await fetch(`${base()}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${tok}`, 'accept-language': 'en' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const post = (path, body, tok) => api(tok)('POST', path, body);
    const get = (path, tok) => api(tok)('GET', path);
    const refundBody = (ref, extra = {}) => ({ transaction_reference: ref, refund_uuid: randomUUID(), reason: 'REQUESTED_BY_CUSTOMER', ...extra });
    const status = async (ref) => (await post('/collection/status', { transaction_reference: ref })).body.data;
    const refundStatus = async (ref) => (await post('/collection/refund/status', { refund_reference: ref })).body.data;
    const finalRefund = (ref) => waitFor(async () => {
      const r = await refundStatus(ref);
      return r.status === 'COMPLETED' || r.status === 'FAILED' ? r : null;
    });
    // A COMPLETED sandbox collection of `amount` (the customer's fee on top).
    const collected = async (amount, extra = {}) => {
      const c = await post('/collection/intent', {
        amount, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: server.demo.sandbox.msisdn.success, description: 'refund e2e', ...extra });
      assert.equal(c.status, 200, JSON.stringify(c.body));
      const ref = c.body.data.transaction_reference;
      assert.equal((await post('/collection/execute', { transaction_reference: ref })).status, 200);
      const done = await waitFor(async () => ((await status(ref)).status === 'COMPLETED' ? ref : null));
      assert.ok(done, 'the collection completed');
      return ref;
    };

    before(async () => {
      nodes = await startTwoNodes({ backend, args: ['--set', 'payments.sandbox_delay_ms=300',
        '--set', 'webhooks.allow_private_targets=true', '--set', 'webhooks.poll_interval_ms=50'] });
      server = nodes.first;
      token = await merchantToken(server, 0);
      otherToken = await merchantToken(server, 1);
      receiver = new Receiver();
      await receiver.listen();
      const ep = await post('/webhook/endpoints', { url: receiver.url, event_types: ['refund.*', 'transaction.*'] });
      assert.equal(ep.status, 201, JSON.stringify(ep.body));
      receiver.secret = ep.body.data.secret;
    });
    after(async () => {
      if (receiver) await receiver.close();
      if (nodes) await nodes.stop();
    });

    test('a sandbox collection refunded in parts by the operator, then REFUNDED; webhooks verified', async () => {
      const ref = await collected(5000);
      const first = await post('/collection/refund', refundBody(ref, { amount: 2000, description: 'one item back', metadata: { rma: 7 } }));
      assert.equal(first.status, 200, JSON.stringify(first.body));
      for (const f of REFUND_FIELDS) assert.ok(f in first.body.data, `record lacks ${f}`);
      assert.match(first.body.data.refund_reference, /^RF-/);
      assert.ok(['PENDING', 'PROCESSING'].includes(first.body.data.status), first.body.data.status);
      assert.equal(first.body.data.channel, 'SANDBOX');
      const done = await finalRefund(first.body.data.refund_reference);
      assert.equal(done.status, 'COMPLETED');
      assert.equal(done.failure_reason, null);
      let tx = await status(ref);
      assert.equal(tx.status, 'COMPLETED');
      assert.equal(tx.refunded_amount, 2000);
      // Everything left: 3000, then the collection is REFUNDED.
      const rest = await post('/collection/refund', refundBody(ref));
      assert.equal(rest.status, 200, JSON.stringify(rest.body));
      assert.equal(rest.body.data.amount, 3000);
      assert.equal((await finalRefund(rest.body.data.refund_reference)).status, 'COMPLETED');
      tx = await status(ref);
      assert.equal(tx.status, 'REFUNDED');
      assert.equal(tx.refunded_amount, 5000);
      const more = await post('/collection/refund', refundBody(ref, { amount: 1 }));
      assert.equal(more.status, 409);
      assert.equal(more.body.message, 'not_refundable');
      // Each move of both refunds reached the endpoint, signed (Standard Webhooks), its payload the record.
      const hooks = await waitFor(() => {
        const got = receiver.deliveries.map((d) => d.payload).filter((d) => d.event_type === 'refund.status_changed' && d.transaction_reference === ref);
        return got.filter((d) => d.status === 'COMPLETED').length === 2 ? got : null;
      });
      assert.ok(hooks, `refund events: ${JSON.stringify(receiver.deliveries.map(({ payload: d }) => [d.event_type, d.status]))}`);
      for (const h of hooks) for (const f of REFUND_FIELDS) assert.ok(f in h, `payload lacks ${f}`);
      assert.ok(await waitFor(() => receiver.deliveries.some(({ payload: d }) => d.event_type === 'transaction.status_changed'
        && d.transaction_reference === ref && d.status === 'REFUNDED')), 'the collection\'s REFUNDED event');
      assert.deepEqual(receiver.invalid, []);
    });

    test('a WALLET collection is refunded at once into the wallet', async () => {
      const wallet = server.demo.sandbox.wallets[0];
      const c = await post('/collection/intent', { amount: 1000, currency: 'XAF', transaction_uuid: randomUUID(),
        provider: 'SIKA_WALLET_CMR', channel: 'WALLET', customer_wallet: wallet.msisdn });
      assert.equal(c.status, 200, JSON.stringify(c.body));
      const ex = await post('/collection/execute', { transaction_reference: c.body.data.transaction_reference, otp: server.demo.sandbox.otp });
      assert.equal(ex.body.data.status, 'COMPLETED');
      const r = await post('/collection/refund', refundBody(ex.body.data.transaction_reference, { amount: 400, reason: 'DUPLICATE' }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.data.status, 'COMPLETED');
      assert.equal(r.body.data.channel, 'WALLET');
      assert.equal((await status(ex.body.data.transaction_reference)).refunded_amount, 400);
    });

    test('refusals: codes and details', async () => {
      const ref = await collected(1500);
      const bad = await post('/collection/refund', { transaction_reference: ref, refund_uuid: 'x', amount: -5, reason: 'WHY', fee: 1 });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.message, 'empty_data');
      for (const f of ['refund_uuid', 'amount', 'reason', 'fee']) assert.ok(f in bad.body.error.details, f);
      const beyond = await post('/collection/refund', refundBody(ref, { amount: 1501 }));
      assert.equal(beyond.status, 400);
      assert.ok('amount' in beyond.body.error.details);
      assert.equal(beyond.body.error.details.refundable, 1500);
      const foreign = await post('/collection/refund', refundBody(ref, { amount: 100 }), otherToken);
      assert.equal(foreign.status, 404);
      const none = await post('/collection/refund', refundBody('TX-DOESNOTEXIST', { amount: 100 }));
      assert.equal(none.status, 404);
      assert.deepEqual(foreign.body.error.details, none.body.error.details);
      const pending = await post('/collection/intent', { amount: 1000, currency: 'XAF', transaction_uuid: randomUUID(),
        provider: 'MTN_MOMO_CMR', channel: 'PROVIDER', customer_wallet: server.demo.sandbox.msisdn.success });
      const notDone = await post('/collection/refund', refundBody(pending.body.data.transaction_reference));
      assert.equal(notDone.status, 409);
      assert.equal(notDone.body.message, 'not_refundable');
      assert.match(notDone.body.error.details.transaction_reference, /INITIATED/);
      // Idempotency: the same body is the same refund, another body 409 naming refund_uuid.
      const body = refundBody(ref, { amount: 500 });
      const a = await post('/collection/refund', body);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      const b = await post('/collection/refund', body);
      assert.equal(b.status, 200);
      assert.equal(b.body.data.refund_reference, a.body.data.refund_reference);
      const c = await post('/collection/refund', { ...body, amount: 501 });
      assert.equal(c.status, 409);
      assert.ok('refund_uuid' in c.body.error.details);
      // Unknown or another merchant's refund: 404.
      assert.equal((await post('/collection/refund/status', { refund_reference: a.body.data.refund_reference }, otherToken)).status, 404);
      assert.equal((await post('/collection/refund/status', { refund_reference: 'RF-NONE' })).status, 404);
    });

    test('GET /refunds: filters and paging', async () => {
      const ref = await collected(3000);
      for (let i = 0; i < 3; i++) {
        const r = await post('/collection/refund', refundBody(ref, { amount: 100 }));
        assert.equal(r.status, 200, JSON.stringify(r.body));
        await finalRefund(r.body.data.refund_reference);
      }
      const page1 = await get(`/refunds?transaction_reference=${ref}&limit=2`);
      assert.equal(page1.status, 200, JSON.stringify(page1.body));
      assert.equal(page1.body.data.length, 2);
      assert.equal(page1.body.meta.pagination.total, 3);
      const page2 = await get(`/refunds?transaction_reference=${ref}&limit=2&page=2`);
      assert.equal(page2.body.data.length, 1);
      const seen = new Set([...page1.body.data, ...page2.body.data].map((r) => r.refund_reference));
      assert.equal(seen.size, 3);
      const completed = await get(`/refunds?transaction_reference=${ref}&status=COMPLETED`);
      assert.equal(completed.body.meta.pagination.total, 3);
      const badStatus = await get('/refunds?status=DONE');
      assert.equal(badStatus.status, 400);
      assert.ok('status' in badStatus.body.error.details);
      assert.equal((await get('/refunds', otherToken)).body.data.length, 0);
    });

    test('concurrent refunds of one collection (from two nodes on PostgreSQL) never exceed what was collected', async () => {
      const ref = await collected(3000);
      const bases = nodes.ports.map((port) => `http://127.0.0.1:${port}/api`);
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) =>
        api(token, () => bases[i % bases.length])('POST', '/collection/refund', refundBody(ref, { amount: 1000 }))));
      for (const r of results) {
        assert.ok(r.status === 200 || r.status === 409 || r.status === 400, JSON.stringify(r.body));
        if (r.status === 409) assert.ok(['refund_in_progress', 'not_refundable'].includes(r.body.message), r.body.message);
      }
      const accepted = results.filter((r) => r.status === 200);
      assert.ok(accepted.length >= 1 && accepted.length <= 3, `${accepted.length} accepted`);
      for (const r of accepted) await finalRefund(r.body.data.refund_reference);
      const tx = await status(ref);
      assert.ok(tx.refunded_amount <= 3000, JSON.stringify(tx));
      assert.equal(tx.refunded_amount, accepted.length * 1000);
    });

    test('the ledger check is clean and knows refunds', () => {
      checkLedger(server);
    });
  });
}
