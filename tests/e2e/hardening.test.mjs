// Black-box tests of input and HTTP hardening, logs, readiness and metrics.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, backends, merchantToken, sikaBinary, freePort } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const METRICS_TOKEN = 'metrics-token-for-e2e-0123456789';

for (const backend of backends()) {
  describe(`hardening on ${backend}`, () => {
    let server, token;
    const post = async (p, body, headers = {}) => {
      const r = await fetch(`${server.baseUrl}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en', ...headers },
        body,
      });
      return { status: r.status, body: await r.json() };
    };
    const intent = (extra = {}) => ({
      amount: 5000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
      customer_wallet: server.demo.sandbox.msisdn.success, description: 'e2e order', ...extra,
    });
    before(async () => {
      server = await startServer({ backend, args: ['--set', `metrics.token=${METRICS_TOKEN}`, '--set', 'links.pay_per_address_per_minute=2'] });
      token = await merchantToken(server, 0);
    });
    after(async () => { if (server) await server.stop(); });

    test('duplicate JSON keys are refused, at any depth, naming the member', async () => {
      const body = JSON.stringify(intent());
      const dup = body.replace('"channel":"PROVIDER"', '"channel":"PROVIDER","channel":"WALLET"');
      assert.notEqual(dup, body);
      const r = await post('/collection/intent', dup);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.ok('channel' in r.body.error.details, JSON.stringify(r.body));
      const nested = await post('/collection/intent', body.replace('"description"', '"metadata":{"a":1,"a":2},"description"'));
      assert.equal(nested.status, 400);
      assert.ok('metadata.a' in nested.body.error.details, JSON.stringify(nested.body));
    });

    test('NUL characters are refused in every text field, JSON or form', async () => {
      const json = await post('/collection/intent', JSON.stringify(intent({ description: 'a\u0000b' })));
      assert.equal(json.status, 400, JSON.stringify(json.body));
      assert.ok('description' in json.body.error.details);
      const ref = await post('/collection/status', JSON.stringify({ transaction_reference: 'x\u0000' }));
      assert.equal(ref.status, 400);
      assert.ok('transaction_reference' in ref.body.error.details);
      const m = server.demo.merchants[0];
      const form = await fetch(`${server.authUrl}/oauth/v2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&client_id=${encodeURIComponent(m.client_id)}%00&client_secret=x`,
      });
      const formBody = await form.json();
      assert.equal(form.status, 400, JSON.stringify(formBody));
      assert.match(JSON.stringify(formBody.error.details), /client_id/, JSON.stringify(formBody));
      const query = await fetch(`${server.baseUrl}/pricing-rule/fees?country=CMR%00`, { headers: { 'x-sp-auth-token': `Bearer ${token}` } });
      assert.equal(query.status, 400);
    });

    test('numbers are written as people expect (no exponent form)', async () => {
      const r = await fetch(`${server.baseUrl}/pricing-rule/fees?country=CMR`, { headers: { 'x-sp-auth-token': `Bearer ${token}` } });
      assert.equal(r.status, 200);
      const text = await r.text();
      assert.match(text, /"fee_value":/);
      assert.doesNotMatch(text, /[0-9][eE][-+]?[0-9]/, text.slice(0, 400));
    });

    test('/metrics needs the bearer token and exposes requests by route pattern', async () => {
      assert.equal((await fetch(`${server.publicUrl}/metrics`)).status, 401);
      assert.equal((await fetch(`${server.publicUrl}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status, 401);
      await fetch(`${server.publicUrl}/healthz`);
      // Three payments of an unknown link from one address: the third is refused by the limiter.
      const pays = [];
      for (let i = 0; i < 3; ++i) {
        const pay = await fetch(`${server.baseUrl}/pay/ZZZZZZZZ/pay`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ customer_phone: '237650000000', transaction_uuid: randomUUID() }),
        });
        pays.push(pay.status);
      }
      assert.deepEqual(pays, [404, 404, 429]);
      await fetch(`${server.baseUrl}/webhook/endpoints/whe_nope`, { headers: { 'x-sp-auth-token': `Bearer ${token}` } });
      const r = await fetch(`${server.publicUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type'), /^text\/plain; version=0.0.4/);
      const text = await r.text();
      assert.match(text, /^sika_http_requests_total\{method="GET",route="\/healthz",status="200"\} [1-9]/m);
      assert.match(text, /^sika_http_requests_total\{method="GET",route="\/api\/webhook\/endpoints\/\{endpoint_id\}",status="404"\} 1$/m);
      assert.doesNotMatch(text, /whe_nope/);
      assert.match(text, /^sika_http_request_duration_seconds_bucket\{method="POST",route="\/auth\/oauth\/v2\/token",le="\+Inf"\} [1-9]/m);
      for (const name of ['sika_db_write_units_total', 'sika_db_commits_total', 'sika_webhook_attempts_failed_total',
        'sika_webhook_deliveries_pending', 'sika_webhook_oldest_pending_seconds', 'sika_http_connections_open'])
        assert.match(text, new RegExp(`^${name} `, 'm'), name);
      assert.match(text, /^sika_rate_limit_refusals_total\{limit="links_pay_per_address"\} 1$/m);
      assert.doesNotMatch(text, /ZZZZZZZZ|127\.0\.0\.1/);
      if (backend === 'sqlite') assert.match(text, /^sika_db_commit_batch_units_count [1-9]/m);
    });
  });
}

test('logs on stderr, access log on stdout; /readyz 503 until demo.json is written; /metrics loopback-only by default', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sika-e2e-'));
  const port = await freePort();
  const demoFile = path.join(dir, 'demo.json');
  const child = spawn(sikaBinary, ['serve', '--listen', `127.0.0.1:${port}`, '--db', `sqlite://${path.join(dir, 'sika.db')}`,
    '--demo', demoFile], { env: { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const seen = [];
  const deadline = Date.now() + 30000;
  for (;;) {
    assert.equal(child.exitCode, null, err);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      const file = existsSync(demoFile);
      seen.push({ status: r.status, file, body: await r.json() });
      if (r.status === 200) break;
    } catch {}
    assert.ok(Date.now() < deadline, 'never ready');
    await sleep(2);
  }
  for (const s of seen) {
    if (s.status === 200) assert.ok(s.file, 'ready before demo.json was written');
    else assert.equal(s.status, 503);
  }
  const m = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(m.status, 200);
  await fetch(`http://127.0.0.1:${port}/healthz?secret=1`);
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  rmSync(dir, { recursive: true, force: true });
  // stdout: the banner, the demo credentials (one JSON document) and the access log lines.
  assert.doesNotMatch(out, /"level":/);
  const access = out.split('\n').filter((l) => l.startsWith('{"time"'));
  assert.ok(access.length >= 2, out);
  for (const l of access) assert.ok('duration_us' in JSON.parse(l), l);
  assert.ok(access.some((l) => JSON.parse(l).path === '/healthz'));
  assert.ok(!out.includes('secret=1'));
  assert.match(err, /"level":"info"/);
  assert.doesNotMatch(err, /"request_id":/);
});

test('a missing secret_key with PostgreSQL exits 2 naming the key', () => {
  const env = { ...process.env };
  delete env.SIKA_SECRET_KEY;
  const r = spawnSync(sikaBinary, ['serve', '--db', 'postgres://sika@127.0.0.1:1/sika', '--listen', '127.0.0.1:0'], { env, encoding: 'utf8' });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /secret_key/);
});

test('curl sending a 2 MB body without Expect reads the 413', async () => {
  if (spawnSync('curl', ['--version']).status !== 0) return;
  const server = await startServer({});
  try {
    const dir = mkdtempSync(path.join(tmpdir(), 'sika-e2e-'));
    const file = path.join(dir, 'big.json');
    writeFileSync(file, Buffer.alloc(2 << 20, 'a'));
    const r = spawnSync('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-H', 'Expect:', '-H', 'content-type: application/json',
      '--data-binary', `@${file}`, `${server.baseUrl}/collection/intent`], { encoding: 'utf8' });
    assert.equal(r.stdout, '413', r.stderr);
    rmSync(dir, { recursive: true, force: true });
  } finally {
    await server.stop();
  }
});
