// Black-box tests of webhooks against the real binary and a real node:http receiver. Every
// delivery the receiver gets is verified with the third-party `standardwebhooks` library; a
// delivery that does not verify fails the test. Events come from the real collection flow
// (intent -> execute -> sandbox operator callback -> COMPLETED).
//   - SSRF: registration of loopback, private, link-local and metadata URLs is refused (no
//     traffic is ever sent to a non-loopback address by these tests);
//   - the receiver goes down for a while, then comes back: every event arrives at least once,
//     each with its per-transaction sequence;
//   - kill -9 of the server while deliveries are in flight, restart on the same database:
//     nothing is lost.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { startServer, backends, merchantToken, spawnServe, sleep, waitFor } from './lib/server.mjs';

// A receiver on 127.0.0.1 that verifies every delivery with `standardwebhooks`.
// mode: 'up' answers 200 {"received":true}; 'hold' keeps requests unanswered (in flight).
class Receiver {
  constructor() {
    this.secrets = [];
    this.deliveries = [];       // verified and answered 200
    this.invalid = [];          // failed verification: must stay empty
    this.held = [];
    this.requests = 0;
    this.mode = 'up';
    this.sockets = new Set();
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
  }
  async listen(port = 0) {
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', resolve);
    });
    this.port = this.server.address().port;
    this.url = `http://127.0.0.1:${this.port}/sika/webhooks`;
  }
  // Stops listening and drops every connection: the endpoint is unreachable.
  async down() {
    for (const r of this.held) r.destroy();
    this.held = [];
    await new Promise((resolve) => { this.server.close(() => resolve()); for (const s of this.sockets) s.destroy(); });
  }
  async up() {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
    await this.listen(this.port);
  }
  handle(req, res) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      this.requests++;
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': req.headers['webhook-id'],
        'webhook-timestamp': req.headers['webhook-timestamp'],
        'webhook-signature': req.headers['webhook-signature'],
      };
      let payload = null;
      for (const secret of this.secrets) {
        try { payload = new Webhook(secret).verify(body, headers); break; } catch {}
      }
      if (!payload) {
        this.invalid.push({ headers, body });
        res.writeHead(400).end();
        return;
      }
      if (this.mode === 'hold') { this.held.push(res); return; }
      this.deliveries.push({ id: headers['webhook-id'], payload, headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  }
  receivedIds() { return new Set(this.deliveries.map((d) => d.id)); }
  async close() { await this.down().catch(() => {}); }
}

// Starts `sika serve` on an existing database (the restart after kill -9).
async function restartOn(server, args) {
  return spawnServe({ port: server.port, dsn: server.dsn, publicUrl: server.publicUrl,
    args: ['--demo', path.join(server.dir, 'demo.json'), ...args] });
}

function serverArgs(extra = []) {
  return ['--set', 'payments.sandbox_delay_ms=200',
    '--set', 'webhooks.allow_private_targets=true',
    '--set', 'webhooks.poll_interval_ms=50',
    '--set', 'webhooks.connect_timeout_ms=1000',
    '--set', 'webhooks.timeout_ms=3000',
    '--set', 'webhooks.lease_ms=4000',
    '--set', 'webhooks.retry_schedule=500ms,1s,1s,1s,2s,2s,2s,2s,2s,2s,2s,2s', ...extra];
}

