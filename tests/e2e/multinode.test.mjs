// Three `sika serve` nodes on one PostgreSQL database share the background work: webhook
// deliveries (leased from webhook_deliveries) and the expiry of stale transactions. One node is
// killed with SIGKILL while deliveries are in flight. Checked on the committed effects:
//   - every event reaches the receiver, and every delivery records exactly one success;
//   - every transaction changes state once per status (one COMPLETED / one EXPIRED event each),
//     however many nodes scanned for it;
//   - a webhook-id arrives more than once only for deliveries the killed node held.
// Needs SIKA_TEST_PG_DSN (skipped without it): scripts/with-postgres.sh node --test multinode.test.mjs
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startServer, merchantToken, spawnServe, freePort, sleep, waitFor } from './lib/server.mjs';

const COLLECTIONS = 24;   // completed through the sandbox operator
const ABANDONED = 16;     // intents never executed: the expiry worker expires them
const ENDPOINTS = 3;

function nodeArgs() {
  return ['--set', 'payments.sandbox_delay_ms=200',
    '--set', 'payments.intent_ttl_ms=3000',
    '--set', 'payments.expiry_interval_ms=100',
    '--set', 'webhooks.allow_private_targets=true',
    '--set', 'webhooks.poll_interval_ms=50',
    '--set', 'webhooks.max_in_flight_per_endpoint=2',
    '--set', 'webhooks.connect_timeout_ms=1000',
    '--set', 'webhooks.timeout_ms=3000',
    '--set', 'webhooks.lease_ms=3000',
    '--set', 'webhooks.retry_schedule=500ms,1s,1s,1s,2s,2s,2s,2s'];
}

// Another node on the first node's database and public URL (tokens name that issuer), on its own port.
async function startNode(first) {
  return spawnServe({ port: await freePort(), dsn: first.dsn, publicUrl: first.publicUrl, args: nodeArgs() });
}

