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