function client(server, token) {
  const call = async (method, p, body) => {
    const r = await fetch(`${server.baseUrl}${p}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };
  return {
    get: (p) => call('GET', p),
    post: (p, body) => call('POST', p, body),
    patch: (p, body) => call('PATCH', p, body),
  };
}

// Creates collections and drives them through the sandbox to COMPLETED; returns their references.
async function completeCollections(server, api, n) {
  const refs = [];
  for (let i = 0; i < n; i++) {
    const created = await api.post('/collection/intent', {
      amount: 1000 + i, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
      customer_wallet: server.demo.sandbox.msisdn.success, description: `webhook e2e ${i}`,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const ref = created.body.data.transaction_reference;
    const ex = await api.post('/collection/execute', { transaction_reference: ref });
    assert.equal(ex.status, 200, JSON.stringify(ex.body));
    refs.push(ref);
  }
  const done = await waitFor(async () => {
    for (const ref of refs) {
      const s = await api.post('/collection/status', { transaction_reference: ref });
      if (s.body.data.status !== 'COMPLETED') return false;
    }
    return true;
  });
  assert.ok(done, 'every collection completed');
  return refs;
}

// Every event of these transactions, from GET /webhook/events (all pages).
async function eventsOf(api, refs) {
  const wanted = new Set(refs);
  const out = [];
  for (let page = 1; ; page++) {
    const r = await api.get(`/webhook/events?page=${page}&limit=100`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    for (const e of r.body.data) if (e.payload && wanted.has(e.payload.transaction_reference)) out.push(e);
    if (!r.body.meta.pagination.has_next) break;
  }
  return out;
}

// Asserts that each event was received (verified) at least once, with its sequence, and that
// each transaction's sequences are 1..n without holes.
function assertAllReceived(receiver, events, refs) {
  assert.deepEqual(receiver.invalid, [], 'every delivery verifies with standardwebhooks');
  const got = receiver.receivedIds();
  const missing = events.filter((e) => !got.has(e.event_id));
  assert.deepEqual(missing.map((e) => `${e.event_id} ${e.payload.status}`), [], 'every event arrived');
  for (const ref of refs) {
    const seqs = [...new Set(receiver.deliveries.filter((d) => d.payload.transaction_reference === ref)
      .map((d) => d.payload.sequence))].sort((a, b) => a - b);
    assert.ok(seqs.length >= 2, `${ref}: at least two state changes delivered`);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `${ref}: sequences 1..n`);
    const last = receiver.deliveries.filter((d) => d.payload.transaction_reference === ref)
      .reduce((a, d) => (d.payload.sequence > a.payload.sequence ? d : a));
    assert.equal(last.payload.status, 'COMPLETED', `${ref}: the highest sequence is the final state`);
  }
  for (const d of receiver.deliveries) {
    for (const f of ['transaction_reference', 'invoice_reference', 'provider_reference', 'operation', 'status',
      'amount', 'currency', 'updated_at', 'event_id', 'event_type', 'created_at', 'sequence'])
      assert.ok(f in d.payload, `payload lacks ${f}`);
    assert.equal(d.payload.event_id, d.id, 'webhook-id is the event id');
    assert.match(d.payload.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
  }
}

describe('webhook endpoints refuse SSRF targets', () => {
  let server, api, other;
  before(async () => {
    server = await startServer({ backend: backends()[0] });  // default: private targets refused
    api = client(server, await merchantToken(server, 0));
    other = client(server, await merchantToken(server, 1));
  });
  after(async () => { if (server) await server.stop(); });

  test('loopback, private, link-local and metadata URLs are refused at registration', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://192.168.1.20/hook',
      'http://172.16.0.1/', 'http://127.0.0.1/', `http://127.0.0.1:${server.port}/api/healthz`, 'http://localhost/',
      'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[fd00:ec2::254]/', 'http://0.0.0.0/',
      'http://100.100.100.200/', 'http://2130706433/', 'http://0x7f.1/', 'http://127.1/']) {
      const r = await api.post('/webhook/endpoints', { url });
      assert.equal(r.status, 400, `${url}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.success, false);
      assert.ok('url' in r.body.error.details, url);
    }
    for (const url of ['ftp://example.com/', 'https://user:pass@example.com/', 'not a url', 'file:///etc/passwd']) {
      const r = await api.post('/webhook/endpoints', { url });
      assert.equal(r.status, 400, url);
    }
    const list = await api.get('/webhook/endpoints');
    assert.equal(list.body.meta.pagination.total, 0, 'nothing was registered');
  });

  test('bad bodies are 4xx with details, never 500', async () => {
    for (const body of [{}, { url: 42 }, { url: 'http://10.0.0.1/', secret: 'whsec_x' },
      { url: 'http://10.0.0.1/', event_types: [] }, { url: 'http://10.0.0.1/', event_types: ['NOT VALID'] }]) {
      const r = await api.post('/webhook/endpoints', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.ok(r.body.error.details && typeof r.body.error.details === 'object');
    }
    const unauth = await fetch(`${server.baseUrl}/webhook/endpoints`);
    assert.equal(unauth.status, 401);
    const missing = await api.get('/webhook/endpoints/we_000000000000000000000000');
    assert.equal(missing.status, 404);
    const redeliver = await other.post('/webhook/events/evt_nope/redeliver', {});
    assert.equal(redeliver.status, 404);
  });
});

for (const backend of backends()) {
  describe(`webhook delivery on ${backend}`, () => {
    let server, api, other, receiver, endpoint;
    before(async () => {
      server = await startServer({ backend, args: serverArgs() });
      api = client(server, await merchantToken(server, 0));
      other = client(server, await merchantToken(server, 1));
      receiver = new Receiver();
      await receiver.listen();
      const created = await api.post('/webhook/endpoints', { url: receiver.url, event_types: ['transaction.*'] });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      endpoint = created.body.data;
      assert.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{32,}={0,2}$/);
      receiver.secrets = [endpoint.secret];
    });
    after(async () => {
      if (receiver) await receiver.close();
      if (server) await server.stop();
    });

    test('the endpoint is the caller merchant\'s only, and its secret is never shown again', async () => {
      const mine = await api.get(`/webhook/endpoints/${endpoint.id}`);
      assert.equal(mine.status, 200);
      assert.equal(mine.body.data.url, receiver.url);
      assert.ok(!('secret' in mine.body.data));
      assert.equal((await other.get(`/webhook/endpoints/${endpoint.id}`)).status, 404);
      assert.equal((await other.patch(`/webhook/endpoints/${endpoint.id}`, { enabled: false })).status, 404);
      assert.equal((await other.post(`/webhook/endpoints/${endpoint.id}/rotate-secret`, {})).status, 404);
      assert.equal((await other.get('/webhook/endpoints')).body.meta.pagination.total, 0);
    });

    test('receiver down for a while, then back: every event arrives at least once, with its sequence', async () => {
      const first = await completeCollections(server, api, 3);
      await waitFor(async () => (await eventsOf(api, first)).every((e) => receiver.receivedIds().has(e.event_id)));
      await receiver.down();
      const during = await completeCollections(server, api, 4);
      await sleep(2500);  // deliveries fail meanwhile and are retried
      const failedSoFar = await api.get('/webhook/deliveries?status=pending');
      assert.ok(failedSoFar.body.meta.pagination.total > 0, 'deliveries wait for a retry while the receiver is down');
      await receiver.up();
      const refs = [...first, ...during];
      const events = await eventsOf(api, refs);
      const all = await waitFor(() => events.every((e) => receiver.receivedIds().has(e.event_id)), 40000);
      assert.ok(all, 'every event arrived after the receiver came back');
      assertAllReceived(receiver, events, refs);
      // The failed attempts were recorded.
      const list = await api.get(`/webhook/deliveries?endpoint_id=${endpoint.id}&limit=100`);
      const retried = list.body.data.filter((d) => d.attempt_count > 1);
      assert.ok(retried.length > 0, 'some deliveries needed retries');
      const detail = await api.get(`/webhook/deliveries/${retried[0].id}`);
      assert.equal(detail.status, 200);
      const attempts = detail.body.data.attempts;
      assert.ok(attempts.some((a) => a.outcome !== 'succeeded' && a.status_code === null), JSON.stringify(attempts));
      assert.equal(attempts.at(-1).outcome, 'succeeded');
      assert.equal(attempts.at(-1).status_code, 200);
      assert.equal(attempts.at(-1).response_excerpt, '{"received":true}');
      assert.equal((await other.get(`/webhook/deliveries/${retried[0].id}`)).status, 404);
    });

    test('redelivery sends the same event again, same webhook-id', async () => {
      const events = await eventsOf(api, [receiver.deliveries[0].payload.transaction_reference]);
      const target = events[0];
      const before = receiver.deliveries.filter((d) => d.id === target.event_id).length;
      const r = await api.post(`/webhook/events/${target.event_id}/redeliver`, {});
      assert.equal(r.status, 202, JSON.stringify(r.body));
      assert.equal(r.body.data[0].redelivery, true);
      const again = await waitFor(() => receiver.deliveries.filter((d) => d.id === target.event_id).length > before);
      assert.ok(again, 'redelivered');
      assert.equal((await other.post(`/webhook/events/${target.event_id}/redeliver`, {})).status, 404);
    });

    test('rotation: both secrets sign during the overlap', async () => {
      const r = await api.post(`/webhook/endpoints/${endpoint.id}/rotate-secret`, { overlap_seconds: 3600 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const fresh = r.body.data.secret;
      assert.notEqual(fresh, endpoint.secret);
      receiver.secrets = [fresh];  // only the new secret: every delivery must still verify
      const refs = await completeCollections(server, api, 1);
      const events = await eventsOf(api, refs);
      assert.ok(await waitFor(() => events.every((e) => receiver.receivedIds().has(e.event_id))));
      const last = receiver.deliveries.at(-1);
      assert.equal(last.headers['webhook-signature'].split(' ').length, 2, 'two signatures during the overlap');
      // The previous secret still verifies it too (receivers switch at their pace).
      assert.doesNotThrow(() => new Webhook(endpoint.secret).verify(last.body, last.headers));
      assert.deepEqual(receiver.invalid, []);
    });

    test('kill -9 mid-delivery, restart on the same database: nothing is lost', async () => {
      receiver.mode = 'hold';
      const refs = await completeCollections(server, api, 4);
      const held = await waitFor(() => receiver.held.length > 0, 15000);
      assert.ok(held, 'deliveries are in flight');
      const dead = new Promise((r) => server.child.once('exit', r));
      server.child.kill('SIGKILL');
      await dead;
      for (const res of receiver.held) res.destroy();
      receiver.held = [];
      receiver.mode = 'up';
      const restarted = await restartOn(server, serverArgs());
      try {
        const events = await eventsOf(api, refs);
        assert.ok(events.length >= 8, `events of 4 collections (${events.length})`);
        const all = await waitFor(() => events.every((e) => receiver.receivedIds().has(e.event_id)), 40000);
        assert.ok(all, 'every event arrived after the restart');
        assertAllReceived(receiver, events, refs);
      } finally {
        restarted.child.kill('SIGTERM');
        await restarted.exited;
      }
    });
  });
}
