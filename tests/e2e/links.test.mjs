// Black-box tests of payment links against the real binary: the demo links, create, pay with a
// sandbox number with and without an OTP (the operator calls back over HTTP), idempotent
// replays, refusals, a single-use link raced by several payers, the QR code images.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const backend of backends()) {
  describe(`payment links on ${backend}`, () => {
    let server, token, otherToken;
    const call = async (method, path, body, tok = token) => {
      const headers = { 'accept-language': 'en' };
      if (tok) headers['x-sp-auth-token'] = `Bearer ${tok}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const r = await fetch(`${server.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const type = r.headers.get('content-type') || '';
      return { status: r.status, type, body: type.includes('json') ? await r.json() : Buffer.from(await r.arrayBuffer()) };
    };
    const pay = (code, body) => call('POST', `/pay/${code}/pay`, body, null);
    const payer = (extra = {}) => ({ customer_phone: '237690000000', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', ...extra });
    const statusOf = async (ref) => (await call('POST', '/collection/status', { transaction_reference: ref })).body.data.status;
    const waitDone = async (ref) => {
      for (let i = 0; i < 150; i++) {
        const s = await statusOf(ref);
        if (s !== 'INITIATED' && s !== 'PENDING') return s;
        await sleep(100);
      }
      return 'TIMEOUT';
    };

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=200'] });
      token = await merchantToken(server, 0);
      otherToken = await merchantToken(server, 1);
    });
    after(async () => { if (server) await server.stop(); });

    test('the demo world lists a fixed and an open link per demo merchant', () => {
      const links = server.demo.payment_links;
      assert.ok(Array.isArray(links) && links.length >= 4, JSON.stringify(links));
      for (const l of links) {
        assert.match(l.short_code, /^[A-Za-z0-9]{8,12}$/);
        assert.ok(l.payment_url.endsWith(`/pay/${l.short_code}`));
      }
      assert.ok(links.some((l) => l.amount === null) && links.some((l) => Number.isInteger(l.amount)));
    });

    test('create, pay without OTP, replay, figures, another merchant 404', async () => {
      const created = await call('POST', '/payment-links', { currency: 'XAF', amount: 2500, title: 'Cap', max_usage: 3 });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const link = created.body.data;
      assert.match(link.reference, /^PLK-/);
      assert.equal(link.status, 'ACTIVE');
      const body = payer();
      const paid = await pay(link.short_code, body);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.amount, 2500);
      const again = await pay(link.short_code, body);
      assert.equal(again.body.data.transaction_reference, paid.body.data.transaction_reference);
      assert.equal(await waitDone(paid.body.data.transaction_reference), 'COMPLETED');
      const shown = await call('GET', `/payment-links/${link.reference}`);
      assert.equal(shown.body.data.payments_completed, 1);
      assert.equal(shown.body.data.total_collected, 2500);
      assert.equal((await call('GET', `/payment-links/${link.reference}`, undefined, otherToken)).status, 404);
      const list = await call('GET', '/payment-links?status=ACTIVE&limit=2');
      assert.equal(list.status, 200);
      assert.equal(list.body.meta.pagination.limit, 2);
    });

    test('an OTP service asks for the code, then the payment completes', async () => {
      // ORANGE_MONEY_CIV needs a code in the demo catalog: the second demo merchant collects in CIV.
      const link = (await call('POST', '/payment-links', { currency: 'XOF', amount: 1500, provider: 'ORANGE_MONEY_CIV' }, otherToken)).body.data;
      const body = { customer_phone: '2250700000000', transaction_uuid: randomUUID() };
      const first = await pay(link.short_code, body);
      assert.equal(first.status, 400);
      assert.equal(first.body.message, 'otp_required');
      assert.ok(first.body.error.details.otp_helper);
      const paid = await pay(link.short_code, { ...body, otp: Number(server.demo.sandbox.otp) });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      for (let i = 0; i < 150; i++) {
        const s = (await call('POST', '/collection/status', { transaction_reference: paid.body.data.transaction_reference }, otherToken)).body.data.status;
        if (s !== 'INITIATED' && s !== 'PENDING') { assert.equal(s, 'COMPLETED'); return; }
        await sleep(100);
      }
      assert.fail('the payment did not end');
    });

    test('refusals: empty body, wrong amount, disabled link, unknown code', async () => {
      const link = (await call('POST', '/payment-links', { currency: 'XAF', amount: 1000 })).body.data;
      const empty = await fetch(`${server.baseUrl}/pay/${link.short_code}/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
      assert.equal(empty.status, 400);
      assert.equal((await empty.json()).message, 'empty_data');
      const wrong = await pay(link.short_code, payer({ amount: 999 }));
      assert.equal(wrong.status, 400);
      assert.ok(wrong.body.error.details.amount);
      assert.equal((await call('POST', `/payment-links/${link.reference}/disable`, {})).status, 200);
      const disabled = await pay(link.short_code, payer());
      assert.equal(disabled.body.message, 'link_disabled');
      assert.equal((await pay('Nope1234', payer())).status, 404);
    });

    test('a single-use link raced by 8 payers completes exactly once', async () => {
      const link = (await call('POST', '/payment-links', { currency: 'XAF', amount: 3000, max_usage: 1 })).body.data;
      const results = await Promise.all(Array.from({ length: 8 }, () => pay(link.short_code, payer())));
      const ok = results.filter((r) => r.status === 200);
      assert.equal(ok.length, 1, JSON.stringify(results.map((r) => r.body.message)));
      for (const r of results.filter((x) => x.status !== 200)) assert.equal(r.body.message, 'link_used_up');
      assert.equal(await waitDone(ok[0].body.data.transaction_reference), 'COMPLETED');
    });

    test('QR codes of a link as SVG and PNG', async () => {
      const link = (await call('POST', '/payment-links', { currency: 'XAF' })).body.data;
      const svg = await call('GET', `/payment-links/${link.reference}/qr.svg`);
      assert.equal(svg.status, 200);
      assert.match(svg.type, /image\/svg\+xml/);
      assert.match(svg.body.toString(), /^<svg /);
      const png = await call('GET', `/payment-links/${link.reference}/qr.png?size=4`);
      assert.equal(png.status, 200);
      assert.equal(png.type, 'image/png');
      assert.deepEqual([...png.body.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      assert.equal((await call('GET', `/payment-links/${link.reference}/qr.png?size=99`)).status, 400);
    });
  });
}
