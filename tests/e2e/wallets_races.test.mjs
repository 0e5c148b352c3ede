// The wallet link API and the wallet page under concurrent requests, black-box: on SQLite with one
// node, and on two nodes (two `sika serve` processes) sharing one PostgreSQL when SIKA_TEST_PG_DSN
// is set, the requests of each race spread over both. Each race asserts its invariant and ends
// with a clean ledger check (`sika admin check-ledger`):
//  - link/init racing for the consent's budget: as many charged as the budget holds, every other
//    one waits for the user's code (needs_otp), none refused, nothing debited past the consent;
//  - link/withdraw: concurrent withdrawals never spend past the consent or the wallet's balance;
//  - a waiting link/init payment approved and declined at once (and approved twice): executed or
//    cancelled exactly once;
//  - fiat-distribution: the same transaction_uuid at once is one distribution, all or nothing;
//    different ones never spend past the partner's balance;
//  - unlink racing charges: every charge is paid whole or leaves nothing, none after the unlink;
//  - link/new for the same (partner, phone) at once: one wallet, one link, one key;
//  - a wallet page withdrawal confirmed twice at once with its code: one payout.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, sikaBinary } from './lib/server.mjs';

const secret = 'e2e-test-secret-key-0123456789abcdef';
const env = { ...process.env, SIKA_SECRET_KEY: secret };
const ARGS = ['--set', 'wallets.link_api_per_hour=100000', '--set', 'otp.sends_per_destination_per_hour=0',
  '--set', 'payments.sandbox_delay_ms=200'];
const ENV = { SIKA_WALLETS_PAGE_MERCHANT: 'MCH-CM-0001' };
const who = (phone) => ({ email: `${phone}@example.com`, phone, phoneCountry: '+237' });

