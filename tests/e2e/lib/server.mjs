// Starts a real `build/sika serve` for black-box tests, on a free port, with a fresh
// database (SQLite file in a temp dir, or a new PostgreSQL database in SIKA_TEST_PG_DSN when
// backend === 'postgres'), seeded with the demo world.
import assert from 'node:assert/strict';
import { spawn, execFileSync, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The secret key every test server runs with.
export const secretKey = 'e2e-test-secret-key-0123456789abcdef';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const sikaBinary = process.env.SIKA_BIN || path.join(root, 'build', 'sika');

// True when a missing PostgreSQL must fail the tests instead of leaving its half out: under CI
// (CI=true) or with SIKA_REQUIRE_PG=1 (scripts/test.sh sets it).
export function postgresRequired() {
  return process.env.CI === 'true' || process.env.SIKA_REQUIRE_PG === '1';
}

// The backends to run on: SQLite, and PostgreSQL when SIKA_TEST_PG_DSN is set or required (a
// required PostgreSQL without a DSN then fails in startServer).
export function backends() {
  return process.env.SIKA_TEST_PG_DSN || postgresRequired() ? ['sqlite', 'postgres'] : ['sqlite'];
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

let dbCounter = 0;
function freshPostgres() {
  const admin = process.env.SIKA_TEST_PG_DSN;
  if (!admin) {
    throw new Error('SIKA_TEST_PG_DSN is not set, and PostgreSQL is required (CI=true or SIKA_REQUIRE_PG=1): '
      + 'run under scripts/with-postgres.sh');
  }
  const name = `sika_e2e_${process.pid}_${Date.now()}_${dbCounter++}`;
  execFileSync('psql', [admin, '-q', '-c', `CREATE DATABASE ${name}`]);
  const u = new URL(admin);
  u.pathname = '/' + name;
  return { dsn: u.toString(), drop: () => { try { execFileSync('psql', [admin, '-q', '-c', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]); } catch {} } };
}

// options: { backend, env: {SIKA_...}, args: [...], reuse }. `reuse` is a server stopped with
// crash(): the new server opens its database (and takes over removing it) instead of a fresh one.
export async function startServer(options = {}) {
  const backend = options.reuse ? options.reuse.backend : (options.backend || 'sqlite');
  const port = await freePort();
  let dir, dsn, drop = () => {};
  if (options.reuse) ({ dir, dsn, drop } = options.reuse);
  else if (backend === 'postgres') {
    ({ dsn, drop } = freshPostgres());
    dir = mkdtempSync(path.join(tmpdir(), 'sika-e2e-'));
  } else {
    dir = mkdtempSync(path.join(tmpdir(), 'sika-e2e-'));
    dsn = `sqlite://${path.join(dir, 'sika.db')}`;
  }
  const demoFile = path.join(dir, 'demo.json');
  // Readiness waits for this file: a restarted server writes it anew (with its new port).
  rmSync(demoFile, { force: true });
  const publicUrl = `http://127.0.0.1:${port}`;
  let node;
  try {
    node = await spawnServe({ port, dsn, publicUrl, args: ['--demo', demoFile, ...(options.args || [])],
      env: options.env, ready: () => existsSync(demoFile) });
  } catch (e) {
    drop();
    throw e;
  }
  const { child, exited, output } = node;
  const demo = JSON.parse(readFileSync(demoFile, 'utf8'));
  return {
    backend, port, dsn, dir, drop, demo, child, publicUrl,
    output,
    baseUrl: demo.base_url, authUrl: demo.auth_url, checkoutUrl: demo.checkout_url,
    linkUrl: demo.link_url, dashboardUrl: demo.dashboard_url,
    // Kills the process with SIGKILL (no shutdown of any kind) and keeps its database.
    async crash() {
      if (child.exitCode === null) child.kill('SIGKILL');
      return exited;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      const r = await exited;
      drop();
      rmSync(dir, { recursive: true, force: true });
      return r;
    },
  };
}

// Starts `sika serve` (on a new or an existing database: a restart, or another node) and waits
// until it answers /readyz on 127.0.0.1:port and `ready()` holds. `args` follow
// `serve --listen ... --db ... --public-url ...`; `env` adds SIKA_... variables.
export async function spawnServe({ port, dsn, publicUrl, args = [], env = {}, ready = () => true }) {
  const child = spawn(sikaBinary, ['serve', '--listen', `127.0.0.1:${port}`, '--db', dsn, '--public-url', publicUrl,
    ...args], {
    env: { ...process.env, SIKA_SECRET_KEY: secretKey, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + 30000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sika exited early (${child.exitCode}):\n${output}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok && ready()) break;
    } catch {}
    if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`sika did not become ready:\n${output}`); }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, exited, port, output: () => output };
}

