// Recovery of pending payments on two `sika serve` nodes sharing one PostgreSQL database. The
// sandbox operator's callbacks go nowhere (payments.callback_url is a closed port), so only
// recovery's status queries settle the collections; the operator takes 200 ms to answer a query and
// both nodes look for due questions every 50 ms. Checked on the committed records:
//   - the sika_payments_recovery_* series exist at 0 before anything is pending;
//   - each PENDING collection is asked by one node at a time (its recorded questions, in
//     pay_status_checks, never overlap), by both nodes between them;
//   - each one the operator settles leaves PENDING exactly once, by recovery; the ones the operator
//     keeps pending stay PENDING and are asked again and again, and the waiting gauge counts them;
//   - `sika admin check-ledger` is clean.
// Needs SIKA_TEST_PG_DSN (skipped without it): scripts/with-postgres.sh node --test tests/e2e/recovery_multinode.test.mjs
//
// And, on SQLite (one node) and on two nodes sharing one PostgreSQL: a collection and a payout to
// the sandbox's `...0008`, whose submission times out after the operator took it, stay PENDING
// (the payout's funds reserved), then recovery's question completes them; the ledger check is clean.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { startTwoNodes, merchantToken, freePort, sikaBinary, backends, sleep, waitFor } from './lib/server.mjs';

const SETTLED = 16;  // the operator answers SUCCESSFUL (after sandbox_delay_ms)
const STUCK = 6;     // the operator keeps answering pending (numbers ending 0005)

function nodeArgs(deadPort) {
  return ['--set', `payments.callback_url=http://127.0.0.1:${deadPort}/api/operator/callback`,
    '--set', 'payments.sandbox_delay_ms=300',
    '--set', 'payments.sandbox_query_delay_ms=200',
    '--set', 'payments.recovery_delays_ms=200,100',
    '--set', 'payments.recovery_interval_ms=50',
    '--set', 'payments.recovery_lease_ms=10000'];
}

function sql(dsn, query) {
  const out = execFileSync('psql', [dsn, '-At', '-F', '\t', '-c', query], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.length > 0).map((l) => l.split('\t'));
}

