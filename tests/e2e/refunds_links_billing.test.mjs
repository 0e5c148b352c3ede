// Refunds of collections made through a payment link and through subscriptions (docs/refunds.md,
// docs/payment-links.md, docs/subscriptions.md), against the real binary on each backend: the same
// refund API refunds them; a link's figures keep a refunded payment (it was paid) and its receipt
// says what came back, never "failed"; a subscription payment shows its refunds, stays PAID, and the
// subscription neither lapses nor retries it — also when the refund lands before the subscription
// engine settled the payment. The ledger check is clean at the end.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, waitFor, checkLedger } from './lib/server.mjs';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

const BASE = '/merchand/billing';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const backend of backends()) {
  describe(`refunds of links and subscriptions on ${backend}`, () => {
    let server, token;
    const call = async (method, path, body, tok = token) => {
      const h = { 'accept-language': 'en' };
      if (tok) h['x-sp-auth-token'] = `Bearer ${tok}`;
      if (body !== undefined) h['content-type'] = 'application/json';
      const r = await fetch(`${server.baseUrl}${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: await r.json() };
    };
    const txStatus = async (ref) => (await call('POST', '/collection/status', { transaction_reference: ref })).body.data;
    const refund = async (ref, amount) => {
      const body = { transaction_reference: ref, refund_uuid: randomUUID(), reason: 'REQUESTED_BY_CUSTOMER' };
      if (amount !== undefined) body.amount = amount;
      const r = await call('POST', '/collection/refund', body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const done = await waitFor(async () => {
        const s = (await call('POST', '/collection/refund/status', { refund_reference: r.body.data.refund_reference })).body.data;
        return s.status === 'COMPLETED' || s.status === 'FAILED' ? s : null;
      });
      assert.equal(done?.status, 'COMPLETED', JSON.stringify(done));
      return done;
    };
    const completed = (ref) => waitFor(async () => (await txStatus(ref)).status === 'COMPLETED');

    before(async () => {
      // The subscription engine settles ended collections every 3 s: a refund can land before it.
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=100',
        '--set', 'billing.settle_interval_ms=3000', '--set', 'jobs.poll_interval_ms=50'] });
      token = await merchantToken(server, 0);
    });
    after(async () => { if (server) await server.stop(); });

    test('a payment link\'s collection is refunded by the API; its figures keep it and its receipt says what came back', async () => {
      const created = await call('POST', '/payment-links', { currency: 'XAF', amount: 2500, title: 'Cap', max_usage: 3 });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const link = created.body.data;
      const payer = randomUUID();
      const paid = await call('POST', `/pay/${link.short_code}/pay`,
        { customer_phone: '237690000000', transaction_uuid: payer, provider: 'MTN_MOMO_CMR' }, null);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      const ref = paid.body.data.transaction_reference;
      assert.ok(await completed(ref), 'the link payment completed');
      const receipt = async (lang) => {
        const r = await fetch(`${link.payment_url}/status?t=${payer}&lang=${lang}`);
        assert.equal(r.status, 200);
        return r.text();
      };

      await refund(ref, 1000);
      let shown = (await call('GET', `/payment-links/${link.reference}`)).body.data;
      assert.equal(shown.payments_completed, 1);
      assert.equal(shown.total_collected, 2500);
      let html = await receipt('en');
      assert.match(html, /Payment completed|completed/i);
      assert.match(html, /Partly refunded: 1(?:&#8239;|\s)?000/);
      assert.ok(!html.includes('did not go through'), html);

      await refund(ref);
      assert.equal((await txStatus(ref)).status, 'REFUNDED');
      shown = (await call('GET', `/payment-links/${link.reference}`)).body.data;
      assert.equal(shown.payments_completed, 1, 'a refunded payment was paid: it still counts');
      assert.equal(shown.total_collected, 2500);
      html = await receipt('en');
      assert.match(html, /Refunded: 2(?:&#8239;|\s)?500/);
      assert.match(html, /<title>[^<]*Receipt/);
      assert.ok(!html.includes('did not go through'), html);
      assert.ok(!html.includes('Try again') && !html.includes('try again'), 'no new attempt offered');
      const fr = await receipt('fr');
      assert.match(fr, /Remboursé :/);
      if (!noBrowser) {
        // The receipt as a customer sees it: without JavaScript, axe-clean, on a phone and a desktop.
        const browser = await launchBrowser();
        try {
          for (const [viewport, lang, name] of [[phoneViewport, 'fr', 'link-receipt-refunded-phone-fr'],
            [desktopViewport, 'en', 'link-receipt-refunded-desktop-en']]) {
            const context = await browser.newContext({ ...viewport, javaScriptEnabled: false });
            const page = await context.newPage();
            await page.goto(`${link.payment_url}/status?t=${payer}&lang=${lang}`);
            await assertPageStandards(page, name);
            if (shots) await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
            await context.close();
          }
        } finally {
          await browser.close();
        }
      }
      // The link still takes its other uses: the refunded one is not given back.
      const listed = (await call('GET', `/payment-links/${link.reference}`)).body.data;
      assert.equal(listed.status, 'ACTIVE');
    });

    test('subscription payments: refunded, they stay PAID and show it; the subscription neither lapses nor retries', async () => {
      const created = await call('POST', `${BASE}/subscribe`, { customer_email: `r${randomUUID().slice(0, 8)}@example.com`,
        amount: 5000, currency: 'XAF', frequency: 'MONTHLY', customer_phone_number: '237690000000' });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const s = created.body.data;
      const code = s.payment_url.split('/pay/')[1];
      const paid = await call('POST', `/pay/${code}/pay`, { customer_phone: '237690000000', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }, null);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      const consentTx = paid.body.data.transaction_reference;
      assert.ok(await completed(consentTx), 'the consent collection completed');
      // Refunded in full at once, most likely before the engine settled the consent payment.
      await refund(consentTx);
      const detail = async () => (await call('GET', `${BASE}/subscriptions/detail/${s.reference}`)).body.data;
      const until = async (check, what) => {
        let d;
        for (let i = 0; i < 200; i++) {
          d = await detail();
          if (check(d)) return d;
          await sleep(50);
        }
        assert.fail(`${what}: ${JSON.stringify(d)}`);
      };
      let d = await until((x) => x.latest_payments[0]?.status === 'PAID', 'the refunded consent payment is PAID');
      assert.equal(d.status, 'ACTIVE');
      assert.equal(d.latest_payments[0].refunded_amount, 5000);
      assert.equal(d.latest_payments[0].payment_intent_reference, consentTx);

      // The next cycle is asked and paid as usual; then refunded in part.
      assert.equal((await call('POST', `${BASE}/subscriptions/test-clock/${s.reference}`, { days: 32 })).status, 200);
      d = await until((x) => x.latest_payments.length === 2 && x.latest_payments.every((p) => p.status === 'PAID'), 'cycle 1 PAID');
      const cycle1 = d.latest_payments.find((p) => p.payment_intent_reference !== consentTx);
      await refund(cycle1.payment_intent_reference, 2000);
      d = await until((x) => x.latest_payments.some((p) => p.refunded_amount === 2000), 'cycle 1 shows its refund');
      const attempts = d.latest_payments.length;
      // Days later nothing is asked again: no retry, no suspension, one collection per cycle.
      assert.equal((await call('POST', `${BASE}/subscriptions/test-clock/${s.reference}`, { days: 3 })).status, 200);
      await sleep(3500);
      d = await detail();
      assert.equal(d.status, 'ACTIVE');
      assert.equal(d.latest_payments.length, attempts);
      assert.ok(d.latest_payments.every((p) => p.status === 'PAID' && p.failure_reason === null), JSON.stringify(d.latest_payments));
      const all = (await call('GET', `${BASE}/subscriptions/payments/${s.reference}?limit=100`)).body;
      assert.equal(all.meta.pagination.total, 2);
      assert.equal(new Set(all.data.map((p) => p.payment_intent_reference)).size, 2);
      checkLedger(server);
    });
  });
}
