// The customer pages that wait for a payment (hosted checkout, payment link, confirmation) in
// headless Chromium, on a phone (390 px) and a desktop: no <meta http-equiv=refresh> — a Refresh
// link without JavaScript, live.js polling with back-off and an aria-live announcement with it —,
// noindex, axe-clean, nothing scrolling sideways, statuses and dates in words of the page's
// language, and example phone numbers of the page's country. Screenshots go to
// $SIKA_SCREENSHOTS when set.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { noBrowser } from './lib/browser.mjs';
import { backends, merchantToken } from './lib/server.mjs';
import { assertPageStandards, assertNoRawValues, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { pageSuite } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`customer pages waiting for a payment on ${backend}`, { skip: noBrowser }, () => {
    let server, browser, cmrSite, civSite;
    // A sandbox payment stays PENDING for 4 s: long enough to see the waiting page.
    pageSuite({ backend, args: ['--set', 'payments.sandbox_delay_ms=4000'] }, {
      shops: true, setup: (s) => { ({ server, browser, cmrSite, civSite } = s); },
    });

    const context = (locale, javaScriptEnabled, size = phoneViewport) =>
      browser.newContext({ locale, javaScriptEnabled, ...size });
    // Without JavaScript the customer presses Refresh until `done` shows.
    const refreshUntil = async (page, done, max = 20) => {
      for (let i = 0; i < max; i++) {
        if (await page.locator(done).count()) return;
        await page.waitForTimeout(700);
        if (await page.locator('#sika-refresh').count()) await Promise.all([page.waitForLoadState('load'), page.click('#sika-refresh')]);
      }
      assert.fail(`${done} never showed`);
    };
    const headerOf = async (page, name) => (await page.request.get(page.url())).headers()[name];

    test('checkout without JavaScript: the waiting page refreshes by its link, then back to the shop', async () => {
      const ctx = await context('fr-FR', false);
      const page = await ctx.newPage();
      await page.goto(`${cmrSite.url}/?phone=237690000000`);
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
      assert.match(await page.textContent('label[for=phone]'), /\+237 6\d{8}/, 'an example number of Cameroon');
      assert.match(await page.getAttribute('#phone', 'placeholder'), /^\+237 /);
      assert.doesNotMatch(await page.textContent('body'), /\d{4}-\d\d-\d\dT/, 'the expiry is not an ISO timestamp');
      assert.match(await page.textContent('body'), /à \d\d:\d\d UTC\+1/, 'the expiry in Douala time');
      await assertPageStandards(page, 'checkout form (phone)');
      await page.check('input[value=MTN_MOMO_CMR]');
      await page.click('form[method=post] button[type=submit] >> nth=0');
      await page.waitForSelector('#sika-live[data-state=PENDING]');
      if (shots) await page.screenshot({ path: `${shots}/checkout-pending-phone.png`, fullPage: true });
      await assertPageStandards(page, 'checkout waiting page (phone)');
      await assertNoRawValues(page, 'checkout waiting page');
      assert.match(await headerOf(page, 'x-robots-tag'), /noindex/);
      assert.equal(await page.textContent('#sika-refresh'), 'Actualiser la page');
      await refreshUntil(page, '#sika-live[data-next]');
      if (shots) await page.screenshot({ path: `${shots}/checkout-completed-phone.png`, fullPage: true });
      await assertPageStandards(page, 'checkout completed page (phone)');
      await Promise.all([page.waitForURL(/\/success\?service_data=/), page.click('#sika-live a.button')]);
      await ctx.close();
    });

    test('checkout with JavaScript on a desktop: the page follows the payment to the shop by itself', async () => {
      const ctx = await context('en-GB', true, desktopViewport);
      const page = await ctx.newPage();
      await page.goto(`${cmrSite.url}/?phone=237690000000`);
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
      await assertPageStandards(page, 'checkout form (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/checkout-form-desktop.png`, fullPage: true });
      await page.check('input[value=MTN_MOMO_CMR]');
      await page.click('form[method=post] button[type=submit] >> nth=0');
      await page.waitForSelector('#sika-live[data-state=PENDING]');
      await assertPageStandards(page, 'checkout waiting page (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/checkout-pending-desktop.png`, fullPage: true });
      // live.js polls, announces the change, reloads, then moves on to the shop: no click.
      await page.waitForURL(/\/success\?service_data=/, { timeout: 30000 });
      await ctx.close();
    });

    test('the checkout page of a merchant of Côte d\'Ivoire gives an Ivorian example number', async () => {
      const ctx = await context('fr-FR', false);
      const page = await ctx.newPage();
      await page.goto(`${civSite.url}/?phone=2250700000000`);
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
      assert.match(await page.textContent('label[for=phone]'), /\+225 0[157]\d{8}/);
      assert.match(await page.textContent('body'), /à \d\d:\d\d UTC\b/, 'the expiry in Abidjan time');
      await ctx.close();
    });

    test('payment link without JavaScript: waiting page, Refresh, a receipt in words', async () => {
      const link = server.demo.payment_links.filter((l) => l.kind === 'fixed')[0];
      const ctx = await context('fr-FR', false);
      const page = await ctx.newPage();
      await page.goto(link.payment_url);
      assert.match(await page.textContent('form'), /\+237 6\d{8}/, 'an example number of Cameroon');
      await assertPageStandards(page, 'payment link form (phone)');
      await page.selectOption('select[name=provider]', 'MTN_MOMO_CMR');
      await page.fill('input[name=customer_phone]', '237690000000');
      await Promise.all([page.waitForURL(/\/status\?t=/), page.click('button[type=submit]')]);
      await page.waitForSelector('#sika-live[data-state=PENDING]');
      assert.doesNotMatch(await page.title(), /Reçu/, 'no receipt while the payment waits');
      assert.match(await page.textContent('dl'), /en attente de validation/);
      await assertPageStandards(page, 'payment link waiting page (phone)');
      await assertNoRawValues(page, 'payment link waiting page');
      assert.match(await headerOf(page, 'x-robots-tag'), /noindex/);
      if (shots) await page.screenshot({ path: `${shots}/link-pending-phone.png`, fullPage: true });
      await refreshUntil(page, '.ok');
      assert.match(await page.title(), /Reçu/);
      assert.match(await page.textContent('dl'), /réussi/);
      assert.match(await page.textContent('dl'), /\d{1,2}(er)? \p{L}+ \d{4} à \d\d:\d\d \(UTC\+1\)/u);
      await assertNoRawValues(page, 'payment link receipt');
      await assertPageStandards(page, 'payment link receipt (phone)');
      if (shots) await page.screenshot({ path: `${shots}/link-receipt-phone.png`, fullPage: true });
      await ctx.close();
    });

    test('payment link with JavaScript on a desktop: the receipt comes by itself', async () => {
      const ctx = await context('en-GB', true, desktopViewport);
      const page = await ctx.newPage();
      const civ = server.demo.payment_links.filter((l) => l.kind === 'fixed')[1];  // the CIV merchant
      await page.goto(civ.payment_url);
      assert.match(await page.textContent('form'), /\+225 0[157]\d{8}/, 'an example number of Côte d\'Ivoire');
      const link = server.demo.payment_links.filter((l) => l.kind === 'fixed')[0];
      await page.goto(link.payment_url);
      await assertPageStandards(page, 'payment link form (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/link-form-desktop.png`, fullPage: true });
      await page.selectOption('select[name=provider]', 'MTN_MOMO_CMR');
      await page.fill('input[name=customer_phone]', '237690000000');
      await Promise.all([page.waitForURL(/\/status\?t=/), page.click('button[type=submit]')]);
      await page.waitForSelector('#sika-live[data-state=PENDING]');
      await assertPageStandards(page, 'payment link waiting page (desktop)');
      await page.waitForSelector('.ok', { timeout: 30000 });
      assert.match(await page.textContent('dl'), /completed/);
      await assertPageStandards(page, 'payment link receipt (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/link-receipt-desktop.png`, fullPage: true });
      await ctx.close();
    });

    test('confirmation page: pending without a meta refresh, then completed by live.js', async () => {
      const token = await merchantToken(server);
      const intent = await (await fetch(`${server.baseUrl}/collection/intent`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
        body: JSON.stringify({ amount: 2500, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
          channel: 'PROVIDER', customer_wallet: server.demo.sandbox.msisdn.success, description: 'Panier 18',
          settlement_mode: 'DIRECT' }),
      })).json();
      assert.equal(intent.success, true, JSON.stringify(intent));
      const ctx = await context('fr-FR', true);
      const page = await ctx.newPage();
      const first = await page.goto(intent.data.confirmation_url);
      assert.match(first.headers()['x-robots-tag'], /noindex/);
      await assertPageStandards(page, 'confirmation page (phone)');
      await Promise.all([page.waitForLoadState('load'), page.locator('#pay').click()]);
      await page.waitForSelector('#sika-live[data-state=PENDING]');
      await assertPageStandards(page, 'confirmation waiting page (phone)');
      await assertNoRawValues(page, 'confirmation waiting page');
      if (shots) await page.screenshot({ path: `${shots}/confirm-pending-phone.png`, fullPage: true });
      await page.waitForSelector('#status[data-status=COMPLETED]', { timeout: 30000 });
      await assertPageStandards(page, 'confirmation completed page (phone)');
      if (shots) await page.screenshot({ path: `${shots}/confirm-completed-phone.png`, fullPage: true });
      await ctx.close();
    });
  });
}
