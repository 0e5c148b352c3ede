// The identity service's login page in headless Chromium, without JavaScript: the language switch
// (French/English) keeps every parameter of the authorization request, a refused attempt keeps the
// e-mail typed, the page is axe-clean in both languages and states, on a phone (390 px) and a
// desktop. Screenshots go to $SIKA_SHOTS (default /tmp/shots/fix-identity).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { startServer } from './lib/server.mjs';

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const shots = process.env.SIKA_SHOTS || '/tmp/shots/fix-identity';

// axe's violations on what `page` shows. The walk runs without JavaScript, and axe needs it: the
// page's HTML is checked in a page of its own, in a context with JavaScript (the same viewport).
async function violations(page, axeContext) {
  const copy = await axeContext.newPage();
  await copy.setContent(await page.content());
  await copy.evaluate(axeSource);
  const result = await copy.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  await copy.close();
  return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

describe('login page in a real browser', { skip: noBrowser }, () => {
  let server, browser;
  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    mkdirSync(shots, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  for (const [device, viewport] of [['phone', { width: 390, height: 844 }], ['desktop', { width: 1280, height: 800 }]]) {
    test(`language switch, e-mail kept after a refusal, axe-clean (${device})`, async () => {
      const params = {
        response_type: 'code', client_id: server.demo.public_client.client_id, redirect_uri: 'http://127.0.0.1:8765/callback',
        scope: 'openid profile email', state: 'st-42', nonce: 'n-42', prompt: 'login', login_hint: 'someone@example.com',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256',
      };
      const url = new URL(`${server.authUrl}/oauth/v2/authorize`);
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      const context = await browser.newContext({ locale: 'en-GB', viewport, javaScriptEnabled: false });
      const axeContext = await browser.newContext({ viewport, bypassCSP: true });
      const page = await context.newPage();
      await page.goto(url.toString());
      assert.equal(await page.getAttribute('html', 'lang'), 'en');
      assert.equal(await page.inputValue('#email'), 'someone@example.com');
      assert.deepEqual(await violations(page, axeContext), []);
      await page.screenshot({ path: path.join(shots, `login-${device}-en.png`), fullPage: true });

      // French, by the switch: the same request, every parameter kept.
      await Promise.all([page.waitForURL(/ui_locales=fr/), page.click('nav a[lang=fr]')]);
      assert.equal(await page.getAttribute('html', 'lang'), 'fr');
      const switched = new URL(page.url());
      for (const [k, v] of Object.entries(params)) assert.equal(switched.searchParams.get(k), v, k);
      assert.equal(await page.getAttribute('nav a[lang=fr]', 'aria-current'), 'true');
      assert.equal(await page.inputValue('#email'), 'someone@example.com');
      assert.deepEqual(await violations(page, axeContext), []);
      await page.screenshot({ path: path.join(shots, `login-${device}-fr.png`), fullPage: true });

      // A wrong password: the same page in French with the alert, the e-mail typed kept.
      await page.fill('#email', server.demo.user.email);
      await page.fill('#password', 'not the password');
      await page.click('button[value=approve]');
      assert.ok(await page.isVisible('[role=alert]'));
      assert.equal(await page.inputValue('#email'), server.demo.user.email);
      assert.equal(await page.inputValue('#password'), '');
      assert.equal(await page.getAttribute('html', 'lang'), 'fr');
      assert.deepEqual(await violations(page, axeContext), []);
      await page.screenshot({ path: path.join(shots, `login-${device}-fr-refused.png`), fullPage: true });

      // Back to English from the refused page: still the same request.
      await Promise.all([page.waitForURL(/ui_locales=en/), page.click('nav a[lang=en]')]);
      assert.equal(await page.getAttribute('html', 'lang'), 'en');
      assert.equal(new URL(page.url()).searchParams.get('state'), 'st-42');
      await context.close();
      await axeContext.close();
    });
  }
});
