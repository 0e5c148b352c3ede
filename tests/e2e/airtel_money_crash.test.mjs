// `kill -9` of sika while payments are pending at the Airtel double, some of them still being
// sent: after the restart every one reaches the double's final state (COMPLETED for TS, FAILED for
// TF, and one the double never received is sent again with the same transaction id and then
// completes), none is held twice, and the ledger is clean. The double's callbacks sent while sika
// was down are lost: recovery's status enquiries find the outcomes. On SQLite and on PostgreSQL.
import { test, describe } from 'node:test';
import { backends } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { crashWithPending, assertHeldOnce } from './lib/operator.mjs';

const tails = ['100', '455', '200', '451'];

for (const backend of backends()) {
  describe(`Airtel Money: kill -9 with payments pending at the operator (${backend})`, () => {
    test("after the restart every payment reaches the operator's final state once", async () => {
      const double = await startDouble('airtel_money');
      await crashWithPending(double, {
        backend, kind: 'airtel_money', provider: 'AIRTEL_MONEY_GAB', currency: 'XAF', description: 'airtel crash',
        wallet: (i) => `24174${String(100 + i).padStart(3, '0')}${tails[i % tails.length]}`,
        callback: (server) => ({ callback_url: `${server.baseUrl}/operator/callback/airtel_money` }),
      }, (rows) => assertHeldOnce(rows, (ref) => double.control(`/payments?id=${ref.replaceAll('-', '')}`),
        (held) => (held.status === 'TS' ? 'COMPLETED' : 'FAILED')));
    });
  });
}
