// Headless Chromium on a phone-sized viewport, JavaScript off: a partner links a user, the user
// signs in to the wallet page with a code from the sandbox outbox, sees the pending link with the
// limits it asks for, approves it, sees the balance and history after a charge, then unlinks; a
// Sika user signs in through the identity service (OIDC) and sees the wallet of the account's phone.
// Screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { startServer, sikaBinary } from './lib/server.mjs';

const shots = process.env.SIKA_SCREENSHOTS;
const secret = 'e2e-test-secret-key-0123456789abcdef';

describe('the wallet page on a phone', { skip: noBrowser }, () => {
  let server, browser;
  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  const api = async (path, body) => {
    const r = await fetch(`${server.linkUrl}/api/agent/link/${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': server.demo.link_api_key },
      body: JSON.stringify(body),
    });
    return r.json();
  };
  const lastCode = (phone) => {
    const messages = JSON.parse(execFileSync(sikaBinary, ['admin', 'outbox', 'list', '--to', phone, '--json', '--db', server.dsn],
      { env: { ...process.env, SIKA_SECRET_KEY: secret }, encoding: 'utf8' }));
    return messages[0].body.match(/\d{6}/)[0];
  };

  test('sign in, approve a partner within its limits, see a charge, unlink', async () => {
    const linked = await api('new', { email: 'kofi@example.com', phone: '690000055', phoneCountry: '+237',
      limits: { per_payment: 10000, per_period: 25000, period_seconds: 604800 } });
    assert.equal(linked.data.link.status, 'PENDING');
    execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', '237690000055', '--currency', 'XAF', '--amount', '30000',
      '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });

    const context = await browser.newContext({
      locale: 'fr-FR', viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
      javaScriptEnabled: false,
    });
    const page = await context.newPage();
    await page.goto(`${server.checkoutUrl}/wallet`);
    assert.equal(await page.getAttribute('html', 'lang'), 'fr');
    if (shots) await page.screenshot({ path: `${shots}/wallet-signin.png`, fullPage: true });
    await page.fill('input[name=phone]', '+237 690 00 00 55');
    await Promise.all([page.waitForSelector('input[name=otp]'), page.click('#send')]);
    await page.fill('input[name=otp]', lastCode('+237690000055'));
    await Promise.all([page.waitForSelector('#links'), page.click('#verify')]);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'sika_wallet');
    assert.ok(session && session.httpOnly && session.sameSite === 'Strict');

    // The pending link states its partner and limits; the user approves it.
    let body = await page.textContent('body');
    assert.match(body, /Boutique Akwa Douala \(PENDING\)/);
    assert.match(body, /10.000 XAF par paiement/);
    assert.match(body, /25.000 XAF par période de 7 d/);
    assert.match(body, /30.000 XAF/);
    if (shots) await page.screenshot({ path: `${shots}/wallet-consent.png`, fullPage: true });
    await Promise.all([page.waitForSelector('#notice'), page.click('text=Autoriser')]);
    assert.match(await page.textContent('#links'), /\(ACTIVE\)/);

    // The partner charges; the page shows the new balance and the movement.
    const charged = await api('charge', { apikey: linked.data.apikey, amount: 7500, transaction_uuid: randomUUID() });
    assert.equal(charged.data.status, 'COMPLETED');
    await page.goto(`${server.checkoutUrl}/wallet?lang=en`);
    body = await page.textContent('body');
    assert.match(body, /22.500 XAF/);
    assert.match(await page.textContent('#history'), /Boutique Akwa Douala · -7.500 XAF/);
    assert.match(body, /spent this period : 7.500 XAF/);
    if (shots) await page.screenshot({ path: `${shots}/wallet-home.png`, fullPage: true });

    // The user unlinks; the partner's key stops working.
    await Promise.all([page.waitForSelector('#notice'), page.click('text=Unlink')]);
    assert.match(await page.textContent('#links'), /\(UNLINKED\)/);
    if (shots) await page.screenshot({ path: `${shots}/wallet-unlinked.png`, fullPage: true });
    const refused = await api('charge', { apikey: linked.data.apikey, amount: 100, transaction_uuid: randomUUID() });
    assert.equal(refused.code, 409);
    await context.close();
  });

  test('a Sika user signs in with the identity service and sees the wallet of the account\'s phone', async () => {
    const context = await browser.newContext({ locale: 'en-GB', viewport: { width: 390, height: 844 }, isMobile: true });
    const page = await context.newPage();
    await page.goto(`${server.checkoutUrl}/wallet?lang=en`);
    await page.click('#signin-identity');
    assert.ok(page.url().startsWith(server.authUrl + '/oauth/v2/authorize'), page.url());
    await page.fill('#email', server.demo.user.email);
    await page.fill('#password', server.demo.user.password);
    await Promise.all([page.waitForURL((u) => u.toString().startsWith(`${server.checkoutUrl}/wallet`)),
      page.click('button[value=approve]')]);
    await page.waitForSelector('#balances');
    // The demo user's phone is +237 650 00 00 01: the page shows that wallet.
    assert.match(await page.textContent('#wallet'), /WAL-.*\+237 .*01/);
    const session = (await context.cookies()).find((c) => c.name === 'sika_wallet');
    assert.ok(session && session.httpOnly && session.sameSite === 'Strict');
    if (shots) await page.screenshot({ path: `${shots}/wallet-oidc.png`, fullPage: true });
    // A callback whose state is not this browser's is refused.
    const forged = await context.newPage();
    const r = await forged.goto(`${server.checkoutUrl}/wallet/callback?code=x&state=y`);
    assert.equal(r.status(), 400);
    await context.close();
  });
});
