// The wallet link API, black-box, on SQLite and on PostgreSQL when SIKA_TEST_PG_DSN is set: a
// partner links a user (link/new), the user's consent code is read from the sandbox outbox (as
// `sika admin outbox list` shows it), charges pass within the consent's limits and are refused
// beyond, each side unlinks (the partner through the API, the user on the wallet page), a wrong
// key is 401 and another partner's link 404; then the per-address limit (429 + Retry-After) with
// a small configured limit, on one node and across two nodes on one PostgreSQL, and in reserved
// blocks across two nodes (one node's unused block, given back when it stops).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startServer, startTwoNodes, backends, sikaBinary, admin } from './lib/server.mjs';

const secret = 'e2e-test-secret-key-0123456789abcdef';

// The newest code sent to `phone` whose message names `subject`.
function codeFor(server, phone, subject) {
  const messages = admin(server, 'outbox', 'list', '--to', phone);
  const m = messages.find((x) => x.body.includes(subject));
  assert.ok(m, `no message to ${phone} about ${subject}`);
  return m.body.match(/\d{6}/)[0];
}

for (const backend of backends()) {
  describe(`wallet link API (${backend})`, () => {
    let server, key, otherKey;
    before(async () => {
      server = await startServer({ backend, env: { SIKA_WALLETS_LINK_PER_PAYMENT: '5000', SIKA_WALLETS_LINK_PER_PERIOD: '7000' } });
      key = server.demo.link_api_key;
      otherKey = admin(server, 'create-api-key', '--merchant', server.demo.merchants[2].matricule, '--kind', 'link').api_key;
    });
    after(async () => { await server?.stop(); });

    const call = async (path, { method = 'POST', body, query, apiKey = key } = {}) => {
      const url = new URL(`${server.linkUrl}/api/agent/link/${path}`);
      for (const [k, v] of Object.entries(query || {})) url.searchParams.set(k, v);
      const headers = { 'content-type': 'application/json', 'accept-language': 'en' };
      if (apiKey) headers['x-api-key'] = apiKey;
      const r = await fetch(url, { method, headers, body: body ? JSON.stringify(body) : undefined });
      return { status: r.status, headers: r.headers, body: await r.json() };
    };
    const charge = (apikey, amount, uuid = randomUUID()) =>
      call('charge', { body: { apikey, amount, transaction_uuid: uuid, description: 'e2e order' } });

    test('link, consent by code, charges within the limits and refused beyond, unlink by each side', async () => {
      const query = { email: 'ama@example.com', phone: '690000042', phoneCountry: '+237' };
      const linked = await call('new', { method: 'GET', query });
      assert.equal(linked.status, 200, JSON.stringify(linked.body));
      assert.equal(linked.body.message, 'link success');
      const { matricule, apikey, link, consent } = linked.body.data;
      assert.match(matricule, /^WAL-/);
      assert.match(apikey, /^wk_/);
      assert.equal(link.status, 'PENDING');
      assert.equal(consent.sent, true);
      // The same call again (POST this time): the same wallet and key.
      const again = await call('new', { body: query });
      assert.equal(again.status, 200);
      assert.equal(again.body.data.matricule, matricule);
      assert.equal(again.body.data.apikey, apikey);

      // Nothing moves before the consent; the code from the outbox states the limits.
      assert.equal((await charge(apikey, 1000)).status, 409);
      const messages = admin(server, 'outbox', 'list', '--to', '+237690000042');
      assert.ok(messages.some((m) => m.body.includes(link.reference) && /5.000 XAF/.test(m.body) && /7.000 XAF/.test(m.body)));
      const wrong = await call('confirm', { body: { apikey, otp: '000001' } });
      assert.equal(wrong.status, 400);
      assert.equal(wrong.body.message, 'invalid_otp');
      const confirmed = await call('confirm', { body: { apikey, otp: codeFor(server, '+237690000042', link.reference) } });
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      assert.equal(confirmed.body.data.status, 'ACTIVE');

      // Fund the wallet (operator top-up), then charge.
      execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', '237690000042', '--currency', 'XAF', '--amount', '20000',
        '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
      const ok = await charge(apikey, 3000);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.data.status, 'COMPLETED');
      assert.equal(ok.body.data.channel, 'WALLET');
      assert.equal(ok.body.data.confirmation_method, 'CONSENT');
      const perPayment = await charge(apikey, 6000);
      assert.equal(perPayment.status, 400);
      assert.equal(perPayment.body.message, 'limit_exceeded');
      assert.ok(perPayment.body.error.details.amount);
      const perPeriod = await charge(apikey, 5000);
      assert.equal(perPeriod.status, 400);
      assert.equal(perPeriod.body.message, 'limit_exceeded');
      const rest = await charge(apikey, 4000);
      assert.equal(rest.body.data.status, 'COMPLETED');
      const payout = await call('payout', { body: { apikey, amount: 1500, transaction_uuid: randomUUID() } });
      assert.equal(payout.status, 200, JSON.stringify(payout.body));
      assert.equal(payout.body.data.status, 'COMPLETED');
      const status = await call('status', { method: 'GET', query: { apikey } });
      assert.equal(status.body.data.period.spent, 7000);
      assert.equal(status.body.data.period.remaining, 0);

      // Both payments and the payout are in the wallet's history and the ledger is clean.
      const shown = admin(server, 'wallets', 'show', '--msisdn', '237690000042');
      assert.deepEqual(shown.history.slice(0, 3).map((h) => [h.kind, h.amount]), [['PAYOUT', 1500], ['COLLECTION', -4000], ['COLLECTION', -3000]]);
      assert.equal(shown.balances[0].available, 20000 - 7000 + 1500);
      execFileSync(sikaBinary, ['admin', 'check-ledger', '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });

      // A wrong key, no key; another partner's link does not exist for it.
      assert.equal((await call('status', { method: 'GET', query: { apikey }, apiKey: 'lk_test_not-a-key-not-a-key-123' })).status, 401);
      assert.equal((await call('status', { method: 'GET', query: { apikey }, apiKey: null })).status, 401);
      const foreign = await call('status', { method: 'GET', query: { apikey }, apiKey: otherKey });
      assert.equal(foreign.status, 404);
      assert.ok(foreign.body.error.details.apikey);
      const foreignCharge = await call('charge', { apiKey: otherKey, body: { apikey, amount: 100, transaction_uuid: randomUUID() } });
      assert.equal(foreignCharge.status, 404);

      // The partner unlinks: the key stops working.
      const unlinked = await call('unlink', { body: { apikey } });
      assert.equal(unlinked.body.data.status, 'UNLINKED');
      assert.equal(unlinked.body.data.unlinked_by, 'partner');
      assert.equal((await charge(apikey, 100)).status, 409);

      // Linked again (new key, new consent), then the user unlinks on the wallet page.
      const relinked = await call('new', { body: query });
      const key2 = relinked.body.data.apikey;
      assert.notEqual(key2, apikey);
      await call('confirm', { body: { apikey: key2, otp: codeFor(server, '+237690000042', relinked.body.data.link.reference) } });
      const page = `${server.checkoutUrl}/wallet`;
      const form = (fields, cookie) => fetch(page, {
        method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
        body: new URLSearchParams(fields).toString(),
      });
      assert.equal((await form({ action: 'send', phone: '+237 690 000 042', lang: 'en' })).status, 200);
      const signin = await form({ action: 'verify', phone: '237690000042', otp: codeFor(server, '+237690000042', 'wallet'), lang: 'en' });
      assert.equal(signin.status, 303);
      const setCookie = signin.headers.get('set-cookie');
      assert.match(setCookie, /HttpOnly/);
      assert.match(setCookie, /SameSite=Strict/);
      const cookie = setCookie.split(';')[0];
      const html = await (await fetch(`${page}?lang=en`, { headers: { cookie } })).text();
      assert.match(html, /Boutique Akwa/);
      const csrf = html.match(/name="csrf" value="([^"]+)"/)[1];
      // Without the CSRF token the change is refused.
      assert.equal((await form({ action: 'unlink', link: relinked.body.data.link.reference }, cookie)).status, 403);
      const done = await form({ action: 'unlink', link: relinked.body.data.link.reference, csrf }, cookie);
      assert.equal(done.status, 303);
      const after = await call('status', { method: 'GET', query: { apikey: key2 } });
      assert.equal(after.body.data.status, 'UNLINKED');
      assert.equal(after.body.data.unlinked_by, 'user');
    });

    test('the link API has its own valid OpenAPI document', async () => {
      const doc = await (await fetch(`${server.linkUrl}/openapi.json`)).json();
      assert.equal(doc.servers[0].url, server.linkUrl);
      await SwaggerParser.validate(structuredClone(doc));
      assert.ok(doc.paths['/api/agent/link/new'].get);
    });

    test('bad input is a 400 naming each field', async () => {
      const r = await call('new', { method: 'GET', query: { email: 'x', phone: '69 00' } });
      assert.equal(r.status, 400);
      assert.equal(r.body.message, 'empty_data');
      for (const f of ['email', 'phone', 'phoneCountry']) assert.ok(r.body.error.details[f], f);
      const c = await call('charge', { body: { amount: -5 } });
      assert.equal(c.status, 400);
      for (const f of ['apikey', 'amount', 'transaction_uuid']) assert.ok(c.body.error.details[f], f);
    });
  });

  describe(`link API rate limit (${backend})`, () => {
    let server;
    before(async () => {
      server = await startServer({ backend, env: { SIKA_WALLETS_LINK_API_PER_HOUR: '5', SIKA_WALLETS_LINK_API_BLOCK_AFTER: '3' } });
    });
    after(async () => { await server?.stop(); });

    test('past the hourly limit: 429 with Retry-After and the envelope, then the address is blocked', async () => {
      const hit = () => fetch(`${server.linkUrl}/api/agent/link/status?apikey=x`, { headers: { 'x-api-key': server.demo.link_api_key } });
      for (let i = 1; i <= 5; i++) assert.equal((await hit()).status, 404, `request ${i}`);
      const refused = await hit();
      assert.equal(refused.status, 429);
      const retry = Number(refused.headers.get('retry-after'));
      assert.ok(retry >= 1, `Retry-After ${retry}`);
      const body = await refused.json();
      assert.equal(body.success, false);
      assert.equal(body.message, 'rate_limited');
      assert.ok(body.error.details.retry_after >= 1);
      for (let i = 0; i < 3; i++) await hit();
      // Repeated excess blocks the address (wallets.link_api_block_seconds): still refused.
      const blocked = await hit();
      assert.equal(blocked.status, 429);
      assert.ok(Number(blocked.headers.get('retry-after')) >= 1);
    });
  });
}

