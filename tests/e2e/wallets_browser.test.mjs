// Headless Chromium on a phone-sized viewport, JavaScript off: a partner links a user, the user
// signs in to the wallet page with a code from the sandbox outbox, sees the pending link with the
// limits it asks for, approves it, sees the balance and history after a charge, then unlinks; a
// Sika user signs in through the identity service (OIDC) and sees the wallet of the account's phone;
// payments a partner starts beyond the consent (link/init) wait on the page, where the user approves
// one with its code and declines another.
// Screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { assertNoRawValues } from './lib/pagecheck.mjs';
import { noBrowser } from './lib/browser.mjs';
import { sikaBinary } from './lib/server.mjs';
import { pageSuite } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;
const secret = 'e2e-test-secret-key-0123456789abcdef';

describe('the wallet page on a phone', { skip: noBrowser }, () => {
  let server, browser;
  pageSuite({}, { setup: (s) => { ({ server, browser } = s); } });

  const api = async (path, body) => {
    const r = await fetch(`${server.linkUrl}/api/agent/link/${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': server.demo.link_api_key },
      body: JSON.stringify(body),
    });
    return r.json();
  };
  const lastCode = (phone, subject = '') => {
    const messages = JSON.parse(execFileSync(sikaBinary, ['admin', 'outbox', 'list', '--to', phone, '--json', '--db', server.dsn],
      { env: { ...process.env, SIKA_SECRET_KEY: secret }, encoding: 'utf8' }));
    return messages.find((m) => m.body.includes(subject)).body.match(/\d{6}/)[0];
  };
  const signIn = async (context, phone) => {
    const page = await context.newPage();
    await page.goto(`${server.checkoutUrl}/wallet`);
    await page.fill('input[name=phone]', phone);
    await Promise.all([page.waitForSelector('input[name=otp]'), page.click('#send')]);
    await page.fill('input[name=otp]', lastCode(phone.replaceAll(' ', '')));
    await Promise.all([page.waitForSelector('#links'), page.click('#verify')]);
    return page;
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
    assert.match(body, /Boutique Akwa Douala \(en attente de validation\)/);
    assert.match(body, /10.000 XAF par paiement/);
    assert.match(body, /25.000 XAF par période de 7 d/);
    assert.match(body, /30.000 XAF/);
    if (shots) await page.screenshot({ path: `${shots}/wallet-consent.png`, fullPage: true });
    await Promise.all([page.waitForSelector('#notice'), page.click('text=Autoriser')]);
    assert.match(await page.textContent('#links'), /\(actif\)/, 'the status in words of the page');

    // The partner charges; the page shows the new balance and the movement.
    const charged = await api('charge', { apikey: linked.data.apikey, amount: 7500, transaction_uuid: randomUUID() });
    assert.equal(charged.data.status, 'COMPLETED');
    await page.goto(`${server.checkoutUrl}/wallet?lang=en`);
    body = await page.textContent('body');
    assert.match(body, /22.500 XAF/);
    assert.match(await page.textContent('#history'), /Boutique Akwa Douala · -7.500 XAF/);
    // Dates in words, in the wallet's country's time (Douala, UTC+1): no ISO timestamp, no raw status.
    assert.match(await page.textContent('#history'), /\d{1,2} \p{L}+ \d{4}, \d\d:\d\d \(UTC\+1\)/u);
    await assertNoRawValues(page, 'wallet page');
    assert.match(body, /spent this period : 7.500 XAF/);
    if (shots) await page.screenshot({ path: `${shots}/wallet-home.png`, fullPage: true });

    // The user unlinks; the partner's key stops working.
    await Promise.all([page.waitForSelector('#notice'), page.click('text=Unlink')]);
    assert.match(await page.textContent('#links'), /\(unlinked\)/, 'the status in words of the page');
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

  test('payments beyond the consent wait on the page: one approved with its code, one declined', async () => {
    const linked = await api('new', { email: 'esi@example.com', phone: '690000056', phoneCountry: '+237',
      limits: { per_payment: 5000, per_period: 20000, period_seconds: 86400 } });
    execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', '237690000056', '--currency', 'XAF', '--amount', '30000',
      '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
    const context = await browser.newContext({
      locale: 'fr-FR', viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
      javaScriptEnabled: false,
    });
    const page = await signIn(context, '+237 690 00 00 56');
    await Promise.all([page.waitForSelector('#notice'), page.click('text=Autoriser')]);
    assert.equal(await page.$('#pending'), null);  // nothing waits yet

    // Two payments beyond the 5,000 XAF per payment: both wait for the user.
    const big = await api('init', { apikey: linked.data.apikey, amount: 12000, transaction_uuid: randomUUID(),
      description: 'Commande 881' });
    assert.equal(big.data.status, 'INITIATED', JSON.stringify(big));
    const other = await api('init', { apikey: linked.data.apikey, amount: 9000, transaction_uuid: randomUUID(),
      description: 'Commande 882' });
    assert.equal(other.data.status, 'INITIATED');
    await page.goto(`${server.checkoutUrl}/wallet`);
    const pending = await page.textContent('#pending');
    assert.match(pending, /Boutique Akwa Douala · 12.000 XAF/);
    assert.match(pending, /Commande 881/);
    assert.match(pending, /Commande 882/);
    if (shots) await page.screenshot({ path: `${shots}/wallet-pending.png`, fullPage: true });

    // A wrong code is refused and moves nothing; the right one pays.
    const bigItem = `li.payment[data-reference="${big.data.transaction_reference}"]`;
    await page.fill(`${bigItem} input[name=otp]`, '000000');
    await Promise.all([page.waitForSelector('#error'), page.click(`${bigItem} button.go`)]);
    assert.match(await page.textContent('#error'), /Code incorrect/);
    await page.goto(`${server.checkoutUrl}/wallet`);
    await page.fill(`${bigItem} input[name=otp]`, lastCode('+237690000056', big.data.transaction_reference));
    await Promise.all([page.waitForSelector('#notice'), page.click(`${bigItem} button.go`)]);
    assert.match(await page.textContent('#notice'), /Paiement autorisé/);
    assert.match(await page.textContent('#balances'), /18.000 XAF/);
    assert.match(await page.textContent('#history'), /Boutique Akwa Douala · -12.000 XAF/);

    // The other one is declined: cancelled, and the partner's code can no longer approve it.
    const otherItem = `li.payment[data-reference="${other.data.transaction_reference}"]`;
    await Promise.all([page.waitForSelector('#notice'), page.click(`${otherItem} button.no`)]);
    assert.match(await page.textContent('#notice'), /Paiement refusé/);
    assert.equal(await page.$('#pending'), null);
    if (shots) await page.screenshot({ path: `${shots}/wallet-pending-done.png`, fullPage: true });
    const late = await api('approve', { apikey: linked.data.apikey, transaction_reference: other.data.transaction_reference,
      otp: lastCode('+237690000056', other.data.transaction_reference) });
    assert.equal(late.data.status, 'CANCELLED', JSON.stringify(late));
    assert.match(await page.textContent('#balances'), /18.000 XAF/);

    // Another wallet's session cannot act on this wallet's payments.
    const third = await api('init', { apikey: linked.data.apikey, amount: 7000, transaction_uuid: randomUUID() });
    const stranger = await browser.newContext({ locale: 'en-GB', javaScriptEnabled: false });
    const strangerPage = await signIn(stranger, '+237 690 00 00 55');
    await strangerPage.goto(`${server.checkoutUrl}/wallet?lang=en`);
    assert.equal(await strangerPage.$(`li.payment[data-reference="${third.data.transaction_reference}"]`), null);
    const csrf = await strangerPage.getAttribute('input[name=csrf]', 'value');
    const cookie = (await stranger.cookies()).find((c) => c.name === 'sika_wallet');
    const forged = await fetch(`${server.checkoutUrl}/wallet`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `sika_wallet=${cookie.value}` },
      body: new URLSearchParams({ csrf, action: 'pay_decline', payment: third.data.transaction_reference, lang: 'en' }),
    });
    assert.equal(forged.status, 404);
    await stranger.close();
    await context.close();
  });
});
