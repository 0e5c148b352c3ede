// A slow operator holds only its share of a node's request threads (payments.operator_request_threads,
// docs/payments.md "A slow operator"): while the MTN double takes seconds to answer and every share
// is taken, a status read still answers at once, a further execution is refused 503 at once with
// nothing written (still INITIATED, executable later), and every collection completes once the
// operator answers again, each sent once. On SQLite and on two nodes sharing PostgreSQL.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends, checkLedger, waitFor } from './lib/server.mjs';
import { operatorNodes, collector, statusOf, until, providerReference } from './lib/operator.mjs';
import { randomUUID } from 'node:crypto';

const SHARE = 3;
const number = (i) => `23767${String(1000 + i).padStart(4, '0')}100`;

async function metric(port, name) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

for (const backend of backends()) {
  describe(`a slow MTN operator (${backend})`, () => {
    let run;
    before(async () => {
      run = await operatorNodes(backend, 'mtn_momo', {
        options: { 'status-rps': 1000 },
        args: ['--set', 'http.handler_threads=8', '--set', `payments.operator_request_threads=${SHARE}`],
      });
    });
    after(async () => { await run?.stop(); });

    test('holds only its share of the request threads; the rest of the node answers at once', async () => {
      const { double, server, posts, nodes } = run;
      const post = posts[0];
      const port = nodes.ports[0];
      // One collection at full speed first: the node holds its token.
      const warm = await collector('MTN_MOMO_CMR', 'XAF', 'slow e2e')(post, number(0));
      assert.equal((await until(post, warm, 'COMPLETED', 15000)).status, 'COMPLETED');

      const intents = [];
      for (let i = 1; i <= SHARE + 5; i += 1) {
        const r = await post('/collection/intent', { amount: 1500, currency: 'XAF', provider: 'MTN_MOMO_CMR',
          customer_wallet: number(i), transaction_uuid: randomUUID(), description: 'slow e2e' });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        intents.push(r.body.data.transaction_reference);
      }
      await double.behave({ latency_ms: 4000 });
      let slow = false;
      try {
        const answers = new Map();
        const executions = intents.map((reference) => post('/collection/execute', { transaction_reference: reference })
          .then((r) => { answers.set(reference, r); return r; }));
        // Every share is taken by an execution the operator has not answered.
        assert.ok(await waitFor(async () => (await metric(port, 'sika_payments_operator_request_threads')) === SHARE,
          3000, 20), 'the share fills');
        slow = true;
        // The others were refused at once, before the operator answered any: nothing written.
        assert.ok(await waitFor(async () => answers.size === intents.length - SHARE, 3000, 20),
          `${answers.size} answered while the operator is slow`);
        for (const [reference, r] of answers) {
          assert.equal(r.status, 503, JSON.stringify(r.body));
          assert.equal(r.body.message, 'provider_unavailable');
          assert.ok(r.body.error.details.provider, JSON.stringify(r.body));
          assert.equal((await statusOf(post, reference)).status, 'INITIATED');
        }
        // The node answers everything else at once: a status read of a payment still at the operator.
        const held = intents.find((reference) => !answers.has(reference));
        assert.equal((await statusOf(post, held)).status, 'PENDING');
        const balance = await fetch(`${server.baseUrl}/balance`, { headers: { authorization: `Bearer ${run.token}` } });
        assert.equal(balance.status, 200);
        assert.equal(answers.size, intents.length - SHARE, 'no held execution answered yet');
        assert.ok(await metric(port, 'sika_payments_operator_busy_total') >= intents.length - SHARE);

        await double.behave({ latency_ms: 0 });
        slow = false;
        const done = await Promise.all(executions);
        const refused = intents.filter((reference) => done[intents.indexOf(reference)].status === 503);
        assert.equal(refused.length, intents.length - SHARE);
        // Executed again now that the operator answers: accepted.
        for (const reference of refused) {
          const again = await post('/collection/execute', { transaction_reference: reference });
          assert.equal(again.status, 200, JSON.stringify(again.body));
        }
        for (const reference of intents) {
          assert.equal((await until(post, reference, 'COMPLETED', 20000)).status, 'COMPLETED', reference);
          const atDouble = await double.control(`/payments?externalId=${providerReference(server, reference)}`);
          assert.equal(atDouble.length, 1, `${reference} sent once`);
        }
      } finally {
        if (slow) await double.behave({ latency_ms: 0 });
      }
      checkLedger(server);
    });
  });
}
