// Headless Chromium on a phone-sized viewport: the documented merchant site
// (docs/examples/merchant-site.mjs) posts its checkout form, the customer pays on the hosted page
// with a sandbox number, without JavaScript (no code) and with it (an operator asking for an
// OTP, the pay button script), lands on successUrl, and the site verifies service_data and its
// signature; a cancellation lands on failureUrl; a payment done with the keyboard alone.
// Screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { followWithoutScript, noBrowser } from './lib/browser.mjs';
import { backends } from './lib/server.mjs';
import { verifyServiceData } from '../../docs/examples/merchant-site.mjs';
import { pageSuite } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`hosted checkout in a phone browser on ${backend}`, { skip: noBrowser }, () => {
    let server, browser, cmrSite, civSite;
    pageSuite({ backend, args: ['--set', 'payments.sandbox_delay_ms=300'] }, {
      shops: true, setup: (s) => { ({ server, browser, cmrSite, civSite } = s); },
    });

    const phone = (locale, javaScriptEnabled) => browser.newContext({
      locale, viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, javaScriptEnabled,
    });
    // The site's record of the order paid from `url` (its success page's address).
    const verified = (site, secret, url) => {
      const u = new URL(url);
      const data = verifyServiceData(secret, u.searchParams.get('service_data'), u.searchParams.get('signature'));
      assert.ok(data, 'service_data is signed with the merchant\'s checkout secret');
      assert.equal(site.orders.get(data.reference).status, data.status);
      return data;
    };

    test('without JavaScript: the shop posts the form, MTN (no code), back on successUrl', async () => {
      const context = await phone('fr-FR', false);
      const page = await context.newPage();
      await page.goto(`${cmrSite.url}/?phone=237690000000`);
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
      assert.equal(await page.getAttribute('html', 'lang'), 'fr');
      const body = await page.textContent('body');
      assert.match(body, /Boutique Akwa/);
      assert.match(body, /5\u202f000 XAF/);
      assert.match(body, /MTN Mobile Money/);
      assert.match(body, /Orange Money/);
      assert.match(body, /Expire dans/);
      assert.ok(!body.includes('MCH-'), 'no merchant identifier on the page');
      assert.equal(await page.inputValue('input[name=customer_phone]'), '237690000000');
      if (shots) await page.screenshot({ path: `${shots}/checkout-phone.png`, fullPage: true });
      await page.check('input[value=MTN_MOMO_CMR]');
      await page.click('form[method=post] button[type=submit] >> nth=0');
      await followWithoutScript(page, /\/success\?service_data=/);
      assert.match(await page.textContent('#result'), /payment received/);
      const data = verified(cmrSite, server.demo.merchants[0].checkout_secret, page.url());
      assert.equal(data.status, 'COMPLETED');
      assert.equal(data.amount, 5000);
      if (shots) await page.screenshot({ path: `${shots}/checkout-success.png`, fullPage: true });
      await context.close();
    });

    test('with JavaScript: the pay button, an operator asking for a code, back on successUrl', async () => {
      const context = await phone('en-GB', true);
      const page = await context.newPage();
      await page.goto(`${civSite.url}/?phone=2250700000000`);
      await page.waitForSelector('form[data-sika-ready]');
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
      assert.equal(await page.getAttribute('html', 'lang'), 'en');
      await page.waitForFunction(() => /\d+:\d\d/.test(document.getElementById('countdown').textContent));
      await page.check('input[value=ORANGE_MONEY_CIV]');
      await page.click('form[method=post] button[type=submit] >> nth=0');
      await page.waitForSelector('input[name=otp]');
      if (shots) await page.screenshot({ path: `${shots}/checkout-otp.png`, fullPage: true });
      await page.fill('input[name=otp]', server.demo.sandbox.otp);
      await page.click('form[method=post] button[type=submit] >> nth=0');
      await page.waitForURL(/\/success\?service_data=/, { timeout: 20000 });
      const data = verified(civSite, server.demo.merchants[1].checkout_secret, page.url());
      assert.equal(data.status, 'COMPLETED');
      assert.equal(data.currency, 'XOF');
      await context.close();
    });

    test('cancel goes back to failureUrl with a signed CANCELLED', async () => {
      const context = await phone('en-GB', false);
      const page = await context.newPage();
      await page.goto(cmrSite.url);
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
      await page.click('button.secondary');
      await page.waitForURL(/\/failure\?service_data=/);
      assert.match(await page.textContent('#result'), /not completed/);
      assert.equal(verified(cmrSite, server.demo.merchants[0].checkout_secret, page.url()).status, 'CANCELLED');
      await context.close();
    });

    test('a failed payment: the page says why, in French and in English, phone and desktop', async () => {
      for (const [locale, lang, why] of [['fr-FR', 'fr', /le solde du compte mobile money est insuffisant/],
        ['en-GB', 'en', /the mobile-money balance is insufficient/]]) {
        for (const viewport of ['phone', 'desktop']) {
          const context = viewport === 'phone' ? await phone(locale, false)
            : await browser.newContext({ locale, viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
          const page = await context.newPage();
          await page.goto(`${cmrSite.url}/?phone=237690000001`);  // the sandbox's short balance
          await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
          await page.check('input[value=MTN_MOMO_CMR]');
          await page.click('form[method=post] button[type=submit] >> nth=0');
          let text = '';
          for (let i = 0; i < 100 && !why.test(text); i++) {
            await page.waitForTimeout(200);
            await page.goto(page.url());
            text = await page.textContent('body');
          }
          assert.equal(await page.getAttribute('html', 'lang'), lang);
          assert.match(text, why);
          assert.match(await page.textContent('[role=alert]'), why);
          assert.ok(await page.$('input[name=customer_phone]'), 'the form again, to try another method or number');
          if (shots) await page.screenshot({ path: `${shots}/checkout-failed-${lang}-${viewport}.png`, fullPage: true });
          await context.close();
        }
      }
    });

    test('a tampered return is rejected by the merchant site', async () => {
      const context = await phone('en-GB', false);
      const page = await context.newPage();
      const forged = JSON.stringify({ reference: 'ORD-x', status: 'COMPLETED', success: true, amount: 5000, currency: 'XAF' });
      await page.goto(`${cmrSite.url}/success?service_data=${encodeURIComponent(forged)}&signature=${'0'.repeat(64)}`);
      assert.match(await page.textContent('#result'), /Rejected/);
      await context.close();
    });

    test('keyboard only: from the shop\'s button to successUrl', async () => {
      const context = await phone('en-GB', false);
      const page = await context.newPage();
      await page.goto(`${cmrSite.url}/?phone=237690000000`);
      const tabTo = async (predicate, max = 20) => {
        for (let i = 0; i < max; i++) {
          await page.keyboard.press('Tab');
          if (await page.evaluate(predicate)) return;
        }
        assert.fail('focus never reached the element');
      };
      await tabTo(() => document.activeElement && document.activeElement.type === 'submit');
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.keyboard.press('Enter')]);
      await tabTo(() => document.activeElement && document.activeElement.name === 'provider');
      await tabTo(() => document.activeElement && document.activeElement.name === 'customer_phone');
      await page.keyboard.press('Enter');
      await followWithoutScript(page, /\/success\?service_data=/);
      assert.equal(verified(cmrSite, server.demo.merchants[0].checkout_secret, page.url()).status, 'COMPLETED');
      await context.close();
    });
  });
}
