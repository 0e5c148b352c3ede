// A billing run interrupted by kill -9, and billing shared by three nodes on one PostgreSQL.
// Subscriptions are consented through their links, then the clock jumps past five daily cycles
// (as after downtime: the subscriptions' clocks and their due jobs are moved in the database, the
// one white-box step), and the jobs catch up. One node is killed with SIGKILL in the middle of the
// run; on SQLite it is restarted on the same database, on PostgreSQL the two other nodes take its
// jobs over when their leases end. Checked on the committed rows:
//   - every subscription has exactly one payment per cycle 0..5: none skipped, none twice;
//   - every collection of a subscription is the one of its (cycle, attempt), and no cycle has two
//     completed collections;
//   - every payment ends PAID, or FAILED when its collection was in flight at the node that died
//     (the sandbox operator forgets what it had been sent, so those expire; dunning takes over).
// PostgreSQL part: scripts/with-postgres.sh node --test billing_crash.test.mjs
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, spawnServe, freePort, sqlRows, until } from './lib/server.mjs';

const SUBSCRIPTIONS = 40;
const CYCLES = 5;  // due after the jump, on top of the consent (cycle 0)
const DAY = 86400000;
// The test's own subscriptions (the demo world holds others).
const MINE = "subscription_id IN (SELECT id FROM bil_subscriptions WHERE customer_email LIKE 'crash%')";

const ARGS = ['--set', 'log.access=false', '--set', 'payments.sandbox_delay_ms=100', '--set', 'payments.pending_ttl_ms=3000',
  '--set', 'payments.intent_ttl_ms=3000', '--set', 'payments.expiry_interval_ms=100', '--set', 'billing.settle_interval_ms=50',
  '--set', 'jobs.poll_interval_ms=20', '--set', 'jobs.lease_ms=2000', '--set', 'jobs.retry_base_ms=100',
  '--set', 'links.pay_per_address_per_minute=0', '--set', 'links.pay_per_link_per_minute=0'];

const sql = sqlRows;


async function consentedSubscriptions(server, token) {
  const call = async (p, body, tok = token) => {
    const headers = { 'content-type': 'application/json' };
    if (tok) headers['x-sp-auth-token'] = `Bearer ${tok}`;
    const r = await fetch(`${server.baseUrl}${p}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: r.status, body: await r.json() };
  };
  const refs = await Promise.all(Array.from({ length: SUBSCRIPTIONS }, async (_, i) => {
    const s = await call('/merchand/billing/subscribe', { customer_email: `crash${i}@example.com`, amount: 1000 + i, currency: 'XAF', frequency: 'DAILY' });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    const code = s.body.data.payment_url.split('/pay/')[1];
    const paid = await call(`/pay/${code}/pay`, { customer_phone: '237690000000', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }, null);
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    return s.body.data.reference;
  }));
  await until(() => Number(sql(server, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE} AND cycle = 0 AND status = 'PAID'`)[0][0]) === SUBSCRIPTIONS,
    'every consent PAID');
  return refs;
}

// The downtime: each subscription's clock moves five days and a bit forward, and the due jobs with it.
function jump(server) {
  const offset = CYCLES * DAY + 60000;
  sql(server, `UPDATE bil_subscriptions SET clock_offset_ms = clock_offset_ms + ${offset} WHERE customer_email LIKE 'crash%'`);
  sql(server, `UPDATE jobs SET run_at = run_at - ${offset} WHERE queue = 'billing.charge' AND state = 'pending'`);
}

// What the run left, for a failure message.
function state(server) {
  return JSON.stringify({
    payments: sql(server, `SELECT status, COUNT(*) FROM bil_payments WHERE ${MINE} GROUP BY status`),
    jobs: sql(server, "SELECT queue, state, COUNT(*), MIN(last_error) FROM jobs GROUP BY queue, state"),
    collections: sql(server, "SELECT status, COUNT(*) FROM pay_transactions WHERE metadata LIKE '%subscription_payment_reference%' GROUP BY status"),
  });
}

