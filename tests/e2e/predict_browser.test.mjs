// Headless Chromium, without JavaScript: the payment forms preselect the operator of a known number
// (docs/catalog.md, "Numbering plans"). The hosted checkout page with the session's customer phone
// checks the method of that number's operator; the payment link page shown again after a refused
// submission selects the operator of the number typed. Phone (390 px) and desktop, axe-clean.
// Screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { noBrowser } from './lib/browser.mjs';
import { backends } from './lib/server.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { pageSuite } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`operator preselection on ${backend}`, { skip: noBrowser }, () => {
    let server, browser, cmrSite, civSite;
    pageSuite({ backend }, {
      shops: true, setup: (s) => { ({ server, browser, cmrSite, civSite } = s); },
    });

    const context = (locale, size) => browser.newContext({ locale, javaScriptEnabled: false, ...size });
    const checkoutWith = async (page, phone) => {
      await page.goto(`${cmrSite.url}/?phone=${encodeURIComponent(phone)}`);
      await Promise.all([page.waitForURL(/\/checkout\/session\/chk_/), page.click('button[type=submit]')]);
    };
    const checkedMethod = (page) => page.getAttribute('input[name=provider]:checked', 'value');

    test('the checkout page checks the method of the customer phone\'s operator', async () => {
      for (const [size, name, locale] of [[phoneViewport, 'phone', 'fr-FR'], [desktopViewport, 'desktop', 'en-GB']]) {
        const ctx = await context(locale, size);
        const page = await ctx.newPage();
        await checkoutWith(page, '+237 699 00 00 10');  // an Orange block of Cameroon
        assert.equal(await checkedMethod(page), 'ORANGE_MONEY_CMR', `${name}: Orange's number`);
        await assertPageStandards(page, `checkout preselected (${name})`);
        if (shots) await page.screenshot({ path: `${shots}/predict-checkout-${name}.png`, fullPage: true });
        await checkoutWith(page, '237670000001');  // an MTN block
        assert.equal(await checkedMethod(page), 'MTN_MOMO_CMR', `${name}: MTN's number`);
        await checkoutWith(page, '237630000001');  // in no block: the page's own default
        assert.equal(await page.locator('input[name=provider]:checked').count(), 1);
        await ctx.close();
      }
    });

    test('the payment link page shown again selects the operator of the number typed', async () => {
      const link = server.demo.payment_links.filter((l) => l.kind === 'fixed')[1];  // the CIV merchant
      for (const [size, name, locale] of [[phoneViewport, 'phone', 'fr-FR'], [desktopViewport, 'desktop', 'en-GB']]) {
        const ctx = await context(locale, size);
        const page = await ctx.newPage();
        await page.goto(link.payment_url);
        await page.selectOption('select[name=provider]', 'MTN_MOMO_CIV');
        await page.fill('input[name=customer_phone]', '+225 07 00 00 00 00');  // Orange's 07
        await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')]);
        assert.equal(await page.locator('p[role=alert]').count(), 1, `${name}: the refusal is shown`);
        assert.equal(await page.inputValue('select[name=provider]'), 'ORANGE_MONEY_CIV', `${name}: Orange selected`);
        assert.equal(await page.inputValue('input[name=customer_phone]'), '+225 07 00 00 00 00');
        await assertPageStandards(page, `payment link preselected (${name})`);
        if (shots) await page.screenshot({ path: `${shots}/predict-link-${name}.png`, fullPage: true });
        await ctx.close();
      }
    });
  });
}
