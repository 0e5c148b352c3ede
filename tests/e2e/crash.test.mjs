// Crash test: `sika serve` is killed with SIGKILL while many clients create payment intents and
// complete them (WALLET channel: the execute answer is the completion), then restarted on the same
// database. Every write the server acknowledged must be there exactly once (an intent answered 200
// exists once, with the reference it was given; an execute answered COMPLETED is COMPLETED), no
// transaction appears that no client asked for, and `sika admin check-ledger` finds no violation.
// Other clients submit PROVIDER collections and payouts to the sandbox operator at the same time:
// the kill leaves some PENDING with their callbacks lost. After the restart, recovery asks the
// operator, and within a bounded wait every one of them is final: those the operator had recorded
// by its answer (COMPLETED or FAILED, never EXPIRED), the others by their own (short, here) expiry.
// Runs on SQLite, and on PostgreSQL when SIKA_TEST_PG_DSN is set (or required).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { startServer, backends, merchantToken, sikaBinary } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ENV = { ...process.env, SIKA_SECRET_KEY: 'e2e-test-secret-key-0123456789abcdef' };
const CLIENTS = 24;       // concurrent clients
const LOAD_MS = [2500, 3500];  // load before each kill (varied, so the kill lands at different points)
const OPERATOR_CLIENTS = 6;  // clients submitting PROVIDER collections and payouts to the sandbox operator
const RECOVERY_WAIT_MS = 30000;  // after the restart, every submitted transaction is final within this
// Short expiries of PENDING transactions, so that one the operator never recorded (the kill landed
// between its PENDING commit and the operator's record) ends within the wait too.
const SERVE_ARGS = ['--set', 'log.access=false', '--set', 'payments.pending_ttl_ms=20000',
  '--set', 'payments.disbursement_ttl_ms=20000', '--set', 'payments.recovery_delays_ms=300,500,1000',
  '--set', 'payments.recovery_interval_ms=100', '--set', 'payments.expiry_interval_ms=200',
  // The killed node's claims lapse after this: then the restarted node asks those transactions too.
  '--set', 'payments.recovery_lease_ms=2000'];

