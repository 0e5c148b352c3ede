// Black-box tests of subscriptions against the real binary, on SQLite and PostgreSQL: precise
// refusals, idempotent subscribe, the consent payment through the subscription's link, renewals
// driven by the sandbox test clock with exactly one payment per cycle, dunning to SUSPENDED and
// reactivation collecting the overdue cycle first, cancel / suspend / expiry, another merchant's
// subscription 404, and the events the moves emit; link cycles (operators that need a code)
// failing at their link's deadline into dunning, each retry a new link; mandates replaced after a
// revocation, and their events.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { startServer, backends, merchantToken, sikaBinary } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const BASE = '/merchand/billing';

for (const backend of backends()) {
  describe(`subscriptions on ${backend}`, () => {
    let server, token, otherToken;
    const call = async (method, path, body, tok = token, headers = {}) => {
      const h = { 'accept-language': 'en', ...headers };
      if (tok) h['x-sp-auth-token'] = `Bearer ${tok}`;
      if (body !== undefined) h['content-type'] = 'application/json';
      const r = await fetch(`${server.baseUrl}${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: await r.json() };
    };
    const subscribe = (body, headers) => call('POST', `${BASE}/subscribe`, body, token, headers);
    const detail = async (ref) => (await call('GET', `${BASE}/subscriptions/detail/${ref}`)).body.data;
    const clock = (ref, body) => call('POST', `${BASE}/subscriptions/test-clock/${ref}`, body);
    const payments = async (ref) => (await call('GET', `${BASE}/subscriptions/payments/${ref}?limit=100`)).body;
    // Waits until `check(detail)` holds (the sandbox calls back, then the settlement applies it).
    const until = async (ref, check, what) => {
      let d;
      for (let i = 0; i < 200; i++) {
        d = await detail(ref);
        if (check(d)) return d;
        await sleep(50);
      }
      assert.fail(`${what}: ${JSON.stringify(d)}`);
    };
    const cycle = (d, n) => {
      // latest_payments is newest cycle first; due_at orders them.
      const sorted = [...d.latest_payments].sort((a, b) => a.due_at.localeCompare(b.due_at));
      return sorted[n];
    };
    // Subscribes and pays the consent link from a successful sandbox number.
    const consented = async (extra = {}) => {
      const created = await subscribe({ customer_email: `c${randomUUID().slice(0, 8)}@example.com`, amount: 5000, currency: 'XAF',
        frequency: 'MONTHLY', customer_phone_number: '237690000000', ...extra });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const s = created.body.data;
      const code = s.payment_url.split('/pay/')[1];
      const paid = await call('POST', `/pay/${code}/pay`, { customer_phone: '237690000000', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }, null);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      await until(s.reference, (d) => d.latest_payments[0].status === 'PAID', 'consent payment PAID');
      return s;
    };

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=100', '--set', 'billing.settle_interval_ms=50',
        '--set', 'jobs.poll_interval_ms=50'] });
      token = await merchantToken(server, 0);
      otherToken = await merchantToken(server, 1);
    });
    after(async () => { if (server) await server.stop(); });

    const admin = (...args) => {
      const r = spawnSync(sikaBinary, ['admin', '--db', server.dsn, ...args, '--json'], {
        env: { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' }, encoding: 'utf8' });
      return { status: r.status, out: r.stdout ? JSON.parse(r.stdout) : null, err: r.stderr };
    };

    test('the demo world lists a subscription in each status; the admin CLI reads and moves them', async () => {
      const subs = server.demo.subscriptions;
      assert.deepEqual(subs.map((s) => s.status).sort(), ['ACTIVE', 'ACTIVE', 'CANCELLED', 'EXPIRED', 'SUSPENDED']);
      // One ACTIVE subscription's customer approved a wallet mandate on the demo wallet.
      const mandated = subs.find((s) => s.mandate);
      assert.equal(mandated.mandate.status, 'ACTIVE');
      assert.equal((await detail(mandated.reference)).mandate.reference, mandated.mandate.reference);
      for (const s of subs) {
        const d = await detail(s.reference);
        assert.equal(d.status, s.status);
        if (s.status === 'SUSPENDED') assert.ok(d.suspended_at && d.status_reason);
      }
      assert.ok(subs.find((s) => s.status === 'ACTIVE').payment_url.includes('/pay/'));
      const listed = admin('billing', 'list', '--merchant', server.demo.merchants[0].matricule, '--status', 'SUSPENDED');
      assert.equal(listed.status, 0, listed.err);
      assert.ok(listed.out.some((s) => s.reference === subs.find((x) => x.status === 'SUSPENDED').reference));
      const active = subs.find((s) => s.status === 'ACTIVE').reference;
      const shown = admin('billing', 'show', active);
      assert.equal(shown.status, 0, shown.err);
      assert.equal(shown.out.latest_payments.length, 1);
      const refused = admin('billing', 'reactivate', active);
      assert.notEqual(refused.status, 0);
    });

    test('bad input is a 400 naming every bad field', async () => {
      const empty = await subscribe({});
      assert.equal(empty.status, 400);
      assert.equal(empty.body.message, 'empty_data');
      for (const f of ['customer_email', 'amount', 'currency', 'frequency']) assert.ok(empty.body.error.details[f], f);
      const bad = await subscribe({ customer_email: 'nobody', amount: -5, currency: 'xaf', frequency: 'HOURLY', time_zone: 'Mars/Base',
        customer_phone_number: '12', metadata: 'x', max_cycles: 0, end_at: '2001-01-01T00:00:00Z', colour: 'red' });
      assert.equal(bad.status, 400);
      for (const f of ['customer_email', 'amount', 'currency', 'frequency', 'time_zone', 'customer_phone_number', 'metadata', 'max_cycles', 'end_at', 'colour'])
        assert.ok(bad.body.error.details[f], `${f}: ${JSON.stringify(bad.body.error.details)}`);
      const euro = await subscribe({ customer_email: 'a@example.com', amount: 100, currency: 'EUR', frequency: 'DAILY' });
      assert.equal(euro.status, 400);
      assert.ok(euro.body.error.details.currency, JSON.stringify(euro.body));
      const list = await call('GET', `${BASE}/subscriptions?status=PAUSED&page=0`);
      assert.equal(list.status, 400);
      assert.ok(list.body.error.details.status && list.body.error.details.page, JSON.stringify(list.body));
      assert.equal((await call('GET', `${BASE}/subscriptions/detail/SUB-nothing?for=everyone`)).body.error.details.for !== undefined, true);
      assert.equal((await call('GET', `${BASE}/subscriptions`, undefined, null)).status, 401);
    });

    test('subscribe: fields of the spec, idempotency by header or body, another merchant gets 404', async () => {
      const key = randomUUID();
      const body = { customer_email: 'ama@example.com', amount: 2500, currency: 'XAF', frequency: 'WEEKLY', description: 'Gym', metadata: { plan: 'gold' } };
      const first = await subscribe(body, { 'x-idempotency-key': key });
      assert.equal(first.status, 201, JSON.stringify(first.body));
      const s = first.body.data;
      assert.match(s.reference, /^SUB-/);
      assert.equal(s.status, 'ACTIVE');
      assert.equal(s.frequency, 'WEEKLY');
      assert.ok(s.payment_url.includes('/pay/'));
      const again = await subscribe({ ...body, idempotency_key: key });
      assert.equal(again.status, 200);
      assert.equal(again.body.data.reference, s.reference);
      const changed = await subscribe({ ...body, amount: 3000 }, { 'x-idempotency-key': key });
      assert.equal(changed.status, 409);
      assert.ok(changed.body.error.details.idempotency_key);
      const d = await detail(s.reference);
      for (const f of ['reference', 'customer_email', 'amount', 'currency', 'frequency', 'status', 'next_payment_at', 'created_at', 'uuid',
        'merchant_id', 'customer_user_id', 'description', 'subscribed_at', 'last_payment_at', 'cancelled_at', 'suspended_at',
        'reactivated_at', 'metadata', 'latest_payments']) assert.ok(f in d, f);
      assert.equal(d.merchant_id, server.demo.merchants[0].matricule);
      assert.deepEqual(d.metadata, { plan: 'gold' });
      assert.equal(d.latest_payments.length, 1);
      const p = d.latest_payments[0];
      for (const f of ['reference', 'amount', 'currency', 'status', 'due_at', 'paid_at', 'payment_intent_reference', 'payment_link_reference',
        'wallet_transaction_id', 'failure_reason', 'created_at', 'updated_at']) assert.ok(f in p, f);
      assert.equal(p.status, 'PENDING');
      assert.match(p.payment_link_reference, /^PLK-/);
      // The next payment is one week after the start.
      assert.equal(Date.parse(d.next_payment_at) - Date.parse(d.subscribed_at), 7 * 86400000);
      const desc = (await call('GET', `${BASE}/subscriptions/detail/${s.reference}?for=desc`)).body.data;
      assert.equal(desc.metadata, undefined);
      for (const path of [`detail/${s.reference}`, `payments/${s.reference}`])
        assert.equal((await call('GET', `${BASE}/subscriptions/${path}`, undefined, otherToken)).status, 404);
      for (const move of ['cancel', 'suspend', 'reactivate'])
        assert.equal((await call('POST', `${BASE}/subscriptions/${move}/${s.reference}`, {}, otherToken)).status, 404);
      const mine = await call('GET', `${BASE}/subscriptions?customer_email=ama@example.com&limit=1`);
      assert.equal(mine.status, 200);
      assert.equal(mine.body.meta.pagination.limit, 1);
      assert.ok(mine.body.data.every((x) => x.customer_email === 'ama@example.com'));
      const theirs = await call('GET', `${BASE}/subscriptions?customer_email=ama@example.com`, undefined, otherToken);
      assert.equal(theirs.body.data.length, 0);
    });

    test('the consent link, then renewals by the test clock: one payment and one collection per cycle', async () => {
      const s = await consented();
      let d = await detail(s.reference);
      assert.ok(d.last_payment_at);
      assert.match(cycle(d, 0).payment_intent_reference, /.+/);
      // A month and a day later: cycle 1 is asked from the phone that paid the consent.
      const moved = await clock(s.reference, { days: 32 });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      d = await until(s.reference, (x) => x.latest_payments.length === 2 && x.latest_payments.every((p) => p.status === 'PAID'), 'cycle 1 PAID');
      // Two months more at once: two cycles, each once, even when the clock is moved twice.
      await Promise.all([clock(s.reference, { days: 61 }), clock(s.reference, { seconds: 1 })]);
      d = await until(s.reference, (x) => x.latest_payments.length === 4 && x.latest_payments.every((p) => p.status === 'PAID'), 'cycles 2 and 3 PAID');
      const all = await payments(s.reference);
      assert.equal(all.meta.pagination.total, 4);
      const intents = new Set(all.data.map((p) => p.payment_intent_reference));
      assert.equal(intents.size, 4);
      const st = await call('POST', '/collection/status', { transaction_reference: all.data[0].payment_intent_reference });
      assert.equal(st.body.data.status, 'COMPLETED');
      assert.equal(st.body.data.amount, 5000);
      // Monthly from the start: each due date is the anchor's day of month (clamped).
      const start = new Date(d.subscribed_at);
      for (const p of all.data) assert.equal(new Date(p.due_at).getUTCHours(), start.getUTCHours());
    });

    test('dunning: a failing cycle is asked again on schedule, then SUSPENDED with the reason; reactivation collects it first', async () => {
      const s = await consented();
      // From now on the sandbox refuses: 0001 is INSUFFICIENT_FUNDS.
      await clock(s.reference, { days: 32, payer_phone_number: '237690000001' });
      let d = await until(s.reference, (x) => cycle(x, 1)?.status === 'FAILED', 'cycle 1 FAILED');
      assert.equal(d.status, 'ACTIVE');
      assert.equal(cycle(d, 1).failure_reason, 'INSUFFICIENT_FUNDS');
      // Retries after 1, 3, 5 and 7 days of the first failure; each fails again.
      for (const days of [1, 2, 2, 2]) {
        const before = (await payments(s.reference)).data.length;
        await clock(s.reference, { days });
        d = await until(s.reference, (x) => x.status === 'SUSPENDED' || (cycle(x, 1).status === 'FAILED' && x.latest_payments.length === before
          && Date.parse(cycle(x, 1).updated_at) > Date.parse(cycle(d, 1).updated_at)), `retry after ${days} more days`);
      }
      d = await until(s.reference, (x) => x.status === 'SUSPENDED', 'SUSPENDED after the last retry');
      assert.match(d.status_reason, /cycle 1 unpaid after 5 attempts: INSUFFICIENT_FUNDS/);
      assert.ok(d.suspended_at);
      // The customer topped up: reactivation asks for the overdue cycle at once.
      await clock(s.reference, { seconds: 1, payer_phone_number: '237690000000' });
      const re = await call('POST', `${BASE}/subscriptions/reactivate/${s.reference}`, { reason: 'customer paid' });
      assert.equal(re.status, 200, JSON.stringify(re.body));
      assert.equal(re.body.data.status, 'ACTIVE');
      d = await until(s.reference, (x) => cycle(x, 1).status === 'PAID', 'overdue cycle 1 PAID after reactivation');
      assert.ok(d.reactivated_at);
      assert.equal((await call('POST', `${BASE}/subscriptions/reactivate/${s.reference}`, {})).status, 409);
      const events = await call('GET', '/webhook/events?event_type=subscription.suspended');
      assert.ok(events.body.data.some((e) => e.subject === s.reference || JSON.stringify(e).includes(s.reference)), JSON.stringify(events.body).slice(0, 500));
    });

    test('cancel now or at period end, suspend, and a cycle count that expires', async () => {
      const a = (await subscribe({ customer_email: 'x@example.com', amount: 100, currency: 'XAF', frequency: 'DAILY' })).body.data;
      const wrong = await call('POST', `${BASE}/subscriptions/cancel/${a.reference}`, { uuid: randomUUID() });
      assert.equal(wrong.status, 400);
      assert.ok(wrong.body.error.details.uuid);
      const suspended = await call('POST', `${BASE}/subscriptions/suspend/${a.reference}`, { reason: 'asked by the customer' });
      assert.equal(suspended.body.data.status, 'SUSPENDED');
      const d0 = await detail(a.reference);
      const cancelled = await call('POST', `${BASE}/subscriptions/cancel/${a.reference}`, { uuid: d0.uuid, reason: 'moved away' });
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.body.data.status, 'CANCELLED');
      assert.equal(cancelled.body.data.next_payment_at, null);
      const d = await detail(a.reference);
      assert.ok(d.cancelled_at);
      assert.equal(d.latest_payments[0].status, 'CANCELLED');
      assert.equal((await call('POST', `${BASE}/subscriptions/cancel/${a.reference}`, {})).status, 409);
      assert.equal((await call('POST', `${BASE}/subscriptions/suspend/${a.reference}`, {})).status, 409);

      const b = await consented();
      const later = await call('POST', `${BASE}/subscriptions/cancel/${b.reference}`, { at_period_end: true });
      assert.equal(later.body.data.status, 'ACTIVE');
      await clock(b.reference, { days: 32 });
      await until(b.reference, (x) => x.status === 'CANCELLED', 'cancelled at the period end');
      assert.equal((await payments(b.reference)).meta.pagination.total, 1);

      const c = await consented({ max_cycles: 2 });
      await clock(c.reference, { days: 32 });
      await until(c.reference, (x) => x.latest_payments.length === 2 && cycle(x, 1).status === 'PAID', 'second cycle PAID');
      await clock(c.reference, { days: 31 });
      const e = await until(c.reference, (x) => x.status === 'EXPIRED', 'EXPIRED after two cycles');
      assert.equal(e.next_payment_at, null);
      assert.equal((await payments(c.reference)).meta.pagination.total, 2);
      const expired = await call('GET', `${BASE}/subscriptions?status=EXPIRED`);
      assert.ok(expired.body.data.some((x) => x.reference === c.reference));
    });

    // The customer's mandate page (checkout surface): plain forms posted to the page itself.
    const page = async (url, form) => {
      const r = await fetch(`${url}?lang=en`, form ? { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ lang: 'en', ...form }).toString() } : {});
      return { status: r.status, html: await r.text() };
    };
    // The newest code sent to the wallet whose message names `subject`.
    const codeFor = (phone, subject) => {
      for (const to of [`+${phone}`, phone]) {
        const listed = admin('outbox', 'list', '--to', to);
        const m = (listed.out || []).find((x) => x.body.includes(subject));
        if (m) return m.body.match(/\d{6}/)[0];
      }
      assert.fail(`no code to ${phone} about ${subject}`);
    };

    test('a wallet mandate: refused field by field, approved by code on its page, each cycle debited from the wallet, revoked by the customer', async () => {
      const wallet = '237690000042';
      spawnSync(sikaBinary, ['admin', '--db', server.dsn, 'fund-wallet', '--msisdn', wallet, '--currency', 'XAF', '--amount', '20000'],
        { env: { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' } });
      const s = await consented();
      const ask = (body, tok = token) => call('POST', `${BASE}/subscriptions/mandate/${s.reference}`, body, tok);
      const bad = await ask({ cap: 10, wallet_phone_number: '12', colour: 'red' });
      assert.equal(bad.status, 400);
      for (const f of ['wallet_phone_number', 'colour']) assert.ok(bad.body.error.details[f], `${f}: ${JSON.stringify(bad.body)}`);
      const low = await ask({ cap: 10, wallet_phone_number: wallet });
      assert.equal(low.status, 400);
      assert.ok(low.body.error.details.cap, JSON.stringify(low.body));
      assert.equal((await ask({ wallet_phone_number: wallet }, otherToken)).status, 404);
      const made = await ask({ wallet_phone_number: wallet, cap: 6000 });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const m = made.body.data;
      assert.match(m.reference, /^MDT-/);
      assert.equal(m.status, 'PENDING');
      assert.equal(m.cap, 6000);
      assert.equal((await ask({})).status, 409);
      assert.equal((await detail(s.reference)).mandate.status, 'PENDING');

      // The page: the terms, then the code sent to the wallet's phone approves it.
      const shown = await page(m.mandate_url);
      assert.equal(shown.status, 200);
      assert.ok(shown.html.includes('Automatic payment') && shown.html.includes('0042'), shown.html);
      // The terms in words (no raw frequency code), and no search engine indexes the page.
      assert.doesNotMatch(shown.html.replace(/<[^>]*>/g, ' '), /\b(DAILY|WEEKLY|MONTHLY|QUARTERLY|YEARLY)\b/);
      assert.match(shown.html, /<meta name="robots" content="noindex/);
      assert.equal((await page(m.mandate_url.replace(/\/mandate\/.*/, '/mandate/' + 'x'.repeat(43)))).status, 404);
      assert.equal((await page(m.mandate_url, { action: 'send' })).status, 200);
      const wrong = await page(m.mandate_url, { action: 'approve', otp: '000000' });
      const code = codeFor(wallet, m.reference);
      if (code !== '000000') assert.equal(wrong.status, 400);
      const approved = await page(m.mandate_url, { action: 'approve', otp: code });
      assert.equal(approved.status, 200, approved.html);
      assert.equal((await detail(s.reference)).mandate.status, 'ACTIVE');

      // Cycle 1 is debited from the wallet: no phone prompt, wallet_transaction_id set.
      await clock(s.reference, { days: 32 });
      const d1 = await until(s.reference, (x) => x.latest_payments.length === 2 && cycle(x, 1).status === 'PAID', 'cycle 1 PAID by the wallet');
      assert.ok(cycle(d1, 1).wallet_transaction_id, JSON.stringify(cycle(d1, 1)));
      assert.equal(cycle(d1, 1).payment_intent_reference, null);
      assert.equal(d1.mandate.debits, 1);
      const tx = await call('POST', '/collection/status', { transaction_reference: cycle(d1, 1).wallet_transaction_id });
      assert.equal(tx.body.data.status, 'COMPLETED', JSON.stringify(tx.body));

      // Revoked by the customer on the page: cycle 2 goes back to the phone.
      const revoked = await page(m.mandate_url, { action: 'revoke' });
      assert.equal(revoked.status, 200);
      const after = await detail(s.reference);
      assert.equal(after.mandate.status, 'REVOKED');
      assert.equal(after.mandate.revoked_by, 'customer');
      await clock(s.reference, { days: 31 });
      const d2 = await until(s.reference, (x) => x.latest_payments.length === 3 && cycle(x, 2).status === 'PAID', 'cycle 2 PAID by the phone');
      assert.ok(cycle(d2, 2).payment_intent_reference);
      assert.equal(cycle(d2, 2).wallet_transaction_id, null);
      assert.equal((await detail(s.reference)).mandate.debits, 1);

      // Revoked, it can be replaced: a new mandate through the same page flow, the old one kept.
      const renewed = await ask({ wallet_phone_number: wallet, cap: 6000 });
      assert.equal(renewed.status, 201, JSON.stringify(renewed.body));
      const m2 = renewed.body.data;
      assert.notEqual(m2.reference, m.reference);
      assert.equal((await ask({})).status, 409);
      assert.equal((await page(m2.mandate_url, { action: 'send' })).status, 200);
      assert.equal((await page(m2.mandate_url, { action: 'approve', otp: codeFor(wallet, m2.reference) })).status, 200);
      const d3 = await detail(s.reference);
      assert.equal(d3.mandate.reference, m2.reference);
      assert.equal(d3.mandate.status, 'ACTIVE');
      assert.ok((await page(m.mandate_url)).html.includes('Revoked'));
      // Each approval and revocation is an event of the subscription, with the mandate.
      for (const [type, n] of [['subscription.mandate_approved', 2], ['subscription.mandate_revoked', 1]]) {
        const listed = await call('GET', `/webhook/events?event_type=${type}&limit=100`);
        assert.equal(listed.status, 200, JSON.stringify(listed.body));
        const mine = listed.body.data.filter((e) => JSON.stringify(e).includes(s.reference));
        assert.equal(mine.length, n, `${type}: ${JSON.stringify(listed.body.data)}`);
        assert.ok(JSON.stringify(mine[0]).includes('MDT-'), JSON.stringify(mine[0]));
      }
    });

    test('an operator that needs a code: later cycles are single-use payment links sent to the customer', async () => {
      // ORANGE_MONEY_CIV needs a code in the demo catalog; the second demo merchant collects in CIV.
      const created = await call('POST', `${BASE}/subscribe`, { customer_email: 'awa@example.com', amount: 1500, currency: 'XOF',
        frequency: 'WEEKLY', customer_phone_number: '2250700000000' }, otherToken);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const s = created.body.data;
      const code = s.payment_url.split('/pay/')[1];
      const payer = { customer_phone: '2250700000000', transaction_uuid: randomUUID(), provider: 'ORANGE_MONEY_CIV', otp: Number(server.demo.sandbox.otp) };
      const paid = await call('POST', `/pay/${code}/pay`, payer, null);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      const other = async (ref) => (await call('GET', `${BASE}/subscriptions/detail/${ref}`, undefined, otherToken)).body.data;
      const wait = async (check, what) => {
        let d;
        for (let i = 0; i < 200; i++) { d = await other(s.reference); if (check(d)) return d; await sleep(50); }
        assert.fail(`${what}: ${JSON.stringify(d)}`);
      };
      await wait((d) => d.latest_payments[0].status === 'PAID', 'consent PAID');
      const moved = await call('POST', `${BASE}/subscriptions/test-clock/${s.reference}`, { days: 8 }, otherToken);
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      const d = await wait((x) => x.latest_payments.length === 2, 'cycle 1 opened');
      const c1 = cycle(d, 1);
      assert.equal(c1.status, 'PENDING');
      assert.ok(c1.payment_link_reference, JSON.stringify(c1));
      assert.equal(c1.payment_intent_reference, null);
      // The link went to the customer; paying it (with the operator's code) pays the cycle.
      const sms = admin('outbox', 'list', '--to', '2250700000000').out.concat(admin('outbox', 'list', '--to', '+2250700000000').out || [])
        .find((x) => x.body.includes('/pay/') && x.body.includes('asks for a code'));
      assert.ok(sms, 'the link was sent');
      const linkCode = sms.body.match(/\/pay\/(\S+)/)[1];
      const again = await call('POST', `/pay/${linkCode}/pay`, { ...payer, transaction_uuid: randomUUID() }, null);
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const done = await wait((x) => cycle(x, 1).status === 'PAID', 'cycle 1 PAID through its link');
      assert.ok(cycle(done, 1).payment_intent_reference);
      assert.equal(cycle(done, 1).payment_link_reference, c1.payment_link_reference);
    });

    test('a link cycle left unpaid fails at its deadline into dunning: each retry a new link, then SUSPENDED (test clock)', async () => {
      const created = await call('POST', `${BASE}/subscribe`, { customer_email: 'kofi@example.com', amount: 2500, currency: 'XOF',
        frequency: 'MONTHLY', customer_phone_number: '2250700000001' }, otherToken);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const s = created.body.data;
      const payer = { customer_phone: '2250700000000', provider: 'ORANGE_MONEY_CIV', otp: Number(server.demo.sandbox.otp) };
      const pay = (code) => call('POST', `/pay/${code}/pay`, { ...payer, transaction_uuid: randomUUID() }, null);
      assert.equal((await pay(s.payment_url.split('/pay/')[1])).status, 200);
      const other = async () => (await call('GET', `${BASE}/subscriptions/detail/${s.reference}`, undefined, otherToken)).body.data;
      const wait = async (check, what) => {
        let d;
        for (let i = 0; i < 200; i++) { d = await other(); if (check(d)) return d; await sleep(50); }
        assert.fail(`${what}: ${JSON.stringify(d)}`);
      };
      const tick = async (days) => {
        const moved = await call('POST', `${BASE}/subscriptions/test-clock/${s.reference}`, { days }, otherToken);
        assert.equal(moved.status, 200, JSON.stringify(moved.body));
        return moved.body.data;
      };
      // The newest link sent to the customer for this subscription.
      const linkSent = () => {
        const all = (admin('outbox', 'list', '--to', '2250700000001').out || []).concat(admin('outbox', 'list', '--to', '+2250700000001').out || []);
        const m = all.filter((x) => x.body.includes('/pay/')).sort((a, b) => b.id - a.id)[0];
        return m && m.body.match(/\/pay\/([A-Za-z0-9]+)/)[1];
      };
      await wait((d) => d.latest_payments[0].status === 'PAID', 'consent PAID');

      // Cycle 1: its link, unpaid a day later, fails it (LINK_UNPAID) and can no longer be paid.
      const d1 = await tick(32);
      const c1 = cycle(d1, 1);
      assert.equal(c1.status, 'PENDING');
      const firstCode = linkSent();
      assert.ok(firstCode);
      const failed = cycle(await tick(1), 1);
      assert.equal(failed.status, 'FAILED', JSON.stringify(failed));
      assert.match(failed.failure_reason, /^LINK_UNPAID/);
      assert.equal(failed.payment_link_reference, c1.payment_link_reference);
      const late = await pay(firstCode);
      assert.equal(late.status, 400, JSON.stringify(late.body));
      assert.equal(late.body.message, 'link_disabled');

      // The retry a day after the failure: a new link for the same cycle, which the customer pays.
      const retried = cycle(await tick(1), 1);
      assert.equal(retried.status, 'PENDING', JSON.stringify(retried));
      assert.equal(retried.reference, c1.reference);
      assert.notEqual(retried.payment_link_reference, c1.payment_link_reference);
      const secondCode = linkSent();
      assert.notEqual(secondCode, firstCode);
      assert.equal((await pay(secondCode)).status, 200);
      const paid = await wait((x) => cycle(x, 1).status === 'PAID', 'cycle 1 PAID through its new link');
      assert.equal(paid.status, 'ACTIVE');
      assert.equal(cycle(paid, 1).payment_link_reference, retried.payment_link_reference);

      // Cycle 2 is never paid: its links lapse one after another on the schedule, then SUSPENDED.
      let d = paid;
      for (let day = 0; day < 60 && d.status === 'ACTIVE'; day++) d = await tick(1);
      assert.equal(d.status, 'SUSPENDED', JSON.stringify(d));
      assert.match(d.status_reason, /^cycle 2 unpaid after 5 attempts: LINK_UNPAID/);
      assert.equal(cycle(d, 2).status, 'FAILED');
      const suspended = await call('GET', '/webhook/events?event_type=subscription.suspended&limit=100', undefined, otherToken);
      assert.ok(suspended.body.data.some((e) => JSON.stringify(e).includes(s.reference)), JSON.stringify(suspended.body));
      const failures = await call('GET', '/webhook/events?event_type=subscription.payment_failed&limit=100', undefined, otherToken);
      assert.equal(failures.body.data.filter((e) => JSON.stringify(e).includes(s.reference)).length, 6);
    });
  });
}
