// The right one-time code sent eight times at once to `POST /collection/execute` (a double click,
// a retrying client, two tabs), for several collections of an operator that asks for a code
// (ORANGE_MONEY_CIV), on SQLite and across two `sika serve` nodes sharing one PostgreSQL database.
// Only three submissions may compare a code; the others find no attempt left. Checked on the
// answers and on the committed rows: no submission is refused as a wrong code, each collection
// completes exactly once and never FAILS, and the ledger check passes afterwards.
// scripts/with-postgres.sh node --test tests/e2e/otp_race.test.mjs (SQLite only without a DSN)
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, merchantToken, sqlRows, sleep, checkLedger } from './lib/server.mjs';

const COLLECTIONS = 16;
const SUBMITS = 8;
const ARGS = ['--set', 'payments.sandbox_delay_ms=150'];

// Rows as `a|b|c` lines.
const sql = (server, query) => sqlRows(server, query).map((r) => r.join('|'));

for (const backend of backends()) {
  describe(`the right code submitted at once on ${backend}`, () => {
    let running, first, second, token;
    before(async () => {
      running = await startTwoNodes({ backend, args: ARGS });
      ({ first, second } = running);
      token = await merchantToken(first, 1);
    });
    after(() => running?.stop());

    const call = async (port, p, body) => {
      const r = await fetch(`http://127.0.0.1:${port}/api${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json(), port };
    };

    test(`${SUBMITS} submissions of the right code: every collection COMPLETED once, none FAILED`, async () => {
      const ports = second ? [first.port, second.port] : [first.port];
      const references = [];
      for (let i = 0; i < COLLECTIONS; i++) {
        const made = await call(first.port, '/collection/intent', {
          amount: 1000, currency: 'XOF', transaction_uuid: randomUUID(), provider: 'ORANGE_MONEY_CIV', channel: 'PROVIDER',
          customer_wallet: '2250700000000', description: 'code race',
        });
        assert.equal(made.status, 200, JSON.stringify(made.body));
        references.push(made.body.data.transaction_reference);
      }
      const answers = await Promise.all(references.flatMap((reference) => Array.from({ length: SUBMITS }, (_, i) =>
        call(ports[i % ports.length], '/collection/execute', { transaction_reference: reference, otp: first.demo.sandbox.otp })
          .then((a) => ({ ...a, reference })))));
      // The winner is answered the collection; the others 409 (a concurrent request decided it).
      // None is an invalid_otp: the code was right.
      for (const a of answers) assert.ok(a.status === 200 || a.status === 409, JSON.stringify(a));
      if (second) assert.deepEqual(new Set(answers.map((a) => a.port)), new Set(ports));
      for (const reference of references)
        assert.ok(answers.some((a) => a.reference === reference && a.status === 200), reference);

      const list = references.map((r) => `'${r}'`).join(',');
      for (let round = 0; ; round++) {
        const open = Number(sql(first, `SELECT COUNT(*) FROM pay_transactions WHERE reference IN (${list}) `
          + "AND status IN ('INITIATED', 'PENDING')")[0]);
        if (open === 0) break;
        assert.ok(round < 300, 'the collections did not end');
        await sleep(100);
      }
      const rows = sql(first, `SELECT x.reference, t.to_status, COUNT(*) FROM pay_transitions t JOIN pay_transactions x `
        + `ON x.id = t.transaction_id WHERE x.reference IN (${list}) GROUP BY x.reference, t.to_status`);
      for (const reference of references) {
        const moves = Object.fromEntries(rows.filter((r) => r.startsWith(`${reference}|`))
          .map((r) => r.split('|').slice(1)).map(([to, n]) => [to, Number(n)]));
        assert.equal(moves.COMPLETED, 1, `${reference}: ${JSON.stringify(moves)}`);
        assert.equal(moves.FAILED, undefined, `${reference}: ${JSON.stringify(moves)}`);
      }
    });

    test('the ledger balances after the race', () => {
      checkLedger(first);
    });
  });
}