// Two serve nodes on one PostgreSQL share the per-address budget: 10 per hour for the address,
// 14 requests spread over both nodes at once, exactly 10 answered (the others 429).
// Two serve nodes on one PostgreSQL started with `env` before the suite's tests, stopped after;
// `hit(port)` is one link API request (a 404 when counted, 429 when refused).
function twoNodes(env) {
  const nodes = {
    hit: (port) => fetch(`http://127.0.0.1:${port}/link/api/agent/link/status?apikey=x`,
      { headers: { 'x-api-key': nodes.first.demo.link_api_key } }).then((r) => r.status),
  };
  let running;
  before(async () => {
    running = await startTwoNodes({ env });
    ({ first: nodes.first, second: nodes.second } = running);
  });
  after(() => running?.stop());
  return nodes;
}

describe('link API rate limit across two nodes on one PostgreSQL', { skip: !backends().includes('postgres') && 'no PostgreSQL' }, () => {
  const nodes = twoNodes({ SIKA_WALLETS_LINK_API_PER_HOUR: '10' });

  test('the budget is counted once across the nodes', async () => {
    const ports = [nodes.first.port, nodes.second.port];
    const answers = await Promise.all(Array.from({ length: 14 }, (_, i) => nodes.hit(ports[i % 2])));
    assert.equal(answers.filter((s) => s === 404).length, 10, answers.join(','));
    assert.equal(answers.filter((s) => s === 429).length, 4, answers.join(','));
  });
});

