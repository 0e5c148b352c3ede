// POST {base_url}/transactions/fees/quote: field errors named one by one, the merchant API key
// (x-api-key) or a token, what another environment may not collect through, the quote equal to
// the collection that follows (same fee engine, same tier), and the per-address hourly budget of
// key-authenticated requests (429 with Retry-After), on each backend.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, admin, mtnConnector } from './lib/server.mjs';

async function tokenFor(server, client_id, client_secret, scope = 'payments') {
  const r = await fetch(`${server.authUrl}/oauth/v2/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id, client_secret, scope }) });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return body.access_token;
}

async function post(server, path, headers, body) {
  const r = await fetch(`${server.baseUrl}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'accept-language': 'en', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, body: json, text, headers: r.headers };
}

const quote = (server, headers, body) => post(server, '/transactions/fees/quote', headers, body);

// A 400 empty_data whose details name exactly `fields` (a string each).
function assertFieldErrors(r, fields, what) {
  assert.equal(r.status, 400, `${what}: ${r.text}`);
  assert.equal(r.body.success, false, what);
  assert.equal(r.body.message, 'empty_data', `${what}: ${r.text}`);
  assert.deepEqual(Object.keys(r.body.error.details).sort(), [...fields].sort(), `${what}: ${r.text}`);
  for (const f of fields) assert.equal(typeof r.body.error.details[f], 'string', `${what}: ${f}`);
}