// Obtains a client_credentials access token for a demo merchant.
export async function merchantToken(server, index = 0, scope = 'payments services countries providers') {
  const m = server.demo.merchants[index];
  const r = await fetch(`${server.authUrl}/oauth/v2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: m.client_id, client_secret: m.client_secret, scope }),
  });
  const body = await r.json();
  if (r.status !== 200) throw new Error(`token: ${r.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

// The x-sandbox-signature of a sandbox operator callback body, as the sandbox operator of a server
// started here signs it: t=<ms>,v1=hex(HMAC-SHA256(key, "<ms>.<body>")), its key derived from the
// secret key (src/app/context.cpp, src/payments/service.cpp).
export function sandboxCallbackSignature(body, ms = Date.now()) {
  const hex = (key, text) => createHmac('sha256', key).update(text).digest('hex');
  const pepper = hex(secretKey, 'sika:secret-hash-pepper:v1');
  const payments = hex(pepper, 'sika:payments:v1');
  const key = hex(payments, 'payments:operator-callback:sandbox');
  return `t=${ms},v1=${hex(key, `${ms}.${body}`)}`;
}

// Rows of a read on the server's database (psql on PostgreSQL, sqlite3 on the SQLite file), each
// an array of its fields as text. Fails the test if the query fails.
export function sqlRows(server, query) {
  const r = server.backend === 'postgres'
    ? spawnSync('psql', [server.dsn, '-qAtX', '-F', '|', '-c', query], { encoding: 'utf8', maxBuffer: 1 << 28 })
    : spawnSync('sqlite3', ['-separator', '|', '-cmd', '.timeout 5000', path.join(server.dir, 'sika.db'), query],
      { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`${query}: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).map((l) => l.split('|'));
}

// Polls `fn` every 100 ms until it returns something truthy (returned), or fails with `what`
// (a text or a function making one) after `ms`.
export async function until(fn, what, ms = 40000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(typeof what === 'function' ? what() : what);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls async `fn` every `every` ms until it returns something truthy, or `ms` have passed;
// returns its last value either way (the caller asserts on it).
export async function waitFor(fn, ms = 60000, every = 100) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > deadline) return v;
    await sleep(every);
  }
}

// `sika admin <args> --json` on the server's database: the parsed answer (throws when it fails).
export function admin(server, ...args) {
  return JSON.parse(execFileSync(sikaBinary, ['admin', ...args, '--json', '--db', server.dsn],
    { env: { ...process.env, SIKA_SECRET_KEY: secretKey }, encoding: 'utf8' }));
}

// `sika admin <args> --json` on the database `dsn`, for a command that may fail:
// { code, json (null when it printed nothing), stderr }.
export function adminJson(dsn, ...args) {
  const r = spawnSync(sikaBinary, ['admin', '--db', dsn, ...args, '--json'],
    { env: { ...process.env, SIKA_SECRET_KEY: secretKey }, encoding: 'utf8' });
  return { code: r.status, json: r.stdout.trim() ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

// Asserts that `sika admin check-ledger` finds the server's ledger clean.
export function checkLedger(server) {
  const r = adminJson(server.dsn, 'check-ledger');
  assert.equal(r.code, 0, r.stderr + JSON.stringify(r.json));
  assert.equal(r.json.ok, true, JSON.stringify(r.json));
}

// A server on `backend` and, when `twoNodes` (by default on PostgreSQL), a second node on its
// database and public URL, on its own port. `second` is null on one node; `ports` lists the
// nodes' ports; stop() ends the second node, then the first (and drops the database).
export async function startTwoNodes({ backend = 'postgres', args = [], env = {}, twoNodes = backend === 'postgres' } = {}) {
  const first = await startServer({ backend, args, env });
  let second = null;
  try {
    if (twoNodes) second = await spawnServe({ port: await freePort(), dsn: first.dsn, publicUrl: first.publicUrl, args, env });
  } catch (e) {
    await first.stop();
    throw e;
  }
  return {
    first, second,
    ports: second ? [first.port, second.port] : [first.port],
    async stop() {
      if (second && second.child.exitCode === null && second.child.signalCode === null) second.child.kill('SIGTERM');
      if (second) await second.exited;
      await first.stop();
    },
  };
}

// A JSON request in English: { status, body (the parsed JSON, when it is), text }.
export async function call(url, { method = 'GET', headers = {}, body } = {}) {
  const r = await fetch(url, { method, headers: { 'accept-language': 'en', ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, body: json, text };
}

// A prod merchant of Cameroon named `name` and the auth header of a `payments` token of its prod
// client: { merchant, auth }.
export async function prodMerchant(server, name) {
  const merchant = admin(server, 'create-merchant', '--name', `${name} shop`, '--country', 'CMR', '--environment', 'prod');
  const client = admin(server, 'create-client', '--name', name, '--merchant', merchant.matricule, '--environment', 'prod');
  const r = await call(`${server.authUrl}/oauth/v2/token`, { method: 'POST', body: {
    grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: 'payments' } });
  if (r.status !== 200) throw new Error(`prod token: ${r.text}`);
  return { merchant, auth: { 'x-sp-auth-token': `Bearer ${r.body.access_token}` } };
}

// The MTN MoMo connector's configuration for a server (docs/operators.md), pointed at `baseUrl`
// (the MTN double's, tests/e2e/doubles/mtn_momo.mjs, whose default credentials these are): plain
// keys by --set, credentials by the environment as a deployment passes them. { args, env }.
export function mtnConnector(baseUrl, extraArgs = []) {
  return {
    args: ['--set', 'connectors.mtn_momo.kind=mtn_momo', '--set', `connectors.mtn_momo.base_url=${baseUrl}`,
      '--set', 'connectors.mtn_momo.target_environment=mtncameroon', ...extraArgs],
    env: {
      SIKA_CONNECTORS_MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'collection-subscription-key',
      SIKA_CONNECTORS_MTN_MOMO_COLLECTION_API_USER: 'a5b2c3d4-0000-4000-8000-00000000c011',
      SIKA_CONNECTORS_MTN_MOMO_COLLECTION_API_KEY: 'collection-api-key',
      SIKA_CONNECTORS_MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'disbursement-subscription-key',
      SIKA_CONNECTORS_MTN_MOMO_DISBURSEMENT_API_USER: 'a5b2c3d4-0000-4000-8000-00000000d150',
      SIKA_CONNECTORS_MTN_MOMO_DISBURSEMENT_API_KEY: 'disbursement-api-key',
    },
  };
}
