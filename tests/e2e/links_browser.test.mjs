// Headless Chromium on a phone-sized viewport pays the demo payment links through their public
// pages: one operator without a code (CMR) and one that asks for an OTP (ORANGE_MONEY_CIV),
// and sees the receipt. Screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { startServer } from './lib/server.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

describe('payment link pages on a phone', { skip: noBrowser }, () => {
  let server, browser;
  before(async () => {
    server = await startServer({ args: ['--set', 'payments.sandbox_delay_ms=300'] });
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  const phone = async (locale) => browser.newContext({
    locale, viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, javaScriptEnabled: false,
  });
  // Without JavaScript the payer presses the Refresh link until the receipt shows (no meta refresh).
  const refreshUntilReceipt = async (page) => {
    for (let i = 0; i < 40 && !(await page.locator('.ok').count()); i++) {
      await page.waitForTimeout(300);
      if (await page.locator('#sika-refresh').count())
        await Promise.all([page.waitForLoadState('load'), page.click('#sika-refresh')]);
    }
    await page.waitForSelector('.ok');
  };
  const demoLink = (index, kind) => server.demo.payment_links.filter((l) => l.kind === kind)[index];

  test('a fixed link paid with MTN (no code) ends on the receipt', async () => {
    const link = demoLink(0, 'fixed');
    const context = await phone('fr-FR');
    const page = await context.newPage();
    await page.goto(link.payment_url);
    assert.equal(await page.getAttribute('html', 'lang'), 'fr');
    const body = await page.textContent('body');
    assert.match(body, /Boutique Akwa Douala/);
    assert.ok(!body.includes('MCH-'), 'no merchant identifier on the page');
    if (shots) await page.screenshot({ path: `${shots}/link-form.png`, fullPage: true });
    await page.selectOption('select[name=provider]', 'MTN_MOMO_CMR');
    await page.fill('input[name=customer_phone]', '237690000000');
    await Promise.all([page.waitForURL(/\/status\?t=/), page.click('button[type=submit]')]);
    await refreshUntilReceipt(page);
    assert.match(await page.textContent('body'), /Paiement réussi/);
    if (shots) await page.screenshot({ path: `${shots}/link-receipt.png`, fullPage: true });
    await context.close();
  });

  test('an operator that needs a code shows the OTP step, then the receipt', async () => {
    const link = demoLink(1, 'fixed');  // the CIV merchant
    const context = await phone('en-GB');
    const page = await context.newPage();
    await page.goto(link.payment_url);
    assert.equal(await page.getAttribute('html', 'lang'), 'en');
    await page.selectOption('select[name=provider]', 'ORANGE_MONEY_CIV');
    await page.fill('input[name=customer_phone]', '2250700000000');
    await page.click('button[type=submit]');
    await page.waitForSelector('input[name=otp]');
    if (shots) await page.screenshot({ path: `${shots}/link-otp.png`, fullPage: true });
    await page.fill('input[name=otp]', server.demo.sandbox.otp);
    await Promise.all([page.waitForURL(/\/status\?t=/), page.click('button[type=submit]')]);
    await refreshUntilReceipt(page);
    assert.match(await page.textContent('body'), /Payment completed/);
    await context.close();
  });
});