// The same with a budget large enough for blocks (120 per hour: blocks of 10 reserved per node): an
// address is refused early by at most the other node's unused block, and the node that stops gives
// that block back, so the budget is served exactly.
describe('link API rate limit in reserved blocks across two nodes on one PostgreSQL', { skip: !backends().includes('postgres') && 'no PostgreSQL' }, () => {
  const nodes = twoNodes({ SIKA_WALLETS_LINK_API_PER_HOUR: '120', SIKA_WALLETS_LINK_API_BLOCK_AFTER: '1000' });

  test('one node\'s unused block is all the other misses, until the first stops and gives it back', async () => {
    const { first, second, hit } = nodes;
    const statuses = async (port, n) => {
      const out = [];
      for (let i = 0; i < n; i += 10) out.push(...await Promise.all(Array.from({ length: 10 }, () => hit(port))));
      return out;
    };
    // The second node serves one request from its block of 10 and keeps the other 9.
    assert.equal(await hit(second.port), 404);
    // The first node serves the rest of the budget and no more, in blocks, under concurrency.
    const burst = await statuses(first.port, 150);
    assert.equal(burst.filter((s) => s === 404).length, 120 - 10, burst.join(','));
    assert.equal(burst.filter((s) => s === 429).length, 150 - 110);
    // The second node stops and gives its 9 back: the first serves exactly those.
    second.child.kill('SIGTERM');
    await second.exited;
    const after = await statuses(first.port, 20);
    assert.equal(after.filter((s) => s === 404).length, 9, after.join(','));
  });
});
