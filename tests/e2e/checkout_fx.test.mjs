// Hosted checkout with currency conversion and what surrounds it, against the real binary on both
// backends: the operator's rates through `sika admin fx`, a euro order with line=up paid in CFA
// francs in headless Chromium (the quote on the page, the signed return keeping the order's
// amount and currency, the merchant credited in euros, a clean ledger), the error page of a form
// post in French, and a rotated checkout secret signing with its kid.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { followWithoutScript, launchBrowser, noBrowser } from './lib/browser.mjs';
import { startServer, backends, merchantToken, sikaBinary } from './lib/server.mjs';
import { startMerchantSite, verifyServiceData } from '../../docs/examples/merchant-site.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

function admin(dsn, ...args) {
  // The server's secret key: a rotated checkout secret is derived from it.
  const env = { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' };
  const r = spawnSync(sikaBinary, ['admin', '--db', dsn, ...args, '--json'], { env, encoding: 'utf8' });
  return { code: r.status, json: r.stdout.trim() ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

const form = (fields) => new URLSearchParams(fields).toString();

for (const backend of backends()) {
  describe(`checkout currency conversion on ${backend}`, () => {
    let server, civ, site, browser;
    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=200'] });
      civ = server.demo.merchants[1];
      site = await startMerchantSite({ checkoutUrl: server.checkoutUrl, apiKey: civ.api_key,
        checkoutSecret: civ.checkout_secret, shopName: 'Boutique Euro', currency: 'EUR', amount: 1000,
        amountText: '10.00', line: 'up' });
      if (!noBrowser) browser = await launchBrowser();
    });
    after(async () => {
      if (browser) await browser.close();
      if (site) await site.close();
      if (server) await server.stop();
    });

    test('the demo rates are listed and an operator sets one', () => {
      const list = admin(server.dsn, 'fx', 'list');
      assert.equal(list.code, 0, list.stderr);
      const eurXof = list.json.find((r) => r.base === 'EUR' && r.quote === 'XOF');
      assert.equal(eurXof.rate, '655.957');
      assert.equal(eurXof.set_by, 'demo');
      const bad = admin(server.dsn, 'fx', 'set', '--base', 'USD', '--quote', 'USD', '--rate', '1.5e3', '--by', 'ops');
      assert.notEqual(bad.code, 0);
      const set = admin(server.dsn, 'fx', 'set', '--base', 'GBP', '--quote', 'XOF', '--rate', '1000/1.3', '--by', 'ops');
      assert.equal(set.code, 0, set.stderr);
      assert.equal(set.json.rate, '10000/13');
    });

    test('a euro order with line=up is paid in XOF in a phone browser; the merchant gets euros', { skip: noBrowser }, async () => {
      const context = await browser.newContext({ locale: 'en-GB', viewport: { width: 390, height: 844 }, isMobile: true,
        javaScriptEnabled: false });
      const page = await context.newPage();
      await page.goto(`${site.url}/?phone=2250500000000`);
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
      const body = await page.textContent('body');
      assert.match(body, /10\.00 EUR/);
      assert.match(body, /10\.00 EUR = 6\u202f560 XOF/, body);  // 6559.57 rounded up
      assert.match(body, /655\.957/);
      if (shots) await page.screenshot({ path: `${shots}/checkout-fx.png`, fullPage: true });
      await page.check('input[value=MTN_MOMO_CIV]');
      await page.click('form[method=post] button[type=submit] >> nth=0');
      await followWithoutScript(page, /\/success\?service_data=/);
      assert.match(await page.textContent('#result'), /payment received/);
      const u = new URL(page.url());
      const data = verifyServiceData(civ.checkout_secret, u.searchParams.get('service_data'), u.searchParams.get('signature'));
      assert.ok(data, 'signed with the merchant\'s secret');
      assert.equal(data.amount, 1000);
      assert.equal(data.currency, 'EUR');
      assert.equal(data.charged_currency, 'XOF');
      assert.ok(data.charged_amount >= 6560, JSON.stringify(data));
      assert.equal(data.rate, '655.957');
      assert.equal(data.kid, 1);
      await context.close();

      const token = await merchantToken(server, 1, 'payments');
      const bal = await fetch(`${server.baseUrl}/balance`, { headers: { 'x-sp-auth-token': `Bearer ${token}` } });
      const balances = (await bal.json()).data;
      const eur = balances.find((b) => b.currency === 'EUR');
      assert.ok(eur, JSON.stringify(balances));
      assert.equal(eur.available, 1000, JSON.stringify(balances));
      const check = admin(server.dsn, 'check-ledger');
      assert.equal(check.code, 0, `${check.stderr}\n${JSON.stringify(check.json)}`);
      assert.equal(check.json.ok, true);
    });

    test('without line=up a euro order has no method: the refusal names the field, in French', async () => {
      const fields = { apiKey: civ.api_key, amount: '10.00', currency: 'EUR', orderId: `ORD-${randomUUID()}`,
        description: 'x', shopName: 'Boutique', successUrl: 'javascript:alert(1)', failureUrl: 'https://shop.example/ko' };
      const r = await fetch(server.checkoutUrl, { method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-language': 'fr-FR,fr;q=0.9' },
        body: form(fields) });
      assert.equal(r.status, 400);
      const html = await r.text();
      assert.match(html, /lang="fr"/);
      assert.match(html, /Corrigez ces champs/);
      assert.match(html, /successUrl<\/strong> : doit utiliser http ou https/);
      assert.doesNotMatch(html, /must /);
      const en = await fetch(server.checkoutUrl, { method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-language': 'en' },
        body: form(fields) });
      assert.match(await en.text(), /must use http or https/);
    });

    test('a rotated secret signs the return with its kid; the old one no longer verifies', async () => {
      const rotated = admin(server.dsn, 'checkout', 'rotate', '--merchant', civ.matricule);
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.equal(rotated.json.kid, 2);
      const secret = rotated.json.checkout_secret;
      assert.notEqual(secret, civ.checkout_secret);
      const r = await fetch(server.checkoutUrl, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: civ.api_key, amount: 5000, currency: 'XOF', orderId: `ORD-${randomUUID()}`,
          description: 'x', shopName: 'Boutique', successUrl: 'https://shop.example/ok', failureUrl: 'https://shop.example/ko' }) });
      assert.equal(r.status, 201);
      const pageUrl = (await r.json()).data.page_url;
      const cancel = await fetch(`${pageUrl}/cancel`, { method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'x=1' });
      assert.equal(cancel.status, 303);
      const back = new URL(cancel.headers.get('location'));
      const raw = back.searchParams.get('service_data');
      const data = verifyServiceData(secret, raw, back.searchParams.get('signature'));
      assert.ok(data);
      assert.equal(data.kid, 2);
      assert.equal(verifyServiceData(civ.checkout_secret, raw, back.searchParams.get('signature')), null);
    });
  });
}
