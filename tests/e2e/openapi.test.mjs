// Every documented operation of the four OpenAPI documents (gateway, link API, identity, hosted
// checkout), driven for real against `sika serve` on each backend: each response's status must be
// documented for its operation and its body must validate, with a strict validator (Ajv strict
// mode, OpenAPI 3.0 formats only), against the documented schema of its content type. The test
// fails when a documented operation was not exercised, with a success and, where the operation
// documents one, an error response.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import { startServer, backends, merchantToken, sandboxCallbackSignature, admin } from './lib/server.mjs';
import { CookieJar, parseForm } from './lib/forms.mjs';
import { DocValidator } from './lib/openapi.mjs';

const DOCS = { gateway: 'baseUrl', link: 'linkUrl', identity: 'authUrl', checkout: 'checkoutUrl' };

class Recorder {
  constructor(server) {
    this.server = server;
    this.validators = {};
    this.seen = new Map(); // "doc METHOD template" -> Set of statuses
    this.problems = [];
  }

  async load() {
    for (const [name, key] of Object.entries(DOCS)) {
      const r = await fetch(`${this.server[key]}/openapi.json`);
      assert.equal(r.status, 200, `${name} /openapi.json`);
      const doc = await r.json();
      assert.equal(doc.servers[0].url, this.server[key]);
      this.validators[name] = new DocValidator(name, doc);
      this.validators[name].compileAll();
    }
  }