for (const backend of backends()) {
  const twoNodes = backend === 'postgres';
  describe(`wallet and link races (${backend}, ${twoNodes ? 'two nodes' : 'one node'})`, () => {
    let running, first, ports;
    before(async () => {
      running = await startTwoNodes({ backend, args: ARGS, env: ENV, twoNodes });
      ({ first, ports } = running);
    });
    after(() => running?.stop());

    // The same URL on the i-th node (round robin).
    const on = (url, i) => {
      const u = new URL(url);
      u.port = String(ports[i % ports.length]);
      return u.toString().replace(/\/$/, '');
    };
    const admin = (...args) => JSON.parse(execFileSync(sikaBinary, ['admin', ...args, '--json', '--db', first.dsn],
      { env, encoding: 'utf8' }));
    const checkLedger = () => execFileSync(sikaBinary, ['admin', 'check-ledger', '--db', first.dsn], { env });
    const fund = (msisdn, amount) => execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', msisdn, '--currency',
      'XAF', '--amount', String(amount), '--db', first.dsn], { env });
    const available = (msisdn) => admin('wallets', 'show', '--msisdn', msisdn).balances[0]?.available ?? 0;
    const codesFor = (phone, subject) => admin('outbox', 'list', '--to', phone)
      .filter((m) => !subject || m.body.includes(subject)).map((m) => m.body.match(/\d{6}/)[0]);
    // A transaction's record and its status moves.
    const transaction = (reference) => admin('transaction', reference);
    // The link API on the i-th node.
    const call = async (path, body, i = 0, key = first.demo.link_api_key) => {
      const r = await fetch(`${on(first.linkUrl, i)}/api/agent/link/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'accept-language': 'en', 'x-api-key': key },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    // A consented link to `phone` (national digits) with `limits`, its wallet funded with `funds`.
    const activeLink = async (phone, limits, funds = 0) => {
      const l = await call('new', { ...who(phone), limits });
      assert.equal(l.status, 200, JSON.stringify(l.body));
      const { apikey, link } = l.body.data;
      const ok = await call('confirm', { apikey, otp: codesFor(`+237${phone}`, link.reference)[0] });
      assert.equal(ok.body.data.status, 'ACTIVE', JSON.stringify(ok.body));
      if (funds > 0) fund(`237${phone}`, funds);
      return { apikey, reference: link.reference };
    };
    // The wallet page on the i-th node: a form post (no redirect followed).
    const form = (fields, cookie, i = 0) => fetch(`${on(first.checkoutUrl, i)}/wallet`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
      body: new URLSearchParams({ lang: 'en', ...fields }).toString(),
    });
    const signIn = async (msisdn) => {
      await form({ action: 'send', phone: msisdn });
      const signin = await form({ action: 'verify', phone: msisdn, otp: codesFor(`+${msisdn}`, 'wallet')[0] });
      assert.equal(signin.status, 303);
      const cookie = signin.headers.get('set-cookie').split(';')[0];
      const html = await (await fetch(`${first.checkoutUrl}/wallet?lang=en`, { headers: { cookie } })).text();
      return { cookie, html, csrf: html.match(/name="csrf" value="([^"]+)"/)[1] };
    };
    // Requests started together.
    const together = (fns) => Promise.all(fns.map((f) => f()));

    test('link/init racing for the budget: charged within it, the others wait for the code, none refused', async () => {
      const { apikey } = await activeLink('690003001', { per_payment: 1000, per_period: 3000 }, 100000);
      let charged = 0;
      for (let round = 0; round < 2; round++) {
        const inits = await together(Array.from({ length: 12 }, (_, i) => () =>
          call('init', { apikey, amount: 500, transaction_uuid: randomUUID() }, i)));
        for (const r of inits) assert.equal(r.status, 200, JSON.stringify(r.body));
        const completed = inits.filter((r) => r.body.data.status === 'COMPLETED');
        const waiting = inits.filter((r) => r.body.data.status === 'INITIATED');
        assert.equal(completed.length + waiting.length, inits.length);
        for (const w of waiting) assert.equal(w.body.data.needs_otp, true);
        for (const c of completed) assert.equal(c.body.data.needs_otp, false);
        const total = completed.reduce((s, r) => s + r.body.data.required_total, 0);
        charged += total;
        // The budget is spent to the last payment it holds (the first round), never past it.
        assert.ok(charged <= 3000, `charged ${charged}`);
        if (round === 0) assert.equal(completed.length, Math.floor(3000 / completed[0].body.data.required_total));
        else assert.equal(completed.length, 0);
        const status = (await call('status', { apikey }, round + 1)).body.data;
        assert.equal(status.period.spent, charged);
      }
      assert.equal(available('237690003001'), 100000 - charged);
      checkLedger();
    });

    test('link/withdraw: concurrent withdrawals never spend past the consent or the balance', async () => {
      // The consent binds: 5 000 per period, the wallet holds far more.
      const bound = await activeLink('690003011', { per_payment: 2000, per_period: 5000 }, 100000);
      const a = await together(Array.from({ length: 10 }, (_, i) => () =>
        call('withdraw', { apikey: bound.apikey, amount: 1000, transaction_uuid: randomUUID() }, i)));
      const okA = a.filter((r) => r.status === 200);
      for (const r of a.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.message, 'limit_exceeded');
      }
      const rtA = okA[0].body.data.required_total;
      assert.equal(okA.length, Math.floor(5000 / rtA));
      assert.equal((await call('status', { apikey: bound.apikey })).body.data.period.spent, okA.length * rtA);
      assert.equal(available('237690003011'), 100000 - okA.length * rtA);

      // The balance binds: 3 500 in the wallet, a consent far larger.
      const poor = await activeLink('690003012', { per_payment: 50000, per_period: 100000 }, 3500);
      const b = await together(Array.from({ length: 10 }, (_, i) => () =>
        call('withdraw', { apikey: poor.apikey, amount: 1000, transaction_uuid: randomUUID() }, i)));
      const okB = b.filter((r) => r.status === 200);
      for (const r of b.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.message, 'insufficient_funds');
      }
      const rtB = okB[0].body.data.required_total;
      assert.equal(okB.length, Math.floor(3500 / rtB));
      assert.equal(available('237690003012'), 3500 - okB.length * rtB);
      // Only the withdrawals made took the budget.
      assert.equal((await call('status', { apikey: poor.apikey })).body.data.period.spent, okB.length * rtB);
      checkLedger();
    });

    test('a waiting link/init payment approved and declined at once: executed or cancelled exactly once', async () => {
      const { apikey } = await activeLink('690003021', { per_payment: 1000, per_period: 2000 }, 50000);
      const page = await signIn('237690003021');
      const approveOnPage = (reference, code, i) => async () => {
        const r = await form({ action: 'pay_approve', csrf: page.csrf, payment: reference, otp: code }, page.cookie, i);
        return { ok: r.status === 303 && /notice=paid/.test(r.headers.get('location') || ''), status: r.status, way: 'paid' };
      };
      const declineOnPage = (reference, _code, i) => async () => {
        const r = await form({ action: 'pay_decline', csrf: page.csrf, payment: reference }, page.cookie, i);
        return { ok: r.status === 303 && /notice=declined/.test(r.headers.get('location') || ''), status: r.status,
          way: 'declined' };
      };
      const approveByPartner = (reference, code, i) => async () => {
        const r = await call('approve', { apikey, transaction_reference: reference, otp: code }, i);
        // link/approve of a payment no longer waiting answers it as it is: the answer shows the
        // payment, not whether this call moved it.
        return { ok: r.status === 200 && r.body.data.status === 'COMPLETED', status: r.status, way: 'paid',
          shows: r.body.data?.status };
      };
      const rounds = [[approveOnPage, declineOnPage], [declineOnPage, approveOnPage], [approveOnPage, approveOnPage],
        [approveByPartner, declineOnPage], [approveByPartner, approveOnPage]];
      let debited = 0;
      for (const [x, y] of rounds) {
        const before = available('237690003021');
        const init = await call('init', { apikey, amount: 4000, transaction_uuid: randomUUID() });
        assert.equal(init.body.data.status, 'INITIATED', JSON.stringify(init.body));
        const reference = init.body.data.transaction_reference;
        const [code] = codesFor('+237690003021', reference);
        const results = await together([x(reference, code, 0), y(reference, code, 1)]);
        const { record: tx, transitions } = transaction(reference);
        assert.ok(['COMPLETED', 'CANCELLED'].includes(tx.status), JSON.stringify(results));
        // Each answer says what happened: a page's success is the payment's end, a partner's
        // approve shows the payment as it ended, anything else is refused (4xx).
        for (const r of results) {
          if (r.ok) assert.equal(tx.status, r.way === 'paid' ? 'COMPLETED' : 'CANCELLED', JSON.stringify(results));
          else if (r.shows) assert.equal(r.shows, tx.status, JSON.stringify(results));
          else assert.ok(r.status >= 400 && r.status < 500, JSON.stringify(results));
        }
        // Two actions on the page: exactly one did it.
        if (results.every((r) => !('shows' in r))) assert.equal(results.filter((r) => r.ok).length, 1, JSON.stringify(results));
        // One move out of INITIATED, to its end.
        assert.deepEqual(transitions.filter((m) => m.from === 'INITIATED').map((m) => m.to), [tx.status]);
        const moved = before - available('237690003021');
        assert.equal(moved, tx.status === 'COMPLETED' ? tx.required_total : 0);
        debited += moved;
      }
      assert.equal(available('237690003021'), 50000 - debited);
      checkLedger();
    });

    test('fiat-distribution: one per transaction_uuid, all or nothing, never past the partner\'s balance', async () => {
      const a = await activeLink('690003031', { per_payment: 50000, per_period: 200000 }, 40000);
      const b = await activeLink('690003032', { per_payment: 50000, per_period: 200000 });
      const charge = await call('charge', { apikey: a.apikey, amount: 30000, transaction_uuid: randomUUID() });
      assert.equal(charge.body.data.status, 'COMPLETED', JSON.stringify(charge.body));
      const before = [available('237690003031'), available('237690003032')];

      // The same transaction_uuid sent at once on both nodes: one distribution.
      const same = { transaction_uuid: randomUUID(), amount: 1001, distribution: [{ apikey: a.apikey, rate: 50 },
        { apikey: b.apikey, rate: 50 }] };
      const dup = await together(Array.from({ length: 8 }, (_, i) => () => call('fiat-distribution', same, i)));
      for (const r of dup) assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(new Set(dup.map((r) => r.body.data.reference)).size, 1);
      assert.equal(available('237690003031'), before[0] + 501);
      assert.equal(available('237690003032'), before[1] + 500);

      // Different ones, each a third of the partner's balance and a unit more: two fit, whole.
      const partner = admin('balances', '--merchant', first.demo.merchants[0].matricule)
        .find((x) => x.kind === 'available' && x.currency === 'XAF');
      assert.ok(partner, 'the partner has an available balance');
      const each = Math.floor(partner.balance / 3) + 1;
      const many = await together(Array.from({ length: 6 }, (_, i) => () => call('fiat-distribution', {
        transaction_uuid: randomUUID(), distribution: [{ apikey: a.apikey, amount: each - 7 }, { apikey: b.apikey, amount: 7 }],
      }, i)));
      const ok = many.filter((r) => r.status === 200);
      for (const r of many.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.message, 'insufficient_funds');
      }
      assert.equal(ok.length, 2, JSON.stringify(many.map((r) => r.body.message)));
      assert.equal(available('237690003031'), before[0] + 501 + 2 * (each - 7));
      assert.equal(available('237690003032'), before[1] + 500 + 2 * 7);
      const after = admin('balances', '--merchant', first.demo.merchants[0].matricule)
        .find((x) => x.kind === 'available' && x.currency === 'XAF');
      assert.equal(after.balance, partner.balance - 2 * each);
      checkLedger();
    });

    test('unlink racing charges: each charge paid whole or leaves nothing, none after the unlink', async () => {
      const { apikey } = await activeLink('690003041', { per_payment: 5000, per_period: 1000000 }, 100000);
      assert.equal((await call('charge', { apikey, amount: 100, transaction_uuid: randomUUID() }, 1)).status, 200);
      const uuids = Array.from({ length: 16 }, () => randomUUID());
      const racing = uuids.map((transaction_uuid, i) => () => call('charge', { apikey, amount: 100, transaction_uuid }, i));
      racing.splice(8, 0, () => call('unlink', { apikey }, 1));
      const results = await together(racing);
      const unlinked = results.splice(8, 1)[0];
      assert.equal(unlinked.status, 200, JSON.stringify(unlinked.body));
      assert.equal(unlinked.body.data.status, 'UNLINKED');
      const paid = results.filter((r) => r.status === 200);
      for (const r of paid) assert.equal(r.body.data.status, 'COMPLETED');
      for (const r of results.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 409, JSON.stringify(r.body));
        assert.ok(r.body.error.details.apikey);
      }
      // Once the unlink has answered, no node charges the key (each remembered it).
      for (let i = 0; i < 2 * ports.length; i++) {
        const late = await call('charge', { apikey, amount: 100, transaction_uuid: randomUUID() }, i);
        assert.equal(late.status, 409, JSON.stringify(late.body));
      }
      // Only the paid charges exist, each debited once; a refused one left no transaction.
      const made = admin('transactions', '--search', '690003041', '--limit', '100').items;
      assert.equal(made.length, 1 + paid.length, JSON.stringify(made.map((t) => t.status)));
      for (const t of made) assert.equal(t.status, 'COMPLETED');
      assert.equal(available('237690003041'), 100000 - 100 * (1 + paid.length));
      checkLedger();
    });

    test('link/new for the same (partner, phone) at once: one wallet, one link, one key', async () => {
      const results = await together(Array.from({ length: 8 }, (_, i) => () => call('new', who('690003051'), i)));
      for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(new Set(results.map((r) => r.body.data.link.reference)).size, 1);
      assert.equal(new Set(results.map((r) => r.body.data.apikey)).size, 1);
      assert.equal(new Set(results.map((r) => r.body.data.link.matricule)).size, 1);
      const shown = admin('wallets', 'show', '--msisdn', '237690003051');
      assert.equal(shown.links.length, 1, JSON.stringify(shown.links));
      checkLedger();
    });

    test('a wallet page withdrawal confirmed twice at once with its code: one payout', async () => {
      await activeLink('690003061', { per_payment: 1000, per_period: 2000 }, 10000);
      const page = await signIn('237690003061');
      const uuid = page.html.match(/id="withdraw">.*?name="uuid" value="([^"]+)"/)[1];
      const asked = await form({ action: 'withdraw_code', csrf: page.csrf, uuid, amount: '3000' }, page.cookie);
      assert.equal(asked.status, 200);
      const [code] = codesFor('+237690003061');  // the newest: the withdrawal's
      const results = await together([0, 1, 2].map((i) => () =>
        form({ action: 'withdraw', csrf: page.csrf, uuid, amount: '3000', otp: code }, page.cookie, i)));
      const done = results.filter((r) => r.status === 303);
      assert.equal(done.length, 1, JSON.stringify(results.map((r) => r.status)));
      assert.match(done[0].headers.get('location'), /notice=withdrawn/);
      for (const r of results.filter((x) => x.status !== 303)) assert.equal(r.status, 400);
      const payouts = admin('transactions', '--search', '690003061', '--operation', 'DISBURSEMENT').items;
      assert.equal(payouts.length, 1);
      assert.equal(available('237690003061'), 10000 - payouts[0].required_total);
      checkLedger();
    });
  });
}
