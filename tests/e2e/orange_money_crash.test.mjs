// `kill -9` of sika while Orange Cameroon push payments are pending at the double, some of them
// still being sent: after the restart every one reaches the double's final state (COMPLETED for
// SUCCESSFULL, FAILED otherwise; one whose payToken was never taken FAILS OPERATOR_ERROR once the
// creation window has passed), none is prompted twice, and the ledger is clean. Notifications sent
// while sika was down are lost: recovery's status queries find the outcomes. Both backends.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { crashWithPending } from './lib/operator.mjs';

const tails = ['100', '455', '200', '451'];

for (const backend of backends()) {
  describe(`Orange Money: kill -9 with push payments pending (${backend})`, () => {
    test('after the restart every payment reaches the operator\'s final state, none prompted twice', async () => {
      const double = await startDouble('orange_money', { 'status-rps': 1000 });
      await crashWithPending(double, {
        backend, kind: 'orange_money', live: 'orange_money_cm', provider: 'ORANGE_MONEY_CMR', currency: 'XAF',
        description: 'orange crash', wallet: (i) => `23769${String(1000 + i).padStart(4, '0')}${tails[i % tails.length]}`,
        // A payToken taken but never used (the kill fell between mp/init and mp/pay) expires at Orange.
        resume: { init_ttl_ms: 3000 }, columns: 'operator_state, failure_reason', ms: 90000,
      }, async (rows) => {
        let submitted = 0;
        for (const [reference, status, state, reason] of rows) {
          if (status === 'INITIATED') continue;
          submitted += 1;
          const payToken = state ? JSON.parse(state).pay_token : '';
          if (!payToken) {
            assert.equal(status, 'FAILED', reference);
            assert.equal(reason, 'OPERATOR_ERROR', reference);
            continue;
          }
          const held = await double.control(`/payments/${payToken}`);
          assert.ok((held.prompts ?? 0) <= 1, `${reference} prompted ${held.prompts} times`);
          const expected = held.status === 'SUCCESSFULL' ? 'COMPLETED' : 'FAILED';
          assert.equal(status, expected, `${reference}: operator says ${held.status}`);
        }
        return submitted;
      });
    });
  });
}
