// The faults a node on PostgreSQL must survive, each on a PostgreSQL cluster the test owns (initdb
// and pg_ctl in a temporary directory, tests/e2e/lib/pgcluster.mjs), so that it can stop, restart
// and reconfigure its own server:
//   - the server restarted under write load, with a fast shutdown and then an immediate one: the
//     node reconnects by itself, /readyz answers 503 while the database is away and 200 after, every
//     request is answered 200 or 503 with Retry-After (never a 500, a hang or a reset), and every
//     acknowledged intent is there exactly once afterwards, the ledger clean;
//   - a statement waiting on a lock past the request's deadline is cancelled and its request answered;
//   - with the server's max_connections reached, requests are answered 503 with Retry-After, and
//     all is well again once the slots are free.
// Skipped, saying why, where the PostgreSQL server binaries are absent.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnServe, freePort, merchantToken, adminJson, sleep, waitFor, postgresRequired } from './lib/server.mjs';
import { pgBinaries, startCluster } from './lib/pgcluster.mjs';

const binaries = pgBinaries();
const skip = binaries ? false : 'PostgreSQL server binaries not found (apt-get install postgresql, or set SIKA_PG_BIN)';
if (!binaries && postgresRequired()) throw new Error(skip);

// A node on the cluster's database, seeded with the demo world: { port, demo, api(method, path, body), stop() }.
async function startNode(cluster, args = []) {
  const dir = mkdtempSync(path.join(tmpdir(), 'sika-pgf-'));
  const demoFile = path.join(dir, 'demo.json');
  const port = await freePort();
  const node = await spawnServe({ port, dsn: cluster.dsn, publicUrl: `http://127.0.0.1:${port}`,
    args: ['--demo', demoFile, ...args], ready: () => existsSync(demoFile) });
  const demo = JSON.parse(readFileSync(demoFile, 'utf8'));
  const token = await merchantToken({ demo, authUrl: demo.auth_url });
  return {
    ...node, demo,
    // One API call: { status, retryAfter, body, error } (error: no answer within 20 s, or a reset).
    async api(method, p, body) {
      try {
        const r = await fetch(`${demo.base_url}${p}`, {
          method, signal: AbortSignal.timeout(20000),
          headers: { 'content-type': 'application/json', 'accept-language': 'en', 'x-sp-auth-token': `Bearer ${token}` },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await r.text();
        let json = null;
        try { json = JSON.parse(text); } catch {}
        return { status: r.status, retryAfter: r.headers.get('retry-after'), body: json, text };
      } catch (e) {
        return { status: 0, error: String(e && e.cause ? e.cause : e) };
      }
    },
    async readyz() {
      try { return (await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(20000) })).status; } catch { return 0; }
    },
    async stop() {
      if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGTERM');
      await node.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function intentBody(node, i) {
  return { amount: 1000 + (i % 500), currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
    channel: 'PROVIDER', customer_wallet: node.demo.sandbox.msisdn.success, description: `pg fault ${i}` };
}

// The answers that are allowed while the database comes and goes: 200, or 503 with Retry-After and
// the error envelope. Returns the list of the others, described.
function unexpected(answers) {
  return answers.filter((a) => !(a.status === 200 || (a.status === 503 && a.retryAfter && Number(a.retryAfter) >= 1
    && a.body && a.body.success === false && a.body.code === 503)))
    .map((a) => `${a.status} ${a.retryAfter || ''} ${a.error || a.text || ''}`.slice(0, 300));
}

function checkLedger(dsn) {
  const r = adminJson(dsn, 'check-ledger');
  assert.equal(r.code, 0, r.stderr + JSON.stringify(r.json));
  assert.equal(r.json.ok, true, JSON.stringify(r.json));
}

describe('PostgreSQL restarted under write load', { skip, timeout: 300000 }, () => {
  let cluster, node;
  before(async () => {
    cluster = await startCluster();
    node = await startNode(cluster);
  });
  after(async () => {
    if (node) await node.stop();
    if (cluster) await cluster.destroy();
  });

  test('fast then immediate shutdown: 200 or 503 with Retry-After, /readyz 503 then 200, acknowledged intents once each, ledger clean', async () => {
    const answers = [];
    let stopLoad = false, n = 0;
    const worker = async () => {
      while (!stopLoad) {
        const body = intentBody(node, n++);
        const a = await node.api('POST', '/collection/intent', body);
        a.uuid = body.transaction_uuid;
        answers.push(a);
        if (a.status !== 200) await sleep(20);
      }
    };
    const workers = Array.from({ length: 24 }, worker);
    const readiness = [];
    for (const mode of ['fast', 'immediate']) {
      await sleep(1500);
      const before = answers.filter((a) => a.status === 200).length;
      assert.ok(before > 0, 'intents are acknowledged before the restart');
      cluster.stop(mode);
      const away = await waitFor(async () => (await node.readyz()) === 503, 20000);
      readiness.push(`${mode}: away ${away}`);
      assert.ok(away, `/readyz answers 503 while the database is away (${mode})`);
      await sleep(1500);  // requests keep coming while the database is away
      const during = answers.length;
      cluster.start();
      const back = await waitFor(async () => (await node.readyz()) === 200, 30000);
      assert.ok(back, `/readyz answers 200 once the database is back (${mode})`);
      // Writes are acknowledged again without restarting the node.
      const ok = await waitFor(() => answers.slice(during).some((a) => a.status === 200), 30000);
      assert.ok(ok, `intents are acknowledged again after the ${mode} restart`);
    }
    await sleep(1000);
    stopLoad = true;
    await Promise.all(workers);

    const bad = unexpected(answers);
    assert.deepEqual(bad.slice(0, 10), [], `${bad.length} answers were neither 200 nor 503 with Retry-After`);
    const refused = answers.filter((a) => a.status === 503).length;
    assert.ok(refused > 0, 'requests made while the database was away were answered 503');

    // Every acknowledged intent is there exactly once, under the reference it was acknowledged with.
    const acked = answers.filter((a) => a.status === 200);
    const rows = cluster.psql('SELECT transaction_uuid, reference FROM pay_transactions');
    const byUuid = new Map();
    for (const [uuid, ref] of rows) byUuid.set(uuid, [...(byUuid.get(uuid) || []), ref]);
    const missing = acked.filter((a) => (byUuid.get(a.uuid) || []).length !== 1
      || byUuid.get(a.uuid)[0] !== a.body.data.transaction_reference);
    assert.deepEqual(missing.map((a) => a.uuid).slice(0, 10), [], `${missing.length} of ${acked.length} acknowledged intents are not there exactly once`);
    checkLedger(cluster.dsn);
  });
});

describe('a statement waiting on a lock past the request deadline', { skip, timeout: 120000 }, () => {
  let cluster, node;
  before(async () => {
    cluster = await startCluster();
    node = await startNode(cluster, ['--set', 'db_statement_timeout_ms=1000']);
  });
  after(async () => {
    if (node) await node.stop();
    if (cluster) await cluster.destroy();
  });

  test('is cancelled and its request answered 503 with Retry-After; the row is free afterwards', async () => {
    const created = await node.api('POST', '/collection/intent', intentBody(node, 1));
    assert.equal(created.status, 200, created.text);
    const ref = created.body.data.transaction_reference;
    const statusBefore = cluster.psql(`SELECT status FROM pay_transactions WHERE reference = '${ref}'`);
    // Another session holds the transaction's row lock, as a long report or a stuck session would.
    const holder = cluster.session(`BEGIN; SELECT id FROM pay_transactions WHERE reference = '${ref}' FOR UPDATE; SELECT 'locked';`);
    await waitFor(() => holder.output().includes('locked'), 10000, 20);
    const started = Date.now();
    const ex = await node.api('POST', '/collection/execute', { transaction_reference: ref });
    const took = Date.now() - started;
    assert.equal(ex.status, 503, `${ex.status} ${ex.error || ex.text}`);
    assert.equal(ex.retryAfter, '1');
    assert.equal(ex.body.success, false);
    assert.ok(took < 6000, `answered within the deadline and its retries (${took} ms)`);
    // Nothing of the cancelled request stayed: the transaction's status is unchanged, and once the
    // lock is gone the same call goes through.
    assert.deepEqual(cluster.psql(`SELECT status FROM pay_transactions WHERE reference = '${ref}'`), statusBefore);
    await holder.end();
    const again = await node.api('POST', '/collection/execute', { transaction_reference: ref });
    assert.equal(again.status, 200, again.text);
    checkLedger(cluster.dsn);
  });
});

describe('the server\'s max_connections reached', { skip, timeout: 120000 }, () => {
  let cluster, node;
  before(async () => {
    // A small server: 24 slots, none kept for superusers (the node connects as one here).
    cluster = await startCluster({ max_connections: 24, superuser_reserved_connections: 0 });
    // The node may open up to 2 writers + 16 pool connections: more than the slots left below.
    node = await startNode(cluster, ['--set', 'db_writers=2', '--set', 'db_pool_size=16']);
  });
  after(async () => {
    if (node) await node.stop();
    if (cluster) await cluster.destroy();
  });

  test('requests are answered 200 or 503 with Retry-After, never at random; all 200 once the slots are free', async () => {
    // Other clients take every free slot.
    const holders = [];
    for (let i = 0; i < 24; i++) {
      const h = cluster.session("SELECT 'held';");
      holders.push(h);
    }
    await waitFor(() => holders.filter((h) => h.output().includes('held')).length
      + holders.filter((h) => h.output().includes('too many clients')).length === holders.length, 15000, 50);
    assert.ok(holders.some((h) => h.output().includes('too many clients')), 'every slot is taken');
    const answers = [];
    const worker = async (w) => {
      for (let i = 0; i < 10; i++) {
        const body = intentBody(node, w * 100 + i);
        const a = await node.api('POST', '/collection/intent', body);
        a.uuid = body.transaction_uuid;
        answers.push(a);
        if (a.status === 200) {
          const s = await node.api('POST', '/collection/status', { transaction_reference: a.body.data.transaction_reference });
          answers.push(s);
        }
      }
    };
    await Promise.all(Array.from({ length: 32 }, (_, w) => worker(w)));
    const bad = unexpected(answers);
    assert.deepEqual(bad.slice(0, 10), [], `${bad.length} answers were neither 200 nor 503 with Retry-After`);
    assert.ok(answers.some((a) => a.status === 503), 'some requests found no connection and were answered 503');
    for (const h of holders) await h.end();
    // Slots free again: the node opens connections by itself.
    const after = await Promise.all(Array.from({ length: 32 }, (_, i) => node.api('POST', '/collection/intent', intentBody(node, 5000 + i))));
    assert.deepEqual(after.map((a) => a.status).filter((s) => s !== 200), [], after.map((a) => a.text).join('\n').slice(0, 500));
    for (const a of answers.filter((x) => x.status === 200 && x.uuid)) {
      assert.deepEqual(cluster.psql(`SELECT COUNT(*) FROM pay_transactions WHERE transaction_uuid = '${a.uuid}'`), [['1']]);
    }
    checkLedger(cluster.dsn);
  });
});
