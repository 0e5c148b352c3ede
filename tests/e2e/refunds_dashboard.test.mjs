// Refunds on the merchant dashboard in headless Chromium, on each backend: the owner refunds part of a
// sandbox collection from its page (a phone, French, without JavaScript: a plain form), then the rest
// (the collection REFUNDED, the form gone); refusals rendered back in the page's language (amount
// beyond what is left, an amount with decimals XAF has not, a refund already in flight); the same form
// sent twice (one after the other and at once) makes one refund; a viewer sees no form and a forged
// POST is 403; another merchant's owner gets 404; the refunds list filters by status and transaction
// reference and never shows another merchant's refunds; the audit log has one `refund.created` per
// refund; axe-clean pages on a phone (390 px) and a desktop; the ledger check clean at the end.
// Screenshots go to $SIKA_SCREENSHOTS when set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { launchBrowser, noBrowser, signInMerchant } from './lib/browser.mjs';
import { backends, startServer, startTwoNodes, waitFor, sqlRows, checkLedger, merchantToken } from './lib/server.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`refunds on the dashboard (${backend})`, { skip: noBrowser }, () => {
    let server, browser, tokenA, tokenC;
    const refs = {};
    const api = async (token, path, body) => {
      const r = await fetch(`${server.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    // A COMPLETED sandbox collection of `amount` XAF of the merchant of `token`.
    const collected = async (token, amount) => {
      const c = await api(token, '/collection/intent', {
        amount, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: server.demo.sandbox.msisdn.success, description: 'dashboard refund e2e' });
      assert.equal(c.status, 200, JSON.stringify(c.body));
      const ref = c.body.data.transaction_reference;
      assert.equal((await api(token, '/collection/execute', { transaction_reference: ref })).status, 200);
      assert.ok(await waitFor(() => txStatus(ref) === 'COMPLETED'), `${ref} completed`);
      return ref;
    };
    const txStatus = (ref) => sqlRows(server, `SELECT status FROM pay_transactions WHERE reference = '${ref}'`)[0]?.[0];
    const refundsOf = (ref) => sqlRows(server,
      `SELECT reference, amount, status FROM pay_refunds WHERE transaction_reference = '${ref}' ORDER BY id`);
    const allFinal = (ref) => waitFor(() => refundsOf(ref).every((r) => r[2] === 'COMPLETED' || r[2] === 'FAILED'), 30000);
    const dashboard = () => server.demo.dashboard.url;
    async function signIn(context, who) {
      const page = await context.newPage();
      await page.goto(dashboard() + '/');
      await page.fill('#email', who.email);
      await page.fill('#password', who.password);
      await Promise.all([page.waitForURL((u) => u.toString().startsWith(dashboard())), page.click('button[value=approve]')]);
      return page;
    }
    // The refund form's fields as the page rendered them.
    const formOf = async (page) => ({
      csrf: await page.getAttribute('#refund-form input[name=csrf]', 'value'),
      refund_uuid: await page.getAttribute('#refund-form input[name=refund_uuid]', 'value'),
    });

    before(async () => {
      // Sandbox refunds take a second and a half: long enough to meet one in flight.
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=1500'] });
      browser = await launchBrowser();
      tokenA = await merchantToken(server, 0);
      tokenC = await merchantToken(server, 2);  // a third merchant, in XAF too
      refs.a1 = await collected(tokenA, 5000);
      refs.a2 = await collected(tokenA, 3000);
      refs.c1 = await collected(tokenC, 1000);
      const foreign = await api(tokenC, '/collection/refund',
        { transaction_reference: refs.c1, refund_uuid: randomUUID(), reason: 'OTHER', amount: 400 });
      assert.equal(foreign.status, 200, JSON.stringify(foreign.body));
      refs.c1Refund = foreign.body.data.refund_reference;
    });
    after(async () => {
      if (browser) await browser.close();
      if (server) await server.stop();
    });

    test('on a phone, in French, without JavaScript: part refunded, refusals shown, then the rest; REFUNDED', async () => {
      const context = await browser.newContext({ locale: 'fr-FR', javaScriptEnabled: false, ...phoneViewport });
      const page = await signInMerchant(server, context);
      const txUrl = `${dashboard()}/transactions/${refs.a1}`;
      await page.goto(txUrl);
      assert.equal(await page.locator('#refund-form').count(), 1, 'the owner sees the refund form');
      assert.match(await page.textContent('#refundable'), /5\u202f000 XAF/);
      assert.match(await page.textContent('#refunded-amount'), /0 XAF/);
      await assertPageStandards(page, 'transaction with refund form (phone)');
      if (shots) await page.screenshot({ path: `${shots}/refund-form-phone.png`, fullPage: true });

      // An amount with decimals XAF does not have: 400, rendered back in French, nothing made.
      await page.fill('#refund-amount', '12,5');
      const [bad] = await Promise.all([page.waitForNavigation(), page.click('#refund-submit')]);
      assert.equal(bad.status(), 400);
      assert.match(await page.textContent('#refund-error'), /au plus 0 décimales en XAF/);
      assert.equal(await page.inputValue('#refund-amount'), '12,5', 'what was typed is kept');
      // Beyond what is left: 400 naming the amount left, in French.
      await page.fill('#refund-amount', '6000');
      const [beyond] = await Promise.all([page.waitForNavigation(), page.click('#refund-submit')]);
      assert.equal(beyond.status(), 400);
      assert.match(await page.textContent('#refund-error'), /supérieur aux 5\u202f000 XAF encore remboursables/);
      // (Rendered by the POST: axe's twin would open its address with a GET; the desktop test checks one.)
      if (shots) await page.screenshot({ path: `${shots}/refund-refused-phone.png`, fullPage: true });
      assert.deepEqual(refundsOf(refs.a1), []);

      // 2 000 XAF back, a duplicate payment.
      await page.fill('#refund-amount', '2000');
      await page.selectOption('#refund-reason', 'DUPLICATE');
      await page.fill('#refund-description', 'un article en double');
      await Promise.all([page.waitForURL(/\?refunded=RF-/), page.click('#refund-submit')]);
      assert.match(await page.textContent('#refund-flash'), /Remboursement demandé : RF-/);
      assert.equal(await page.locator('#refunds tbody tr').count(), 1);
      assert.match(await page.textContent('#refunds'), /Paiement en double/);
      assert.match(await page.textContent('#timeline'), /Remboursement RF-/);
      assert.ok(await allFinal(refs.a1), 'the refund completed');
      assert.deepEqual(refundsOf(refs.a1).map((r) => [Number(r[1]), r[2]]), [[2000, 'COMPLETED']]);

      // Everything left (an empty amount): 3 000 XAF, then REFUNDED and no form.
      await page.goto(txUrl);
      assert.match(await page.textContent('#refunded-amount'), /2\u202f000 XAF/);
      assert.match(await page.textContent('#refundable'), /3\u202f000 XAF/);
      await Promise.all([page.waitForURL(/\?refunded=RF-/), page.click('#refund-submit')]);
      assert.ok(await allFinal(refs.a1), 'the second refund completed');
      assert.deepEqual(refundsOf(refs.a1).map((r) => [Number(r[1]), r[2]]), [[2000, 'COMPLETED'], [3000, 'COMPLETED']]);
      assert.equal(txStatus(refs.a1), 'REFUNDED');
      await page.goto(txUrl);
      assert.match(await page.textContent('main'), /REFUNDED/);
      assert.match(await page.textContent('#refunded-amount'), /5\u202f000 XAF/);
      assert.equal(await page.locator('#refund-form').count(), 0, 'nothing left to refund: no form');
      assert.equal(await page.locator('#refunds tbody tr').count(), 2);
      await assertPageStandards(page, 'refunded transaction (phone)');
      if (shots) await page.screenshot({ path: `${shots}/refund-done-phone.png`, fullPage: true });
      await context.close();
    });

    test('on a desktop, in English: the same form sent twice makes one refund; one in flight refuses another', async () => {
      const context = await browser.newContext({ locale: 'en-GB', ...desktopViewport });
      const page = await signInMerchant(server, context);
      const txUrl = `${dashboard()}/transactions/${refs.a2}?lang=en`;
      await page.goto(txUrl);
      const form = await formOf(page);
      const action = `${dashboard()}/transactions/${refs.a2}/refund`;
      const send = () => context.request.post(action, { form: { ...form, amount: '1000', reason: 'OTHER', description: '' },
        maxRedirects: 0 });
      // At once, then again: each answer is the same redirect to the same refund.
      const answers = [...await Promise.all([send(), send()]), await send()];
      for (const a of answers) assert.equal(a.status(), 303, await a.text());
      const where = answers.map((a) => a.headers().location);
      assert.match(where[0], /\?refunded=RF-/);
      assert.deepEqual(new Set(where).size, 1, `one refund: ${where}`);
      assert.equal(refundsOf(refs.a2).length, 1);

      // Another form while that refund is in flight: 409 refund_in_progress, rendered in English.
      await page.goto(txUrl);
      assert.match(await page.textContent('#refunds'), /PENDING|PROCESSING/);
      await page.fill('#refund-amount', '500');
      const [busy] = await Promise.all([page.waitForNavigation(), page.click('#refund-submit')]);
      assert.equal(busy.status(), 409);
      assert.match(await page.textContent('#refund-error'), /already in progress/);
      await assertPageStandards(page, 'refund in progress (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/refund-in-progress-desktop.png`, fullPage: true });
      assert.equal(refundsOf(refs.a2).length, 1);
      assert.ok(await allFinal(refs.a2));
      await page.goto(txUrl);
      assert.match(await page.textContent('#refunded-amount'), /1,000 XAF|1\u202f000 XAF/);
      assert.match(await page.textContent('#refundable'), /2\u202f000 XAF|2,000 XAF/);
      await assertPageStandards(page, 'transaction with a refund (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/refund-form-desktop.png`, fullPage: true });

      // The audit log: one refund.created per refund, with who and how much.
      await page.goto(`${dashboard()}/audit?lang=en`);
      const audit = await page.textContent('table');
      const created = audit.match(/refund\.created/g) || [];
      assert.equal(created.length, 3, audit);
      assert.match(audit, new RegExp(refundsOf(refs.a2)[0][0]));
      assert.match(audit, /"amount":1000/);
      assert.match(audit, /owner@sika\.example/);
      await context.close();
    });

    test('a viewer sees no form and a forged POST is 403; another merchant\'s owner gets 404', async () => {
      const viewer = await browser.newContext({ locale: 'en-GB' });
      const vPage = await signIn(viewer, server.demo.dashboard.viewer);
      await vPage.goto(`${dashboard()}/transactions/${refs.a2}`);
      assert.equal(await vPage.locator('#refund-form').count(), 0, 'no refund form for a viewer');
      assert.equal(await vPage.locator('#refunds tbody tr').count(), 1, 'the viewer sees the refunds');
      const csrf = await vPage.getAttribute('input[name=csrf]', 'value');
      const forged = await viewer.request.post(`${dashboard()}/transactions/${refs.a2}/refund`, {
        form: { csrf, refund_uuid: randomUUID(), amount: '100', reason: 'OTHER' }, maxRedirects: 0 });
      assert.equal(forged.status(), 403);
      await viewer.close();
      const other = await browser.newContext({ locale: 'en-GB' });
      const oPage = await signIn(other, server.demo.dashboard.other_merchant);
      const oCsrf = await oPage.getAttribute('input[name=csrf]', 'value');
      const foreign = await other.request.post(`${dashboard()}/transactions/${refs.a2}/refund`, {
        form: { csrf: oCsrf, refund_uuid: randomUUID(), amount: '100', reason: 'OTHER' }, maxRedirects: 0 });
      assert.equal(foreign.status(), 404);
      await other.close();
      // Without the CSRF token: refused before the handler.
      const owner = await browser.newContext({ locale: 'en-GB' });
      await signInMerchant(server, owner);
      const noCsrf = await owner.request.post(`${dashboard()}/transactions/${refs.a2}/refund`, {
        form: { refund_uuid: randomUUID(), amount: '100', reason: 'OTHER' }, maxRedirects: 0 });
      assert.equal(noCsrf.status(), 403);
      await owner.close();
      assert.equal(refundsOf(refs.a2).length, 1, 'nothing was refunded');
    });

    test('the refunds list: filters, links, only the merchant\'s own; phone and desktop', async () => {
      const context = await browser.newContext({ locale: 'en-GB', ...desktopViewport });
      const page = await signInMerchant(server, context);
      await page.goto(`${dashboard()}/?lang=en`);
      await Promise.all([page.waitForURL(/\/refunds$/), page.click('nav .menu-wide a[href$="/refunds"]')]);
      const rows = () => page.locator('#refunds tbody tr');
      assert.equal(await rows().count(), 3);
      assert.doesNotMatch(await page.textContent('main'), new RegExp(refs.c1Refund), 'another merchant\'s refund');
      await assertPageStandards(page, 'refunds list (desktop)');
      if (shots) await page.screenshot({ path: `${shots}/refunds-list-desktop.png`, fullPage: true });
      // By transaction reference, then by status.
      await page.fill('#transaction_reference', refs.a2);
      await Promise.all([page.waitForURL(/transaction_reference=/), page.click('form[role=search] button')]);
      assert.equal(await rows().count(), 1);
      await page.fill('#transaction_reference', '');
      await page.selectOption('#status', 'COMPLETED');
      await Promise.all([page.waitForURL(/status=COMPLETED/), page.click('form[role=search] button')]);
      assert.equal(await rows().count(), 3);
      await page.selectOption('#status', 'FAILED');
      await Promise.all([page.waitForURL(/status=FAILED/), page.click('form[role=search] button')]);
      assert.equal(await page.locator('#no-refund').count(), 1);
      // Another merchant's transaction in the filter shows nothing.
      await page.goto(`${dashboard()}/refunds?transaction_reference=${refs.c1}`);
      assert.equal(await page.locator('#no-refund').count(), 1);
      // A bad status is 400 naming it.
      const bad = await page.goto(`${dashboard()}/refunds?status=DONE`);
      assert.equal(bad.status(), 400);
      assert.match(await page.textContent('main'), /status/);
      // Each row links to its transaction.
      await page.goto(`${dashboard()}/refunds?transaction_reference=${refs.a1}&lang=en`);
      assert.equal(await rows().count(), 2);
      await Promise.all([page.waitForURL(new RegExp(`/transactions/${refs.a1}$`)), page.click('#refunds tbody tr:first-child a')]);
      await context.close();

      const phone = await browser.newContext({ locale: 'fr-FR', javaScriptEnabled: false, ...phoneViewport });
      const pPage = await signInMerchant(server, phone);
      await pPage.goto(`${dashboard()}/refunds`);
      assert.equal(await pPage.locator('#refunds tbody tr').count(), 3);
      assert.match(await pPage.textContent('#refunds'), /Paiement en double/);
      await assertPageStandards(pPage, 'refunds list (phone)');
      if (shots) await pPage.screenshot({ path: `${shots}/refunds-list-phone.png`, fullPage: true });
      await phone.close();
      checkLedger(server);
    });
  });
}

