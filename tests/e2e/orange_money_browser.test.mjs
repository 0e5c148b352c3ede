// The confirmation page of Orange Money payments in a browser without JavaScript, phone and
// desktop, fr and en, axe-clean: Web Payment says the customer will be taken to Orange Money and
// links to Orange's page (the double's), which sends the customer back to the page once paid; the
// Cameroon push says to confirm on the phone and offers "send the prompt again". Screenshots go to
// $SIKA_SHOTS when set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { connectorSetup, liveToken } from './lib/operator.mjs';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';

const shots = process.env.SIKA_SHOTS;

describe('Orange Money confirmation pages', { skip: noBrowser }, () => {
  let double, server, browser, tokens = {};
  before(async () => {
    double = await startDouble('orange_money');
    const setup = connectorSetup('orange_money', double);
    server = await startServer({ backend: 'sqlite', args: ['--set', 'log.access=false', ...setup.args], env: setup.env });
    for (const c of ['orange_money', 'orange_money_cm']) tokens[c] = await liveToken(server, c, 'payments');
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await double?.stop();
  });

  async function pending(connector, provider, wallet, currency) {
    const post = async (path, body) => (await fetch(server.baseUrl + path, { method: 'POST',
      headers: { authorization: `Bearer ${tokens[connector]}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
    const intent = await post('/collection/intent', { amount: 2500, currency, provider, customer_wallet: wallet,
      transaction_uuid: randomUUID(), description: 'Boutique Awa' });
    const body = { transaction_reference: intent.data.transaction_reference };
    if (provider.endsWith('CIV')) body.otp = '123456';
    return (await post('/collection/execute', body)).data;
  }

  test('Web Payment: "you will be taken to Orange Money", the link, and back to the page once paid', async () => {
    const tx = await pending('orange_money', 'ORANGE_MONEY_CIV', '2250701234100', 'XOF');
    for (const [size, name] of [[phoneViewport, 'phone'], [desktopViewport, 'desktop']]) {
      for (const lang of ['fr', 'en']) {
        const ctx = await browser.newContext({ javaScriptEnabled: false, ...size });
        const page = await ctx.newPage();
        await page.goto(`${tx.confirmation_url}&lang=${lang}`);
        const text = await page.locator('#status').innerText();
        assert.ok(text.includes(lang === 'fr' ? 'Vous allez être redirigé vers Orange Money' : 'You will be taken to Orange Money'), text);
        assert.ok(await page.locator('a#operator').count());
        await assertPageStandards(page, `orange webpay ${name} ${lang}`);
        if (shots) await page.screenshot({ path: `${shots}/orange-webpay-pending-${name}-${lang}.png`, fullPage: true });
        await ctx.close();
      }
    }
    // The customer follows the link, pays on Orange's page and comes back to the confirmation page.
    const ctx = await browser.newContext({ javaScriptEnabled: false, ...phoneViewport });
    const page = await ctx.newPage();
    await page.goto(`${tx.confirmation_url}&lang=en`);
    await Promise.all([page.waitForURL(/\/confirm\//), page.goto((await page.locator('a#operator').getAttribute('href')) + '?outcome=SUCCESS')]);
    for (let i = 0; i < 30 && (await page.locator('#status').getAttribute('data-status')) !== 'COMPLETED'; i++) {
      await page.waitForTimeout(300);
      await page.reload();
    }
    assert.equal(await page.locator('#status').getAttribute('data-status'), 'COMPLETED');
    if (shots) await page.screenshot({ path: `${shots}/orange-webpay-completed-phone.png`, fullPage: true });
    await ctx.close();
  });

  test('push: "confirm on your phone" and "send the prompt again", without JavaScript', async () => {
    const tx = await pending('orange_money_cm', 'ORANGE_MONEY_CMR', '237690123454', 'XAF');
    for (const [size, name] of [[phoneViewport, 'phone'], [desktopViewport, 'desktop']]) {
      const ctx = await browser.newContext({ javaScriptEnabled: false, ...size });
      const page = await ctx.newPage();
      await page.goto(`${tx.confirmation_url}&lang=fr`);
      assert.ok((await page.locator('#status').innerText()).includes('Confirmez le paiement sur votre téléphone'));
      await assertPageStandards(page, `orange push ${name}`);
      if (shots) await page.screenshot({ path: `${shots}/orange-push-pending-${name}.png`, fullPage: true });
      if (name === 'phone') {
        await Promise.all([page.waitForLoadState('load'), page.click('#prompt')]);
        assert.ok((await page.locator('#notice').innerText()).includes('renvoyée'));
        await assertPageStandards(page, 'orange push prompted');
        if (shots) await page.screenshot({ path: `${shots}/orange-push-prompted-phone.png`, fullPage: true });
        await Promise.all([page.waitForLoadState('load'), page.click('#prompt')]);
        assert.ok(await page.locator('#notice.ko').count(), 'a second prompt at once is refused');
        if (shots) await page.screenshot({ path: `${shots}/orange-push-refused-phone.png`, fullPage: true });
      }
      await ctx.close();
    }
  });
});