function check(server, refs, t) {
  const rows = sql(server, `SELECT s.reference, p.cycle, p.status, p.attempts FROM bil_payments p JOIN bil_subscriptions s
    ON s.id = p.subscription_id WHERE s.customer_email LIKE 'crash%' ORDER BY s.reference, p.cycle`);
  const bySub = new Map(refs.map((r) => [r, []]));
  for (const [ref, cycle] of rows) bySub.get(ref).push(Number(cycle));
  for (const [ref, cycles] of bySub) assert.deepEqual(cycles, [0, 1, 2, 3, 4, 5], `${ref}: cycles ${cycles}`);
  const statuses = {};
  for (const [, , status] of rows) statuses[status] = (statuses[status] || 0) + 1;
  assert.equal((statuses.PENDING || 0) + (statuses.PROCESSING || 0), 0, JSON.stringify(statuses));
  // Collections per (subscription, cycle): one per attempt, at most one completed.
  const tx = sql(server, "SELECT metadata, status FROM pay_transactions WHERE metadata LIKE '%subscription_payment_reference%'");
  const perCycle = new Map();
  for (const [meta, status] of tx) {
    const m = JSON.parse(meta);
    const key = `${m.subscription_reference}:${m.cycle}`;
    const e = perCycle.get(key) || { all: 0, completed: 0 };
    e.all += 1;
    if (status === 'COMPLETED') e.completed += 1;
    perCycle.set(key, e);
  }
  assert.equal(perCycle.size, SUBSCRIPTIONS * CYCLES);
  for (const [key, e] of perCycle) {
    assert.ok(e.completed <= 1, `${key} completed ${e.completed} times`);
    assert.equal(e.all, 1, `${key}: ${e.all} collections for one attempt`);
  }
  t.diagnostic(`${rows.length} payments: ${JSON.stringify(statuses)}; ${tx.length} collections`);
}

for (const backend of backends()) {
  describe(`billing run killed with SIGKILL on ${backend}`, () => {
    test('after a restart every cycle is billed once, none skipped', async (t) => {
      let server = await startServer({ backend, args: ARGS });
      try {
        const token = await merchantToken(server, 0);
        const refs = await consentedSubscriptions(server, token);
        jump(server);
        // Kill it once a part of the run is committed.
        await until(() => Number(sql(server, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE} AND cycle > 0`)[0][0]) >= SUBSCRIPTIONS,
          'the run started', 30000);
        await server.crash();
        const before = Number(sql(server, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE} AND cycle > 0`)[0][0]);
        t.diagnostic(`${before} of ${SUBSCRIPTIONS * CYCLES} later cycles committed when the node died`);
        server = await startServer({ reuse: server, args: ARGS });
        await until(() => Number(sql(server, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE} AND status IN ('PENDING', 'PROCESSING')`)[0][0]) === 0 &&
          Number(sql(server, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE}`)[0][0]) === SUBSCRIPTIONS * (CYCLES + 1), () => `the run finished: ${state(server)}`);
        check(server, refs, t);
      } finally {
        await server.stop();
      }
    });
  });
}

describe('billing on three nodes sharing one PostgreSQL', { skip: !backends().includes('postgres') && 'needs SIKA_TEST_PG_DSN' }, () => {
  test('every cycle is billed once across the nodes, also when one of them is killed', async (t) => {
    const first = await startServer({ backend: 'postgres', args: ARGS });
    const others = [];
    try {
      for (let i = 0; i < 2; i++) others.push(await spawnServe({ port: await freePort(), dsn: first.dsn, publicUrl: first.publicUrl, args: ARGS }));
      const token = await merchantToken(first, 0);
      const refs = await consentedSubscriptions(first, token);
      jump(first);
      await until(() => Number(sql(first, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE} AND cycle > 0`)[0][0]) >= SUBSCRIPTIONS, 'the run started', 30000);
      others[1].child.kill('SIGKILL');
      await until(() => Number(sql(first, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE} AND status IN ('PENDING', 'PROCESSING')`)[0][0]) === 0 &&
        Number(sql(first, `SELECT COUNT(*) FROM bil_payments WHERE ${MINE}`)[0][0]) === SUBSCRIPTIONS * (CYCLES + 1), () => `the run finished: ${state(first)}`);
      check(first, refs, t);
    } finally {
      for (const n of others) if (n.child.exitCode === null && n.child.signalCode === null) n.child.kill('SIGTERM');
      await first.stop();
    }
  });
});