async function metric(node, name, labels = '') {
  const text = await (await fetch(`http://127.0.0.1:${node.port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

const skip = process.env.SIKA_TEST_PG_DSN ? false : 'SIKA_TEST_PG_DSN is not set';

describe('recovery on two nodes sharing one PostgreSQL', { skip }, () => {
  let running, first, second;
  before(async () => {
    const deadPort = await freePort();  // nothing listens there: every callback is lost
    running = await startTwoNodes({ args: nodeArgs(deadPort) });
    ({ first, second } = running);
  });
  after(() => running?.stop());

  test('each pending collection is asked by one node at a time and settles once', { timeout: 120000 }, async (t) => {
    // The series exist from the start, at 0.
    for (const node of [first, second]) {
      assert.equal(await metric(node, 'sika_payments_recovery_waiting'), 0);
      assert.equal(await metric(node, 'sika_payments_recovery_oldest_seconds'), 0);
      for (const outcome of ['succeeded', 'failed', 'pending', 'unknown'])
        assert.equal(await metric(node, 'sika_payments_recovery_checks_total', `{outcome="${outcome}"}`), 0, outcome);
    }

    const token = await merchantToken(first, 0);
    const post = async (p, body) => {
      const r = await fetch(`${first.baseUrl}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const refs = { settled: [], stuck: [] };
    for (let i = 0; i < SETTLED + STUCK; i++) {
      const kind = i < SETTLED ? 'settled' : 'stuck';
      const msisdn = kind === 'settled' ? first.demo.sandbox.msisdn.success : first.demo.sandbox.msisdn.pending;
      const created = await post('/collection/intent', {
        amount: 1000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: msisdn, description: 'recovery two nodes',
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const ref = created.body.data.transaction_reference;
      const done = await post('/collection/execute', { transaction_reference: ref });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      refs[kind].push(ref);
    }
    const statusOf = (ref) => sql(first.dsn, `SELECT status FROM pay_transactions WHERE reference = '${ref}'`)[0][0];
    const settled = await waitFor(() => refs.settled.every((ref) => statusOf(ref) === 'COMPLETED'), 60000, 200);
    assert.ok(settled, 'every collection the operator settles is COMPLETED');
    // The stuck ones are asked again and again meanwhile: give each a few more questions.
    await waitFor(() => Number(sql(first.dsn, "SELECT COALESCE(MIN(checks), 0) FROM pay_transactions " +
      "WHERE description = 'recovery two nodes' AND status = 'PENDING'")[0][0]) >= 4, 30000, 200);
    for (const ref of refs.stuck) assert.equal(statusOf(ref), 'PENDING', ref);

    // One node at a time per collection: its recorded questions never overlap.
    const checks = sql(first.dsn, "SELECT x.reference, c.node, c.asked_at, c.answered_at FROM pay_status_checks c " +
      "JOIN pay_transactions x ON x.id = c.transaction_id WHERE x.description = 'recovery two nodes' " +
      'ORDER BY x.reference, c.asked_at, c.id');
    const byRef = new Map();
    for (const [ref, node, asked, answered] of checks)
      byRef.set(ref, [...(byRef.get(ref) || []), { node, asked: Number(asked), answered: Number(answered) }]);
    let overlaps = 0;
    const nodes = new Set();
    for (const [ref, list] of byRef) {
      for (let i = 1; i < list.length; i++) if (list[i].asked < list[i - 1].answered) overlaps++, t.diagnostic(`overlap on ${ref}`);
      for (const c of list) nodes.add(c.node.split(':').slice(0, -1).join(':'));
    }
    t.diagnostic(`${checks.length} questions on ${byRef.size} collections by ${nodes.size} nodes`);
    assert.equal(overlaps, 0, 'two nodes asked about one collection at once');
    assert.equal(byRef.size, SETTLED + STUCK, 'every collection was asked');
    assert.equal(nodes.size, 2, 'both nodes asked');

    // Each settled collection left PENDING once, by recovery (no callback ever arrived).
    for (const ref of refs.settled) {
      const moves = sql(first.dsn, 'SELECT x.source FROM pay_transitions x JOIN pay_transactions t ON ' +
        `t.id = x.transaction_id WHERE t.reference = '${ref}' AND x.from_status = 'PENDING'`);
      assert.deepEqual(moves, [['recovery']], ref);
    }
    // The waiting gauge counts the stuck ones; each node counts its own questions.
    assert.equal(await metric(first, 'sika_payments_recovery_waiting'), STUCK);
    assert.ok(await metric(first, 'sika_payments_recovery_oldest_seconds') > 0);
    let succeeded = 0;
    for (const node of [first, second])
      succeeded += await metric(node, 'sika_payments_recovery_checks_total', '{outcome="succeeded"}');
    assert.equal(succeeded, SETTLED);

    const check = spawnSync(sikaBinary, ['admin', '--db', first.dsn, 'check-ledger', '--json'],
      { env: { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' }, encoding: 'utf8' });
    assert.equal(check.status, 0, check.stderr + check.stdout);
    assert.equal(JSON.parse(check.stdout).ok, true);
  });
});

// Reads the database of `server` (either backend).
function query(server, q) {
  const r = server.backend === 'postgres'
    ? spawnSync('psql', [server.dsn, '-qAtX', '-F', '|', '-c', q], { encoding: 'utf8' })
    : spawnSync('sqlite3', ['-separator', '|', '-cmd', '.timeout 5000', path.join(server.dir, 'sika.db'), q], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean).map((l) => l.split('|'));
}

for (const backend of backends()) {
  describe(`a submission that times out after the operator took it, on ${backend}${backend === 'postgres' ? ' (two nodes)' : ''}`, () => {
    const args = ['--set', 'payments.sandbox_delay_ms=300', '--set', 'payments.recovery_delays_ms=500,200',
      '--set', 'payments.recovery_interval_ms=50', '--set', 'payments.recovery_lease_ms=10000'];
    let running, first, second;
    before(async () => {
      running = await startTwoNodes({ backend, args });
      ({ first, second } = running);
    });
    after(() => running?.stop());

    test('the collection and the payout stay PENDING, then recovery completes them', { timeout: 60000 }, async () => {
      const token = await merchantToken(first, 0);
      const ports = second ? [first.port, second.port] : [first.port];
      const call = async (port, method, p, body) => {
        const r = await fetch(`http://127.0.0.1:${port}/api${p}`, {
          method, headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: r.status, body: await r.json() };
      };
      const lostAnswer = '237690000008';
      const statusOf = (ref) => query(first, `SELECT status FROM pay_transactions WHERE reference = '${ref}'`)[0][0];
      const leftPending = (ref) => query(first, 'SELECT x.source FROM pay_transitions x JOIN pay_transactions t ON ' +
        `t.id = x.transaction_id WHERE t.reference = '${ref}' AND x.from_status = 'PENDING'`);

      // A collection whose submission timed out: PENDING, not FAILED.
      const created = await call(ports[0], 'POST', '/collection/intent', {
        amount: 20000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: lostAnswer, description: 'lost answer' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const collection = created.body.data.transaction_reference;
      const executed = await call(ports[0], 'POST', '/collection/execute', { transaction_reference: collection });
      assert.equal(executed.status, 200, JSON.stringify(executed.body));
      assert.equal(executed.body.data.status, 'PENDING', JSON.stringify(executed.body));
      assert.equal(executed.body.data.failure_reason, null);
      assert.ok(executed.body.data.provider_reference);
      assert.equal(statusOf(collection), 'PENDING');
      // No callback comes: recovery's question completes it.
      for (let i = 0; i < 200 && statusOf(collection) === 'PENDING'; i++) await sleep(50);
      assert.equal(statusOf(collection), 'COMPLETED');
      assert.deepEqual(leftPending(collection), [['recovery']]);

      // A payout whose submission timed out: PENDING with its funds reserved, then paid by recovery.
      const before = (await call(ports.at(-1), 'GET', '/balance')).body.data.find((b) => b.currency === 'XAF');
      const payout = await call(ports.at(-1), 'POST', '/disbursement/intent', {
        amount: 5000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: lostAnswer, description: 'lost answer payout' });
      assert.equal(payout.status, 200, JSON.stringify(payout.body));
      assert.equal(payout.body.data.status, 'PENDING', JSON.stringify(payout.body));
      const ref = payout.body.data.transaction_reference;
      const reserved = payout.body.data.required_total;
      const during = (await call(ports.at(-1), 'GET', '/balance')).body.data.find((b) => b.currency === 'XAF');
      if (statusOf(ref) === 'PENDING') {
        assert.equal(during.pending - before.pending, reserved, JSON.stringify({ before, during }));
        assert.equal(before.available - during.available, reserved);
      }
      for (let i = 0; i < 200 && statusOf(ref) === 'PENDING'; i++) await sleep(50);
      assert.equal(statusOf(ref), 'COMPLETED');
      assert.deepEqual(leftPending(ref), [['recovery']]);
      const after = (await call(ports.at(-1), 'GET', '/balance')).body.data.find((b) => b.currency === 'XAF');
      assert.equal(after.pending, before.pending);
      assert.equal(before.available - after.available, reserved);

      const check = spawnSync(sikaBinary, ['admin', '--db', first.dsn, 'check-ledger', '--json'],
        { env: { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' }, encoding: 'utf8' });
      assert.equal(check.status, 0, check.stderr + check.stdout);
      assert.equal(JSON.parse(check.stdout).ok, true);
    });
  });
}