// The same rendered form sent at once to two nodes sharing one PostgreSQL: one refund, one audit entry;
// the form's key sent again with another amount is refused (409 naming the form), rendered on the page.
describe('refund form sent to two nodes at once (postgres)', { skip: noBrowser || (!backends().includes('postgres') && 'needs PostgreSQL') }, () => {
  let nodes, server, browser;
  before(async () => {
    nodes = await startTwoNodes({ backend: 'postgres', args: ['--set', 'payments.sandbox_delay_ms=300'] });
    server = nodes.first;
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await browser.close();
    if (nodes) await nodes.stop();
  });

  test('one refund and one refund.created whatever node each submission reaches', async () => {
    const token = await merchantToken(server, 0);
    const post = async (path, body) => {
      const r = await fetch(`${server.baseUrl}${path}`, { method: 'POST', body: JSON.stringify(body),
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` } });
      return { status: r.status, body: await r.json() };
    };
    const c = await post('/collection/intent', { amount: 4000, currency: 'XAF', transaction_uuid: randomUUID(),
      provider: 'MTN_MOMO_CMR', channel: 'PROVIDER', customer_wallet: server.demo.sandbox.msisdn.success });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    const ref = c.body.data.transaction_reference;
    assert.equal((await post('/collection/execute', { transaction_reference: ref })).status, 200);
    const q = (sql) => sqlRows(server, sql);
    assert.ok(await waitFor(() => q(`SELECT status FROM pay_transactions WHERE reference = '${ref}'`)[0]?.[0] === 'COMPLETED'));

    const context = await browser.newContext({ locale: 'en-GB' });
    const page = await signInMerchant(server, context);
    const first = server.demo.dashboard.url;
    const second = first.replace(`:${server.port}`, `:${nodes.second.port}`);
    assert.notEqual(first, second);
    await page.goto(`${first}/transactions/${ref}?lang=en`);
    const form = {
      csrf: await page.getAttribute('#refund-form input[name=csrf]', 'value'),
      refund_uuid: await page.getAttribute('#refund-form input[name=refund_uuid]', 'value'),
      amount: '1500', reason: 'DUPLICATE', description: 'sent twice',
    };
    const send = (base, f = form) => context.request.post(`${base}/transactions/${ref}/refund`, { form: f, maxRedirects: 0 });
    const answers = await Promise.all([first, second, first, second, first, second].map((b) => send(b)));
    for (const a of answers) assert.equal(a.status(), 303, await a.text());
    assert.equal(new Set(answers.map((a) => a.headers().location)).size, 1);
    const refunds = q(`SELECT reference, amount FROM pay_refunds WHERE transaction_reference = '${ref}'`);
    assert.deepEqual(refunds.map((r) => Number(r[1])), [1500]);
    assert.deepEqual(q(`SELECT COUNT(*) FROM dsh_audit WHERE action = 'refund.created' AND object = '${refunds[0][0]}'`), [['1']]);

    // The same form key with another amount: 409, rendered on the collection's page, nothing more made.
    const other = await send(second, { ...form, amount: '1600' });
    assert.equal(other.status(), 409);
    const otherPage = await other.text();
    assert.match(otherPage, /Form<\/strong> : was already used for another refund/);
    assert.ok(!otherPage.includes(form.refund_uuid), 'the page rendered again carries a new key');
    assert.equal(q(`SELECT COUNT(*) FROM pay_refunds WHERE transaction_reference = '${ref}'`)[0][0], '1');
    assert.ok(await waitFor(() => q(`SELECT status FROM pay_refunds WHERE transaction_reference = '${ref}'`)[0]?.[0] === 'COMPLETED'));
    await context.close();
    checkLedger(server);
  });
});