  // Calls a documented operation and checks the answer against the document. `path` fills the
  // template's {params}; `query` is appended; `json` or `form` is the body.
  // `on` is another server to call (its answers are recorded and checked the same way).
  async call(doc, method, template, { path = {}, query, headers = {}, json, form, raw, on = this.server } = {}) {
    const v = this.validators[doc];
    const op = v.operation(method, template);
    const key = `${doc} ${method} ${template}`;
    if (!op) throw new Error(`${key} is not documented`);
    let url = on[DOCS[doc]] + template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(path[k] ?? 'x'));
    if (query) url += `?${new URLSearchParams(query)}`;
    const h = { 'accept-language': 'en', ...headers };
    let body;
    if (json !== undefined) {
      h['content-type'] = 'application/json';
      body = JSON.stringify(json);
    } else if (form !== undefined) {
      h['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    } else if (raw !== undefined) {
      body = raw;
    }
    const res = await fetch(url, { method, headers: h, body, redirect: 'manual' });
    const text = await res.text();
    if (!this.seen.has(key)) this.seen.set(key, new Set());
    this.seen.get(key).add(res.status);
    const documented = v.response(op, res.status);
    const where = `${key} -> ${res.status}`;
    let parsed;
    try { parsed = JSON.parse(text); } catch {}
    if (!documented) {
      this.problems.push(`${where}: status not documented (${text.slice(0, 200)})`);
      return { status: res.status, body: parsed, text, headers: res.headers };
    }
    const type = (res.headers.get('content-type') || '').split(';')[0].trim();
    const content = documented.content || {};
    if (res.status >= 300 && res.status < 400 && !res.headers.get('location'))
      this.problems.push(`${where}: a redirect without Location`);
    // The hosted checkout's return carries its signed ServiceData in the Location's query.
    if (doc === 'checkout' && template === '/session/{reference}/return' && res.status === 303) {
      const location = new URL(res.headers.get('location'), url);
      const data = location.searchParams.get('service_data');
      if (location.origin === new URL(url).origin) {
        // back to the session's own page: nothing is returned to the shop yet
      } else if (!data || !/^[0-9a-f]{64}$/.test(location.searchParams.get('signature') || ''))
        this.problems.push(`${where}: no service_data and signature in ${location}`);
      else {
        const validate = v.compile({ $ref: '#/components/schemas/ServiceData' });
        if (!validate(JSON.parse(data)))
          this.problems.push(`${where}: service_data ${JSON.stringify(validate.errors.slice(0, 5))} in ${data.slice(0, 300)}`);
      }
    }
    if (Object.keys(content).length && text.length) {
      const media = content[type];
      if (!media) this.problems.push(`${where}: content type ${type} not documented (${Object.keys(content)})`);
      else if (media.schema && type === 'application/json') {
        const validate = v.compile(media.schema);
        if (!validate(parsed)) {
          this.problems.push(`${where}: ${JSON.stringify(validate.errors.slice(0, 5))} in ${text.slice(0, 300)}`);
        }
      }
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  }

  // Documented operations without a success (2xx/3xx) or, when one is documented, an error.
  unexercised() {
    const out = [];
    for (const [name, v] of Object.entries(this.validators))
      for (const [path, item] of Object.entries(v.doc.paths))
        for (const [method, op] of Object.entries(item)) {
          if (!op?.responses) continue;
          const key = `${name} ${method.toUpperCase()} ${path}`;
          const got = [...(this.seen.get(key) || [])];
          const codes = Object.keys(op.responses).map(Number);
          if (codes.some((c) => c < 400) && !got.some((s) => s < 400)) out.push(`${key}: no success`);
          if (codes.some((c) => c >= 400) && !got.some((s) => s >= 400)) out.push(`${key}: no error`);
        }
    return out;
  }
}

const otpOf = (body) => body.match(/\b(\d{6})\b/)?.[1];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Asks `probe` until it returns something (at most ~10 s).
async function until(probe) {
  for (let i = 0; i < 100; i++) {
    const v = await probe();
    if (v) return v;
    await sleep(100);
  }
  return null;
}

// A PKCE verifier and its S256 challenge.
const PKCE_VERIFIER = 'dBjftJeZ4CVP-mJ92IGAoWfLwe4CGUGcA0_F9BDvpDk';
const PKCE = { verifier: PKCE_VERIFIER, challenge: createHash('sha256').update(PKCE_VERIFIER).digest('base64url') };

// A recorded call that sends a page's cookies and keeps those it sets.
async function browse(api, jar, doc, method, template, opts = {}) {
  const headers = { ...(opts.headers || {}), ...(jar.header() ? { cookie: jar.header() } : {}) };
  return jar.keep(await api.call(doc, method, template, { ...opts, headers }));
}

// Signs in on the authorization page the query describes and approves: the 303 to the client.
async function approveAuthorization(api, jar, query, user) {
  const page = await browse(api, jar, 'identity', 'GET', '/oauth/v2/authorize', { query });
  assert.equal(page.status, 200, page.text.slice(0, 300));
  const form = parseForm(page.text);
  assert.ok(form, 'the authorization page has a form');
  const done = await browse(api, jar, 'identity', 'POST', '/oauth/v2/authorize', { form: {
    ...form.fields, email: user.email, password: user.password, action: 'approve' } });
  assert.equal(done.status, 303, done.text.slice(0, 300));
  return new URL(done.headers.get('location'));
}

for (const backend of backends()) {
  describe(`OpenAPI documents against real responses on ${backend}`, () => {
    let server, api, token, m, receiver, hookUrl;
    before(async () => {
      // A local receiver for the webhook deliveries (loopback targets allowed for the test).
      receiver = http.createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok')); });
      await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
      hookUrl = `http://127.0.0.1:${receiver.address().port}/hook`;
      server = await startServer({ backend, args: ['--set', 'webhooks.allow_private_targets=true',
        '--set', 'webhooks.poll_interval_ms=50', '--set', 'identity.signup_enabled=true'] });
      api = new Recorder(server);
      await api.load();
      token = await merchantToken(server, 0);
      m = server.demo.merchants[0];
    });
    after(async () => {
      if (server) await server.stop();
      if (receiver) await new Promise((r) => receiver.close(r));
    });
    const auth = () => ({ 'x-sp-auth-token': `Bearer ${token}` });

    test('the gateway: catalog, collections, payouts, balance, quote, sandbox messages', async () => {
      const a = auth();
      const countries = await api.call('gateway', 'GET', '/country/list', { headers: a });
      assert.equal(countries.status, 200);
      await api.call('gateway', 'GET', '/country/list', { headers: a, query: { page: 'zero' } });
      await api.call('gateway', 'GET', '/country/list');
      const services = await api.call('gateway', 'GET', '/service/list', { headers: a });
      assert.equal(services.status, 200);
      await api.call('gateway', 'GET', '/service/list', {});
      await api.call('gateway', 'GET', '/provider/list', { headers: a });
      await api.call('gateway', 'GET', '/provider/list', {});
      const predicted = await api.call('gateway', 'GET', '/provider/predict', { headers: a,
        query: { msisdn: '+237 699 00 00 10' } });
      assert.equal(predicted.status, 200, predicted.text);
      assert.equal((await api.call('gateway', 'GET', '/provider/predict', { headers: a, query: { msisdn: '699000010' } }))
        .status, 400, 'a national number needs country');
      await api.call('gateway', 'GET', '/provider/predict', {});
      const fees = await api.call('gateway', 'GET', '/pricing-rule/fees', { headers: a, query: { country: m.countries[0] } });
      assert.equal(fees.status, 200, fees.text);
      assert.equal((await api.call('gateway', 'GET', '/pricing-rule/fees', { headers: a })).status, 400, 'country is required');
      await api.call('gateway', 'GET', '/pricing-rule/fees', {});
      await api.call('gateway', 'GET', '/openapi.json', {});

      const provider = server.demo.sandbox.provider;
      const msisdn = server.demo.sandbox.msisdn.success;
      const currency = services.body.data.find((s) => s.code === provider).currency;
      // Quote, then pay: the collection's fee, total and credited amount are the quote's.
      const quote = await api.call('gateway', 'POST', '/transactions/fees/quote', {
        headers: a, json: { provider, amount: 5000, currency, feeBearer: 'CUSTOMER' } });
      assert.equal(quote.status, 200, quote.text);
      const intent = await api.call('gateway', 'POST', '/collection/intent', { headers: a, json: {
        amount: 5000, currency, provider, customer_wallet: msisdn, transaction_uuid: randomUUID() } });
      assert.equal(intent.status, 200, intent.text);
      const tx = intent.body.data;
      assert.equal(tx.fee, quote.body.data.feeAmount);
      assert.equal(tx.required_total, quote.body.data.payableAmount);
      assert.equal(tx.amount, quote.body.data.merchantNetAmount);
      // The same with the merchant API key of a shop plugin.
      const viaKey = await api.call('gateway', 'POST', '/transactions/fees/quote', {
        headers: { 'x-api-key': m.api_key }, json: { provider, amount: 5000, currency } });
      assert.equal(viaKey.status, 200, viaKey.text);
      assert.deepEqual(viaKey.body.data, quote.body.data);
      const bad = await api.call('gateway', 'POST', '/transactions/fees/quote', {
        headers: a, json: { provider: 'NOPE', amount: -1, currency: 'xx', feeBearer: 'BOTH', extra: 1 } });
      assert.equal(bad.status, 400);
      for (const f of ['provider', 'amount', 'currency', 'feeBearer', 'extra']) assert.ok(bad.body.error.details[f], f);
      assert.equal((await api.call('gateway', 'POST', '/transactions/fees/quote', {
        headers: { 'x-api-key': 'mk_test_wrong' }, json: { provider, amount: 5000, currency } })).status, 401);

      await api.call('gateway', 'POST', '/collection/intent', { headers: a, json: { amount: 'x' } });
      await api.call('gateway', 'POST', '/collection/status', { headers: a, json: { transaction_reference: tx.transaction_reference } });
      await api.call('gateway', 'POST', '/collection/status', { headers: a, json: { transaction_reference: 'TX-none' } });
      await api.call('gateway', 'POST', '/collection/execute', { headers: a, json: { transaction_reference: tx.transaction_reference } });
      await api.call('gateway', 'POST', '/collection/execute', { headers: a, json: { transaction_reference: 'TX-none' } });
      // The sandbox completes the collection: its net amount is then available for a payout.
      const completed = await until(async () => {
        const s = await api.call('gateway', 'POST', '/collection/status', { headers: a, json: { transaction_reference: tx.transaction_reference } });
        return s.body?.data?.status === 'COMPLETED' ? s.body.data : null;
      });
      assert.ok(completed, 'the collection completed');
      const second = await api.call('gateway', 'POST', '/collection/intent', { headers: a, json: {
        amount: 700, currency, provider, customer_wallet: msisdn, transaction_uuid: randomUUID() } });
      await api.call('gateway', 'POST', '/collection/cancel', { headers: a, json: { transaction_reference: second.body.data.transaction_reference } });
      await api.call('gateway', 'POST', '/collection/cancel', { headers: a, json: {} });
      await api.call('gateway', 'GET', '/balance', { headers: a });
      await api.call('gateway', 'GET', '/balance', {});
      const day = new Date().toISOString().slice(0, 10);
      const days = { currency, from: day, to: day };
      await api.call('gateway', 'GET', '/statements', { headers: a, query: days });
      await api.call('gateway', 'GET', '/statements', { headers: a, query: { ...days, format: 'csv', separator: 'semicolon' } });
      await api.call('gateway', 'GET', '/statements', { headers: a, query: { ...days, to: 'tomorrow' } });
      await api.call('gateway', 'GET', '/statements', { query: days });
      await api.call('gateway', 'POST', '/verification/account-holder', { headers: a, json: { provider, wallet: msisdn } });
      await api.call('gateway', 'POST', '/verification/account-holder', { headers: a, json: {} });
      const payout = await api.call('gateway', 'POST', '/disbursement/intent', { headers: a, json: {
        amount: 100, currency, provider, customer_wallet: msisdn, transaction_uuid: randomUUID() } });
      await api.call('gateway', 'POST', '/disbursement/intent', { headers: a, json: {} });
      assert.equal(payout.status, 200, payout.text);
      const paid = await api.call('gateway', 'POST', '/disbursement/status', { headers: a, json: { transaction_reference: payout.body.data.transaction_reference } });
      assert.equal(paid.status, 200, paid.text);
      await api.call('gateway', 'POST', '/disbursement/status', { headers: a, json: { transaction_reference: 'TX-none' } });
      // Refunds of the completed collection (docs/refunds.md).
      const refunded = await api.call('gateway', 'POST', '/collection/refund', { headers: a, json: {
        transaction_reference: completed.transaction_reference, refund_uuid: randomUUID(), amount: 100, reason: 'REQUESTED_BY_CUSTOMER' } });
      assert.equal(refunded.status, 200, refunded.text);
      await api.call('gateway', 'POST', '/collection/refund', { headers: a, json: { transaction_reference: completed.transaction_reference } });
      await api.call('gateway', 'POST', '/collection/refund', { headers: a, json: {
        transaction_reference: second.body.data.transaction_reference, refund_uuid: randomUUID(), reason: 'OTHER' } });
      await api.call('gateway', 'POST', '/collection/refund', { headers: a, json: {
        transaction_reference: 'TX-none', refund_uuid: randomUUID(), reason: 'OTHER' } });
      const refundStatus = await api.call('gateway', 'POST', '/collection/refund/status', { headers: a, json: { refund_reference: refunded.body.data.refund_reference } });
      assert.equal(refundStatus.status, 200, refundStatus.text);
      await api.call('gateway', 'POST', '/collection/refund/status', { headers: a, json: { refund_reference: 'RF-none' } });
      await api.call('gateway', 'POST', '/collection/refund/status', { headers: a, json: {} });
      const refunds = await api.call('gateway', 'GET', '/refunds', { headers: a, query: { transaction_reference: completed.transaction_reference } });
      assert.equal(refunds.status, 200, refunds.text);
      await api.call('gateway', 'GET', '/refunds', { headers: a, query: { status: 'NOPE' } });
      await api.call('gateway', 'POST', '/operator/callback/{connector}', { path: { connector: 'sandbox' }, json: {} });
      // The operator's signed callback for the completed collection (told again: applied once).
      const report = { provider_reference: completed.provider_reference, status: 'SUCCESSFUL' };
      const callback = await api.call('gateway', 'POST', '/operator/callback/{connector}', { path: { connector: 'sandbox' },
        headers: { 'x-sandbox-signature': sandboxCallbackSignature(JSON.stringify(report)) }, json: report });
      assert.equal(callback.status, 200, callback.text);
      await api.call('gateway', 'POST', '/operator/callback/{connector}', { path: { connector: 'nope' }, json: {} });
      // MTN calls back with PUT (the same route): a sandbox callback told with PUT, and a refused one.
      const put = await api.call('gateway', 'PUT', '/operator/callback/{connector}', { path: { connector: 'sandbox' },
        headers: { 'x-sandbox-signature': sandboxCallbackSignature(JSON.stringify(report)) }, json: report });
      assert.equal(put.status, 200, put.text);
      await api.call('gateway', 'PUT', '/operator/callback/{connector}', { path: { connector: 'sandbox' }, json: {} });
    });

    test('sandbox messages: an OTP read through the API pays a WALLET collection', async () => {
      const a = auth();
      // A number of the demo's sandbox (CMR, 6xxxxxxxx) that is neither a magic nor a demo number
      // (src/payments/sandbox.cpp): its WALLET code is a random one, sent to its phone.
      const number = '237690000321';
      admin(server, 'fund-wallet', '--msisdn', number, '--currency', 'XAF', '--amount', '20000');
      const intent = await api.call('gateway', 'POST', '/collection/intent', { headers: a, json: {
        amount: 300, currency: 'XAF', provider: server.demo.sandbox.wallet_provider, channel: 'WALLET',
        customer_wallet: number, transaction_uuid: randomUUID() } });
      assert.equal(intent.status, 200, intent.text);
      const tx = intent.body.data;
      assert.equal(tx.confirmation_method, 'OTP');
      const list = await api.call('gateway', 'GET', '/sandbox/messages', { headers: a, query: { phone: `+${number}`, limit: 5 } });
      assert.equal(list.status, 200, list.text);
      const message = list.body.data.find((x) => x.body.includes(tx.transaction_reference));
      assert.ok(message, `the code's message is listed: ${list.text}`);
      const code = otpOf(message.body);
      assert.ok(code, message.body);
      const paid = await api.call('gateway', 'POST', '/collection/execute', { headers: a, json: {
        transaction_reference: tx.transaction_reference, otp: code } });
      assert.equal(paid.status, 200, paid.text);
      assert.equal(paid.body.data.status, 'COMPLETED');
      assert.equal((await api.call('gateway', 'GET', '/sandbox/messages', { headers: a, query: { phone: 'abc' } })).status, 400);
      assert.equal((await api.call('gateway', 'GET', '/sandbox/messages', { query: { phone: number } })).status, 401);
    });

    test('payment links, subscriptions and webhooks', async () => {
      const a = auth();
      const provider = server.demo.sandbox.provider;
      const services = (await api.call('gateway', 'GET', '/service/list', { headers: a })).body.data;
      const currency = services.find((s) => s.code === provider).currency;
      const created = await api.call('gateway', 'POST', '/payment-links', { headers: a, json: {
        title: 'Docs', amount: 1500, currency, provider } });
      await api.call('gateway', 'POST', '/payment-links', { headers: a, json: { amount: -1 } });
      const link = created.body?.data;
      const ref = link?.reference ?? 'none';
      await api.call('gateway', 'GET', '/payment-links', { headers: a });
      await api.call('gateway', 'GET', '/payment-links', { headers: a, query: { status: 'NOPE' } });
      for (const t of ['/payment-links/{reference}', '/payment-links/{reference}/qr.svg', '/payment-links/{reference}/qr.png']) {
        await api.call('gateway', 'GET', t, { headers: a, path: { reference: ref } });
        await api.call('gateway', 'GET', t, { headers: a, path: { reference: 'PL-none' } });
      }
      await api.call('gateway', 'PATCH', '/payment-links/{reference}', { headers: a, path: { reference: ref }, json: { title: 'Docs 2' } });
      await api.call('gateway', 'PATCH', '/payment-links/{reference}', { headers: a, path: { reference: 'PL-none' }, json: {} });
      if (link?.short_code ?? link?.shortCode) {
        const sc = link.short_code ?? link.shortCode;
        await api.call('gateway', 'POST', '/pay/{shortCode}/pay', { path: { shortCode: sc }, json: { provider, phone: server.demo.sandbox.msisdn.success } });
        const payed = await api.call('gateway', 'POST', '/pay/{shortCode}/pay', { path: { shortCode: sc }, json: {
          provider, customer_phone: server.demo.sandbox.msisdn.success, transaction_uuid: randomUUID() } });
        assert.equal(payed.status, 200, payed.text);
        await api.call('checkout', 'GET', '/pay/{shortCode}', { path: { shortCode: sc } });
        await api.call('checkout', 'POST', '/pay/{shortCode}', { path: { shortCode: sc }, form: { provider, phone: 'x' } });
        const payer = randomUUID();
        const page = await api.call('checkout', 'POST', '/pay/{shortCode}', { path: { shortCode: sc }, form: { provider, customer_phone: server.demo.sandbox.msisdn.success, transaction_uuid: payer } });
        assert.equal(page.status, 303, page.text.replace(/<style>.*<\/style>/s, '').slice(0, 2000));
        assert.equal(new URL(page.headers.get('location'), server.checkoutUrl + '/pay/').searchParams.get('t'), payer);
        const st = await api.call('checkout', 'GET', '/pay/{shortCode}/status', { path: { shortCode: sc }, query: { t: payer } });
        assert.equal(st.status, 200, st.text.slice(0, 300));
      }
      await api.call('gateway', 'POST', '/pay/{shortCode}/pay', { path: { shortCode: 'nope' }, json: {} });
      await api.call('checkout', 'GET', '/pay/{shortCode}', { path: { shortCode: 'nope' } });
      await api.call('checkout', 'POST', '/pay/{shortCode}', { path: { shortCode: 'nope' }, form: {} });
      await api.call('checkout', 'GET', '/pay/{shortCode}/status', { path: { shortCode: 'nope' }, query: { t: randomUUID() } });
      await api.call('gateway', 'POST', '/payment-links/{reference}/disable', { headers: a, path: { reference: ref } });
      await api.call('gateway', 'POST', '/payment-links/{reference}/enable', { headers: a, path: { reference: ref } });
      await api.call('gateway', 'POST', '/payment-links/{reference}/disable', { headers: a, path: { reference: 'PL-none' } });
      await api.call('gateway', 'POST', '/payment-links/{reference}/enable', { headers: a, path: { reference: 'PL-none' } });

      const ep = await api.call('gateway', 'POST', '/webhook/endpoints', { headers: a, json: { url: hookUrl, event_types: ['transaction.*'] } });
      assert.equal(ep.status, 201, ep.text);
      await api.call('gateway', 'POST', '/webhook/endpoints', { headers: a, json: { url: 'nope' } });
      const id = ep.body?.data?.id ?? ep.body?.data?.endpoint_id ?? 'none';
      await api.call('gateway', 'GET', '/webhook/endpoints', { headers: a });
      await api.call('gateway', 'GET', '/webhook/endpoints', {});
      await api.call('gateway', 'GET', '/webhook/endpoints/{endpoint_id}', { headers: a, path: { endpoint_id: id } });
      await api.call('gateway', 'GET', '/webhook/endpoints/{endpoint_id}', { headers: a, path: { endpoint_id: 'we_none' } });
      await api.call('gateway', 'PATCH', '/webhook/endpoints/{endpoint_id}', { headers: a, path: { endpoint_id: id }, json: { description: 'docs' } });
      await api.call('gateway', 'PATCH', '/webhook/endpoints/{endpoint_id}', { headers: a, path: { endpoint_id: 'we_none' }, json: {} });
      await api.call('gateway', 'POST', '/webhook/endpoints/{endpoint_id}/rotate-secret', { headers: a, path: { endpoint_id: id }, json: {} });
      await api.call('gateway', 'POST', '/webhook/endpoints/{endpoint_id}/rotate-secret', { headers: a, path: { endpoint_id: 'we_none' }, json: {} });
      // A collection's events are delivered to the endpoint.
      const hooked = await api.call('gateway', 'POST', '/collection/intent', { headers: a, json: {
        amount: 800, currency, provider, customer_wallet: server.demo.sandbox.msisdn.success, transaction_uuid: randomUUID() } });
      await api.call('gateway', 'POST', '/collection/execute', { headers: a, json: { transaction_reference: hooked.body.data.transaction_reference } });
      assert.ok(await until(async () => (await api.call('gateway', 'GET', '/webhook/deliveries', { headers: a })).body?.data?.length), 'a delivery');
      const events = await api.call('gateway', 'GET', '/webhook/events', { headers: a });
      await api.call('gateway', 'GET', '/webhook/events', {});
      const deliveries = await api.call('gateway', 'GET', '/webhook/deliveries', { headers: a });
      await api.call('gateway', 'GET', '/webhook/deliveries', {});
      const did = deliveries.body?.data?.[0]?.id ?? deliveries.body?.data?.[0]?.delivery_id ?? 'none';
      await api.call('gateway', 'GET', '/webhook/deliveries/{delivery_id}', { headers: a, path: { delivery_id: did } });
      await api.call('gateway', 'GET', '/webhook/deliveries/{delivery_id}', { headers: a, path: { delivery_id: 'wd_none' } });
      const eid = deliveries.body?.data?.[0]?.event_id ?? events.body?.data?.[0]?.id ?? 'none';
      await api.call('gateway', 'POST', '/webhook/events/{event_id}/redeliver', { headers: a, path: { event_id: eid }, json: {} });
      await api.call('gateway', 'POST', '/webhook/events/{event_id}/redeliver', { headers: a, path: { event_id: 'evt_none' }, json: {} });
      await api.call('gateway', 'DELETE', '/webhook/endpoints/{endpoint_id}', { headers: a, path: { endpoint_id: id } });
      await api.call('gateway', 'DELETE', '/webhook/endpoints/{endpoint_id}', { headers: a, path: { endpoint_id: 'we_none' } });

      const base = '/merchand/billing';
      const sub = await api.call('gateway', 'POST', `${base}/subscribe`, { headers: { ...a, 'x-idempotency-key': randomUUID() }, json: {
        customer_email: 'docs@example.com', customer_phone: `+${server.demo.sandbox.msisdn.success}`, amount: 1000, currency, frequency: 'MONTHLY', provider } });
      assert.equal(sub.status, 400, 'customer_phone and provider are not fields of a subscription');
      const made = await api.call('gateway', 'POST', `${base}/subscribe`, { headers: { ...a, 'x-idempotency-key': randomUUID() }, json: {
        customer_email: 'docs@example.com', customer_phone_number: server.demo.sandbox.msisdn.success, amount: 1000, currency, frequency: 'MONTHLY' } });
      assert.ok(made.status === 201 || made.status === 200, made.text);
      await api.call('gateway', 'POST', `${base}/subscribe`, { headers: { ...a, 'x-idempotency-key': randomUUID() }, json: {} });
      const sref = made.body.data.reference ?? made.body.data.subscription.reference;
      let mandateUrl;
      await api.call('gateway', 'GET', `${base}/subscriptions`, { headers: a });
      await api.call('gateway', 'GET', `${base}/subscriptions`, { headers: a, query: { status: 'NOPE' } });
      for (const t of ['/subscriptions/detail/{reference}', '/subscriptions/payments/{reference}']) {
        await api.call('gateway', 'GET', base + t, { headers: a, path: { reference: sref } });
        await api.call('gateway', 'GET', base + t, { headers: a, path: { reference: 'SUB-none' } });
      }
      for (const t of ['/subscriptions/mandate/{reference}', '/subscriptions/test-clock/{reference}', '/subscriptions/suspend/{reference}',
        '/subscriptions/reactivate/{reference}', '/subscriptions/cancel/{reference}']) {
        const body = t.includes('test-clock') ? { advance: 'P1D' } : t.includes('mandate') ? { wallet: `+${server.demo.sandbox.msisdn.success}` } : {};
        await api.call('gateway', 'POST', base + t, { headers: a, path: { reference: sref }, json: body });
        if (t.includes('mandate') || t.includes('test-clock')) {
          const good = t.includes('mandate') ? { wallet_phone_number: server.demo.wallet_link.msisdn } : { days: 1 };
          const r = await api.call('gateway', 'POST', base + t, { headers: a, path: { reference: sref }, json: good });
          assert.ok(r.status < 400, r.text);
          if (t.includes('mandate')) mandateUrl = r.body.data.mandate_url;
        }
        if (t.includes('mandate')) {
          // The mandate's page (while the subscription is active): its terms, then a code sent to the wallet's phone.
          const token = new URL(mandateUrl).pathname.split('/').pop();
          assert.equal((await api.call('checkout', 'GET', '/mandate/{token}', { path: { token } })).status, 200);
          const sent = await api.call('checkout', 'POST', '/mandate/{token}', { path: { token }, form: { action: 'send', lang: 'en' } });
          assert.ok(sent.status < 400, sent.text.slice(0, 300));
        }
        await api.call('gateway', 'POST', base + t, { headers: a, path: { reference: 'SUB-none' }, json: {} });
      }
      await api.call('checkout', 'GET', '/mandate/{token}', { path: { token: 'none' } });
      await api.call('checkout', 'POST', '/mandate/{token}', { path: { token: 'none' }, form: {} });
    });

    test('the link API', async () => {
      const key = { 'x-api-key': server.demo.link_api_key };
      const wl = server.demo.wallet_link;
      for (const method of ['GET', 'POST']) {
        await api.call('link', method, '/api/agent/link/status', { headers: key, ...(method === 'GET' ? { query: { apikey: wl.apikey } } : { json: { apikey: wl.apikey } }) });
        await api.call('link', method, '/api/agent/link/status', { headers: key, ...(method === 'GET' ? { query: { apikey: 'none' } } : { json: { apikey: 'none' } }) });
        await api.call('link', method, '/api/agent/link/new', { headers: key, ...(method === 'GET' ? { query: { email: 'x' } } : { json: { email: 'x' } }) });
      }
      const fresh = await api.call('link', 'POST', '/api/agent/link/new', { headers: key, json: {
        email: 'docs@example.com', phone: '690000077', phoneCountry: '+237' } });
      await api.call('link', 'GET', '/api/agent/link/new', { headers: key, query: {
        email: 'docs2@example.com', phone: '690000078', phoneCountry: '+237' } });
      const freshKey = fresh.body?.data?.apikey;
      if (freshKey) {
        const msgs = await api.call('gateway', 'GET', '/sandbox/messages', { headers: auth(), query: { phone: '+237690000077' } });
        const code = msgs.body?.data?.[0] && otpOf(msgs.body.data[0].body);
        await api.call('link', 'POST', '/api/agent/link/confirm', { headers: key, json: { apikey: freshKey, otp: code } });
        await api.call('link', 'POST', '/api/agent/link/unlink', { headers: key, json: { apikey: freshKey } });
      }
      await api.call('link', 'POST', '/api/agent/link/confirm', { headers: key, json: { apikey: 'none', otp: '000000' } });
      await api.call('link', 'POST', '/api/agent/link/unlink', { headers: key, json: { apikey: 'none' } });
      const ops = {
        charge: { amount: 100, transaction_uuid: randomUUID() },
        payout: { amount: 100, transaction_uuid: randomUUID() },
        topup: { amount: 100, transaction_uuid: randomUUID(), provider: server.demo.sandbox.provider },
        withdraw: { amount: 100, transaction_uuid: randomUUID(), provider: server.demo.sandbox.provider },
        init: { amount: 100, transaction_uuid: randomUUID() },
      };
      for (const [name, body] of Object.entries(ops)) {
        await api.call('link', 'POST', `/api/agent/link/${name}`, { headers: key, json: { apikey: wl.apikey, ...body } });
        await api.call('link', 'POST', `/api/agent/link/${name}`, { headers: key, json: { apikey: 'none' } });
      }
      // Beyond the consent: the payment waits for the user's code (needs_otp), read and approved.
      const perPayment = wl.limits.per_payment;
      const big = await api.call('link', 'POST', '/api/agent/link/init', { headers: key, json: { apikey: wl.apikey, amount: perPayment + 1, transaction_uuid: randomUUID() } });
      assert.equal(big.status, 200, big.text);
      assert.equal(big.body.data.needs_otp, true, big.text);
      const bigRef = big.body.data.transaction_reference;
      // The demo wallet's number is a demo number of the sandbox: its code is the sandbox code.
      const approved = await api.call('link', 'POST', '/api/agent/link/approve', { headers: key, json: { apikey: wl.apikey, transaction_reference: bigRef, otp: server.demo.sandbox.otp } });
      assert.equal(approved.status, 200, approved.text);
      await api.call('link', 'POST', '/api/agent/link/approve', { headers: key, json: { apikey: 'none' } });
      await api.call('link', 'POST', '/api/agent/link/fiat-distribution', { headers: key, json: { transaction_uuid: randomUUID(), currency: 'XAF', distribution: [{ apikey: wl.apikey, amount: 100 }] } });
      await api.call('link', 'POST', '/api/agent/link/fiat-distribution', { headers: key, json: {} });
    });

    test('identity: token, revoke, introspect, pages, keys and discovery', async () => {
      const client = { client_id: m.client_id, client_secret: m.client_secret };
      const t = await api.call('identity', 'POST', '/oauth/v2/token', { json: { grant_type: 'client_credentials', ...client, scope: 'payments' } });
      assert.equal(t.status, 200, t.text);
      await api.call('identity', 'POST', '/oauth/v2/token', { form: { grant_type: 'client_credentials', client_id: m.client_id, client_secret: 'wrong' } });
      await api.call('identity', 'POST', '/oauth/v2/token', { json: { grant_type: 'password' } });
      await api.call('identity', 'POST', '/oauth/v2/introspect', { json: { token: t.body.access_token, ...client } });
      await api.call('identity', 'POST', '/oauth/v2/introspect', { json: { ...client } });
      await api.call('identity', 'POST', '/oauth/v2/revoke', { json: { token: t.body.refresh_token ?? t.body.access_token, ...client } });
      await api.call('identity', 'POST', '/oauth/v2/revoke', { json: { token: 'x', client_id: m.client_id, client_secret: 'wrong' } });
      await api.call('identity', 'GET', '/oauth/v2/userinfo', {});
      await api.call('identity', 'POST', '/oauth/v2/userinfo', {});
      // The public client's code flow with PKCE: the demo user signs in and approves, the code is
      // exchanged, and the access token reads the user's claims.
      const pc = server.demo.public_client;
      const back = await approveAuthorization(api, new CookieJar(), { client_id: pc.client_id, response_type: 'code',
        redirect_uri: pc.redirect_uri, scope: 'openid profile email', code_challenge: PKCE.challenge,
        code_challenge_method: 'S256', state: 'docs-state' }, server.demo.user);
      assert.equal(`${back.origin}${back.pathname}`, pc.redirect_uri);
      assert.equal(back.searchParams.get('state'), 'docs-state');
      const exchanged = await api.call('identity', 'POST', '/oauth/v2/token', { form: { grant_type: 'authorization_code',
        code: back.searchParams.get('code'), redirect_uri: pc.redirect_uri, client_id: pc.client_id, code_verifier: PKCE.verifier } });
      assert.equal(exchanged.status, 200, exchanged.text);
      const bearer = { authorization: `Bearer ${exchanged.body.access_token}` };
      for (const method of ['GET', 'POST']) {
        const info = await api.call('identity', method, '/oauth/v2/userinfo', { headers: bearer });
        assert.equal(info.status, 200, info.text);
        assert.equal(info.body.email, server.demo.user.email);
      }
      for (const p of ['/oauth/v2/jwks', '/.well-known/jwks.json', '/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', '/openapi.json'])
        await api.call('identity', 'GET', p, {});
      await api.call('identity', 'GET', '/oauth/v2/authorize', { query: { client_id: 'nope', response_type: 'code' } });
      if (pc) await api.call('identity', 'GET', '/oauth/v2/authorize', { query: { client_id: pc.client_id, response_type: 'code', redirect_uri: pc.redirect_uri ?? pc.redirect_uris?.[0], scope: 'openid', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', state: 's' } });
      await api.call('identity', 'POST', '/oauth/v2/authorize', { form: {} });
      // Sign-up (enabled on this server): the page's form with its CSRF cookie and field.
      const jar = new CookieJar();
      const signup = await browse(api, jar, 'identity', 'GET', '/signup', {});
      assert.equal(signup.status, 200);
      const form = parseForm(signup.text);
      assert.ok(form && jar.has('sika_csrf'), 'the sign-up page sets its CSRF cookie and field');
      const joined = await browse(api, jar, 'identity', 'POST', '/signup', { form: { ...form.fields,
        email: `docs-${randomUUID()}@example.com`, name: 'Docs Signup', password: 'docs-password-123' } });
      assert.equal(joined.status, 201, joined.text.slice(0, 300));
      await api.call('identity', 'POST', '/signup', { form: {} });
      // A server with the default configuration: sign-up is disabled there.
      const plain = await startServer({ backend });
      try {
        assert.equal((await api.call('identity', 'GET', '/signup', { on: plain })).status, 404);
      } finally {
        await plain.stop();
      }
      await api.call('identity', 'GET', '/logout', {});
    });

    test('hosted checkout: open, pages, return', async () => {
      const services = (await api.call('gateway', 'GET', '/service/list', { headers: auth() })).body.data;
      const currency = services.find((s) => s.code === server.demo.sandbox.provider).currency;
      const order = { orderId: `docs-${randomUUID()}`, amount: 2500, currency, description: 'Docs order', shopName: 'Docs shop', successUrl: 'https://shop.example/ok', failureUrl: 'https://shop.example/ko' };
      const opened = await api.call('checkout', 'POST', '/', { json: { apiKey: m.api_key, ...order } });
      assert.equal(opened.status, 201, opened.text);
      await api.call('checkout', 'POST', '/', { json: { apiKey: m.api_key, ...order } });
      await api.call('checkout', 'POST', '/', { form: { apiKey: m.api_key, ...order, orderId: `docs-${randomUUID()}`, amount: '2500' } });
      await api.call('checkout', 'POST', '/', { json: { apiKey: 'wrong', ...order } });
      await api.call('checkout', 'POST', '/', { json: { apiKey: m.api_key, amount: 'x' } });
      const ref = opened.body.data.reference;
      await api.call('checkout', 'GET', '/session/{reference}', { path: { reference: ref } });
      await api.call('checkout', 'GET', '/session/{reference}', { path: { reference: 'chk_none' } });
      await api.call('checkout', 'POST', '/session/{reference}', { path: { reference: ref }, form: { provider: server.demo.sandbox.provider, phone: 'x' } });
      const chosen = await api.call('checkout', 'POST', '/session/{reference}', { path: { reference: ref }, form: { attempt: '0', provider: server.demo.sandbox.provider, customer_phone: server.demo.sandbox.msisdn.success } });
      assert.ok(chosen.status < 400, chosen.text.replace(/<style>.*<\/style>/s, '').slice(0, 1500));
      await api.call('checkout', 'POST', '/session/{reference}', { path: { reference: 'chk_none' }, form: {} });
      await api.call('checkout', 'GET', '/session/{reference}/return', { path: { reference: ref } });
      await api.call('checkout', 'POST', '/session/{reference}/cancel', { path: { reference: ref }, form: {} });
      await api.call('checkout', 'GET', '/session/{reference}/return', { path: { reference: ref } });
      await api.call('checkout', 'POST', '/session/{reference}/cancel', { path: { reference: 'chk_none' }, form: {} });
      await api.call('checkout', 'GET', '/session/{reference}/return', { path: { reference: 'chk_none' } });
      await api.call('checkout', 'GET', '/page.js', {});
      await api.call('checkout', 'GET', '/live.js', {});
      await api.call('checkout', 'GET', '/button.js', {});
      await api.call('checkout', 'GET', '/openapi.json', {});
      await api.call('checkout', 'GET', '/wallet', {});
      await api.call('checkout', 'POST', '/wallet', { form: { action: 'nope' } });
      assert.equal((await api.call('checkout', 'POST', '/wallet', { form: { action: 'send', phone: server.demo.wallet_link.msisdn } })).status, 200);
      // The wallet page's sign-in: the login sends to the authorization page (its state in a cookie),
      // the demo user (who has a phone) approves, and the callback opens the wallet page.
      const jar = new CookieJar();
      const login = await browse(api, jar, 'checkout', 'GET', '/wallet/login', {});
      assert.ok(login.status === 302 || login.status === 303, login.text.slice(0, 300));
      assert.ok(jar.has('sika_wallet_login'));
      const authorize = new URL(login.headers.get('location'));
      const back = await approveAuthorization(api, jar, Object.fromEntries(authorize.searchParams), server.demo.user);
      const signedIn = await browse(api, jar, 'checkout', 'GET', '/wallet/callback', { query: Object.fromEntries(back.searchParams) });
      assert.equal(signedIn.status, 303, signedIn.text.slice(0, 300));
      await api.call('checkout', 'GET', '/wallet/callback', {});
      // The confirmation link sent with a collection: shown, then the request is pushed.
      const intent = await api.call('gateway', 'POST', '/collection/intent', { headers: auth(), json: {
        amount: 2500, currency, provider: server.demo.sandbox.provider, customer_wallet: server.demo.sandbox.msisdn.success, transaction_uuid: randomUUID() } });
      const confirmUrl = new URL(intent.body.data.confirmation_url);
      const sig = confirmUrl.searchParams.get('sig');
      const tref = intent.body.data.transaction_reference;
      assert.equal((await api.call('checkout', 'GET', '/confirm/{reference}', { path: { reference: tref }, query: { sig } })).status, 200);
      assert.equal((await api.call('checkout', 'POST', '/confirm/{reference}', { path: { reference: tref }, form: { sig, action: 'pay', lang: 'en' } })).status, 200);
      await api.call('checkout', 'GET', '/confirm/{reference}', { path: { reference: 'TX-none' } });
      await api.call('checkout', 'POST', '/confirm/{reference}', { path: { reference: 'TX-none' }, form: {} });
    });

    test('every response matched its document, and every documented operation was exercised', () => {
      assert.deepEqual(api.problems, [], api.problems.join('\n'));
      const missing = api.unexercised();
      assert.deepEqual(missing, [], missing.join('\n'));
    });
  });
}
