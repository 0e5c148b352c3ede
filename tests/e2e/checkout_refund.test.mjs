// A hosted checkout order refunded through the refund API (docs/checkout.md, "Refunds"), against the
// real binary on each backend: the order page says "Partly refunded: X of Y", then "Refunded" (fr
// and en, axe-clean, without JavaScript, phone and desktop screenshots in $SIKA_SCREENSHOTS); the
// signed return carries the refunds in service_data and still goes to successUrl; the same order is
// never opened or paid again. The ledger check is clean at the end.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, waitFor, checkLedger } from './lib/server.mjs';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { verifyServiceData } from '../../docs/examples/merchant-site.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`a refunded checkout order on ${backend}`, () => {
    let server, merchant, token, browser;
    const api = async (path, body) => {
      const r = await fetch(`${server.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const open = async (orderId) => {
      const r = await fetch(server.checkoutUrl, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: merchant.api_key, amount: 5000, currency: 'XAF', orderId, description: '2 T-shirts',
          shopName: 'Boutique Akwa', successUrl: 'https://shop.example/ok', failureUrl: 'https://shop.example/ko' }),
      });
      return { status: r.status, body: await r.json() };
    };
    const submit = (pageUrl, fields) => fetch(`${pageUrl}?lang=en`, {
      method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    const serviceData = async (pageUrl) => {
      const r = await fetch(`${pageUrl}/return`, { redirect: 'manual' });
      const loc = new URL(r.headers.get('location'));
      const data = verifyServiceData(merchant.checkout_secret, loc.searchParams.get('service_data'), loc.searchParams.get('signature'));
      assert.ok(data, 'signed with the merchant\'s checkout secret');
      return { url: loc, data };
    };
    const refund = async (ref, amount) => {
      const r = await api('/collection/refund', { transaction_reference: ref, refund_uuid: randomUUID(), reason: 'OTHER', amount });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const done = await waitFor(async () => {
        const s = (await api('/collection/refund/status', { refund_reference: r.body.data.refund_reference })).body.data;
        return s.status === 'COMPLETED' ? s : null;
      });
      assert.ok(done, 'the refund completed');
    };
    const look = async (url, lang, viewport, name) => {
      const context = await browser.newContext({ ...viewport, javaScriptEnabled: false, locale: lang === 'fr' ? 'fr-FR' : 'en-GB' });
      const page = await context.newPage();
      await page.goto(`${url}?lang=${lang}`);
      const text = await page.textContent('body');
      await assertPageStandards(page, name);
      if (shots) await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
      await context.close();
      return text;
    };

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=150'] });
      merchant = server.demo.merchants[0];
      token = await merchantToken(server, 0);
      if (!noBrowser) browser = await launchBrowser();
    });
    after(async () => {
      if (browser) await browser.close();
      if (server) await server.stop();
    });

    test('partly, then wholly refunded: the page and service_data say so; the order stays paid', async () => {
      const orderId = `ORD-${randomUUID()}`;
      const opened = await open(orderId);
      assert.equal(opened.status, 201, JSON.stringify(opened.body));
      const s = opened.body.data;
      assert.equal((await submit(s.page_url, { attempt: '0', provider: 'MTN_MOMO_CMR', customer_phone: '237690000000' })).status, 303);
      const paid = await waitFor(async () => {
        const { data } = await serviceData(s.page_url).catch(() => ({}));
        return data?.status === 'COMPLETED' ? data : null;
      });
      assert.ok(paid, 'paid');
      assert.equal(paid.refunded_amount, 0);
      assert.equal(paid.refund_state, 'NONE');

      await refund(paid.transaction_reference, 2000);
      let back = await serviceData(s.page_url);
      assert.equal(back.url.origin + back.url.pathname, 'https://shop.example/ok');
      assert.equal(back.data.status, 'COMPLETED');
      assert.equal(back.data.success, true);
      assert.equal(back.data.refunded_amount, 2000);
      assert.equal(back.data.refund_state, 'PARTIAL');
      const partHtml = await (await fetch(`${s.page_url}?lang=en`)).text();
      assert.match(partHtml, /Partly refunded: 2(?:&#8239;|\s)?000 XAF of 5(?:&#8239;|\s)?100 XAF/);
      if (browser) {
        assert.match(await look(s.page_url, 'en', phoneViewport, 'checkout-partly-refunded-phone-en'), /Partly refunded/);
        assert.match(await look(s.page_url, 'fr', desktopViewport, 'checkout-partly-refunded-desktop-fr'), /Remboursé en partie/);
      }

      await refund(paid.transaction_reference, 3000);
      back = await serviceData(s.page_url);
      assert.equal(back.data.status, 'COMPLETED');
      assert.equal(back.data.refunded_amount, 5000);
      assert.equal(back.data.refund_state, 'FULL');
      assert.equal(back.data.credited_amount, 5000);
      const allHtml = await (await fetch(`${s.page_url}?lang=en`)).text();
      assert.match(allHtml, /Refunded/);
      assert.ok(!allHtml.includes('name="provider"'), 'no payment form on a refunded order');
      if (browser) {
        assert.match(await look(s.page_url, 'fr', phoneViewport, 'checkout-refunded-phone-fr'), /Remboursé/);
        assert.match(await look(s.page_url, 'en', desktopViewport, 'checkout-refunded-desktop-en'), /This order was paid, then refunded/);
      }

      // The same order again: paid (then refunded) is never opened again; the page takes no payment.
      const again = await open(orderId);
      assert.equal(again.status, 409, JSON.stringify(again.body));
      assert.equal(again.body.message, 'order_paid');
      await submit(s.page_url, { attempt: '1', provider: 'MTN_MOMO_CMR', customer_phone: '237690000000' });
      const after = await serviceData(s.page_url);
      assert.equal(after.data.transaction_reference, paid.transaction_reference, 'no new collection');
      assert.equal(after.data.refund_state, 'FULL');
      assert.match(await (await fetch(`${s.page_url}?lang=en`)).text(), /Refunded/);
      const list = await fetch(`${server.baseUrl}/refunds?transaction_reference=${paid.transaction_reference}`,
        { headers: { 'x-sp-auth-token': `Bearer ${token}` } });
      assert.equal((await list.json()).meta.pagination.total, 2);
      checkLedger(server);
    });
  });
}
