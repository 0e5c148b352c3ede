// Black-box tests of payments against the real binary: intent -> execute -> the sandbox operator
// calls back over HTTP -> COMPLETED; failure numbers; pending -> expiry; idempotency; validation;
// the hosted confirmation page; wallet payments; payouts; verification; the ledger check.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, sleep, waitFor, adminJson as adminAt } from './lib/server.mjs';

const RECORD_FIELDS = ['transaction_reference', 'environment', 'invoice_reference', 'provider_reference', 'status',
  'operation', 'channel', 'amount', 'currency', 'confirmation_method', 'confirmation_url', 'fee', 'required_total',
  'settlement_mode', 'split_reference', 'split_status', 'created_at', 'updated_at'];

for (const backend of backends()) {
  describe(`payments on ${backend}`, () => {
    let server, token, otherToken;
    const post = async (path, body, tok = token) => {
      const r = await fetch(`${server.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${tok}`, 'accept-language': 'en' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const intent = (wallet, extra = {}) => ({
      amount: 5000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
      customer_wallet: wallet, description: 'e2e order', metadata: { order: 1 }, ...extra,
    });
    // Reads a transaction's history through the admin CLI (proves the callback came over HTTP).
    const adminJson = (...args) => adminAt(server.dsn, ...args);

    before(async () => {
      server = await startServer({
        backend,
        args: ['--set', 'payments.sandbox_delay_ms=300', '--set', 'payments.pending_ttl_ms=2500',
          '--set', 'payments.expiry_interval_ms=200', '--set', 'payments.sandbox_duplicate_delay_ms=800'],
      });
      token = await merchantToken(server, 0);
      otherToken = await merchantToken(server, 1);
    });
    after(async () => { if (server) await server.stop(); });

    test('demo JSON carries the sandbox numbers and code', () => {
      const s = server.demo.sandbox;
      assert.ok(s.otp);
      assert.match(s.msisdn.success, /^2376\d{8}$/);
      assert.match(s.msisdn.failure, /^2376\d{8}$/);
      assert.match(s.msisdn.pending, /^2376\d{8}$/);
    });

    test('intent -> execute -> sandbox callback over HTTP -> COMPLETED', async () => {
      const created = await post('/collection/intent', intent(server.demo.sandbox.msisdn.success));
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.success, true);
      const rec = created.body.data;
      for (const f of RECORD_FIELDS) assert.ok(f in rec, `record lacks ${f}`);
      assert.equal(rec.status, 'INITIATED');
      assert.equal(rec.environment, 'sandbox');
      assert.equal(rec.required_total, rec.amount + rec.fee);
      const ex = await post('/collection/execute', { transaction_reference: rec.transaction_reference });
      assert.equal(ex.status, 200, JSON.stringify(ex.body));
      assert.equal(ex.body.data.status, 'PENDING');
      // Do not poll: wait for the operator's callback to land by itself.
      const history = await waitFor(() => {
        const h = adminJson('transaction', rec.transaction_reference);
        return h.json && h.json.callbacks.some((c) => c.outcome === 'applied') ? h.json : null;
      });
      assert.ok(history, 'the sandbox callback was applied');
      assert.equal(history.record.status, 'COMPLETED');
      const st = await post('/collection/status', { transaction_reference: rec.transaction_reference });
      assert.equal(st.body.data.status, 'COMPLETED');
      // Another merchant cannot see it.
      const foreign = await post('/collection/status', { transaction_reference: rec.transaction_reference }, otherToken);
      assert.equal(foreign.status, 404);
    });

    test('failure number fails with its reason', async () => {
      const { body } = await post('/collection/intent', intent(server.demo.sandbox.msisdn.failure));
      const ref = body.data.transaction_reference;
      await post('/collection/execute', { transaction_reference: ref });
      const done = await waitFor(async () => {
        const s = await post('/collection/status', { transaction_reference: ref });
        return s.body.data.status !== 'PENDING' ? s.body.data : null;
      });
      assert.equal(done.status, 'FAILED');
      assert.equal(done.failure_reason, 'INSUFFICIENT_FUNDS');
    });

    test('pending number stays PENDING until the expiry worker expires it', async () => {
      const { body } = await post('/collection/intent', intent(server.demo.sandbox.msisdn.pending));
      const ref = body.data.transaction_reference;
      await post('/collection/execute', { transaction_reference: ref });
      await sleep(800);
      assert.equal((await post('/collection/status', { transaction_reference: ref })).body.data.status, 'PENDING');
      const history = await waitFor(() => {
        const h = adminJson('transaction', ref);
        return h.json && h.json.record.status === 'EXPIRED' ? h.json : null;
      });
      assert.ok(history, 'expired');
      assert.equal(history.transitions.at(-1).source, 'expiry');
    });

    test('idempotency: same body same record, different body 409', async () => {
      const body = intent(server.demo.sandbox.msisdn.success);
      const a = await post('/collection/intent', body);
      const b = await post('/collection/intent', { ...body });
      assert.equal(b.body.data.transaction_reference, a.body.data.transaction_reference);
      const c = await post('/collection/intent', { ...body, amount: 5001 });
      assert.equal(c.status, 409);
      assert.equal(c.body.success, false);
      assert.ok('transaction_uuid' in c.body.error.details);
    });

    test('validation names each bad field; mass assignment refused', async () => {
      const r = await post('/collection/intent', { ...intent('12'), amount: -1, currency: 'EUR', fee: 0, status: 'COMPLETED' });
      assert.equal(r.status, 400);
      assert.equal(r.body.message, 'empty_data');
      for (const f of ['amount', 'fee', 'status']) assert.ok(f in r.body.error.details, f);
      const w = await post('/collection/intent', intent('237290000000'));
      assert.equal(w.status, 400);
      assert.ok('customer_wallet' in w.body.error.details);
      const s = await post('/collection/intent', intent(server.demo.sandbox.msisdn.success, {
        settlement_mode: 'SPLIT', distribution: [{ matricule: server.demo.merchants[0].matricule, rate: 70 }],
      }));
      assert.equal(s.status, 400);
      assert.ok('distribution' in s.body.error.details);
      const noToken = await fetch(`${server.baseUrl}/collection/intent`, { method: 'POST', body: '{}' });
      assert.equal(noToken.status, 401);
    });

    test('split settlement completes and settles', async () => {
      const [m0, m1] = server.demo.merchants;
      const { status, body } = await post('/collection/intent', intent(server.demo.sandbox.msisdn.success, {
        amount: 1001, settlement_mode: 'SPLIT',
        distribution: [{ matricule: m0.matricule, rate: 80 }, { matricule: m1.matricule, rate: 20, description: 'partner' }],
      }));
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.data.split_status, 'PENDING');
      const ref = body.data.transaction_reference;
      await post('/collection/execute', { transaction_reference: ref });
      const done = await waitFor(async () => {
        const s = await post('/collection/status', { transaction_reference: ref });
        return s.body.data.status === 'COMPLETED' ? s.body.data : null;
      });
      assert.equal(done.split_status, 'SETTLED');
    });

    test('hosted confirmation page (fr/en) pushes the request', async () => {
      const { body } = await post('/collection/intent', intent(server.demo.sandbox.msisdn.success, { amount: 2500 }));
      const url = body.data.confirmation_url;
      assert.ok(url.startsWith(server.checkoutUrl));
      const en = await fetch(`${url}&lang=en`);
      assert.equal(en.status, 200);
      const html = await en.text();
      assert.match(html, /Send the request to my phone/);
      assert.match(html, new RegExp(`${body.data.required_total}`.replace(/(\d)(?=(\d{3})+$)/g, '$1&#8239;')));
      const fr = await (await fetch(`${url}&lang=fr`)).text();
      assert.match(fr, /Envoyer la demande/);
      const forged = await fetch(url.replace(/sig=[^&]+/, 'sig=AAAAAAAAAAAAAAAAAAAAAA'));
      assert.equal(forged.status, 404);
      const sig = new URL(url).searchParams.get('sig');
      const sent = await fetch(url, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `sig=${encodeURIComponent(sig)}&lang=en&action=pay`,
      });
      assert.equal(sent.status, 200);
      assert.match(await sent.text(), /data-status="PENDING"/);
    });

    test('unsigned operator callback is refused', async () => {
      const r = await fetch(`${server.baseUrl}/operator/callback/sandbox`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ provider_reference: randomUUID(), status: 'SUCCESSFUL' }),
      });
      assert.equal(r.status, 401);
    });

    test('wallet channel pays at once from a funded demo wallet', async () => {
      const wallet = server.demo.sandbox.wallets[0];
      const { status, body } = await post('/collection/intent', {
        ...intent(wallet.msisdn), provider: 'SIKA_WALLET_CMR', channel: 'WALLET', amount: 1000,
      });
      assert.equal(status, 200, JSON.stringify(body));
      const ex = await post('/collection/execute', { transaction_reference: body.data.transaction_reference, otp: server.demo.sandbox.otp });
      assert.equal(ex.status, 200, JSON.stringify(ex.body));
      assert.equal(ex.body.data.status, 'COMPLETED');
    });

    test('payout from the earned balance, and verification', async () => {
      const bal = await fetch(`${server.baseUrl}/balance`, { headers: { 'x-sp-auth-token': `Bearer ${token}` } });
      const balances = (await bal.json()).data;
      const xaf = balances.find((b) => b.currency === 'XAF');
      assert.ok(xaf && xaf.available > 1000, JSON.stringify(balances));
      const p = await post('/disbursement/intent', {
        amount: 500, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
        customer_wallet: server.demo.sandbox.msisdn.success,
      });
      assert.equal(p.status, 200, JSON.stringify(p.body));
      assert.equal(p.body.data.operation, 'DISBURSEMENT');
      const done = await waitFor(async () => {
        const s = await post('/disbursement/status', { transaction_reference: p.body.data.transaction_reference });
        return s.body.data.status === 'COMPLETED' ? s.body.data : null;
      });
      assert.ok(done);
      const tooMuch = await post('/disbursement/intent', {
        amount: 999999, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
        customer_wallet: server.demo.sandbox.msisdn.success,
      });
      assert.equal(tooMuch.status, 400);
      assert.equal(tooMuch.body.message, 'insufficient_funds');
      const v = await post('/verification/account-holder', { provider: 'MTN_MOMO_CMR', wallet: server.demo.sandbox.msisdn.success });
      assert.equal(v.status, 200);
      assert.ok(v.body.data.account_holder_name.length > 3);
    });

    test('sika admin transactions filters, searches and pages; balances name the merchant', async () => {
      const wallet = server.demo.sandbox.msisdn.pending;
      const made = [];
      for (let i = 0; i < 3; i++) {
        const r = await post('/collection/intent', intent(wallet, { amount: 6000 + i }));
        assert.equal(r.status, 200, JSON.stringify(r.body));
        made.push(r.body.data.transaction_reference);
      }
      const byRef = adminJson('transactions', '--search', made[1]);
      assert.equal(byRef.code, 0, byRef.stderr);
      assert.deepEqual(byRef.json.items.map((t) => t.transaction_reference), [made[1]]);
      assert.equal(byRef.json.next, null);
      const merchant = server.demo.merchants[0].matricule;
      const filter = ['--merchant', merchant, '--status', 'INITIATED', '--search', wallet.slice(-6)];
      const first = adminJson('transactions', ...filter, '--limit', '2');
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(first.json.items.map((t) => t.transaction_reference), [made[2], made[1]]);
      assert.ok(first.json.next);
      const second = adminJson('transactions', ...filter, '--limit', '2', '--before', String(first.json.next));
      assert.equal(second.json.items[0].transaction_reference, made[0]);
      const other = adminJson('transactions', '--merchant', server.demo.merchants[1].matricule, '--search', made[1]);
      assert.deepEqual(other.json.items, []);
      const bad = adminJson('transactions', '--status', 'DONE');
      assert.equal(bad.code, 1);
      const balances = adminJson('balances', '--merchant', merchant);
      assert.equal(balances.code, 0, balances.stderr);
      assert.ok(balances.json.length > 0);
      assert.ok(balances.json.every((a) => a.matricule === merchant && a.owner.startsWith('merchant:')));
      const history = adminJson('transaction', made[0]);
      assert.deepEqual(history.json.transitions, []);
      assert.deepEqual(history.json.entries, []);
    });

    test('sika admin check-ledger finds no violation', async () => {
      await sleep(1000);  // let duplicate callbacks land
      const r = adminJson('check-ledger');
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.json.ok, true);
      assert.ok(r.json.journals > 0);
    });

    test('sika admin check-ledger exits 1 when a balance no longer matches its entries', () => {
      const sql = "UPDATE ledger_accounts SET balance = balance + 1 WHERE kind = 'revenue'";
      const t = backend === 'postgres'
        ? spawnSync('psql', [server.dsn, '-q', '-c', sql], { encoding: 'utf8' })
        : spawnSync('python3', ['-c', 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1], timeout=10); c.execute(sys.argv[2]); c.commit()',
          server.dsn.replace('sqlite://', ''), sql], { encoding: 'utf8' });
      assert.equal(t.status, 0, t.stderr);
      const r = adminJson('check-ledger');
      assert.equal(r.code, 1);
      assert.equal(r.json.ok, false);
      assert.ok(r.json.violations.some((v) => v.rule === 'balance_mismatch'));
    });
  });
}
