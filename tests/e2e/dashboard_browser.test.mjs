// Headless Chromium through the dashboard, on each backend: the operator signs in with TOTP,
// creates a merchant and its OAuth application and sees the secret once, changes the merchant's
// countries and tier (its old token refused, a new one no longer acting in the removed country),
// edits the catalog; a merchant owner signs
// in, sees a sandbox payment appear, opens its timeline, replays its webhook delivery, creates a
// payment link and downloads its QR code, exports CSV; a viewer's change is refused; merchant A
// cannot open B's objects; a change without the CSRF token is refused; payouts and subscriptions
// (suspend, reactivate, the sandbox test clock) with the same refusals. Screenshots go to
// $SIKA_SCREENSHOTS when set; the tests check the pages they capture.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { totp } from './lib/totp.mjs';
import http from 'node:http';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { backends, startServer, freePort } from './lib/server.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`dashboard in a browser (${backend})`, { skip: noBrowser }, () => {
    let server, browser, receiver;
    const hooks = [];
    before(async () => {
      // A webhook receiver for the demo merchant's endpoint: deliveries appear on the timeline.
      const hookPort = await freePort();
      receiver = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c) => { body += c; });
        req.on('end', () => { hooks.push(body); res.writeHead(200); res.end('ok'); });
      });
      await new Promise((resolve) => receiver.listen(hookPort, '127.0.0.1', resolve));
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=300',
        '--set', `webhooks.demo_url=http://127.0.0.1:${hookPort}/hook`, '--set', 'webhooks.allow_private_targets=true'] });
      browser = await launchBrowser();
    });
    after(async () => {
      if (browser) await browser.close();
      if (server) await server.stop();
      if (receiver) receiver.close();
    });

    const dashboard = () => server.demo.dashboard.url;
    // Signs in through the identity service's login page; returns the page after sign-in.
    async function signIn(context, who) {
      const page = await context.newPage();
      await page.goto(dashboard() + '/');
      assert.ok(page.url().startsWith(server.authUrl + '/oauth/v2/authorize'), page.url());
      await page.fill('#email', who.email);
      await page.fill('#password', who.password);
      await Promise.all([page.waitForURL((u) => u.toString().startsWith(dashboard())), page.click('button[value=approve]')]);
      return page;
    }
    const csrfOf = async (page) => page.getAttribute('input[name=csrf]', 'value');

    test('the operator signs in with TOTP, creates a merchant and its OAuth application, and sees the secret once', async () => {
      const context = await browser.newContext({ locale: 'en-GB' });
      const page = await signIn(context, server.demo.dashboard.operator);
      // First sign-in: TOTP enrolment with a QR code and the key.
      assert.match(page.url(), /\/totp$/);
      assert.ok(await page.isVisible('figure svg'), 'the enrolment QR code is shown');
      const secret = (await page.textContent('#totp-secret')).trim();
      assert.match(secret, /^[A-Z2-7]{32}$/);
      assert.match(await page.getAttribute('#otpauth', 'href'), new RegExp(`^otpauth://totp/Sika:.*secret=${secret}&issuer=Sika`));
      if (shots) await page.screenshot({ path: `${shots}/dashboard-totp-enrol.png`, fullPage: true });
      await page.fill('#code', totp(secret) === '000000' ? '000001' : String((Number(totp(secret)) + 1) % 1000000).padStart(6, '0'));
      await page.click('button');
      assert.match(page.url(), /\/totp\?error=code$/, 'a wrong code is refused');
      await page.fill('#code', totp(secret));
      await Promise.all([page.waitForURL(/\/operator\/merchants$/), page.click('button')]);
      assert.match(await page.textContent('#merchants'), /MCH-CM-0001/);

      await page.fill('#m-name', 'Épicerie Test');
      await page.fill('#m-email', 'shop@test.example');
      await page.fill('#m-countries', 'CMR');
      await Promise.all([page.waitForURL(/\/operator\/merchants\/MCH/), page.click('form[action$="/operator/merchants"] button')]);
      const merchantUrl = page.url();
      assert.match(await page.textContent('h1'), /Épicerie Test/);

      await page.fill('#app-name', 'Backend');
      await page.click('form[action$="/apps"] button');
      const clientId = (await page.textContent('#client-id')).trim();
      const clientSecret = (await page.textContent('#client-secret')).trim();
      assert.ok(clientSecret.length >= 32);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-secret-once.png`, fullPage: true });
      // The secret works at the token endpoint...
      const token = await fetch(`${server.authUrl}/oauth/v2/token`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
      });
      assert.equal(token.status, 200);
      // ...and is never shown again.
      await page.goto(merchantUrl);
      const again = await page.content();
      assert.ok(again.includes(clientId));
      assert.ok(!again.includes(clientSecret), 'the secret is shown once');
      // Its countries and tier: a refusal names each field next to it (phone and desktop width)...
      const issued = (await token.json()).access_token;
      const apiToken = async () => (await (await fetch(`${server.authUrl}/oauth/v2/token`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
      })).json()).access_token;
      const collect = (bearer, provider, currency) => fetch(`${server.baseUrl}/collection/intent`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${bearer}` },
        body: JSON.stringify({ amount: 2500, currency, transaction_uuid: randomUUID(), provider, channel: 'PROVIDER',
          customer_wallet: server.demo.sandbox.msisdn.success, description: 'Grants', settlement_mode: 'DIRECT' }),
      });
      assert.equal((await collect(issued, 'MTN_MOMO_CMR', 'XAF')).status, 200, 'CMR is the merchant\'s');
      assert.equal(await page.inputValue('#grants-countries'), 'CMR');
      await page.fill('#grants-countries', 'CMR, ZZZ');
      await page.fill('#grants-tier', '101');
      await page.click('#grants-save');
      assert.match(await page.textContent('#grants-countries-error'), /ZZZ is not an enabled country of the catalog/);
      assert.match(await page.textContent('#grants-tier-error'), /between 0 and 100/);
      assert.equal(await page.inputValue('#grants-countries'), 'CMR, ZZZ', 'what was typed is kept');
      assert.equal(await page.getAttribute('#grants-tier', 'aria-describedby'), 'grants-tier-error');
      if (shots) {
        await page.screenshot({ path: `${shots}/dashboard-grants-refused.png`, fullPage: true });
        await page.setViewportSize({ width: 390, height: 844 });
        await page.screenshot({ path: `${shots}/dashboard-grants-refused-phone.png`, fullPage: true });
        await page.setViewportSize({ width: 1280, height: 720 });
      }
      // ...then CMR is replaced by CIV at tier 2: the application follows, its old token is refused,
      // a new one acts in CIV and no longer in CMR.
      await page.fill('#grants-countries', 'CIV');
      await page.fill('#grants-tier', '2');
      await Promise.all([page.waitForURL(merchantUrl), page.click('#grants-save')]);
      assert.match(await page.textContent('#merchant-summary'), /CIV · tier 2/);
      assert.match(await page.textContent('#apps'), /CIV\s*2/);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-grants.png`, fullPage: true });
      const stale = await collect(issued, 'MTN_MOMO_CMR', 'XAF');
      assert.equal(stale.status, 401, 'a token issued before the change is refused');
      const fresh = await apiToken();
      const removed = await collect(fresh, 'MTN_MOMO_CMR', 'XAF');
      assert.equal(removed.status, 403);
      const envelope = await removed.json();
      assert.equal(envelope.success, false);
      assert.equal(envelope.message, 'access_denied');
      assert.match(JSON.stringify(envelope), /CMR/);
      const claims = JSON.parse(Buffer.from(fresh.split('.')[1], 'base64url').toString());
      assert.deepEqual(claims.countries, ['CIV']);
      assert.equal(claims.tier, 2);
      // The catalog: a new country by its record, then turned off; both audited.
      await page.goto(dashboard() + '/operator/catalog');
      await page.selectOption('#kind', 'country');
      await page.selectOption('#mode', 'create');
      await page.fill('#record', JSON.stringify({ code: 'XKX', alpha2: 'XK', name_fr: 'Kosovo', name_en: 'Kosovo',
        dialling_code: '+383', currency: 'EUR', msisdn_length: 8 }));
      await Promise.all([page.waitForURL(/\/operator\/catalog$/), page.click('#catalog-put')]);
      assert.match(await page.textContent('#countries'), /XKX/);
      await Promise.all([page.waitForURL(/\/operator\/catalog$/),
        page.click('form[action$="/operator/catalog/country/XKX/disable"] button')]);
      assert.ok(await page.$('form[action$="/operator/catalog/country/XKX/enable"]'), 'XKX is off');
      // A record the catalog refuses: the page names the field.
      await page.selectOption('#mode', 'create');
      await page.fill('#record', JSON.stringify({ code: 'XKY', alpha2: 'XK', name_fr: 'X', name_en: 'X',
        dialling_code: '+383', currency: 'EUR', msisdn_length: 8 }));
      await page.click('#catalog-put');
      assert.match(await page.textContent('body'), /alpha2: already used by XKX/);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-catalog-refused.png`, fullPage: true });
      // An exchange rate: set, listed as the rate in force, audited; a bad rate names the field.
      await page.goto(dashboard() + '/operator/catalog');
      await page.fill('#fx-base', 'GBP');
      await page.fill('#fx-quote', 'XOF');
      await page.fill('#fx-rate', '762.5');
      await Promise.all([page.waitForURL(/\/operator\/catalog$/), page.click('#fx-put')]);
      assert.match(await page.textContent('#fx-rates'), /GBP\s*XOF\s*762\.5/);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-fx.png`, fullPage: true });
      await page.fill('#fx-base', 'GBP');
      await page.fill('#fx-quote', 'XOF');
      await page.fill('#fx-rate', '-3');
      await page.click('#fx-put');
      assert.match(await page.textContent('body'), /rate/);
      // The operator's health page: outbox lag and webhook failure rate.
      await page.goto(dashboard() + '/operator/health');
      assert.match(await page.textContent('#outbox-lag'), /event/);
      assert.ok(await page.$('#webhook-failure-rate'));
      // The audit log records the changes.
      await page.goto(dashboard() + '/audit');
      const audit = await page.textContent('table');
      assert.match(audit, /catalog\.create/);
      assert.match(audit, /catalog\.disable/);
      assert.match(audit, /fx\.set/);
      assert.match(audit, /merchant\.create/);
      assert.match(audit, /merchant\.grants/);
      assert.match(audit, /oauth_client\.create/);
      assert.match(audit, /totp\.enrol/);
      await context.close();
    });

    test('the merchant sees a sandbox payment, its timeline, replays its delivery, makes a link and its QR, exports CSV', async () => {
      const owner = server.demo.dashboard.merchant;
      const link = server.demo.payment_links.find((l) => l.kind === 'fixed');
      const context = await browser.newContext({ locale: 'fr-FR', viewport: { width: 390, height: 844 }, isMobile: true,
        javaScriptEnabled: false, acceptDownloads: true });
      const page = await signIn(context, owner);
      assert.equal(await page.getAttribute('html', 'lang'), 'fr');
      assert.match(await page.textContent('nav'), /owner@sika\.example/);

      // A payment of the demo link, made by a customer.
      const phone = '237690001234';
      const paid = await fetch(`${server.baseUrl}/pay/${link.short_code}/pay`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ customer_phone: phone, transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }),
      });
      assert.equal(paid.status, 200, await paid.clone().text());
      const reference = (await paid.json()).data.transaction_reference;
      assert.ok(reference);
      // It appears, searched by the phone number, and completes.
      let row;
      for (let i = 0; i < 50; i++) {
        await page.goto(`${dashboard()}/transactions?q=1234&status=COMPLETED`);
        row = await page.$(`a:text("${reference}")`);
        if (row) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(row, 'the completed payment is listed');
      if (shots) await page.screenshot({ path: `${shots}/dashboard-transactions.png`, fullPage: true });
      // The home page: the balance it credited and the chart of the last days, drawn by the server.
      await page.goto(dashboard() + '/');
      assert.ok(await page.isVisible('svg[role=img]'), 'the volume chart is drawn');
      const bars = await page.$$eval('svg[role=img] rect', (rs) => rs.filter((r) => Number(r.getAttribute('height')) > 0).length);
      assert.ok(bars >= 1, 'today\'s collected volume is a bar');
      assert.match(await page.textContent('#bal + p, section[aria-labelledby=bal]'), /XAF/);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-home.png`, fullPage: true });
      await page.goto(`${dashboard()}/transactions?q=1234&status=COMPLETED`);
      row = await page.$(`a:text("${reference}")`);
      await Promise.all([page.waitForURL(/\/transactions\/[^/]+$/), row.click()]);
      const timeline = await page.textContent('#timeline');
      assert.match(timeline, /PENDING/);
      assert.match(timeline, /COMPLETED/);
      assert.match(await page.textContent('body'), /COLLECTION/);
      // The delivery of its webhook, then a replay.
      let deliveries = 0;
      for (let i = 0; i < 50 && deliveries === 0; i++) {
        await page.reload();
        deliveries = (await page.$$('#deliveries tbody tr')).length;
        if (!deliveries) await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(deliveries > 0, 'the webhook delivery is listed');
      if (shots) await page.screenshot({ path: `${shots}/dashboard-timeline.png`, fullPage: true });
      await page.click('#deliveries button');
      await page.waitForURL(/\/transactions\/[^/?]+$/);
      assert.ok((await page.$$('#deliveries tbody tr')).length > deliveries, 'the replay is a new delivery');

      // The webhooks page: the delivery log, a new endpoint whose secret is shown once.
      await page.goto(dashboard() + '/webhooks');
      assert.ok((await page.$$('#delivery-log tbody tr')).length > deliveries);
      await page.fill('#url', 'http://127.0.0.1:9/second');
      await page.click('form[action$="/webhooks"] button');
      const whsec = (await page.textContent('#endpoint-secret')).trim();
      assert.match(whsec, /^whsec_/);
      await page.goto(dashboard() + '/webhooks');
      assert.match(await page.textContent('#endpoints'), /127\.0\.0\.1:9\/second/);
      assert.ok(!(await page.content()).includes(whsec), 'the signing secret is shown once');

      // A payment link, its QR code downloaded.
      await page.goto(dashboard() + '/links');
      await page.fill('#title', 'Panier du jour');
      await page.fill('#amount', '1500');
      await page.fill('#currency', 'XAF');
      await Promise.all([page.waitForURL(/\/links\?created=/), page.click('form[action$="/links"] button')]);
      const created = new URL(page.url()).searchParams.get('created');
      assert.match(await page.textContent('#links'), /Panier du jour/);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-links.png`, fullPage: true });
      const [download] = await Promise.all([page.waitForEvent('download'),
        page.click(`a[href$="/links/${created}/qr.png"]`)]);
      const chunks = [];
      for await (const c of await download.createReadStream()) chunks.push(c);
      const png = Buffer.concat(chunks);
      assert.equal(png.subarray(1, 4).toString(), 'PNG');

      // CSV export of the filtered list.
      const csv = await context.request.get(`${dashboard()}/transactions.csv?q=1234`);
      assert.equal(csv.status(), 200);
      assert.match(csv.headers()['content-type'], /^text\/csv/);
      const text = await csv.text();
      assert.match(text.split('\r\n')[0], /^transaction_reference,created_at,operation,status/);
      assert.ok(text.includes(reference));

      // Merchant A cannot open B's objects: another merchant's link and transaction are 404.
      const other = server.demo.payment_links.find((l) => l.kind === 'fixed' && l.merchant !== link.merchant);
      if (other) {
        const qr = await context.request.get(`${dashboard()}/links/${other.reference}/qr.png`);
        assert.equal(qr.status(), 404);
      }
      const missing = await context.request.get(`${dashboard()}/transactions/TXN-NOT-OURS`);
      assert.equal(missing.status(), 404);
      // Operators' pages do not exist for members.
      assert.equal((await context.request.get(`${dashboard()}/operator/merchants`)).status(), 404);
      const grants = await context.request.post(`${dashboard()}/operator/merchants/${link.merchant}/grants`, {
        form: { csrf: await csrfOf(page), countries: 'CMR,CIV', tier: '9' }, maxRedirects: 0 });
      assert.equal(grants.status(), 404, 'a member cannot change a merchant\'s countries and tier');

      // A change without the CSRF token is refused; with it, it goes through.
      const noCsrf = await context.request.post(`${dashboard()}/links/${created}/disable`, { form: {}, maxRedirects: 0 });
      assert.equal(noCsrf.status(), 403);
      const csrf = await csrfOf(page);
      const withCsrf = await context.request.post(`${dashboard()}/links/${created}/disable`, { form: { csrf }, maxRedirects: 0 });
      assert.equal(withCsrf.status(), 303);
      await page.goto(dashboard() + '/links');
      assert.match(await page.textContent('#links'), /DISABLED/);

      // Logout ends the session, and the identity service's sign-in session with it.
      await Promise.all([page.waitForURL(`${server.authUrl}/logout`), page.click('nav form button')]);
      const after = await context.request.get(`${dashboard()}/links`, { maxRedirects: 0 });
      assert.equal(after.status(), 303);
      await page.goto(dashboard() + '/');
      assert.ok(await page.isVisible('#password'), 'signing in again asks for the password');
      await context.close();
    });

    test('merchant B does not see A\'s transactions', async () => {
      const b = server.demo.dashboard.other_merchant;
      const context = await browser.newContext({ locale: 'en-GB' });
      const page = await signIn(context, b);
      await page.goto(`${dashboard()}/transactions`);
      const body = await page.textContent('body');
      assert.ok(!body.includes('237690001234'), 'A\'s payments are not listed to B');
      // A's transaction, by reference, is not found.
      const a = await (await fetch(`${server.baseUrl}/pay/${server.demo.payment_links.find((l) => l.kind === 'fixed').short_code}/pay`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ customer_phone: '237690005555', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }),
      })).json();
      const res = await context.request.get(`${dashboard()}/transactions/${a.data.transaction_reference}`);
      assert.equal(res.status(), 404);
      await context.close();
    });

    test('payouts, subscriptions and sandbox tools: the owner suspends, reactivates, advances the test clock, forces an outcome; B and the viewer cannot', async () => {
      const context = await browser.newContext({ locale: 'en-GB' });
      const page = await signIn(context, server.demo.dashboard.merchant);
      await page.goto(dashboard() + '/payouts');
      assert.match(await page.textContent('h1'), /Payouts/);
      assert.match(await page.textContent('main'), /XAF/, 'the balances per currency');
      if (shots) await page.screenshot({ path: `${shots}/dashboard-payouts.png`, fullPage: true });

      await page.goto(dashboard() + '/subscriptions?status=ACTIVE');
      const rows = await page.$$('#subscriptions tbody tr');
      assert.ok(rows.length >= 1, 'the demo merchant has an active subscription');
      if (shots) await page.screenshot({ path: `${shots}/dashboard-subscriptions.png`, fullPage: true });
      await Promise.all([page.waitForURL(/\/subscriptions\/SUB-/), page.click('#subscriptions tbody tr a')]);
      const subUrl = page.url();
      const reference = subUrl.split('/').pop();
      await Promise.all([page.waitForURL(subUrl), page.click('#suspend')]);
      assert.match(await page.textContent('main'), /SUSPENDED/);
      await Promise.all([page.waitForURL(subUrl), page.click('#reactivate')]);
      assert.match(await page.textContent('main section'), /ACTIVE/);
      // The sandbox test clock, as the API's: a bad value names the field; a good one moves the clock.
      const csrf = await csrfOf(page);
      const bad = await context.request.post(`${subUrl}/test-clock`, { form: { csrf, days: '0' }, maxRedirects: 0 });
      assert.equal(bad.status(), 400);
      assert.match(await bad.text(), /days/);
      await page.fill('#days', '3');
      await Promise.all([page.waitForURL(subUrl), page.click('#advance')]);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-subscription.png`, fullPage: true });
      // Sandbox tool: a payment whose number the sandbox operator leaves PENDING, answered by force.
      const link = server.demo.payment_links.find((l) => l.kind === 'fixed');
      const stuck = await (await fetch(`${server.baseUrl}/pay/${link.short_code}/pay`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ customer_phone: '237690000005', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }),
      })).json();
      const txUrl = `${dashboard()}/transactions/${stuck.data.transaction_reference}`;
      await page.goto(txUrl);
      assert.match(await page.textContent('main section'), /PENDING/);
      await page.selectOption('#outcome', 'SUCCESSFUL');
      await Promise.all([page.waitForURL(txUrl), page.click('#force')]);
      let status = '';
      for (let i = 0; i < 50 && !/COMPLETED/.test(status); i++) {
        await page.goto(txUrl);
        status = await page.textContent('main section');
        if (!/COMPLETED/.test(status)) await new Promise((r) => setTimeout(r, 200));
      }
      assert.match(status, /COMPLETED/, 'the forced answer completed the collection');
      assert.equal(await page.$('#force'), null, 'nothing left to force');
      if (shots) await page.screenshot({ path: `${shots}/dashboard-forced-outcome.png`, fullPage: true });
      // Hosted checkout: a session opened by the merchant's site, listed with its page; the secret on request.
      const matricule = server.demo.dashboard.merchant.merchant;
      const demoMerchant = server.demo.merchants.find((m) => m.matricule === matricule);
      const opened = await (await fetch(server.checkoutUrl, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: demoMerchant.api_key, amount: 5000, currency: 'XAF', orderId: `ORDER-${randomUUID()}`,
          description: 'Two baskets', shopName: 'Épicerie', successUrl: 'https://shop.example/ok', failureUrl: 'https://shop.example/ko' }),
      })).json();
      const session = opened.data;
      assert.ok(session && session.reference, JSON.stringify(opened));
      await page.goto(dashboard() + '/checkout');
      assert.match(await page.textContent('#checkout-sessions'), new RegExp(session.orderId || session.order_id));
      await Promise.all([page.waitForURL(/\/checkout\/chk_/), page.click('#checkout-sessions tbody tr a')]);
      const sessionUrl = page.url();
      assert.match(await page.textContent('#checkout-session'), /Two baskets/);
      await page.goto(dashboard() + '/checkout');
      await Promise.all([page.waitForURL(/\/checkout\/secret$/), page.click('#show-secret')]);
      assert.equal((await page.textContent('#checkout-secret')).trim(), demoMerchant.checkout_secret);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-checkout-secret.png`, fullPage: true });
      // Signed requests only: the owner turns it on (an unsigned order is then refused naming
      // signature), then off again; both changes are audited.
      const unsignedOrder = () => fetch(server.checkoutUrl, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: demoMerchant.api_key, amount: 5000, currency: 'XAF', orderId: `ORDER-${randomUUID()}`,
          description: 'Unsigned', shopName: 'Épicerie', successUrl: 'https://shop.example/ok', failureUrl: 'https://shop.example/ko' }),
      });
      await page.goto(dashboard() + '/checkout');
      assert.match(await page.textContent('#signed-only'), /Status: off/);
      await Promise.all([page.waitForURL(/\/checkout$/), page.click('#toggle-signed-only')]);
      assert.match(await page.textContent('#signed-only'), /Status: on/);
      if (shots) {
        await page.screenshot({ path: `${shots}/dashboard-checkout-signed-only.png`, fullPage: true });
        await page.setViewportSize({ width: 390, height: 844 });
        await page.screenshot({ path: `${shots}/dashboard-checkout-signed-only-phone.png`, fullPage: true });
        await page.setViewportSize({ width: 1280, height: 720 });
      }
      const refused = await unsignedOrder();
      assert.equal(refused.status, 400);
      assert.ok((await refused.json()).error.details.signature);
      await Promise.all([page.waitForURL(/\/checkout$/), page.click('#toggle-signed-only')]);
      assert.match(await page.textContent('#signed-only'), /Status: off/);
      assert.equal((await unsignedOrder()).status, 201);

      await page.goto(dashboard() + '/audit');
      const audit = await page.textContent('table');
      assert.match(audit, /checkout\.secret_show/);
      assert.match(audit, /checkout\.signed_only/);
      assert.match(audit, /transaction\.force_outcome/);
      assert.match(audit, /subscription\.suspend/);
      assert.match(audit, /subscription\.reactivate/);
      assert.match(audit, /subscription\.test_clock/);
      await context.close();

      // Merchant B: A's subscription is not found, and B cannot move it.
      const other = await browser.newContext({ locale: 'en-GB' });
      const bPage = await signIn(other, server.demo.dashboard.other_merchant);
      assert.equal((await other.request.get(`${dashboard()}/subscriptions/${reference}`)).status(), 404);
      assert.equal((await other.request.get(sessionUrl)).status(), 404);
      const bCsrf = await csrfOf(bPage);
      const bMove = await other.request.post(`${dashboard()}/subscriptions/${reference}/suspend`, { form: { csrf: bCsrf }, maxRedirects: 0 });
      assert.equal(bMove.status(), 404);
      await other.close();

      // The viewer reads the subscription but cannot suspend it.
      const viewer = await browser.newContext({ locale: 'en-GB' });
      const vPage = await signIn(viewer, server.demo.dashboard.viewer);
      await vPage.goto(`${dashboard()}/subscriptions/${reference}`);
      assert.equal(await vPage.$('#suspend'), null, 'no actions for a viewer');
      const vMove = await viewer.request.post(`${dashboard()}/subscriptions/${reference}/suspend`, {
        form: { csrf: await csrfOf(vPage) }, maxRedirects: 0 });
      assert.equal(vMove.status(), 403);
      const vSecret = await viewer.request.post(`${dashboard()}/checkout/secret`, {
        form: { csrf: await csrfOf(vPage) }, maxRedirects: 0 });
      assert.equal(vSecret.status(), 403);
      await vPage.goto(`${dashboard()}/checkout`);
      assert.equal(await vPage.$('#toggle-signed-only'), null, 'no setting form for a viewer');
      const vSigned = await viewer.request.post(`${dashboard()}/checkout/signed-only`, {
        form: { csrf: await csrfOf(vPage), signed_only: 'on' }, maxRedirects: 0 });
      assert.equal(vSigned.status(), 403);
      await viewer.close();
    });

    test('the partner lists its wallet links and unlinks one; B does not see it, the viewer cannot unlink', async () => {
      const link = server.demo.wallet_link;
      // B: A's link is not listed, and unlinking it is not found.
      const other = await browser.newContext({ locale: 'en-GB' });
      const bPage = await signIn(other, server.demo.dashboard.other_merchant);
      await bPage.goto(dashboard() + '/wallet-links');
      assert.ok(!(await bPage.textContent('main')).includes(link.reference), 'B does not see A\'s link');
      const bUnlink = await other.request.post(`${dashboard()}/wallet-links/${link.reference}/unlink`, {
        form: { csrf: await csrfOf(bPage) }, maxRedirects: 0 });
      assert.equal(bUnlink.status(), 404);
      await other.close();
      // The viewer sees the link, no unlink button, and a refused unlink.
      const viewer = await browser.newContext({ locale: 'en-GB' });
      const vPage = await signIn(viewer, server.demo.dashboard.viewer);
      await vPage.goto(dashboard() + '/wallet-links');
      assert.match(await vPage.textContent('#wallet-links'), new RegExp(link.reference));
      assert.equal(await vPage.$('#wallet-links form'), null, 'no unlink for a viewer');
      const vUnlink = await viewer.request.post(`${dashboard()}/wallet-links/${link.reference}/unlink`, {
        form: { csrf: await csrfOf(vPage) }, maxRedirects: 0 });
      assert.equal(vUnlink.status(), 403);
      await viewer.close();
      // The owner unlinks it: UNLINKED, audited.
      const context = await browser.newContext({ locale: 'en-GB' });
      const page = await signIn(context, server.demo.dashboard.merchant);
      await page.goto(dashboard() + '/wallet-links');
      const row = page.locator('#wallet-links tr', { hasText: link.reference });
      assert.match(await row.textContent(), /ACTIVE/);
      if (shots) await page.screenshot({ path: `${shots}/dashboard-wallet-links.png`, fullPage: true });
      await Promise.all([page.waitForURL(/\/wallet-links$/), row.locator('button').click()]);
      assert.match(await page.locator('#wallet-links tr', { hasText: link.reference }).textContent(), /UNLINKED/);
      await page.goto(dashboard() + '/audit');
      assert.match(await page.textContent('table'), /wallet_link\.unlink/);
      await context.close();
    });

    test('a viewer reads but changes nothing', async () => {
      const context = await browser.newContext({ locale: 'en-GB' });
      const page = await signIn(context, server.demo.dashboard.viewer);
      await page.goto(dashboard() + '/links');
      assert.equal(await page.$('form[action$="/links"] #title'), null, 'no create form for a viewer');
      const csrf = await csrfOf(page);
      const refused = await context.request.post(`${dashboard()}/links`, {
        form: { csrf, title: 'Nope', currency: 'XAF', amount: '100' }, maxRedirects: 0 });
      assert.equal(refused.status(), 403);
      // The request names no language: the refusal is in the dashboard's default, French.
      assert.match(await refused.text(), /les lecteurs ne modifient rien/);
      const grants = await context.request.post(`${dashboard()}/operator/merchants/MCH-CM-0001/grants`, {
        form: { csrf, countries: 'CMR,CIV', tier: '9' }, maxRedirects: 0 });
      assert.equal(grants.status(), 404, 'nor can a viewer');
      if (shots) {
        await page.setContent(await refused.text());
        await page.screenshot({ path: `${shots}/dashboard-viewer-refused.png`, fullPage: true });
      }
      await context.close();
    });
  });
}
