// What a wallet's owner approves is what happens, black-box, on SQLite and on PostgreSQL when
// SIKA_TEST_PG_DSN is set: a consent code activates exactly the limits its message stated (other
// limits asked meanwhile get their own code), link/init beyond the consent says needs_otp, a
// WALLET payment link paid without a code reserves and creates nothing, a payer's metadata cannot
// claim a wallet link (and the wallet page lists only its own links' payments), the wallet page's
// "code sent" is the same whether or not the number has a wallet (429 with Retry-After and when
// to retry, fr/en), every demo wallet signs in, demo.json lists numbers for every served country,
// and the payment link page shows the fee and total that the payment then charges. On two nodes
// sharing one PostgreSQL: a confirmation racing a change of limits, and payers with codes racing
// for a single-use WALLET link, each ending with a clean ledger check.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startServer, startTwoNodes, backends, sikaBinary, merchantToken, admin, checkLedger } from './lib/server.mjs';

const secret = 'e2e-test-secret-key-0123456789abcdef';
const env = { ...process.env, SIKA_SECRET_KEY: secret };

function fund(server, msisdn, amount, currency = 'XAF') {
  execFileSync(sikaBinary, ['admin', 'fund-wallet', '--msisdn', msisdn, '--currency', currency, '--amount', String(amount),
    '--db', server.dsn], { env });
}
// The codes sent to `phone` whose message names `subject`, newest first.
function codesFor(server, phone, subject) {
  return admin(server, 'outbox', 'list', '--to', phone).filter((m) => m.body.includes(subject))
    .map((m) => m.body.match(/\d{6}/)[0]);
}

