// The merchant's settlement page in headless Chromium, on a phone (390 px, French, no JavaScript)
// and a desktop (English): the settings form, a bad IBAN refused by name, mobile-money settings
// saved, a settlement asked now listed among the batches and paid out by the sandbox; axe-clean,
// without sideways scrolling; the ledger stays clean. Screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { noBrowser, signInMerchant } from './lib/browser.mjs';
import { backends, waitFor, sqlRows, checkLedger } from './lib/server.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { pageSuite, payFixedLink } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`settlement page (${backend})`, { skip: noBrowser }, () => {
    let server, browser;
    pageSuite({ backend, args: ['--set', 'payments.sandbox_delay_ms=0', '--set', 'settlement.payout_watch_interval_ms=100'] }, {
      setup: async (s) => {
        ({ server, browser } = s);
        await payFixedLink(server, { completed: true });
      },
    });

    const dashboard = () => server.demo.dashboard.url;
    const signIn = (context) => signInMerchant(server, context);

    test('on a phone, in French, without JavaScript: a bad IBAN refused by name, settings saved', async () => {
      const context = await browser.newContext({ locale: 'fr-FR', javaScriptEnabled: false, ...phoneViewport });
      const page = await signIn(context);
      await page.goto(`${dashboard()}/settlement`);
      await assertPageStandards(page, 'settlement (phone)');
      if (shots) await page.screenshot({ path: `${shots}/settlement-phone.png`, fullPage: true });
      await page.selectOption('#destination', 'BANK');
      await page.fill('#iban', 'DE89370400440532013001');
      await page.fill('#bic', 'DEUTDEFF');
      await page.fill('#holder', 'Boutique SARL');
      await page.selectOption('#schedule', 'ON_REQUEST');
      const [refused] = await Promise.all([page.waitForNavigation(), page.click('form.card button')]);
      assert.equal(refused.status(), 400);
      assert.match(await page.textContent('main'), /iban/);
      await page.goto(`${dashboard()}/settlement`);
      await page.selectOption('#destination', 'MOBILE_MONEY');
      await page.fill('#provider', 'MTN_MOMO_CMR');
      await page.fill('#msisdn', '237670000100');  // a number the sandbox pays (…0001 would be refused: insufficient funds)
      await page.selectOption('#schedule', 'ON_REQUEST');
      await page.fill('#minimum', '0');
      await Promise.all([page.waitForURL(/settlement\?currency=XAF/), page.click('form.card button')]);
      assert.equal(await page.inputValue('#msisdn'), '237670000100');
      assert.equal(await page.locator('#settle-now').count(), 1);
      await assertPageStandards(page, 'settlement saved (phone)');
      if (shots) await page.screenshot({ path: `${shots}/settlement-phone-saved.png`, fullPage: true });
      await context.close();
    });

    test('on a desktop, in English: a settlement asked now is listed and paid out', async () => {
      const context = await browser.newContext({ locale: 'en-GB', ...desktopViewport });
      const page = await signIn(context);
      await page.goto(`${dashboard()}/settlement?lang=en`);
      await Promise.all([page.waitForURL(/settlement\?currency=XAF/), page.click('#settle-now')]);
      assert.equal(await page.locator('#batches tbody tr').count(), 1);
      const paid = await waitFor(() => sqlRows(server, "SELECT status FROM stl_batches")[0]?.[0] === 'PAID', 30000);
      assert.ok(paid, 'the batch was paid by its payout: ' + JSON.stringify(sqlRows(server, 'SELECT status, net FROM stl_batches')));
      await page.goto(`${dashboard()}/settlement?lang=en`);
      await assertPageStandards(page, 'settlement (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/settlement-desktop.png`, fullPage: true });
      checkLedger(server);
      await context.close();
    });

    // Nothing is left to settle once the batch is paid: the refusal names the amount's reason in the
    // page's language, on a phone in French and on a desktop in English (error.details' text).
    test('a refused settlement says why in the page\'s language', async () => {
      const cases = [
        { locale: 'fr-FR', viewport: phoneViewport, lang: 'fr', name: 'phone',
          says: /amount\s*:\s*rien n'est disponible au-delà de la réserve et du minimum/ },
        { locale: 'en-GB', viewport: desktopViewport, lang: 'en', name: 'desktop',
          says: /amount: nothing above the reserve and the minimum is available/ },
      ];
      for (const { locale, viewport, lang, name, says } of cases) {
        // With JavaScript, so axe checks the page the POST answered (it reopens a page without it by GET).
        const context = await browser.newContext({ locale, ...viewport });
        const page = await signIn(context);
        await page.goto(`${dashboard()}/settlement?currency=XAF&lang=${lang}`);
        const [refused] = await Promise.all([page.waitForNavigation(), page.click('#settle-now')]);
        assert.equal(refused.status(), 409);
        const text = (await page.textContent('main')).replace(/\u00a0/g, ' ');
        assert.match(text, says);
        await assertPageStandards(page, `settlement refused (${name})`);
        if (shots) await page.screenshot({ path: `${shots}/settlement-refused-${name}.png`, fullPage: true });
        await context.close();
      }
    });
  });
}
