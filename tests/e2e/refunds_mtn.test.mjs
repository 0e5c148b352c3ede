// Refunds of a prod merchant's MTN MoMo collections through the MTN double (doubles/mtn_momo.mjs,
// POST /disbursement/v2_0/refund, GET /disbursement/v1_0/refund/{ref}), on each backend (two nodes
// sharing PostgreSQL): a refund completes by the operator's callback, verified with its status query;
// a refund the operator fails ends FAILED and gives the reservation back; a lost refund callback is
// recovered by polling; kill -9 while refunds are at the operator, restart: each refund ends exactly
// once, as the operator says, sent once. Orange Money, whose connector carries neither refunds nor
// payouts, refuses a refund before anything is reserved. The ledger check is clean after each.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, startServer, backends, checkLedger, sqlRows, waitFor, sleep, mtnConnector } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';

const ARGS = ['--set', 'log.access=false', '--set', 'payments.recovery_delays_ms=400,800,1500',
  '--set', 'payments.recovery_interval_ms=100', '--set', 'payments.recovery_lease_ms=3000'];
const setupFor = (double) => mtnConnector(double.url, ['--set', 'connectors.mtn_momo.status_queries_per_second=100']);

async function liveToken(server) {
  const m = server.demo.live_merchants[0];
  const r = await fetch(`${server.authUrl}/oauth/v2/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: m.client_id, client_secret: m.client_secret, scope: 'payments' }),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return body.access_token;
}

function gateway(server, token, port = server.port) {
  const base = server.baseUrl.replace(`:${server.port}/`, `:${port}/`);
  return async (path, body) => {
    const r = await fetch(base + path, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
}

const number = (tail) => `23767${String(Math.floor(Math.random() * 1e4)).padStart(4, '0')}${tail}`;

async function collected(post, amount = 3000) {
  const intent = await post('/collection/intent', { amount, currency: 'XAF', provider: 'MTN_MOMO_CMR',
    customer_wallet: number('100'), transaction_uuid: randomUUID(), description: 'refund mtn' });
  assert.equal(intent.status, 200, JSON.stringify(intent.body));
  const ref = intent.body.data.transaction_reference;
  assert.equal((await post('/collection/execute', { transaction_reference: ref })).status, 200);
  const done = await waitFor(async () => {
    const s = await post('/collection/status', { transaction_reference: ref });
    return s.body.data.status === 'COMPLETED' ? s.body.data : null;
  }, 20000);
  assert.ok(done, 'the collection completed');
  return ref;
}

const refundOf = (ref, amount) => ({ transaction_reference: ref, refund_uuid: randomUUID(), amount, reason: 'REQUESTED_BY_CUSTOMER' });

async function finalRefund(post, refundReference, ms = 30000) {
  return waitFor(async () => {
    const r = await post('/collection/refund/status', { refund_reference: refundReference });
    return ['COMPLETED', 'FAILED'].includes(r.body.data?.status) ? r.body.data : null;
  }, ms);
}

function available(server, matricule) {
  const rows = sqlRows(server, "SELECT a.balance FROM ledger_accounts a JOIN merchants m ON a.owner = 'merchant:' || m.id " +
    `WHERE m.matricule = '${matricule}' AND a.kind = 'available' AND a.currency = 'XAF' AND a.environment = 'prod'`);
  return rows.length ? Number(rows[0][0]) : 0;
}

for (const backend of backends()) {
  describe(`refunds through the MTN double (${backend})`, () => {
    let double, nodes, server, posts, matricule;
    before(async () => {
      double = await startDouble('mtn_momo', { 'status-rps': 1000 });
      const setup = setupFor(double);
      nodes = await startTwoNodes({ backend, args: [...ARGS, ...setup.args], env: setup.env });
      server = nodes.first;
      const token = await liveToken(server);
      posts = nodes.ports.map((port) => gateway(server, token, port));
      matricule = server.demo.live_merchants[0].matricule;
    });
    after(async () => {
      await nodes?.stop();
      await double?.stop();
    });

    test('a partial refund goes to MTN refund API and completes by its verified callback', async () => {
      const ref = await collected(posts[0]);
      const before = available(server, matricule);
      const r = await posts[posts.length - 1]('/collection/refund', refundOf(ref, 1200));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.data.channel, 'OPERATOR_REFUND');
      assert.equal(available(server, matricule), before - 1200, 'reserved at acceptance');
      const done = await finalRefund(posts[0], r.body.data.refund_reference);
      assert.equal(done.status, 'COMPLETED');
      const held = await double.control(`/payments?externalId=${r.body.data.provider_reference}`);
      assert.equal(held.length, 1, 'sent once');
      assert.equal(held[0].kind, 'refund');
      assert.equal(held[0].amount, '1200');
      assert.equal(held[0].status, 'SUCCESSFUL');
      const outcomes = sqlRows(server, `SELECT outcome FROM pay_callbacks WHERE provider_reference = '${r.body.data.provider_reference}'`);
      assert.ok(outcomes.some(([o]) => o === 'refund_applied'), JSON.stringify(outcomes));
      const tx = await posts[0]('/collection/status', { transaction_reference: ref });
      assert.equal(tx.body.data.refunded_amount, 1200);
      assert.equal(available(server, matricule), before - 1200);
      checkLedger(server);
    });

    test('a refund the operator fails ends FAILED and gives the reservation back', async () => {
      const ref = await collected(posts[0]);
      const before = available(server, matricule);
      await double.behave({ settle_ms: 600000 });
      try {
        const r = await posts[0]('/collection/refund', refundOf(ref, 500));
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const held = await waitFor(async () => {
          const h = await double.control(`/payments?externalId=${r.body.data.provider_reference}`);
          return h.length ? h : null;
        });
        assert.equal(available(server, matricule), before - 500);
        await double.control(`/payments/${held[0].referenceId}/complete`, { status: 'FAILED', reason: 'NOT_ENOUGH_FUNDS' });
        const done = await finalRefund(posts[0], r.body.data.refund_reference);
        assert.equal(done.status, 'FAILED');
        assert.equal(done.failure_reason, 'INSUFFICIENT_FUNDS');
        assert.equal(available(server, matricule), before, 'the reservation is given back');
        const tx = await posts[0]('/collection/status', { transaction_reference: ref });
        assert.equal(tx.body.data.refunded_amount, 0);
        assert.equal(tx.body.data.status, 'COMPLETED');
      } finally {
        await double.behave({ settle_ms: 20 });
      }
      checkLedger(server);
    });

    test('a lost refund callback is recovered by polling the operator', async () => {
      const ref = await collected(posts[0]);
      await double.behave({ callbacks: 'none' });
      try {
        const r = await posts[0]('/collection/refund', refundOf(ref, 3000));
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const done = await finalRefund(posts[0], r.body.data.refund_reference);
        assert.equal(done.status, 'COMPLETED');
        const tx = await posts[0]('/collection/status', { transaction_reference: ref });
        assert.equal(tx.body.data.status, 'REFUNDED');
        assert.equal(sqlRows(server, `SELECT COUNT(*) FROM pay_callbacks WHERE provider_reference = '${r.body.data.provider_reference}'`)[0][0], '0');
      } finally {
        await double.behave({ callbacks: 'once' });
      }
      checkLedger(server);
    });
  });

  describe(`refunds at MTN: kill -9, restart (${backend})`, () => {
    test('each refund in flight at the kill ends exactly once, as the operator says, sent once', async () => {
      const double = await startDouble('mtn_momo', { 'status-rps': 1000 });
      const setup = setupFor(double);
      let server = await startServer({ backend, args: [...ARGS, ...setup.args], env: setup.env });
      try {
        const post = gateway(server, await liveToken(server));
        const refs = [];
        for (let i = 0; i < 6; i++) refs.push(await collected(post, 2000 + i));
        // Slow to settle and to answer: refunds are PENDING or PROCESSING, some on the wire, at the kill.
        await double.behave({ settle_ms: 2500, latency_ms: 150, callbacks: 'once' });
        const sending = refs.map((ref) => post('/collection/refund', refundOf(ref, 1000)).catch(() => null));
        await sleep(250);
        await server.crash();
        await Promise.all(sending);
        await double.behave({ latency_ms: 0 });
        server = await startServer({ reuse: server, args: [...ARGS, ...setup.args], env: setup.env });
        const rows = () => sqlRows(server, "SELECT reference, status, provider_reference, amount FROM pay_refunds");
        assert.ok(await waitFor(async () => rows().every(([, status]) => status === 'COMPLETED' || status === 'FAILED'), 60000),
          JSON.stringify(rows()));
        assert.ok(rows().length > 0, 'some refunds were accepted before the kill');
        for (const [reference, status, providerReference] of rows()) {
          const held = await double.control(`/payments?externalId=${providerReference}`);
          assert.equal(held.length, 1, `${reference} sent ${held.length} times`);
          assert.equal(status, held[0].status === 'SUCCESSFUL' ? 'COMPLETED' : 'FAILED', `${reference}: operator says ${held[0].status}`);
          const journals = sqlRows(server, "SELECT j.kind FROM ledger_journals j JOIN pay_refunds r ON r.id = j.refund_id " +
            `WHERE r.reference = '${reference}' ORDER BY j.kind`).map(([k]) => k);
          assert.deepEqual(journals, status === 'COMPLETED' ? ['REFUND', 'REFUND_RESERVE'] : ['REFUND_RELEASE', 'REFUND_RESERVE']);
        }
        checkLedger(server);
      } finally {
        await server.stop();
        await double.stop();
      }
    });
  });
}

// Orange Money (Cameroon push, through doubles/orange_money.mjs): its connector carries neither refunds
// nor payouts, so a refund of its collection is refused at once (409 not_refundable), nothing reserved.
const orangeSetup = (double) => ({
  args: ['--set', 'connectors.orange_money_cm.kind=orange_money', '--set', `connectors.orange_money_cm.base_url=${double.url}`,
    '--set', 'connectors.orange_money_cm.country=cm', '--set', 'connectors.orange_money_cm.flow=push',
    '--set', 'connectors.orange_money_cm.channel_msisdn=699000001', '--set', 'connectors.orange_money_cm.timeout_ms=1000'],
  env: { SIKA_CONNECTORS_ORANGE_MONEY_CM_CLIENT_ID: 'orange-client-id', SIKA_CONNECTORS_ORANGE_MONEY_CM_CLIENT_SECRET: 'orange-client-secret',
    SIKA_CONNECTORS_ORANGE_MONEY_CM_PIN: '2580', SIKA_CONNECTORS_ORANGE_MONEY_CM_X_AUTH_TOKEN: 'orange-x-auth-token' },
});

for (const backend of backends()) {
  describe(`refunds of Orange Money collections (${backend})`, () => {
    test('refused before anything is reserved: the operator carries neither refunds nor payouts', async () => {
      const double = await startDouble('orange_money', { 'status-rps': 1000 });
      const setup = orangeSetup(double);
      const server = await startServer({ backend, args: [...ARGS, ...setup.args], env: setup.env });
      try {
        const m = server.demo.live_merchants.find((x) => x.connector === 'orange_money_cm');
        assert.ok(m, 'a live Orange Cameroon merchant');
        const t = await fetch(`${server.authUrl}/oauth/v2/token`, { method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ grant_type: 'client_credentials', client_id: m.client_id, client_secret: m.client_secret, scope: 'payments' }) });
        const post = gateway(server, (await t.json()).access_token);
        const intent = await post('/collection/intent', { amount: 1500, currency: 'XAF', provider: 'ORANGE_MONEY_CMR',
          customer_wallet: `23769${String(Math.floor(Math.random() * 1e4)).padStart(4, '0')}100`, transaction_uuid: randomUUID() });
        assert.equal(intent.status, 200, JSON.stringify(intent.body));
        const ref = intent.body.data.transaction_reference;
        assert.equal((await post('/collection/execute', { transaction_reference: ref })).status, 200);
        assert.ok(await waitFor(async () => (await post('/collection/status', { transaction_reference: ref })).body.data.status === 'COMPLETED', 20000));
        const before = available(server, m.matricule);
        const r = await post('/collection/refund', refundOf(ref, 500));
        assert.equal(r.status, 409, JSON.stringify(r.body));
        assert.equal(r.body.message, 'not_refundable');
        assert.ok('transaction_reference' in r.body.error.details);
        assert.equal(available(server, m.matricule), before);
        assert.equal(sqlRows(server, 'SELECT COUNT(*) FROM pay_refunds')[0][0], '0');
        checkLedger(server);
      } finally {
        await server.stop();
        await double.stop();
      }
    });
  });
}
