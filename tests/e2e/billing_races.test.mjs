// Billing's check-then-act places raced against the real binary: one node on SQLite, and two
// nodes sharing one PostgreSQL (when SIKA_TEST_PG_DSN is set: scripts/with-postgres.sh node --test
// tests/e2e/billing_races.test.mjs). Daily subscriptions are consented through their links first.
//   1. The merchant's cancel races the charge of the cycle that just fell due (the test clock moved
//      on one node, the cancel sent to the other, at once): every subscription ends CANCELLED with
//      no next payment; a cycle is charged only if its charge committed before the cancel (its
//      collection then settles PAID), never after; no payment is left open.
//   2. Both nodes bill the same due cycles at once (the clocks and the due jobs moved forward in
//      the database, the job workers of both nodes and a test-clock call on each node running
//      together): exactly one payment and one collection per cycle, each PAID.
// Both end with `sika admin check-ledger` clean.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, merchantToken, sqlRows, until, checkLedger } from './lib/server.mjs';

const DAY = 86400000;
const SUBSCRIPTIONS = 16;

const ARGS = ['--set', 'log.access=false', '--set', 'payments.sandbox_delay_ms=100', '--set', 'billing.settle_interval_ms=50',
  '--set', 'jobs.poll_interval_ms=20', '--set', 'links.pay_per_address_per_minute=0', '--set', 'links.pay_per_link_per_minute=0'];

const sql = sqlRows;


