// The merchant's statement page in headless Chromium, on a phone (390 px, French, no JavaScript)
// and a desktop (English): the currency and month form, the balances at both ends, the movements
// with their column names, both CSV downloads (comma; semicolon with a BOM for Excel), axe-clean
// and without sideways scrolling; a bad month is refused by name. Screenshots go to
// $SIKA_SCREENSHOTS when set.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { noBrowser, signInMerchant } from './lib/browser.mjs';
import { backends } from './lib/server.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { pageSuite, payFixedLink } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`statement page (${backend})`, { skip: noBrowser }, () => {
    let server, browser, reference;
    pageSuite({ backend, args: ['--set', 'payments.sandbox_delay_ms=0'] }, {
      setup: async (s) => {
        ({ server, browser } = s);
        reference = await payFixedLink(server, { completed: true });
      },
    });

    const dashboard = () => server.demo.dashboard.url;
    const signIn = (context) => signInMerchant(server, context);

    test('on a phone, in French, without JavaScript: balances, movements, both CSV downloads', async () => {
      const context = await browser.newContext({ locale: 'fr-FR', javaScriptEnabled: false, ...phoneViewport });
      const page = await signIn(context);
      await page.goto(`${dashboard()}/statements`);
      await assertPageStandards(page, 'statement (phone)');
      assert.match(await page.textContent('h2'), /Relevé XAF/);
      assert.match(await page.textContent('#opening'), /XAF/);
      assert.match(await page.textContent('#closing'), /XAF/);
      const row = page.locator('#movements tbody tr', { has: page.locator(`td:text("${reference}")`) });
      assert.equal(await row.locator('td[data-label=Type]').textContent(), 'COLLECTION');
      assert.match(await row.locator('td[data-label=Net]').textContent(), /XAF/);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390, `no sideways scroll (${width}px)`);
      if (shots) await page.screenshot({ path: `${shots}/statement-phone.png`, fullPage: true });
      // Excel's link first in French: semicolons and a BOM.
      const excelHref = await page.getAttribute('#csv-excel', 'href');
      const excel = await context.request.get(new URL(excelHref, page.url()).toString());
      assert.equal(excel.status(), 200);
      assert.match(excel.headers()['content-disposition'], /attachment; filename="statement-.*\.csv"/);
      const bytes = await excel.body();
      assert.deepEqual([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
      const text = bytes.subarray(3).toString('utf8');
      assert.ok(text.startsWith('type;reference;merchant_reference;operator_reference;gross;fee;net;balance_after;created_at;settled_at\r\n'), text);
      assert.ok(text.includes(`COLLECTION;${reference};`), text);
      const plain = await context.request.get(new URL(await page.getAttribute('#csv', 'href'), page.url()).toString());
      const csv = await plain.text();
      assert.ok(csv.startsWith('type,reference,'), csv);
      assert.ok(csv.includes(`COLLECTION,${reference},`), csv);
      await context.close();
    });

    test('on a desktop, in English: the form, a month without movement, a bad month refused', async () => {
      const context = await browser.newContext({ locale: 'en-GB', ...desktopViewport });
      const page = await signIn(context);
      await page.goto(`${dashboard()}/statements?lang=en`);
      await assertPageStandards(page, 'statement (desktop)');
      assert.match(await page.textContent('h2'), /Statement XAF/);
      if (shots) await page.screenshot({ path: `${shots}/statement-desktop.png`, fullPage: true });
      await page.fill('#month', '2020-01');
      await Promise.all([page.waitForURL(/month=2020-01/), page.click('form.card button')]);
      assert.match(await page.textContent('main'), /No movement in this period/);
      assert.equal((await page.textContent('#opening')).replace(/\s/g, ''), (await page.textContent('#closing')).replace(/\s/g, ''));
      const bad = await page.goto(`${dashboard()}/statements?lang=en&currency=XAF&month=2020-13`);
      assert.equal(bad.status(), 400);
      assert.match(await page.textContent('main'), /month/);
      await context.close();
    });
  });
}
