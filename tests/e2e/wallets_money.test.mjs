// Money in and out of linked wallets, black-box, on SQLite and on PostgreSQL when
// SIKA_TEST_PG_DSN is set: the partner tops a wallet up from the user's own mobile money and
// withdraws to it within the consent (the sandbox operator's magic tails decide the outcome; a
// failed withdrawal comes back to the wallet), starts a payment beyond the consent that the user
// approves with a code (link/init + link/approve), and distributes its balance to several wallets
// in one call (fiat-distribution); then the user tops up and withdraws on the wallet page (a fresh
// code for the withdrawal), and approves and declines link/init payments there. The ledger check is clean at the end.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startServer, backends, sikaBinary } from './lib/server.mjs';

const secret = 'e2e-test-secret-key-0123456789abcdef';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of backends()) {
  describe(`wallet money (${backend})`, () => {
    let server, key, otherKey;
    const admin = (...args) => JSON.parse(execFileSync(sikaBinary, ['admin', ...args, '--json', '--db', server.dsn],
      { env: { ...process.env, SIKA_SECRET_KEY: secret }, encoding: 'utf8' }));
    const codeFor = (phone, subject) => {
      const m = admin('outbox', 'list', '--to', phone).find((x) => !subject || x.body.includes(subject));
      assert.ok(m, `no message to ${phone} about ${subject}`);
      return m.body.match(/\d{6}/)[0];
    };
    const available = (msisdn) => admin('wallets', 'show', '--msisdn', msisdn).balances[0].available;
    // Waits until the wallet's balance is `want` (the sandbox operator answers after a delay).
    const balanceBecomes = async (msisdn, want) => {
      let got;
      for (let i = 0; i < 100; i++) {
        got = available(msisdn);
        if (got === want) return got;
        await sleep(100);
      }
      return got;
    };

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=200'],
        env: { SIKA_WALLETS_LINK_PER_PAYMENT: '5000', SIKA_WALLETS_LINK_PER_PERIOD: '7000',
          SIKA_WALLETS_PAGE_MERCHANT: 'MCH-CM-0001' } });
      key = server.demo.link_api_key;
      otherKey = admin('create-api-key', '--merchant', server.demo.merchants[2].matricule, '--kind', 'link').api_key;
    });
    after(async () => {
      if (server) execFileSync(sikaBinary, ['admin', 'check-ledger', '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
      await server?.stop();
    });

    const call = async (path, body, apiKey = key) => {
      const r = await fetch(`${server.linkUrl}/api/agent/link/${path}`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'accept-language': 'en' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    // A consented link to `phone` (national digits).
    const activeLink = async (phone) => {
      const linked = await call('new', { email: `${phone}@example.com`, phone, phoneCountry: '+237' });
      assert.equal(linked.status, 200, JSON.stringify(linked.body));
      const { apikey, link } = linked.body.data;
      const ok = await call('confirm', { apikey, otp: codeFor(`+237${phone}`, link.reference) });
      assert.equal(ok.body.data.status, 'ACTIVE', JSON.stringify(ok.body));
      return apikey;
    };

    test('top-up from the user\'s mobile money: credited when the operator succeeds, not when it refuses', async () => {
      const apikey = await activeLink('690000071');
      const uuid = randomUUID();
      const t = await call('topup', { apikey, amount: 10000, transaction_uuid: uuid });
      assert.equal(t.status, 200, JSON.stringify(t.body));
      assert.equal(t.body.data.channel, 'PROVIDER');
      assert.equal(t.body.data.settlement_mode, 'WALLET');
      assert.equal(await balanceBecomes('237690000071', 10000), 10000);
      const replay = await call('topup', { apikey, amount: 10000, transaction_uuid: uuid });
      assert.equal(replay.body.data.transaction_reference, t.body.data.transaction_reference);
      const shown = admin('wallets', 'show', '--msisdn', '237690000071');
      assert.equal(shown.history[0].kind, 'COLLECTION');
      assert.equal(shown.history[0].amount, 10000);

      const poor = await activeLink('690000001');
      const refused = await call('topup', { apikey: poor, amount: 5000, transaction_uuid: randomUUID() });
      assert.equal(refused.status, 200, JSON.stringify(refused.body));
      await sleep(1500);
      assert.equal(available('237690000001'), 0);
      const bad = await call('topup', { apikey, amount: 100, transaction_uuid: randomUUID(), provider: 'NOPE' });
      assert.equal(bad.status, 400);
      assert.ok(bad.body.error.details.provider);
      const foreign = await call('topup', { apikey, amount: 100, transaction_uuid: randomUUID() }, otherKey);
      assert.equal(foreign.status, 404);
    });

    test('withdrawal to mobile money: reserved at once, within the consent, refunded when it fails', async () => {
      const apikey = await activeLink('690000004');  // ...0004: the operator knows no such account
      execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', '237690000004', '--currency', 'XAF', '--amount', '9000',
        '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
      const uuid = randomUUID();
      const w = await call('withdraw', { apikey, amount: 2000, transaction_uuid: uuid });
      assert.equal(w.status, 200, JSON.stringify(w.body));
      assert.equal(w.body.data.operation, 'DISBURSEMENT');
      assert.ok(w.body.data.required_total > 2000, 'the payout fee comes out of the wallet too');
      const replay = await call('withdraw', { apikey, amount: 2000, transaction_uuid: uuid });
      assert.equal(replay.body.data.transaction_reference, w.body.data.transaction_reference);
      const over = await call('withdraw', { apikey, amount: 6000, transaction_uuid: randomUUID() });
      assert.equal(over.status, 400);
      assert.equal(over.body.message, 'limit_exceeded');
      assert.ok(over.body.error.details.amount);
      assert.equal(await balanceBecomes('237690000004', 9000), 9000);
      // The history shows the reserve and its refund, each of required_total.
      const moves = admin('wallets', 'show', '--msisdn', '237690000004').history.slice(0, 2).map((h) => [h.kind, h.amount]);
      assert.deepEqual(moves, [['PAYOUT_RELEASE', w.body.data.required_total], ['PAYOUT_RESERVE', -w.body.data.required_total]]);
    });

    test('link/init beyond the consent waits for the user\'s code; link/approve completes it', async () => {
      const apikey = await activeLink('690000072');
      execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', '237690000072', '--currency', 'XAF', '--amount', '20000',
        '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
      const within = await call('init', { apikey, amount: 2000, transaction_uuid: randomUUID() });
      assert.equal(within.body.data.status, 'COMPLETED', JSON.stringify(within.body));
      assert.equal(within.body.data.confirmation_method, 'CONSENT');
      const beyond = await call('init', { apikey, amount: 8000, transaction_uuid: randomUUID(), description: 'big order' });
      assert.equal(beyond.status, 200, JSON.stringify(beyond.body));
      assert.equal(beyond.body.data.status, 'INITIATED');
      const reference = beyond.body.data.transaction_reference;
      const missing = await call('approve', { apikey, transaction_reference: reference });
      assert.equal(missing.status, 400);
      assert.ok(missing.body.error.details.otp);
      const code = codeFor('+237690000072', reference);
      assert.equal((await call('approve', { apikey, transaction_reference: reference, otp: code }, otherKey)).status, 404);
      const approved = await call('approve', { apikey, transaction_reference: reference, otp: code });
      assert.equal(approved.status, 200, JSON.stringify(approved.body));
      assert.equal(approved.body.data.status, 'COMPLETED');
      assert.equal(available('237690000072'), 20000 - 2000 - 8000);
    });

    test('fiat-distribution: exact shares, all or nothing, idempotent, another partner\'s link 404', async () => {
      const a = await activeLink('690000073');
      const b = await activeLink('690000074');
      const before73 = available('237690000073');
      // The partner's balance comes from charges.
      execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', '237690000073', '--currency', 'XAF', '--amount', '5000',
        '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
      assert.equal((await call('charge', { apikey: a, amount: 5000, transaction_uuid: randomUUID() })).body.data.status, 'COMPLETED');
      const body = { transaction_uuid: randomUUID(), amount: 1001, distribution: [{ apikey: a, rate: 50 }, { apikey: b, rate: 50 }] };
      const d = await call('fiat-distribution', body);
      assert.equal(d.status, 200, JSON.stringify(d.body));
      assert.equal(d.body.message, 'distributed');
      assert.deepEqual(d.body.data.lines.map((l) => l.amount), [501, 500]);
      assert.equal(available('237690000073'), before73 + 501);
      assert.equal(available('237690000074'), 500);
      const again = await call('fiat-distribution', body);
      assert.equal(again.body.data.reference, d.body.data.reference);
      assert.equal(available('237690000074'), 500);
      const changed = await call('fiat-distribution', { ...body, amount: 1002 });
      assert.equal(changed.status, 409);
      const bad = await call('fiat-distribution', { transaction_uuid: 'x', distribution: [{ apikey: a, rate: 40 }, { apikey: b, amount: 3 }] });
      assert.equal(bad.status, 400);
      for (const f of ['transaction_uuid', 'distribution', 'amount']) assert.ok(bad.body.error.details[f], f);
      const broke = await call('fiat-distribution', { transaction_uuid: randomUUID(), distribution: [{ apikey: a, amount: 10_000_000 }] });
      assert.equal(broke.status, 400);
      assert.equal(broke.body.message, 'insufficient_funds');
      const foreign = await call('fiat-distribution', { transaction_uuid: randomUUID(), distribution: [{ apikey: a, amount: 1 }] }, otherKey);
      assert.equal(foreign.status, 404);
      assert.ok(foreign.body.error.details['distribution[0].apikey']);
    });

    test('the wallet page: top-up, and a withdrawal confirmed by a fresh code', async () => {
      await activeLink('690000075');
      const page = `${server.checkoutUrl}/wallet`;
      const form = (fields, cookie) => fetch(page, {
        method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
        body: new URLSearchParams(fields).toString(),
      });
      await form({ action: 'send', phone: '237690000075', lang: 'en' });
      const signin = await form({ action: 'verify', phone: '237690000075', otp: codeFor('+237690000075', 'wallet'), lang: 'en' });
      assert.equal(signin.status, 303);
      const cookie = signin.headers.get('set-cookie').split(';')[0];
      let html = await (await fetch(`${page}?lang=en`, { headers: { cookie } })).text();
      const csrf = html.match(/name="csrf" value="([^"]+)"/)[1];
      const topupUuid = html.match(/id="topup">.*?name="uuid" value="([^"]+)"/)[1];
      const topup = await form({ action: 'topup', csrf, uuid: topupUuid, amount: '4000', lang: 'en' }, cookie);
      assert.equal(topup.status, 303);
      assert.match(topup.headers.get('location'), /notice=topup/);
      // The same form sent twice tops up once.
      assert.equal((await form({ action: 'topup', csrf, uuid: topupUuid, amount: '4000', lang: 'en' }, cookie)).status, 303);
      assert.equal(await balanceBecomes('237690000075', 4000), 4000);

      html = await (await fetch(`${page}?lang=en`, { headers: { cookie } })).text();
      const withdrawUuid = html.match(/id="withdraw">.*?name="uuid" value="([^"]+)"/)[1];
      const asked = await form({ action: 'withdraw_code', csrf, uuid: withdrawUuid, amount: '1000', lang: 'en' }, cookie);
      assert.equal(asked.status, 200);
      assert.match(await asked.text(), /confirm-withdraw/);
      const wrong = await form({ action: 'withdraw', csrf, uuid: withdrawUuid, amount: '1000', otp: '000001', lang: 'en' }, cookie);
      assert.equal(wrong.status, 400);
      // The code is bound to the amount: another amount with it is refused.
      const code = codeFor('+237690000075');
      const other = await form({ action: 'withdraw', csrf, uuid: withdrawUuid, amount: '3000', otp: code, lang: 'en' }, cookie);
      assert.equal(other.status, 400);
      const done = await form({ action: 'withdraw', csrf, uuid: withdrawUuid, amount: '1000', otp: code, lang: 'en' }, cookie);
      assert.equal(done.status, 303);
      assert.match(done.headers.get('location'), /notice=withdrawn/);
      const left = available('237690000075');
      assert.ok(left < 3000 && left >= 2000, `balance ${left}`);
      // Without the CSRF token nothing moves.
      assert.equal((await form({ action: 'topup', uuid: randomUUID(), amount: '10', lang: 'en' }, cookie)).status, 403);
    });

    test('the wallet page: a link/init payment approved with its code, another declined, none of another wallet', async () => {
      const apikey = await activeLink('690000076');
      execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', '237690000076', '--currency', 'XAF', '--amount', '20000',
        '--db', server.dsn], { env: { ...process.env, SIKA_SECRET_KEY: secret } });
      const page = `${server.checkoutUrl}/wallet`;
      const form = (fields, cookie) => fetch(page, {
        method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
        body: new URLSearchParams(fields).toString(),
      });
      const signIn = async (msisdn) => {
        await form({ action: 'send', phone: msisdn, lang: 'en' });
        const signin = await form({ action: 'verify', phone: msisdn, otp: codeFor(`+${msisdn}`, 'wallet'), lang: 'en' });
        assert.equal(signin.status, 303);
        const cookie = signin.headers.get('set-cookie').split(';')[0];
        const html = await (await fetch(`${page}?lang=en`, { headers: { cookie } })).text();
        return { cookie, html, csrf: html.match(/name="csrf" value="([^"]+)"/)[1] };
      };
      const big = await call('init', { apikey, amount: 9000, transaction_uuid: randomUUID(), description: 'sofa' });
      assert.equal(big.body.data.status, 'INITIATED');
      const small = await call('init', { apikey, amount: 6000, transaction_uuid: randomUUID() });
      assert.equal(small.body.data.status, 'INITIATED');
      const refBig = big.body.data.transaction_reference;
      const refSmall = small.body.data.transaction_reference;

      // Another wallet's session sees neither and can act on neither.
      await activeLink('690000077');
      const stranger = await signIn('237690000077');
      assert.ok(!stranger.html.includes(refBig));
      for (const action of ['pay_approve', 'pay_decline', 'pay_code'])
        assert.equal((await form({ action, csrf: stranger.csrf, payment: refBig, otp: '123456', lang: 'en' }, stranger.cookie)).status, 404, action);

      const { cookie, html, csrf } = await signIn('237690000076');
      assert.match(html, new RegExp(`data-reference="${refBig}"`));
      assert.match(html, /sofa/);
      // Without the CSRF token, or with a wrong code, nothing moves.
      assert.equal((await form({ action: 'pay_approve', payment: refBig, otp: '000000', lang: 'en' }, cookie)).status, 403);
      assert.equal((await form({ action: 'pay_approve', csrf, payment: refBig, otp: '000000', lang: 'en' }, cookie)).status, 400);
      assert.equal(available('237690000076'), 20000);
      const resent = await form({ action: 'pay_code', csrf, payment: refBig, lang: 'en' }, cookie);
      assert.equal(resent.status, 303);
      assert.match(resent.headers.get('location'), /notice=paycode/);
      const paid = await form({ action: 'pay_approve', csrf, payment: refBig, otp: codeFor('+237690000076', refBig), lang: 'en' }, cookie);
      assert.equal(paid.status, 303);
      assert.match(paid.headers.get('location'), /notice=paid/);
      assert.equal(available('237690000076'), 20000 - 9000);
      // Approved once: it no longer waits, and the partner's approve finds it COMPLETED.
      assert.equal((await form({ action: 'pay_approve', csrf, payment: refBig, otp: '123456', lang: 'en' }, cookie)).status, 404);
      assert.equal((await call('approve', { apikey, transaction_reference: refBig, otp: '123456' })).body.data.status, 'COMPLETED');

      const declined = await form({ action: 'pay_decline', csrf, payment: refSmall, lang: 'en' }, cookie);
      assert.equal(declined.status, 303);
      assert.match(declined.headers.get('location'), /notice=declined/);
      const after = await call('approve', { apikey, transaction_reference: refSmall, otp: codeFor('+237690000076', refSmall) });
      assert.equal(after.body.data.status, 'CANCELLED');
      assert.equal(available('237690000076'), 20000 - 9000);
      assert.ok(!(await (await fetch(`${page}?lang=en`, { headers: { cookie } })).text()).includes('id="pending"'));
    });
  });
}