function client(port, token) {
  const call = async (method, p, body) => {
    const r = await fetch(`http://127.0.0.1:${port}/api${p}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };
  return { get: (p) => call('GET', p), post: (p, body) => call('POST', p, body) };
}

function sql(dsn, query) {
  const out = execFileSync('psql', [dsn, '-At', '-F', '\t', '-c', query], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.length > 0).map((l) => l.split('\t'));
}

// Answers 200 after a short random delay, so that deliveries are in flight when a node dies.
class Receiver {
  constructor() {
    this.received = new Map();  // "endpoint path webhook-id" -> times received
    this.server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = `${req.url} ${req.headers['webhook-id']}`;
        setTimeout(() => {
          this.received.set(id, (this.received.get(id) || 0) + 1);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
        }, 20 + Math.floor(Math.random() * 150));
      });
    });
  }
  async listen() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}/hooks`;  // + "/1", "/2" ... one per endpoint
  }
  async close() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const skip = process.env.SIKA_TEST_PG_DSN ? false : 'SIKA_TEST_PG_DSN is not set';

describe('three nodes on one PostgreSQL', { skip }, () => {
  let first, others = [], receiver;
  before(async () => {
    first = await startServer({ backend: 'postgres', args: nodeArgs() });
    others = [await startNode(first), await startNode(first)];
    receiver = new Receiver();
    await receiver.listen();
  });
  after(async () => {
    for (const n of others) if (n.child.exitCode === null && n.child.signalCode === null) n.child.kill('SIGTERM');
    await Promise.all(others.map((n) => n.exited));
    if (receiver) await receiver.close();
    if (first) await first.stop();
  });

  test('every job runs once across the nodes, also when one of them is killed', async (t) => {
    const token = await merchantToken(first, 0);
    // Requests go to the two nodes that stay up (the sandbox operator's scheduled callbacks live
    // in the process that submitted the payment); the third node only does background work.
    const apis = [client(first.port, token), client(others[0].port, token)];
    // Several endpoints, each with a small per-node allowance, so that every node gets deliveries.
    const paths = [];
    for (let e = 1; e <= ENDPOINTS; e++) {
      const endpoint = await apis[0].post('/webhook/endpoints', { url: `${receiver.url}/${e}`, event_types: ['transaction.*'] });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
      paths.push(`/hooks/${e}`);
    }

    const completed = [], abandoned = [];
    const victim = others[1];
    let killed = false, heldAtDeath = 0, orphans = new Set();
    for (let i = 0; i < COLLECTIONS + ABANDONED; i++) {
      const api = apis[i % apis.length];
      const created = await api.post('/collection/intent', {
        amount: 1000 + i, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
        channel: 'PROVIDER', customer_wallet: first.demo.sandbox.msisdn.success, description: `multi-node ${i}`,
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const ref = created.body.data.transaction_reference;
      if (i % 5 === 4 && abandoned.length < ABANDONED) { abandoned.push(ref); continue; }
      if (completed.length >= COLLECTIONS) { abandoned.push(ref); continue; }
      const ex = await api.post('/collection/execute', { transaction_reference: ref });
      assert.equal(ex.status, 200, JSON.stringify(ex.body));
      completed.push(ref);
      if (!killed && completed.length === COLLECTIONS / 2) {
        // Mid-run: the victim dies after it has delivered some events, while it holds leased deliveries.
        heldAtDeath = await waitFor(() => {
          const [[held, done]] = sql(first.dsn, `SELECT (SELECT COUNT(*) FROM webhook_deliveries WHERE status =
            'pending' AND lease_owner LIKE '%:${victim.child.pid}:%'), (SELECT COUNT(*) FROM webhook_attempts WHERE
            worker LIKE '%:${victim.child.pid}:%')`);
          return Number(done) > 0 ? Number(held) : 0;
        }, 15000, 5);
        victim.child.kill('SIGKILL');
        await victim.exited;
        // What it held when it died (nobody takes these over before their lease expires).
        orphans = new Set(sql(first.dsn, `SELECT e.url, ev.event_id FROM webhook_deliveries d JOIN webhook_endpoints e
          ON e.id = d.endpoint_row JOIN events ev ON ev.id = d.event_row WHERE d.status = 'pending' AND
          d.lease_owner LIKE '%:${victim.child.pid}:%'`).map(([url, id]) => `${new URL(url).pathname} ${id}`));
        killed = true;
      }
    }
    assert.ok(killed, 'the third node was killed mid-run');
    assert.ok(heldAtDeath > 0, 'the killed node held deliveries when it died');
    const refs = [...completed, ...abandoned];

    // Every transaction reaches its final status.
    const final = await waitFor(async () => {
      for (const ref of completed) {
        const s = await apis[0].post('/collection/status', { transaction_reference: ref });
        if (s.body.data.status !== 'COMPLETED') return false;
      }
      for (const ref of abandoned) {
        const s = await apis[1].post('/collection/status', { transaction_reference: ref });
        if (s.body.data.status !== 'EXPIRED') return false;
      }
      return true;
    }, 60000, 250);
    assert.ok(final, 'every collection COMPLETED and every abandoned intent EXPIRED');

    // Every event of these transactions is delivered, and every delivery is settled.
    const inList = refs.map((r) => `'${r}'`).join(',');
    const events = sql(first.dsn, `SELECT event_id, subject, payload FROM events WHERE subject IN (${inList})`);
    // PENDING and COMPLETED for each collection, EXPIRED for each abandoned intent.
    assert.equal(events.length, 2 * completed.length + abandoned.length, 'events of every transaction');
    const delivered = await waitFor(() => events.every(([id]) => paths.every((p) => receiver.received.has(`${p} ${id}`))), 60000);
    assert.ok(delivered, 'every event reached the receiver');
    const settled = await waitFor(() => {
      const [[pending]] = sql(first.dsn, "SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'succeeded'");
      return Number(pending) === 0;
    }, 30000);
    assert.ok(settled, 'every delivery succeeded');

    // Committed effects, exactly once.
    const perStatus = new Map();
    for (const [, subject, payload] of events) {
      const key = `${subject} ${JSON.parse(payload).status}`;
      perStatus.set(key, (perStatus.get(key) || 0) + 1);
    }
    for (const ref of completed) assert.equal(perStatus.get(`${ref} COMPLETED`), 1, `${ref}: one COMPLETED`);
    for (const ref of abandoned) assert.equal(perStatus.get(`${ref} EXPIRED`), 1, `${ref}: one EXPIRED`);
    for (const [key, n] of perStatus) assert.equal(n, 1, `${key}: one event per status`);

    const deliveries = sql(first.dsn, `SELECT d.public_id, ev.event_id, (SELECT COUNT(*) FROM webhook_attempts a
      WHERE a.delivery_row = d.id AND a.outcome = 'succeeded') FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_row
      WHERE ev.subject IN (${inList})`);
    assert.equal(deliveries.length, ENDPOINTS * events.length, 'one delivery per event and endpoint');
    for (const [id, , successes] of deliveries) assert.equal(Number(successes), 1, `${id}: one recorded success`);

    // The work was shared, and a webhook-id repeats only where the killed node held the delivery.
    const workers = sql(first.dsn, "SELECT DISTINCT worker FROM webhook_attempts WHERE outcome = 'succeeded'");
    assert.ok(workers.length >= 2, `deliveries made by several nodes (${workers.map((w) => w[0]).join(', ')})`);
    const repeated = [...receiver.received].filter(([, n]) => n > 1).map(([key]) => key);
    const [[victimAttempts]] = sql(first.dsn, `SELECT COUNT(*) FROM webhook_attempts WHERE worker LIKE '%:${victim.child.pid}:%'`);
    t.diagnostic(`${heldAtDeath} deliveries leased by the node when it was killed; ${events.length} events, successes by ${workers.length} nodes, ${victimAttempts} attempts recorded by ` +
      `the killed node, ${repeated.length} webhook-ids received twice`);
    for (const key of repeated)
      assert.ok(orphans.has(key), `${key} arrived twice, but the killed node did not hold it`);
  });
});
