// Black-box tests of the catalog routes with real tokens: envelopes and pagination, every bad
// parameter named, 403 on an ungranted country, scopes, responses valid against the OpenAPI
// document, and an operator's change (admin CLI, another process) reaching the server within
// catalog.refresh_ms.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer, backends, merchantToken, sikaBinary } from './lib/server.mjs';

const REFRESH_MS = 300;

for (const backend of backends()) {
  describe(`catalog on ${backend}`, () => {
    let server, cmrToken, civToken, doc;
    before(async () => {
      server = await startServer({ backend, env: { SIKA_CATALOG_REFRESH_MS: String(REFRESH_MS) } });
      cmrToken = await merchantToken(server, 0);
      civToken = await merchantToken(server, 1);
      doc = await (await fetch(`${server.baseUrl}/openapi.json`)).json();
    });
    after(async () => { if (server) await server.stop(); });

    const get = async (path, token, query = {}, headers = {}) => {
      const qs = new URLSearchParams(query).toString();
      const r = await fetch(`${server.baseUrl}${path}${qs ? `?${qs}` : ''}`, {
        headers: { ...(token ? { 'x-sp-auth-token': `Bearer ${token}` } : {}), ...headers },
      });
      return { status: r.status, body: await r.json() };
    };
    const admin = (...args) => {
      const r = spawnSync(sikaBinary, ['admin', '--db', server.dsn, ...args, '--json'], {
        env: { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' }, encoding: 'utf8',
      });
      return { code: r.status, json: r.stdout.trim() ? JSON.parse(r.stdout) : null, stderr: r.stderr };
    };

    // A small validator for the subset of OpenAPI 3.0 schemas the catalog uses.
    const resolve = (s) => (s.$ref ? resolve(s.$ref.split('/').slice(1).reduce((o, k) => o[k], doc)) : s);
    const check = (value, schema, where) => {
      const s = resolve(schema);
      if (value === null) { assert.ok(s.nullable, `${where} is null but not nullable`); return; }
      if (s.allOf) { for (const part of s.allOf) check(value, part, where); return; }
      if (s.enum) assert.ok(s.enum.includes(value), `${where}: ${value} not in ${s.enum}`);
      if (s.pattern) assert.match(String(value), new RegExp(s.pattern), where);
      switch (s.type) {
        case 'integer': assert.ok(Number.isInteger(value), `${where} is not an integer`); break;
        case 'number': assert.equal(typeof value, 'number', where); break;
        case 'string': assert.equal(typeof value, 'string', where); break;
        case 'boolean': assert.equal(typeof value, 'boolean', where); break;
        case 'array': assert.ok(Array.isArray(value), where); value.forEach((v, i) => check(v, s.items, `${where}[${i}]`)); break;
        case 'object':
          assert.equal(typeof value, 'object', where);
          for (const k of s.required || []) assert.ok(k in value, `${where} lacks ${k}`);
          for (const [k, p] of Object.entries(s.properties || {})) if (k in value) check(value[k], p, `${where}.${k}`);
          break;
        default: break;
      }
      if (s.minimum !== undefined) assert.ok(value >= s.minimum, `${where} below minimum`);
    };
    const checkResponse = (path, status, body) => {
      const schema = doc.paths[path].get.responses[String(status)].content['application/json'].schema;
      check(body, schema, `${path} ${status}`);
    };
    const expectBad = (r, fields) => {
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.success, false);
      assert.equal(r.body.message, 'empty_data');
      assert.deepEqual(Object.keys(r.body.error.details).sort(), [...fields].sort());
    };

    test('the OpenAPI document describes the four catalog routes', () => {
      for (const p of ['/country/list', '/pricing-rule/fees', '/service/list', '/provider/list']) {
        assert.ok(doc.paths[p]?.get, `${p} missing`);
        assert.ok(doc.paths[p].get.tags.includes('Catalog'));
      }
      const country = doc.paths['/pricing-rule/fees'].get.parameters.find((p) => p.name === 'country');
      assert.equal(country.required, true);
    });

    test('country/list: envelope, pagination, names in the locale', async () => {
      const r = await get('/country/list', cmrToken, {}, { 'accept-language': 'en' });
      assert.equal(r.status, 200);
      checkResponse('/country/list', 200, r.body);
      assert.equal(r.body.success, true);
      assert.equal(r.body.code, 200);
      assert.equal(r.body.locale, 'en');
      assert.deepEqual(r.body.data.map((c) => c.code), ['CIV', 'CMR', 'GAB', 'SEN']);
      assert.deepEqual(r.body.meta.pagination, { page: 1, limit: 25, total: 4, pages: 1, has_next: false, has_previous: false });
      assert.equal(r.body.data.find((c) => c.code === 'SEN').name, 'Senegal');
      const fr = await get('/country/list', cmrToken, { page: 2, limit: 3 }, { 'accept-language': 'fr' });
      assert.deepEqual(fr.body.meta.pagination, { page: 2, limit: 3, total: 4, pages: 2, has_next: false, has_previous: true });
      assert.deepEqual(fr.body.data.map((c) => [c.code, c.name]), [['SEN', 'Sénégal']]);
      expectBad(await get('/country/list', cmrToken, { page: 0, limit: 101 }), ['page', 'limit']);
    });

    test('authentication and scopes', async () => {
      const none = await get('/country/list', null);
      assert.equal(none.status, 401);
      const bad = await get('/pricing-rule/fees', 'not-a-jwt', { country: 'CMR' });
      assert.equal(bad.status, 401);
      const paymentsOnly = await merchantToken(server, 0, 'payments');
      const denied = await get('/country/list', paymentsOnly);
      assert.equal(denied.status, 403);
      assert.equal(denied.body.message, 'access_denied');
      assert.equal((await get('/pricing-rule/fees', paymentsOnly, { country: 'CMR' })).status, 200);
      const countriesOnly = await merchantToken(server, 0, 'countries');
      assert.equal((await get('/country/list', countriesOnly)).status, 200);
      assert.equal((await get('/pricing-rule/fees', countriesOnly, { country: 'CMR' })).status, 403);
      assert.equal((await get('/service/list', countriesOnly)).status, 403);
    });

    test('pricing-rule/fees: every field, filters, the token tier', async () => {
      const r = await get('/pricing-rule/fees', cmrToken, { country: 'CMR' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      checkResponse('/pricing-rule/fees', 200, r.body);
      assert.ok(r.body.data.length > 0);
      const fields = ['id', 'min_amount', 'max_amount', 'operation', 'user_tier', 'fee_value', 'fee_type', 'reward_value',
        'sponsor_reward_value', 'incoming_service', 'outgoing_service'];
      for (const rule of r.body.data) {
        for (const f of fields) assert.ok(f in rule, `rule lacks ${f}`);
        assert.equal(rule.user_tier, 1);  // the demo merchants' tier
        for (const side of ['incoming_service', 'outgoing_service']) {
          if (rule[side] === null) continue;
          assert.deepEqual(Object.keys(rule[side]).sort(), ['code', 'country', 'currency', 'id']);
          assert.equal(rule[side].country, 'CMR');
          assert.equal(rule[side].currency, 'XAF');
        }
      }
      const mtn = await get('/pricing-rule/fees', cmrToken, { country: 'CMR', service_code: 'MTN_MOMO_CMR', operation: 'COLLECTION' });
      assert.equal(mtn.body.data.length, 1);
      assert.equal(mtn.body.data[0].fee_type, 'PERCENTAGE');
      assert.equal(mtn.body.data[0].fee_value, 2);
      assert.equal(mtn.body.data[0].incoming_service.code, 'MTN_MOMO_CMR');
      const tier2 = await get('/pricing-rule/fees', cmrToken, { country: 'CMR', user_tier: 2, limit: 2 });
      assert.ok(tier2.body.data.every((x) => x.user_tier === 2));
      assert.equal(tier2.body.meta.pagination.limit, 2);
      assert.ok(tier2.body.meta.pagination.total > 2);
      assert.equal(tier2.body.meta.pagination.has_next, true);
    });

    test('pricing-rule/fees: bad parameters are named, ungranted countries refused', async () => {
      expectBad(await get('/pricing-rule/fees', cmrToken, {}), ['country']);
      expectBad(await get('/pricing-rule/fees', cmrToken, {
        country: 'CM', operation: 'REFUND', user_tier: 'x', page: -1, limit: 0, service_code: 'a b',
      }), ['country', 'operation', 'user_tier', 'page', 'limit', 'service_code']);
      expectBad(await get('/pricing-rule/fees', cmrToken, { country: 'CMR', incoming_service_code: 'WAVE_CIV' }),
        ['incoming_service_code']);
      const denied = await get('/pricing-rule/fees', cmrToken, { country: 'CIV' });
      assert.equal(denied.status, 403);
      assert.equal(denied.body.message, 'access_denied');
      assert.equal(denied.body.success, false);
      assert.equal((await get('/pricing-rule/fees', civToken, { country: 'CMR' })).status, 403);
      const civ = await get('/pricing-rule/fees', civToken, { country: 'CIV' });
      assert.equal(civ.status, 200);
      assert.ok(civ.body.data.every((x) => [x.incoming_service, x.outgoing_service].every((s) => s === null || s.currency === 'XOF')));
    });

    test('service/list and provider/list', async () => {
      const s = await get('/service/list', cmrToken, { country: 'CMR' });
      assert.equal(s.status, 200);
      checkResponse('/service/list', 200, s.body);
      assert.deepEqual(s.body.data.map((x) => x.code), ['MTN_MOMO_CMR', 'ORANGE_MONEY_CMR', 'SIKA_WALLET_CMR']);
      const wallets = await get('/service/list', cmrToken, { kind: 'wallet' });
      assert.equal(wallets.body.meta.pagination.total, 4);
      expectBad(await get('/service/list', cmrToken, { kind: 'bank', active: 'maybe' }), ['kind', 'active']);
      const p = await get('/provider/list', cmrToken, { country: 'GAB' });
      assert.equal(p.status, 200);
      checkResponse('/provider/list', 200, p.body);
      assert.deepEqual(p.body.data.map((x) => x.code), ['AIRTEL', 'SIKA']);
    });

    test('an operator change reaches the running server within catalog.refresh_ms', async () => {
      const before = await get('/service/list', civToken, { provider: 'WAVE' });
      assert.deepEqual(before.body.data.map((x) => x.code), ['WAVE_CIV', 'WAVE_SEN']);
      const off = admin('catalog', 'service', 'deactivate', 'WAVE_SEN');
      assert.equal(off.code, 0, off.stderr);
      assert.equal(off.json.change, 'updated');
      assert.equal(off.json.record.active, false);
      const t0 = Date.now();
      let seen;
      while (Date.now() - t0 < 5000) {
        seen = await get('/service/list', civToken, { provider: 'WAVE' });
        if (seen.body.data.length === 1) break;
        await sleep(25);
      }
      const elapsed = Date.now() - t0;
      assert.deepEqual(seen.body.data.map((x) => x.code), ['WAVE_CIV']);
      assert.ok(elapsed < REFRESH_MS + 1500, `took ${elapsed} ms`);

      const quote = admin('catalog', 'quote', '--operation', 'COLLECTION', '--incoming-service', 'MTN_MOMO_CMR',
        '--amount', '10000', '--tier', '1');
      assert.equal(quote.code, 0, quote.stderr);
      assert.equal(quote.json.fee, 200);
      assert.equal(quote.json.rule_code, 'CMR_MTN_COLLECTION_T1');
      const bad = admin('catalog', 'rule', 'add', 'X1', '--country', 'CMR', '--operation', 'COLLECTION',
        '--user-tier', '1', '--fee-type', 'PERCENTAGE', '--fee-value', '150');
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /fee_value/);
      const on = admin('catalog', 'service', 'activate', 'WAVE_SEN');
      assert.equal(on.code, 0, on.stderr);
    });
  });
}
