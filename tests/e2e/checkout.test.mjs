// Black-box tests of the hosted checkout against the real binary, on both backends: sessions
// opened by JSON and by form post with the demo merchant API key, precise refusals (bad fields,
// javascript: URLs, a wrong key), the orderId's idempotency, paying through the page's plain
// forms (with and without an OTP), the signed return checked with the documented verification
// and confirmed with POST /collection/status, tampered and forged returns, cancel and expiry.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, sikaBinary } from './lib/server.mjs';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { verifyServiceData, signCheckoutRequest } from '../../docs/examples/merchant-site.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const order = (extra = {}) => ({
  amount: 5000,
  currency: 'XAF',
  orderId: `ORD-${randomUUID()}`,
  description: '2 T-shirts',
  shopName: 'Boutique Akwa',
  successUrl: 'https://shop.example/ok',
  failureUrl: 'https://shop.example/ko',
  customer: { name: 'Awa', phone: '237690000000' },
  ...extra,
});

const formBody = (fields) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) {
    if (v && typeof v === 'object' && !Array.isArray(v)) for (const [ck, cv] of Object.entries(v)) p.append(`${k}[${ck}]`, cv);
    else p.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  return p.toString();
};

for (const backend of backends()) {
  describe(`hosted checkout on ${backend}`, () => {
    let server, merchant, token;
    const open = async (fields, { form = false, key = merchant.api_key } = {}) => {
      const body = { apiKey: key, ...fields };
      const r = await fetch(server.checkoutUrl, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json', 'accept-language': 'en' },
        body: form ? formBody(body) : JSON.stringify(body),
      });
      const type = r.headers.get('content-type') || '';
      return { status: r.status, location: r.headers.get('location'), type,
        body: type.includes('json') ? await r.json() : await r.text() };
    };
    // Submits the page's form as a browser without JavaScript would.
    const submit = async (pageUrl, fields) => {
      const r = await fetch(`${pageUrl}?lang=en`, {
        method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      });
      return { status: r.status, location: r.headers.get('location'), text: await r.text() };
    };
    const returnOf = async (pageUrl) => {
      for (let i = 0; i < 150; i++) {
        const r = await fetch(`${pageUrl}/return`, { redirect: 'manual' });
        const loc = r.headers.get('location') || '';
        if (loc.startsWith('https://shop.example/')) return new URL(loc);
        await sleep(100);
      }
      assert.fail('the payment did not end');
    };

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=200'] });
      merchant = server.demo.merchants[0];
      token = await merchantToken(server, 0);
    });
    after(async () => { if (server) await server.stop(); });

    test('the demo lists each merchant\'s checkout secret and the pay-button script', async () => {
      assert.match(merchant.checkout_secret, /^cks_/);
      assert.ok(server.demo.checkout_button_url.endsWith('/button.js'));
      const js = await fetch(server.demo.checkout_button_url);
      assert.equal(js.status, 200);
      assert.match(js.headers.get('content-type'), /javascript/);
      assert.match(await js.text(), /data-sika-checkout/);
    });

    test('JSON opens a session with its page URL; the same orderId finds it again', async () => {
      const o = order();
      const first = await open(o);
      assert.equal(first.status, 201, JSON.stringify(first.body));
      const s = first.body.data;
      assert.match(s.reference, /^chk_[A-Za-z0-9_-]{22}$/);
      assert.equal(s.page_url, `${server.checkoutUrl}/session/${s.reference}`);
      assert.equal(s.status, 'OPEN');
      assert.equal(s.amount, 5000);
      const again = await open(o);
      assert.equal(again.status, 200);
      assert.equal(again.body.data.reference, s.reference);
      const changed = await open({ ...o, amount: 6000 });
      assert.equal(changed.status, 409);
      assert.ok(changed.body.error.details.orderId);
    });

    test('a form post is answered 303 to the page, which shows the order and the methods', async () => {
      const r = await open(order(), { form: true });
      assert.equal(r.status, 303, r.body);
      assert.match(r.location, /\/checkout\/session\/chk_/);
      const page = await fetch(r.location, { headers: { 'accept-language': 'fr' } });
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/);
      const html = await page.text();
      assert.match(html, /lang="fr"/);
      assert.match(html, /Boutique Akwa/);
      assert.match(html, /5&#8239;000 XAF/);
      assert.match(html, /MTN_MOMO_CMR/);
      assert.match(html, /value="237690000000"/);
    });

    test('bad fields are refused with their names: envelope for JSON, an error page for a form', async () => {
      const bad = order({ amount: 10.5, successUrl: 'javascript:alert(document.cookie)', failureUrl: 'data:text/html,x', orderId: '' });
      const json = await open(bad);
      assert.equal(json.status, 400);
      assert.equal(json.body.message, 'empty_data');
      for (const f of ['amount', 'successUrl', 'failureUrl', 'orderId']) assert.ok(json.body.error.details[f], f);
      const page = await open(bad, { form: true });
      assert.equal(page.status, 400);
      assert.match(page.type, /text\/html/);
      assert.match(page.body, /successUrl/);
      assert.ok(!page.body.includes('javascript:alert'), 'the URL is not echoed');
      const wrongKey = await open(order(), { key: 'sk_test_this-key-does-not-exist-at-all' });
      assert.equal(wrongKey.status, 401);
      assert.ok(wrongKey.body.error.details.apiKey);
    });

    test('paying through the page (no code): the signed return, confirmed by /collection/status', async () => {
      const o = order();
      const s = (await open(o)).body.data;
      const sent = await submit(s.page_url, { attempt: '0', provider: 'MTN_MOMO_CMR', customer_phone: '237690000000' });
      assert.equal(sent.status, 303, sent.text);
      const back = await returnOf(s.page_url);
      assert.equal(back.pathname, '/ok');
      const raw = back.searchParams.get('service_data');
      const data = verifyServiceData(merchant.checkout_secret, raw, back.searchParams.get('signature'));
      assert.ok(data, 'the signature verifies');
      assert.equal(data.status, 'COMPLETED');
      assert.equal(data.success, true);
      assert.equal(data.reference, o.orderId);
      assert.equal(data.amount, 5000);
      assert.equal(data.currency, 'XAF');
      assert.equal(data.operation, 'COLLECTION');
      for (const f of ['transaction_reference', 'invoice_reference', 'provider_reference', 'channel']) assert.ok(data[f], f);
      // Tampered or forged returns fail the documented verification.
      assert.equal(verifyServiceData(merchant.checkout_secret, raw.replace('"amount":5000', '"amount":50'), back.searchParams.get('signature')), null);
      assert.equal(verifyServiceData(server.demo.merchants[1].checkout_secret, raw, back.searchParams.get('signature')), null);
      assert.equal(verifyServiceData(merchant.checkout_secret, raw, '00'.repeat(32)), null);
      const status = await fetch(`${server.baseUrl}/collection/status`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
        body: JSON.stringify({ transaction_reference: data.transaction_reference }),
      });
      const confirmed = await status.json();
      assert.equal(confirmed.data.status, 'COMPLETED');
      assert.equal(confirmed.data.amount, 5000);
      // The paid order cannot be paid again, nor opened again.
      const twice = await submit(s.page_url, { attempt: '1', provider: 'MTN_MOMO_CMR', customer_phone: '237690000000' });
      assert.equal(twice.status, 303);
      const reopened = await open(o);
      assert.equal(reopened.status, 409);
      assert.equal(reopened.body.message, 'order_paid');
    });

    test('an operator with a code: the OTP step, then the return', async () => {
      // ORANGE_MONEY_CIV needs a code in the demo catalog: the second demo merchant collects in CIV.
      const civ = server.demo.merchants[1];
      const s = (await open(order({ currency: 'XOF', customer: { phone: '2250700000000' } }), { key: civ.api_key })).body.data;
      const first = await submit(s.page_url, { attempt: '0', provider: 'ORANGE_MONEY_CIV', customer_phone: '2250700000000' });
      assert.equal(first.status, 200);
      assert.match(first.text, /name="otp"/);
      assert.match(first.text, /#144\*82#/, "the catalog's helper text");
      const wrong = await submit(s.page_url, { attempt: '0', provider: 'ORANGE_MONEY_CIV', customer_phone: '2250700000000', otp: '000000' });
      assert.equal(wrong.status, 400);
      assert.match(wrong.text, /name="otp"/);
      const paid = await submit(s.page_url, { attempt: '1', provider: 'ORANGE_MONEY_CIV', customer_phone: '2250700000000', otp: server.demo.sandbox.otp });
      assert.equal(paid.status, 303, paid.text);
      const back = await returnOf(s.page_url);
      const data = verifyServiceData(civ.checkout_secret, back.searchParams.get('service_data'), back.searchParams.get('signature'));
      assert.equal(data.status, 'COMPLETED');
      assert.equal(data.currency, 'XOF');
    });

    test('a failure offers another method; cancel goes back to failureUrl, signed', async () => {
      const s = (await open(order())).body.data;
      await submit(s.page_url, { attempt: '0', provider: 'MTN_MOMO_CMR', customer_phone: '237690000001' });
      let html = '';
      for (let i = 0; i < 100 && !html.includes('did not go through'); i++) {
        await sleep(100);
        html = await (await fetch(`${s.page_url}?lang=en`)).text();
      }
      assert.match(html, /did not go through/);
      assert.match(html, /name="attempt" value="1"/);
      const cancelled = await fetch(`${s.page_url}/cancel`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
      assert.equal(cancelled.status, 303);
      const back = new URL(cancelled.headers.get('location'));
      assert.equal(back.pathname, '/ko');
      const data = verifyServiceData(merchant.checkout_secret, back.searchParams.get('service_data'), back.searchParams.get('signature'));
      assert.equal(data.status, 'CANCELLED');
      assert.equal(data.success, false);
      assert.match(data.transaction_reference, /^TX-/);
      assert.equal((await fetch(s.page_url)).status, 200);
    });

    test('only the merchant decides where the money goes: a signed form sets a split, an unsigned or tampered one is refused', async () => {
      const other = server.demo.merchants[1];
      const hijack = order({ settlement_mode: 'SPLIT', distribution: JSON.stringify([{ matricule: other.matricule, rate: 100 }]) });
      const unsigned = await open(hijack, { form: true });
      assert.equal(unsigned.status, 400, unsigned.body);
      assert.match(unsigned.body, /settlement_mode/);
      assert.match(unsigned.body, /distribution/);
      const fee = await open(order({ feeBearer: 'MERCHANT' }));
      assert.equal(fee.status, 400);
      assert.ok(fee.body.error.details.feeBearer, JSON.stringify(fee.body));

      // Signed exactly as the documented Node snippet does (the same function, checked below).
      const o = order({ settlement_mode: 'SPLIT', feeBearer: 'MERCHANT' });
      const distribution = [{ matricule: other.matricule, rate: 30 }];
      const signature = signCheckoutRequest(merchant.checkout_secret, { orderId: o.orderId, amountMinor: 5000,
        currency: 'XAF', settlementMode: 'SPLIT', distribution, feeBearer: 'MERCHANT' });
      const tampered = await open({ ...o, distribution: JSON.stringify([{ matricule: other.matricule, rate: 100 }]), signature }, { form: true });
      assert.equal(tampered.status, 400, tampered.body);
      assert.match(tampered.body, /signature/);
      const cheaper = await open({ ...o, amount: 50, distribution: JSON.stringify(distribution), signature }, { form: true });
      assert.equal(cheaper.status, 400);
      const r = await open({ ...o, distribution: JSON.stringify(distribution), signature }, { form: true });
      assert.equal(r.status, 303, r.body);
      const pageUrl = r.location;
      const sent = await submit(pageUrl, { attempt: '0', provider: 'MTN_MOMO_CMR', customer_phone: '237690000000' });
      assert.equal(sent.status, 303, sent.text);
      const back = await returnOf(pageUrl);
      const data = verifyServiceData(merchant.checkout_secret, back.searchParams.get('service_data'), back.searchParams.get('signature'));
      assert.ok(data);
      assert.equal(data.status, 'COMPLETED');
      assert.equal(data.settlement_mode, 'SPLIT');
      assert.equal(data.fee_bearer, 'MERCHANT');
      assert.equal(data.fee, 100);
      assert.equal(data.credited_amount, 4900);
      assert.deepEqual(data.distribution, [{ matricule: other.matricule, rate: 30 }, { matricule: merchant.matricule, rate: 70 }]);

      // The documented snippets are the code that signs here: Node's is this very function, and
      // Python's gives the same signature.
      const doc = readFileSync(new URL('../../docs/checkout.md', import.meta.url), 'utf8');
      assert.ok(doc.includes(`export ${signCheckoutRequest.toString()}`), 'docs/checkout.md shows signCheckoutRequest as it is');
      const python = doc.match(/```python\n(import hashlib, hmac\n\ndef checkout_signature[\s\S]*?)```/);
      assert.ok(python, 'the Python snippet');
      const py = spawnSync('python3', ['-c', `${python[1]}\nimport sys, json\nprint(checkout_signature(sys.argv[1], sys.argv[2], 5000, "XAF", "SPLIT", json.loads(sys.argv[3]), "MERCHANT"))`,
        merchant.checkout_secret, o.orderId, JSON.stringify(distribution)], { encoding: 'utf8' });
      assert.equal(py.status, 0, py.stderr);
      assert.equal(py.stdout.trim(), signature);
    });

    test('signed checkout requests only: off, a plain form works; on, an unsigned or altered one is refused naming signature', async () => {
      const admin = (...args) => {
        const r = spawnSync(sikaBinary, ['admin', '--db', server.dsn, 'checkout', 'signed-only', '--merchant', merchant.matricule,
          ...args, '--json'], { encoding: 'utf8', env: { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' } });
        assert.equal(r.status, 0, r.stdout + r.stderr);
        return JSON.parse(r.stdout);
      };
      assert.deepEqual(admin(), { merchant: merchant.matricule, signed_only: false, changed: false });
      const plain = await open(order(), { form: true });
      assert.equal(plain.status, 303, plain.body);
      assert.equal(admin('--on').changed, true);
      try {
        for (const form of [true, false]) {
          const o = order();
          const unsigned = await open(o, { form });
          assert.equal(unsigned.status, 400, JSON.stringify(unsigned.body));
          if (form) assert.match(unsigned.body, /signature/);
          else {
            assert.equal(unsigned.body.message, 'empty_data');
            assert.deepEqual(Object.keys(unsigned.body.error.details), ['signature']);
          }
          const signature = signCheckoutRequest(merchant.checkout_secret, { orderId: o.orderId, amountMinor: 5000, currency: 'XAF' });
          const altered = await open({ ...o, amount: 50, signature }, { form });
          assert.equal(altered.status, 400, JSON.stringify(altered.body));
          if (!form) assert.ok(altered.body.error.details.signature, JSON.stringify(altered.body));
          else assert.match(altered.body, /signature/);
          const signed = await open({ ...o, signature }, { form });
          assert.equal(signed.status, form ? 303 : 201, JSON.stringify(signed.body));
        }
        assert.equal(admin('--on').changed, false);  // already on
      } finally {
        assert.equal(admin('--off').signed_only, false);
      }
      const again = await open(order(), { form: true });
      assert.equal(again.status, 303, again.body);
    });

    test('an unknown session is a 404 page', async () => {
      const r = await fetch(`${server.checkoutUrl}/session/chk_AAAAAAAAAAAAAAAAAAAAAA`);
      assert.equal(r.status, 404);
      assert.equal((await fetch(`${server.checkoutUrl}/session/not-a-session`)).status, 404);
    });
  });

  describe(`hosted checkout expiry on ${backend}`, () => {
    let server;
    before(async () => { server = await startServer({ backend, args: ['--set', 'checkout.session_ttl_seconds=1'] }); });
    after(async () => { if (server) await server.stop(); });

    test('an expired session takes no payment and returns to failureUrl as EXPIRED', async () => {
      const merchant = server.demo.merchants[0];
      const r = await fetch(server.checkoutUrl, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: merchant.api_key, ...order() }),
      });
      const s = (await r.json()).data;
      await sleep(1300);
      const page = await fetch(`${s.page_url}?lang=en`);
      assert.equal(page.status, 410);
      assert.match(await page.text(), /expired/);
      const sent = await fetch(s.page_url, {
        method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'attempt=0&provider=MTN_MOMO_CMR&customer_phone=237690000000',
      });
      assert.equal(sent.status, 410);
      assert.match(await sent.text(), /expiré/);
      const back = await fetch(`${s.page_url}/return`, { redirect: 'manual' });
      const url = new URL(back.headers.get('location'));
      assert.equal(url.pathname, '/ko');
      const data = verifyServiceData(merchant.checkout_secret, url.searchParams.get('service_data'), url.searchParams.get('signature'));
      assert.equal(data.status, 'EXPIRED');
      assert.equal(data.transaction_reference, '');
    });
  });
}