for (const backend of backends()) {
  describe(`fee quote on ${backend}`, () => {
    let server, token, m, key;
    const provider = 'MTN_MOMO_CMR';
    before(async () => {
      // An MTN connector configured (a quote never calls it): prod merchants are quoted MTN's service as
      // their collections would be priced; without a connector both answer 503 provider_unavailable.
      server = await startServer({ backend, ...mtnConnector('http://127.0.0.1:9') });
      token = await merchantToken(server, 0);
      m = server.demo.merchants[0];
      key = { 'x-api-key': m.api_key };
    });
    after(async () => { if (server) await server.stop(); });
    const bearer = () => ({ 'x-sp-auth-token': `Bearer ${token}` });

    test('bad input: 400 empty_data naming each bad field', async () => {
      assertFieldErrors(await quote(server, key, {}), ['provider', 'amount', 'currency'], 'missing fields');
      assertFieldErrors(await quote(server, key, { provider: 5, amount: '5000', currency: 978, feeBearer: true }),
        ['provider', 'amount', 'currency', 'feeBearer'], 'wrong types');
      assertFieldErrors(await quote(server, key, { provider: 'NOPE_XYZ', amount: 5000, currency: 'XAF' }), ['provider'],
        'unknown provider');
      assertFieldErrors(await quote(server, key, { provider, amount: 0, currency: 'XAF' }), ['amount'], 'zero amount');
      assertFieldErrors(await quote(server, key, { provider, amount: -100, currency: 'XAF' }), ['amount'], 'negative amount');
      assertFieldErrors(await quote(server, key, { provider, amount: 1e13, currency: 'XAF' }), ['amount'], 'huge amount');
      assertFieldErrors(await quote(server, key, { provider, amount: 1e30, currency: 'XAF' }), ['amount'], 'beyond int64');
      assertFieldErrors(await quote(server, key, { provider, amount: 10.5, currency: 'XAF' }), ['amount'], 'fraction');
      assertFieldErrors(await quote(server, key, { provider, amount: 5000, currency: 'XAF', feeBearer: 'BOTH' }),
        ['feeBearer'], 'bad feeBearer');
      assertFieldErrors(await quote(server, key, { provider, amount: 5000, currency: 'XOF' }), ['currency'],
        'another currency than the service');
      assertFieldErrors(await quote(server, key, { provider, amount: 5000, currency: 'xx' }), ['currency'], 'bad currency');
      assertFieldErrors(await quote(server, key, { provider, amount: 5000, currency: 'XAF', fee: 1 }), ['fee'],
        'unknown field');
      const notJson = await quote(server, key, '{"provider":');
      assert.equal(notJson.status, 400, notJson.text);
      // A service of a country the merchant is not granted (CIV for a CMR merchant).
      const foreign = await quote(server, key, { provider: 'MTN_MOMO_CIV', amount: 5000, currency: 'XOF' });
      assert.equal(foreign.status, 403, foreign.text);
      assert.ok(foreign.body.error.details.provider, foreign.text);
    });

    test('a missing, wrong or revoked key, or a token without the payments scope, is refused', async () => {
      const body = { provider, amount: 5000, currency: 'XAF' };
      for (const headers of [{}, { 'x-api-key': 'mk_test_wrong' }, { 'x-api-key': m.api_key.slice(0, -2) },
        { 'x-sp-auth-token': 'Bearer nope' }]) {
        const r = await quote(server, headers, body);
        assert.equal(r.status, 401, `${JSON.stringify(headers)}: ${r.text}`);
        assert.equal(r.body.success, false);
      }
      const issued = admin(server, 'create-api-key', '--merchant', m.matricule);
      assert.equal((await quote(server, { 'x-api-key': issued.api_key }, body)).status, 200);
      admin(server, 'revoke-api-key', '--id', String(issued.id));
      assert.equal((await quote(server, { 'x-api-key': issued.api_key }, body)).status, 401, 'a revoked key');
      // A token that lacks the payments scope.
      const narrow = await merchantToken(server, 0, 'services');
      const r = await quote(server, { 'x-sp-auth-token': `Bearer ${narrow}` }, body);
      assert.equal(r.status, 403, r.text);
    });

    test('what a prod merchant cannot collect through is refused, as the collection refuses it', async () => {
      const prod = admin(server, 'create-merchant', '--name', 'Quote prod shop', '--country', 'CMR', '--environment', 'prod');
      const prodKey = admin(server, 'create-api-key', '--merchant', prod.matricule).api_key;
      const client = admin(server, 'create-client', '--name', 'Quote prod', '--merchant', prod.matricule,
        '--environment', 'prod');
      const prodToken = await tokenFor(server, client.client_id, client.client_secret);
      // The platform wallet collects with a one-time code only the sandbox delivers.
      const wallet = { provider: server.demo.sandbox.wallet_provider, amount: 5000, currency: 'XAF' };
      assertFieldErrors(await quote(server, { 'x-api-key': prodKey }, wallet), ['provider'], 'prod, wallet service, key');
      const intent = await post(server, '/collection/intent', { 'x-sp-auth-token': `Bearer ${prodToken}` }, {
        ...wallet, customer_wallet: '237690000321', transaction_uuid: randomUUID() });
      assert.equal(intent.status, 400, `the collection refuses it too: ${intent.text}`);
      assertFieldErrors(await quote(server, { 'x-sp-auth-token': `Bearer ${prodToken}` }, wallet), ['provider'],
        'prod, wallet service, token');
      // The sandbox merchant may.
      const ok = await quote(server, key, wallet);
      assert.equal(ok.status, 200, ok.text);
      // An operator's service is quoted for both environments.
      const prodQuote = await quote(server, { 'x-api-key': prodKey }, { provider, amount: 5000, currency: 'XAF' });
      assert.equal(prodQuote.status, 200, prodQuote.text);
    });

    test('the collection that follows a quote has its fee and amounts', async () => {
      const check = (q, tx, what) => {
        assert.equal(tx.fee, q.feeAmount, `${what}: fee`);
        assert.equal(tx.required_total, q.payableAmount, `${what}: required_total`);
        assert.equal(tx.amount, q.merchantNetAmount, `${what}: amount, what the merchant is credited`);
        assert.equal(tx.required_total - tx.fee, q.merchantNetAmount, `${what}: credited`);
        assert.equal(tx.currency, q.currency, `${what}: currency`);
      };
      // CUSTOMER bears the fee: a collection intent (the customer has no platform wallet, so AUTO
      // keeps the operator), by key and by token alike.
      for (const amount of [5000, 12345, 999_999]) {
        const q = await quote(server, key, { provider, amount, currency: 'XAF', feeBearer: 'CUSTOMER' });
        assert.equal(q.status, 200, q.text);
        assert.deepEqual(q.body.data, { provider, baseAmount: amount, feeAmount: q.body.data.feeAmount,
          payableAmount: amount + q.body.data.feeAmount, merchantNetAmount: amount, currency: 'XAF', feeBearer: 'CUSTOMER' });
        assert.ok(q.body.data.feeAmount > 0);
        const byToken = await quote(server, bearer(), { provider, amount, currency: 'XAF' });
        assert.deepEqual(byToken.body.data, q.body.data, 'a token quotes as the key does');
        const intent = await post(server, '/collection/intent', bearer(), {
          provider, amount, currency: 'XAF', customer_wallet: server.demo.sandbox.msisdn.success, transaction_uuid: randomUUID() });
        assert.equal(intent.status, 200, intent.text);
        check(q.body.data, intent.body.data, `intent ${amount}`);
      }
      // The platform wallet's own service (channel WALLET).
      const wq = await quote(server, key, { provider: server.demo.sandbox.wallet_provider, amount: 3000, currency: 'XAF' });
      const wi = await post(server, '/collection/intent', bearer(), { provider: server.demo.sandbox.wallet_provider,
        amount: 3000, currency: 'XAF', channel: 'WALLET', customer_wallet: '237690000100', transaction_uuid: randomUUID() });
      assert.equal(wi.status, 200, wi.text);
      check(wq.body.data, wi.body.data, 'wallet intent');
      // MERCHANT bears the fee: a payment link with feeBearer MERCHANT, paid.
      const q = await quote(server, key, { provider, amount: 8000, currency: 'XAF', feeBearer: 'MERCHANT' });
      assert.equal(q.status, 200, q.text);
      assert.equal(q.body.data.payableAmount, 8000);
      assert.equal(q.body.data.merchantNetAmount, 8000 - q.body.data.feeAmount);
      const link = await post(server, '/payment-links', bearer(), {
        title: 'Quoted', amount: 8000, currency: 'XAF', provider, feeBearer: 'MERCHANT' });
      assert.equal(link.status, 201, link.text);
      const sc = link.body.data.short_code ?? link.body.data.shortCode;
      const paid = await post(server, `/pay/${sc}/pay`, {}, {
        customer_phone: server.demo.sandbox.msisdn.success, transaction_uuid: randomUUID(), provider });
      assert.equal(paid.status, 200, paid.text);
      check(q.body.data, paid.body.data, 'payment link, merchant bears the fee');
      // A fee the merchant would bear that is not less than the price: refused by both.
      assertFieldErrors(await quote(server, key, { provider, amount: 1, currency: 'XAF', feeBearer: 'MERCHANT' }),
        ['amount'], 'fee not less than the price');
    });

    test('at the merchant tier: a tier change moves the quote and the collection together', async () => {
      const third = server.demo.merchants.find((x) => x.matricule === 'MCH-CM-0002') ?? server.demo.merchants[0];
      const k = { 'x-api-key': third.api_key };
      const before1 = await quote(server, k, { provider, amount: 10000, currency: 'XAF' });
      assert.equal(before1.status, 200, before1.text);
      admin(server, 'set-merchant-grants', '--merchant', third.matricule, '--country', 'CMR', '--tier', '2');
      const after2 = await quote(server, k, { provider, amount: 10000, currency: 'XAF' });
      assert.equal(after2.status, 200, after2.text);
      assert.ok(after2.body.data.feeAmount < before1.body.data.feeAmount,
        `tier 2 is cheaper: ${before1.body.data.feeAmount} then ${after2.body.data.feeAmount}`);
      if (third.client_id) {
        const t = await tokenFor(server, third.client_id, third.client_secret);
        const intent = await post(server, '/collection/intent', { 'x-sp-auth-token': `Bearer ${t}` }, {
          provider, amount: 10000, currency: 'XAF', customer_wallet: server.demo.sandbox.msisdn.success, transaction_uuid: randomUUID() });
        assert.equal(intent.status, 200, intent.text);
        assert.equal(intent.body.data.fee, after2.body.data.feeAmount);
      }
    });
  });

  describe(`fee quote budget per address on ${backend}`, () => {
    let server;
    before(async () => { server = await startServer({ backend, env: { SIKA_CHECKOUT_MERCHANT_API_PER_HOUR: '5' } }); });
    after(async () => { if (server) await server.stop(); });

    test('key-authenticated requests beyond the hourly budget: 429 with Retry-After, wrong keys counted too', async () => {
      const m = server.demo.merchants[0];
      const body = { provider: 'MTN_MOMO_CMR', amount: 5000, currency: 'XAF' };
      for (let i = 0; i < 3; i++) assert.equal((await quote(server, { 'x-api-key': m.api_key }, body)).status, 200);
      for (let i = 0; i < 2; i++) assert.equal((await quote(server, { 'x-api-key': 'mk_test_guess' }, body)).status, 401);
      for (const k of [m.api_key, 'mk_test_guess']) {
        const r = await quote(server, { 'x-api-key': k }, body);
        assert.equal(r.status, 429, r.text);
        assert.equal(r.body.message, 'rate_limited');
        const retry = Number(r.headers.get('retry-after'));
        assert.ok(Number.isInteger(retry) && retry > 0 && retry <= 3600, `Retry-After: ${r.headers.get('retry-after')}`);
      }
      // A token is not held by the key budget.
      const token = await merchantToken(server, 0);
      assert.equal((await quote(server, { 'x-sp-auth-token': `Bearer ${token}` }, body)).status, 200);
      const metrics = await (await fetch(`${server.publicUrl}/metrics`)).text();
      assert.match(metrics, /^sika_rate_limit_refusals_total\{limit="merchant_api_per_address"\} [1-9]/m);
    });
  });
}