function client(server, key, port) {
  const base = port ? `http://127.0.0.1:${port}/link` : server.linkUrl;
  return async (path, body) => {
    const r = await fetch(`${base}/api/agent/link/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-language': 'en', 'x-api-key': key },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
}

function gateway(server, token, port) {
  const base = port ? `http://127.0.0.1:${port}/api` : server.baseUrl;
  return async (method, path, body, auth = true) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'accept-language': 'en',
        ...(auth ? { 'x-sp-auth-token': `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
}

const who = (phone) => ({ email: 'ama@example.com', phone, phoneCountry: '+237' });

for (const backend of backends()) {
  describe(`consent, codes and the wallet page (${backend})`, () => {
    let server, call, api, token;
    before(async () => {
      server = await startServer({ backend });
      call = client(server, server.demo.link_api_key);
      token = await merchantToken(server, 0);
      api = gateway(server, token);
    });
    after(async () => { await server?.stop(); });

    test('a consent code activates only the limits its message stated', async () => {
      const first = await call('new', { ...who('690000301'), limits: { per_payment: 1000, per_period: 2000 } });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const { apikey, link } = first.body.data;
      const [oldCode] = codesFor(server, '+237690000301', link.reference);
      // Within the resend cool-down, much larger limits: a new code states them.
      const swapped = await call('new', { ...who('690000301'), limits: { per_payment: 500000, per_period: 5000000 } });
      assert.equal(swapped.status, 200);
      assert.equal(swapped.body.data.consent.sent, true);
      assert.equal(swapped.body.data.link.limits.per_payment, 500000);
      const codes = codesFor(server, '+237690000301', link.reference);
      assert.equal(codes.length, 2);
      if (codes[0] !== oldCode) {
        const old = await call('confirm', { apikey, otp: oldCode });
        assert.equal(old.status, 400, JSON.stringify(old.body));
        assert.equal((await call('status', { apikey })).body.data.status, 'PENDING');
      }
      // Retried without limits: the stored ones stay (not the defaults).
      const again = await call('new', who('690000301'));
      assert.equal(again.body.data.link.limits.per_payment, 500000);
      const ok = await call('confirm', { apikey, otp: codes[0] });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.data.status, 'ACTIVE');
      assert.equal(ok.body.data.limits.per_payment, 500000);
    });

    test('link/init beyond the consent answers needs_otp: true', async () => {
      const l = await call('new', { ...who('690000302'), limits: { per_payment: 1000, per_period: 2000 } });
      const { apikey, link } = l.body.data;
      await call('confirm', { apikey, otp: codesFor(server, '+237690000302', link.reference)[0] });
      fund(server, '237690000302', 50000);
      const within = await call('init', { apikey, amount: 500, transaction_uuid: randomUUID() });
      assert.equal(within.status, 200, JSON.stringify(within.body));
      assert.equal(within.body.data.status, 'COMPLETED');
      assert.equal(within.body.data.needs_otp, false);
      const beyond = await call('init', { apikey, amount: 5000, transaction_uuid: randomUUID() });
      assert.equal(beyond.status, 200, JSON.stringify(beyond.body));
      assert.equal(beyond.body.data.status, 'INITIATED');
      assert.equal(beyond.body.data.needs_otp, true);
    });

    test('a WALLET payment link paid without a code reserves and creates nothing', async () => {
      fund(server, '237690000303', 50000);
      fund(server, '237690000304', 50000);
      const link = (await api('POST', '/payment-links', { currency: 'XAF', amount: 1000, max_usage: 1, channel: 'WALLET' })).body.data;
      const payer = (phone) => ({ customer_phone: phone, transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' });
      const a = payer('237690000303');
      const first = await api('POST', `/pay/${link.short_code}/pay`, a, false);
      assert.equal(first.status, 400, JSON.stringify(first.body));
      assert.equal(first.body.message, 'otp_required');
      assert.ok(first.body.error.details.otp_helper);
      const b = payer('237690000304');
      const second = await api('POST', `/pay/${link.short_code}/pay`, b, false);
      assert.equal(second.body.message, 'otp_required', JSON.stringify(second.body));
      const shown = await api('GET', `/payment-links/${link.reference}`);
      assert.equal(shown.body.data.payments_completed, 0);
      b.otp = codesFor(server, '+237690000304', link.reference)[0];
      const paid = await api('POST', `/pay/${link.short_code}/pay`, b, false);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.status, 'COMPLETED');
      checkLedger(server);
    });

    test('a payer cannot claim a wallet link; the wallet page lists only its own links', async () => {
      const open = (await api('POST', '/payment-links', { currency: 'XAF' })).body.data;
      const spoof = await api('POST', `/pay/${open.short_code}/pay`, {
        customer_phone: '237690000100', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', amount: 1000,
        channel: 'WALLET', metadata: { wallet_link: server.demo.wallet_link.reference },
      }, false);
      assert.equal(spoof.status, 400, JSON.stringify(spoof.body));
      assert.ok(spoof.body.error.details['metadata.wallet_link']);
      const intent = await api('POST', '/collection/intent', {
        amount: 1000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'WALLET',
        customer_wallet: '237690000100', metadata: { wallet_link: server.demo.wallet_link.reference },
      });
      assert.equal(intent.status, 400, JSON.stringify(intent.body));
      assert.ok(intent.body.error.details['metadata.wallet_link']);
    });

    const page = () => `${server.checkoutUrl}/wallet`;
    const form = (fields, cookie, ip) => fetch(page(), {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
      body: new URLSearchParams(fields).toString(),
    });

    test('the wallet page answers "code sent" the same with or without a wallet, and 429 says when', async () => {
      // otp.max_sends (5) per number and code lifetime, for every number alike.
      const sends = async (phone, n, lang = 'en') => {
        const out = [];
        for (let i = 0; i < n; i++) out.push(await form({ action: 'send', phone, lang }));
        return out;
      };
      const withWallet = await sends('+237690000301', 6);
      const without = await sends('+237699999377', 6);
      assert.deepEqual(withWallet.map((r) => r.status), [200, 200, 200, 200, 200, 429]);
      assert.deepEqual(without.map((r) => r.status), withWallet.map((r) => r.status));
      const text = async (r) => (await r.text()).replace(/value="\d+"/g, '');
      const bodies = [await text(withWallet[0]), await text(withWallet[1]), await text(withWallet[5]),
        await text(without[0]), await text(without[1]), await text(without[5])];
      assert.equal(bodies[0], bodies[3]);
      assert.equal(bodies[1], bodies[4]);
      assert.equal(bodies[2], bodies[5]);
      const after = Number(withWallet[5].headers.get('retry-after'));
      assert.ok(after >= 1 && after <= 300, String(after));
      assert.equal(Number(without[5].headers.get('retry-after')) > 0, true);
      assert.match(bodies[2], /Too many requests\. Try again in \d+ (s|min)\./);
      assert.match(bodies[2], /wallet\?lang=fr/);  // the language switch stays
      const fr = await form({ action: 'send', phone: '+237690000301', lang: 'fr' });
      assert.equal(fr.status, 429);
      assert.match(await fr.text(), /Réessayez dans \d+ (s|min)\./);
    });

    test('every demo wallet signs in to the wallet page; demo.json has numbers for every served country', async () => {
      const wallets = server.demo.sandbox.wallets;
      assert.ok(wallets.length >= 3);
      for (const w of wallets) {
        assert.equal((await form({ action: 'send', phone: `+${w.msisdn}`, lang: 'en' })).status, 200);
        const signin = await form({ action: 'verify', phone: w.msisdn, otp: server.demo.sandbox.otp, lang: 'en' });
        assert.equal(signin.status, 303, `${w.msisdn}: ${await signin.text()}`);
      }
      const countries = server.demo.sandbox.countries.map((c) => c.country).sort();
      assert.deepEqual(countries, [...server.demo.catalog.countries].sort());
      for (const c of server.demo.sandbox.countries) {
        assert.ok(c.msisdn.success.startsWith(c.dialling_code.slice(1)), JSON.stringify(c));
        assert.ok(c.msisdn.failure.endsWith('0001'));
      }
    });

    test('the payment link page shows the fee and total the payment then charges', async () => {
      const link = (await api('POST', '/payment-links', { currency: 'XAF', amount: 25000, provider: 'MTN_MOMO_CMR' })).body.data;
      const html = await (await fetch(`${server.checkoutUrl}/pay/${link.short_code}?lang=en`)).text();
      const row = html.match(/<table class="fees"[\s\S]*?<\/table>/);
      assert.ok(row, html);
      const cells = [...row[0].matchAll(/<td>(?:<strong>)?([^<]+)/g)].map((m) => Number(m[1].replace(/&#\d+;/g, '').replace(/\D/g, '')));
      const paid = await api('POST', `/pay/${link.short_code}/pay`,
        { customer_phone: server.demo.sandbox.msisdn.success, transaction_uuid: randomUUID() }, false);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(cells[0], paid.body.data.fee);
      assert.equal(cells[1], paid.body.data.required_total);
    });
  });
}

const skip = process.env.SIKA_TEST_PG_DSN ? false : 'SIKA_TEST_PG_DSN is not set';

describe('consent and WALLET link races on two nodes', { skip }, () => {
  let running, first, second, token;
  const ARGS = ['--set', 'links.pay_per_address_per_minute=0', '--set', 'links.pay_per_link_per_minute=0',
    '--set', 'wallets.link_api_per_hour=100000'];
  before(async () => {
    running = await startTwoNodes({ args: ARGS });
    ({ first, second } = running);
    token = await merchantToken(first, 0);
  });
  after(() => running?.stop());

  test('confirmations racing limit changes never activate limits no code stated', async () => {
    const calls = [client(first, first.demo.link_api_key, first.port), client(first, first.demo.link_api_key, second.port)];
    for (let i = 0; i < 6; i++) {
      const phone = `69100${2000 + i}`;
      const l = await calls[0]('new', { ...who(phone), limits: { per_payment: 1000, per_period: 2000 } });
      assert.equal(l.status, 200, JSON.stringify(l.body));
      const { apikey, link } = l.body.data;
      const [code] = codesFor(first, `+237${phone}`, link.reference);
      const results = await Promise.all([
        calls[i % 2]('confirm', { apikey, otp: code }),
        calls[(i + 1) % 2]('new', { ...who(phone), limits: { per_payment: 400000, per_period: 800000 } }),
        calls[(i + 1) % 2]('new', { ...who(phone), limits: { per_payment: 300000, per_period: 800000 } }),
      ]);
      const now = (await calls[0]('status', { apikey })).body.data;
      if (now.status === 'ACTIVE') {
        assert.equal(results[0].status, 200);
        assert.equal(now.limits.per_payment, 1000, JSON.stringify(now));
        assert.equal(now.limits.per_period, 2000);
      } else {
        assert.equal(now.status, 'PENDING');
        assert.notEqual(results[0].status, 200, JSON.stringify(results[0].body));
      }
    }
    checkLedger(first);
  });

  test('payers with codes racing for a single-use WALLET link on both nodes: one payment', async () => {
    const apis = [gateway(first, token, first.port), gateway(first, token, second.port)];
    const link = (await apis[0]('POST', '/payment-links', { currency: 'XAF', amount: 1200, max_usage: 1, channel: 'WALLET' })).body.data;
    const payers = [];
    for (let i = 0; i < 8; i++) {
      const phone = `2376920000${10 + i}`;
      fund(first, phone, 10000);
      const body = { customer_phone: phone, transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' };
      const asked = await apis[i % 2]('POST', `/pay/${link.short_code}/pay`, body, false);
      assert.equal(asked.body.message, 'otp_required', JSON.stringify(asked.body));
      body.otp = codesFor(first, `+${phone}`, link.reference)[0];
      payers.push(body);
    }
    const results = await Promise.all(payers.map((b, i) => apis[i % 2]('POST', `/pay/${link.short_code}/pay`, b, false)));
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 1, JSON.stringify(results.map((r) => r.body.message)));
    assert.equal(ok[0].body.data.status, 'COMPLETED');
    for (const r of results.filter((x) => x.status !== 200)) assert.equal(r.body.message, 'link_used_up');
    const shown = await apis[1]('GET', `/payment-links/${link.reference}`);
    assert.equal(shown.body.data.payments_completed, 1);
    checkLedger(first);
  });
});