// Runs `sika admin ... --json` on the database.
function admin(dsn, ...args) {
  const r = spawnSync(sikaBinary, ['admin', '--db', dsn, ...args, '--json'], { env: ENV, encoding: 'utf8' });
  return { code: r.status, json: r.stdout.trim() ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

// Every transaction the clients may have created as {uuid, reference, status}, read straight from the
// database (the server is not trusted to report its own losses).
function storedTransactions(server) {
  return query(server, "SELECT transaction_uuid, reference, status FROM pay_transactions WHERE description = 'crash test'")
    .map(([uuid, reference, status]) => ({ uuid, reference, status }));
}

// The rows of a query, read straight from the database, as arrays of text cells.
function query(server, sql) {
  const r = server.backend === 'postgres'
    ? spawnSync('psql', [server.dsn, '-qAtX', '-F', '|', '-c', sql], { encoding: 'utf8', maxBuffer: 1 << 28 })
    : spawnSync('sqlite3', ['-separator', '|', path.join(server.dir, 'sika.db'), sql],
      { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean).map((line) => line.split('|'));
}

// The operator's transactions (PROVIDER collections and payouts of the operator clients), with
// whether the sandbox operator recorded the request and how each one ended.
function operatorTransactions(server) {
  return query(server, "SELECT t.reference, t.operation, t.status, CASE WHEN s.provider_reference IS NULL THEN 0 " +
    "ELSE 1 END, COALESCE((SELECT MAX(source) FROM pay_transitions x WHERE x.transaction_id = t.id AND " +
    "x.from_status = 'PENDING'), '') FROM pay_transactions t LEFT JOIN sandbox_operator_requests s ON " +
    "s.provider_reference = t.provider_reference WHERE t.description = 'crash operator' AND t.status <> 'INITIATED'")
    .map(([reference, operation, status, recorded, source]) => ({ reference, operation, status,
      recorded: recorded === '1', source }));
}

// Clients submitting PROVIDER collections (intent, then execute) and payouts to the sandbox
// operator until `stop` is set. A payout refused for insufficient funds is not an error (the
// merchant earns as the WALLET clients pay).
async function operatorLoad(server, token, msisdn, acked, stop) {
  const post = async (p, body) => {
    const r = await fetch(`${server.baseUrl}${p}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
  const client = async (i) => {
    while (!stop.now) {
      try {
        if (i % 2 === 0) {
          const created = await post('/collection/intent', {
            amount: 500, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
            customer_wallet: msisdn, description: 'crash operator',
          });
          if (created.status !== 200) { acked.errors.push(`provider intent ${created.status} ${created.body.message}`); continue; }
          const done = await post('/collection/execute', { transaction_reference: created.body.data.transaction_reference });
          if (done.status !== 200) acked.errors.push(`provider execute ${done.status} ${done.body.message}`);
          else acked.submitted++;
        } else {
          const paid = await post('/disbursement/intent', {
            amount: 100, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
            customer_wallet: msisdn, description: 'crash operator',
          });
          if (paid.status === 200) acked.submitted++;
          else if (paid.body.message === 'insufficient_funds') await sleep(50);
          else acked.errors.push(`payout ${paid.status} ${paid.body.message}`);
        }
      } catch {
        // The server died under this request: nothing was acknowledged.
      }
    }
  };
  await Promise.all(Array.from({ length: OPERATOR_CLIENTS }, (_, i) => client(i)));
}

// Clients creating and completing WALLET intents until `stop` is set; records what was acknowledged.
async function load(server, token, wallet, otp, acked, stop) {
  const post = async (p, body) => {
    const r = await fetch(`${server.baseUrl}${p}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
  const client = async () => {
    while (!stop.now) {
      const uuid = randomUUID();
      acked.sent.add(uuid);
      try {
        const created = await post('/collection/intent', {
          amount: 100, currency: 'XAF', transaction_uuid: uuid, provider: 'SIKA_WALLET_CMR', channel: 'WALLET',
          customer_wallet: wallet, description: 'crash test',
        });
        if (created.status !== 200) { acked.errors.push(`intent ${created.status} ${created.body.message}`); continue; }
        const ref = created.body.data.transaction_reference;
        acked.intents.set(uuid, ref);
        const done = await post('/collection/execute', { transaction_reference: ref, otp });
        if (done.status === 200 && done.body.data.status === 'COMPLETED') acked.completed.add(ref);
        else if (done.status !== 200) acked.errors.push(`execute ${done.status} ${done.body.message}`);
      } catch {
        // The server died under this request: nothing was acknowledged.
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
}

for (const backend of backends()) {
  describe(`crash on ${backend}`, () => {
    test('kill -9 during intents and completions loses and doubles nothing', { timeout: 120000 }, async (t) => {
      let server = await startServer({ backend, args: SERVE_ARGS });
      try {
        const wallet = server.demo.sandbox.wallets[0];
        // Enough money for every payment the clients can make, so each execute completes.
        const funded = admin(server.dsn, 'fund-wallet', '--msisdn', wallet.msisdn, '--currency', 'XAF',
          '--amount', '1000000000', '--memo', 'crash test funding');
        assert.equal(funded.code, 0, funded.stderr);
        const acked = { sent: new Set(), intents: new Map(), completed: new Set(), errors: [], submitted: 0 };
        let pendingAtRestart = 0;
        for (const ms of LOAD_MS) {
          const token = await merchantToken(server, 0, 'payments');
          const stop = { now: false };
          const running = Promise.all([load(server, token, wallet.msisdn, server.demo.sandbox.otp, acked, stop),
            operatorLoad(server, token, server.demo.sandbox.msisdn.success, acked, stop)]);
          await sleep(ms);
          await server.crash();
          stop.now = true;
          await running;
          pendingAtRestart += operatorTransactions(server).filter((x) => x.status === 'PENDING').length;
          server = await startServer({ reuse: server, args: SERVE_ARGS });
        }
        t.diagnostic(`operator transactions submitted: ${acked.submitted}, PENDING at the restarts: ${pendingAtRestart}`);
        assert.ok(acked.submitted > 20, `too little operator load to mean anything: ${acked.submitted}`);

        // Recovery: within a bounded wait every submitted collection and payout is final; what the
        // operator had recorded ends by its answer, never by expiry.
        const deadline = Date.now() + RECOVERY_WAIT_MS;
        let open = operatorTransactions(server).filter((x) => x.status === 'PENDING');
        while (open.length > 0 && Date.now() < deadline) {
          await sleep(250);
          open = operatorTransactions(server).filter((x) => x.status === 'PENDING');
        }
        assert.deepEqual(open, [], `still PENDING ${RECOVERY_WAIT_MS} ms after the restart`);
        const operatorTxs = operatorTransactions(server);
        const expiredButKnown = operatorTxs.filter((x) => x.recorded && x.status === 'EXPIRED');
        assert.deepEqual(expiredButKnown, [], 'the operator knew these: recovery should have asked it');
        const recovered = operatorTxs.filter((x) => x.source === 'recovery');
        t.diagnostic(`settled by recovery after the restarts: ${recovered.length}`);
        if (pendingAtRestart > 0) assert.ok(recovered.length > 0, 'recovery settled nothing');
        assert.deepEqual(acked.errors, [], 'every request the server answered succeeded');
        assert.ok(acked.completed.size > 100, `too little load to mean anything: ${acked.completed.size} completions`);

        const stored = storedTransactions(server);
        const finalized = query(server, "SELECT COUNT(*) FROM pay_transitions x JOIN pay_transactions t ON " +
          "t.id = x.transaction_id WHERE t.description = 'crash operator' AND x.from_status = 'PENDING'")[0][0];
        assert.equal(Number(finalized), operatorTxs.length, 'each operator transaction left PENDING exactly once');
        const byUuid = new Map();
        for (const t of stored) byUuid.set(t.uuid, [...(byUuid.get(t.uuid) || []), t]);
        let lost = 0, doubled = 0, wrongRef = 0, notCompleted = 0, unasked = 0;
        for (const [uuid, ref] of acked.intents) {
          const rows = byUuid.get(uuid) || [];
          if (rows.length === 0) lost++;
          if (rows.length > 1) doubled++;
          if (rows.length === 1 && rows[0].reference !== ref) wrongRef++;
          if (rows.length === 1 && acked.completed.has(ref) && rows[0].status !== 'COMPLETED') notCompleted++;
        }
        for (const t of stored) if (!acked.sent.has(t.uuid)) unasked++;
        const summary = { acknowledged_intents: acked.intents.size, acknowledged_completions: acked.completed.size,
          stored: stored.length, lost, doubled, wrongRef, notCompleted, unasked };
        t.diagnostic(JSON.stringify(summary));
        assert.deepEqual({ lost, doubled, wrongRef, notCompleted, unasked },
          { lost: 0, doubled: 0, wrongRef: 0, notCompleted: 0, unasked: 0 }, JSON.stringify(summary));
        assert.equal(new Set(stored.map((t) => t.reference)).size, stored.length, 'references are unique');

        const check = admin(server.dsn, 'check-ledger');
        assert.equal(check.code, 0, `${check.stderr}\n${JSON.stringify(check.json)}`);
        assert.equal(check.json.ok, true);

        // The restarted server serves: an acknowledged completion reads back COMPLETED over the API.
        const token = await merchantToken(server, 0, 'payments');
        const [ref] = acked.completed;
        const st = await fetch(`${server.baseUrl}/collection/status`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
          body: JSON.stringify({ transaction_reference: ref }),
        });
        assert.equal(st.status, 200);
        assert.equal((await st.json()).data.status, 'COMPLETED');
      } finally {
        await server.stop();
      }
    });
  });
}
