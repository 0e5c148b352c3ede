// `sika admin refunds create | show | list` (docs/refunds.md, "Operators") against the real binary, on
// each backend: an operator refunds a sandbox collection for its merchant through the same operation
// as the API (the refund completes by the sandbox operator's callback), the refusals exit 1 with the
// code and details, the creation is audited, the list filters; the ledger check clean at the end.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends, startServer, merchantToken, waitFor, checkLedger, admin, adminJson, sqlRows } from './lib/server.mjs';

for (const backend of backends()) {
  describe(`sika admin refunds on ${backend}`, () => {
    let server, token;
    const post = async (path, body) => {
      const r = await fetch(`${server.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const status = async (ref) => (await post('/collection/status', { transaction_reference: ref })).body.data;
    const collected = async (amount) => {
      const c = await post('/collection/intent', {
        amount, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: server.demo.sandbox.msisdn.success, description: 'admin refund e2e' });
      assert.equal(c.status, 200, JSON.stringify(c.body));
      const ref = c.body.data.transaction_reference;
      assert.equal((await post('/collection/execute', { transaction_reference: ref })).status, 200);
      assert.ok(await waitFor(async () => (await status(ref)).status === 'COMPLETED'), 'the collection completed');
      return ref;
    };

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=200'] });
      token = await merchantToken(server, 0);
    });
    after(async () => { if (server) await server.stop(); });

    test('refunds create: the API\'s operation for the collection\'s merchant, audited; show and list read it', async () => {
      const ref = await collected(4000);
      const made = admin(server, 'refunds', 'create', '--transaction', ref, '--amount', '1500', '--reason', 'DUPLICATE',
        '--description', 'charged twice');
      assert.match(made.refund_reference, /^RF-/);
      assert.equal(made.transaction_reference, ref);
      assert.equal(made.amount, 1500);
      assert.equal(made.reason, 'DUPLICATE');
      assert.equal(made.description, 'charged twice');
      assert.equal(made.channel, 'SANDBOX');
      const done = await waitFor(() => {
        const r = admin(server, 'refunds', 'show', made.refund_reference);
        return r.status === 'COMPLETED' ? r : null;
      });
      assert.ok(done, 'the refund completed');
      assert.equal((await status(ref)).refunded_amount, 1500);
      // The merchant sees it through the API as its own.
      const seen = await post('/collection/refund/status', { refund_reference: made.refund_reference });
      assert.equal(seen.status, 200);
      assert.equal(seen.body.data.amount, 1500);
      // Audited in the unit that created it.
      const audit = sqlRows(server, `SELECT actor, action, object FROM dsh_audit WHERE object = '${made.refund_reference}'`);
      assert.deepEqual(audit, [['sika admin', 'refund.create', made.refund_reference]]);
      // The rest, with no amount: everything still refundable; the collection ends REFUNDED.
      const rest = admin(server, 'refunds', 'create', '--transaction', ref, '--reason', 'OTHER');
      assert.equal(rest.amount, 2500);
      assert.ok(await waitFor(async () => (await status(ref)).status === 'REFUNDED'), 'REFUNDED');
      const listed = admin(server, 'refunds', 'list', '--transaction', ref);
      assert.deepEqual(listed.map((r) => r.refund_reference), [rest.refund_reference, made.refund_reference]);
      const byMerchant = admin(server, 'refunds', 'list', '--merchant', server.demo.merchants[0].matricule, '--status', 'COMPLETED');
      assert.ok(byMerchant.some((r) => r.refund_reference === made.refund_reference));
      const other = admin(server, 'refunds', 'list', '--merchant', server.demo.merchants[1].matricule);
      assert.ok(!other.some((r) => r.transaction_reference === ref));
    });

    test('refusals exit 1 with the code and details; nothing is written', async () => {
      const ref = await collected(1000);
      const beyond = adminJson(server.dsn, 'refunds', 'create', '--transaction', ref, '--amount', '1001', '--reason', 'OTHER');
      assert.equal(beyond.code, 1);
      assert.match(beyond.stderr, /error: empty_data: .*"amount".*"refundable":1000/);
      const reason = adminJson(server.dsn, 'refunds', 'create', '--transaction', ref, '--reason', 'WHY');
      assert.equal(reason.code, 1);
      assert.match(reason.stderr, /error: empty_data: .*"reason"/);
      const none = adminJson(server.dsn, 'refunds', 'create', '--transaction', 'TX-NONE', '--reason', 'OTHER');
      assert.equal(none.code, 1);
      assert.match(none.stderr, /error: not_found: .*"transaction_reference"/);
      const missing = adminJson(server.dsn, 'refunds', 'show', 'RF-NONE');
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /"refund_reference"/);
      const badStatus = adminJson(server.dsn, 'refunds', 'list', '--status', 'DONE');
      assert.equal(badStatus.code, 1);
      assert.match(badStatus.stderr, /"status"/);
      assert.deepEqual(admin(server, 'refunds', 'list', '--transaction', ref), []);
      assert.deepEqual(sqlRows(server, `SELECT COUNT(*) FROM dsh_audit WHERE action = 'refund.create' AND details LIKE '%${ref}%'`), [['0']]);
      checkLedger(server);
    });
  });
}
