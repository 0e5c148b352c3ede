// Submissions of one hosted checkout session at the same moment (two tabs, a retrying client),
// with consecutive `attempt` values, on SQLite and across two `sika serve` nodes sharing one
// PostgreSQL database. Checked on the committed rows: no session ever has more than one
// collection in flight, nor more than one COMPLETED; every order is paid once; the ledger check
// passes afterwards.
// scripts/with-postgres.sh node --test tests/e2e/checkout_race.test.mjs (SQLite only without a DSN)
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, sqlRows, sleep, checkLedger } from './lib/server.mjs';

const SESSIONS = 12;
const SUBMITS = 4; // attempts 0, 1, 2, 3 of each session, all at once
const ARGS = ['--set', 'payments.sandbox_delay_ms=150', '--set', 'checkout.pay_per_address_per_minute=0'];

// Rows as `a|b|c` lines.
const sql = (server, query) => sqlRows(server, query).map((r) => r.join('|'));

const orderBody = (merchant) => ({ apiKey: merchant.api_key, amount: 5000, currency: 'XAF', orderId: `RACE-${randomUUID()}`,
  description: 'race', shopName: 'Boutique Akwa', successUrl: 'https://shop.example/ok',
  failureUrl: 'https://shop.example/ko' });

async function openSession(server, merchant) {
  const r = await fetch(server.checkoutUrl, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(orderBody(merchant)),
  });
  assert.equal(r.status, 201);
  return (await r.json()).data;
}

// Waits until no collection is in flight.
async function settle(server) {
  for (let i = 0; i < 300; i++) {
    if (sql(server, "SELECT COUNT(*) FROM pay_transactions WHERE status IN ('INITIATED', 'PENDING')")[0] === '0') return;
    await sleep(100);
  }
  assert.fail('the payments did not end');
}

for (const backend of backends()) {
  describe(`concurrent submissions of one checkout session on ${backend}`, () => {
    let running, first, second;
    before(async () => {
      running = await startTwoNodes({ backend, args: ARGS });
      ({ first, second } = running);
    });
    after(() => running?.stop());

    test('consecutive attempts at once: at most one collection in flight and one COMPLETED per session', async () => {
      const merchant = first.demo.merchants[0];
      const ports = second ? [first.port, second.port] : [first.port];
      const sessions = [];
      for (let i = 0; i < SESSIONS; i++) sessions.push(await openSession(first, merchant));
      const results = await Promise.all(sessions.flatMap((s) => Array.from({ length: SUBMITS }, (_, a) => {
        const port = ports[a % ports.length];
        return fetch(`http://127.0.0.1:${port}/checkout/session/${s.reference}?lang=en`, {
          method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ attempt: String(a), provider: 'MTN_MOMO_CMR',
            customer_phone: first.demo.sandbox.msisdn.success }).toString(),
        }).then((r) => ({ status: r.status, port }));
      })));
      for (const r of results) assert.equal(r.status, 303, JSON.stringify(r));
      if (second) assert.deepEqual(new Set(results.map((r) => r.port)), new Set(ports));

      // While they run and once they end: never two in flight, never two COMPLETED.
      for (let round = 0; round < 300; round++) {
        const rows = sql(first, "SELECT metadata, status FROM pay_transactions WHERE metadata LIKE '%checkout_reference%'");
        const per = new Map();
        for (const row of rows) {
          const cut = row.lastIndexOf('|');
          const ref = JSON.parse(row.slice(0, cut)).checkout_reference;
          const status = row.slice(cut + 1);
          const e = per.get(ref) || { inFlight: 0, completed: 0, total: 0 };
          e.total++;
          if (status === 'INITIATED' || status === 'PENDING') e.inFlight++;
          if (status === 'COMPLETED') e.completed++;
          per.set(ref, e);
        }
        for (const [ref, e] of per) {
          assert.ok(e.inFlight <= 1, `${ref}: ${JSON.stringify(e)}`);
          assert.ok(e.completed <= 1, `${ref}: ${JSON.stringify(e)}`);
          assert.ok(e.inFlight + e.completed <= 1, `${ref}: ${JSON.stringify(e)}`);
        }
        const settled = sessions.every((s) => per.get(s.reference) && per.get(s.reference).inFlight === 0);
        if (settled) {
          for (const s of sessions) assert.deepEqual(per.get(s.reference), { inFlight: 0, completed: 1, total: 1 }, s.reference);
          break;
        }
        assert.ok(round < 299, 'the payments did not end');
        await sleep(100);
      }
      // Every order was paid once: its return says so, and the session is PAID.
      for (const s of sessions) {
        const back = await fetch(`${s.page_url}/return`, { redirect: 'manual' });
        assert.match(back.headers.get('location') || '', /^https:\/\/shop\.example\/ok\?/);
      }
    });

    test('cancel and pay at once: a cancelled session never has a payment', async () => {
      const merchant = first.demo.merchants[0];
      const ports = second ? [first.port, second.port] : [first.port];
      const sessions = [];
      for (let i = 0; i < SESSIONS; i++) sessions.push(await openSession(first, merchant));
      await Promise.all(sessions.flatMap((s, i) => [
        fetch(`http://127.0.0.1:${ports[i % ports.length]}/checkout/session/${s.reference}?lang=en`, {
          method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ attempt: '0', provider: 'MTN_MOMO_CMR', customer_phone: first.demo.sandbox.msisdn.success }).toString(),
        }),
        fetch(`http://127.0.0.1:${ports[(i + 1) % ports.length]}/checkout/session/${s.reference}/cancel?lang=en`, {
          method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '',
        }),
      ]));
      await settle(first);
      for (const s of sessions) {
        const [status] = sql(first, `SELECT status FROM chk_sessions WHERE reference = '${s.reference}'`);
        const paid = Number(sql(first, `SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE '%${s.reference}%' AND status = 'COMPLETED'`)[0]);
        assert.ok(paid <= 1, s.reference);
        if (status === 'CANCELLED') assert.equal(paid, 0, `${s.reference} cancelled and paid`);
        else assert.equal(paid, 1, `${s.reference}: ${status}`);
      }
    });

    test('posts of a cancelled order at once, on both nodes: one new session, the same for all', async () => {
      const merchant = first.demo.merchants[0];
      const ports = second ? [first.port, second.port] : [first.port];
      const body = orderBody(merchant);
      const opened = await (await fetch(first.checkoutUrl, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body) })).json();
      await fetch(`${opened.data.page_url}/cancel`, { method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) =>
        fetch(`http://127.0.0.1:${ports[i % ports.length]}/checkout`, { method: 'POST',
          headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
          .then(async (r) => ({ status: r.status, body: await r.json() }))));
      assert.equal(answers.filter((a) => a.status === 201).length, 1, JSON.stringify(answers.map((a) => a.status)));
      const refs = new Set(answers.filter((a) => a.status < 300).map((a) => a.body.data.reference));
      assert.equal(refs.size, 1);
      assert.ok(!refs.has(opened.data.reference));
    });

    test('the ledger balances after the races', () => {
      checkLedger(first);
    });
  });
}