for (const backend of backends()) {
  describe(`billing races on ${backend}${backend === 'postgres' ? ' (two nodes)' : ''}`, () => {
    let running, first, token;
    let nodes = [];
    before(async () => {
      running = await startTwoNodes({ backend, args: ARGS });
      ({ first, ports: nodes } = running);
      token = await merchantToken(first, 0);
    });
    after(() => running?.stop());

    const call = async (port, p, body, tok = token) => {
      const headers = { 'content-type': 'application/json', 'accept-language': 'en' };
      if (tok) headers['x-sp-auth-token'] = `Bearer ${tok}`;
      const r = await fetch(`http://127.0.0.1:${port}/api${p}`, { method: 'POST', headers, body: JSON.stringify(body) });
      return { status: r.status, body: await r.json() };
    };
    const mine = (tag) => `subscription_id IN (SELECT id FROM bil_subscriptions WHERE customer_email LIKE '${tag}%')`;

    // `SUBSCRIPTIONS` daily subscriptions of customers `tag`N@..., each consent paid; their references.
    const consented = async (tag) => {
      const refs = await Promise.all(Array.from({ length: SUBSCRIPTIONS }, async (_, i) => {
        const port = nodes[i % nodes.length];
        const s = await call(port, '/merchand/billing/subscribe',
          { customer_email: `${tag}${i}@example.com`, amount: 1000 + i, currency: 'XAF', frequency: 'DAILY' });
        assert.equal(s.status, 201, JSON.stringify(s.body));
        const code = s.body.data.payment_url.split('/pay/')[1];
        const paid = await call(port, `/pay/${code}/pay`,
          { customer_phone: '237690000000', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }, null);
        assert.equal(paid.status, 200, JSON.stringify(paid.body));
        return s.body.data.reference;
      }));
      await until(() => Number(sql(first, `SELECT COUNT(*) FROM bil_payments WHERE ${mine(tag)} AND cycle = 0 AND status = 'PAID'`)[0][0]) === SUBSCRIPTIONS,
        `every consent of ${tag} PAID`);
      return refs;
    };

    test('a cancel racing the cycle charge: never a charge after the cancel, nothing left open', { timeout: 120000 }, async (t) => {
      const tag = `cancelrace${backend}`;
      const refs = await consented(tag);
      // Each subscription's clock moves past cycle 1's due time on one node (which charges it
      // there and then) while the cancel goes to the other node.
      await Promise.all(refs.map(async (ref, i) => {
        const [moved, cancelled] = await Promise.all([
          call(nodes[i % nodes.length], `/merchand/billing/subscriptions/test-clock/${ref}`, { seconds: 86460 }),
          call(nodes[(i + 1) % nodes.length], `/merchand/billing/subscriptions/cancel/${ref}`, { reason: 'race' }),
        ]);
        assert.equal(moved.status, 200, JSON.stringify(moved.body));
        assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
        assert.equal(cancelled.body.data.status, 'CANCELLED');
      }));
      // The cycles charged before the cancel settle as their collections end.
      await until(() => Number(sql(first, `SELECT COUNT(*) FROM bil_payments WHERE ${mine(tag)} AND status = 'PROCESSING'`)[0][0]) === 0,
        () => JSON.stringify(sql(first, `SELECT subscription_id, cycle, status FROM bil_payments WHERE ${mine(tag)}`)));
      const subs = sql(first, `SELECT status, COALESCE(next_payment_at, -1), next_cycle FROM bil_subscriptions WHERE customer_email LIKE '${tag}%'`);
      assert.equal(subs.length, SUBSCRIPTIONS);
      for (const [status, next, nextCycle] of subs) {
        assert.equal(status, 'CANCELLED');
        assert.equal(next, '-1', 'a cancelled subscription has no next payment');
        assert.ok(Number(nextCycle) <= 2, nextCycle);
      }
      // Every cycle charged is PAID by its one collection; nothing is left PENDING or FAILED.
      const payments = sql(first, `SELECT status, COUNT(*) FROM bil_payments WHERE ${mine(tag)} AND cycle > 0 GROUP BY status`);
      for (const [status] of payments) assert.equal(status, 'PAID', JSON.stringify(payments));
      const charged = payments.reduce((n, [, c]) => n + Number(c), 0);
      const cycleCollections = refs.reduce((n, ref) => n + Number(sql(first,
        `SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE '%"subscription_reference":"${ref}"%' AND metadata LIKE '%subscription_payment_reference%'`)[0][0]), 0);
      assert.equal(cycleCollections, charged, 'one collection per cycle charged, none for a cycle that was not');
      t.diagnostic(`${charged} of ${SUBSCRIPTIONS} cycles were charged before their cancel`);
      checkLedger(first);
    });

    test('the billing of both nodes on the same due cycles charges each cycle once', { timeout: 120000 }, async (t) => {
      const tag = `twonodes${backend}`;
      const refs = await consented(tag);
      const CYCLES = 3;
      const offset = CYCLES * DAY + 60000;
      // The downtime: the clocks and the due jobs move forward together; the workers of every
      // node take the jobs while a test-clock call on each node bills the same cycles.
      sql(first, `UPDATE bil_subscriptions SET clock_offset_ms = clock_offset_ms + ${offset} WHERE customer_email LIKE '${tag}%'`);
      sql(first, `UPDATE jobs SET run_at = run_at - ${offset} WHERE queue = 'billing.charge' AND state = 'pending'`);
      await Promise.all(refs.flatMap((ref) => [...nodes, ...nodes].map(async (port) => {
        const r = await call(port, `/merchand/billing/subscriptions/test-clock/${ref}`, { seconds: 1 });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      })));
      await until(() => Number(sql(first, `SELECT COUNT(*) FROM bil_payments WHERE ${mine(tag)} AND status = 'PAID'`)[0][0]) === SUBSCRIPTIONS * (CYCLES + 1),
        () => JSON.stringify(sql(first, `SELECT status, COUNT(*) FROM bil_payments WHERE ${mine(tag)} GROUP BY status`)));
      const rows = sql(first, `SELECT subscription_id, cycle, COUNT(*) FROM bil_payments WHERE ${mine(tag)} GROUP BY subscription_id, cycle`);
      assert.equal(rows.length, SUBSCRIPTIONS * (CYCLES + 1));
      for (const [, , n] of rows) assert.equal(n, '1');
      for (const ref of refs) {
        const tx = sql(first, `SELECT status FROM pay_transactions WHERE metadata LIKE '%"subscription_reference":"${ref}"%' AND metadata LIKE '%subscription_payment_reference%'`);
        assert.equal(tx.length, CYCLES, `${ref}: one collection per cycle`);
        for (const [status] of tx) assert.equal(status, 'COMPLETED');
      }
      const next = sql(first, `SELECT DISTINCT next_cycle FROM bil_subscriptions WHERE customer_email LIKE '${tag}%'`);
      assert.deepEqual(next, [[String(CYCLES + 1)]]);
      t.diagnostic(`${SUBSCRIPTIONS * CYCLES} cycles billed by ${nodes.length} node(s) and ${2 * nodes.length} test-clock calls each`);
      checkLedger(first);
    });
  });
}
