// `kill -9` of sika while payments are pending at the MTN double, some of them still being sent:
// after the restart every one reaches the double's final state (COMPLETED for SUCCESSFUL, FAILED
// for FAILED, and one the double never received is sent again and then completes), none is sent
// twice, and the ledger is clean. The double's callbacks sent while sika was down are lost:
// recovery's status queries find the outcomes. On SQLite and on PostgreSQL.
import { test, describe } from 'node:test';
import { backends } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { crashWithPending, assertHeldOnce } from './lib/operator.mjs';

const tails = ['100', '455', '200', '451'];

for (const backend of backends()) {
  describe(`MTN MoMo: kill -9 with payments pending at the operator (${backend})`, () => {
    test('after the restart every payment reaches the operator\'s final state once', async () => {
      const double = await startDouble('mtn_momo', { 'status-rps': 1000 });
      await crashWithPending(double, {
        backend, kind: 'mtn_momo', provider: 'MTN_MOMO_CMR', currency: 'XAF', description: 'mtn crash',
        wallet: (i) => `23767${String(1000 + i).padStart(4, '0')}${tails[i % tails.length]}`,
      }, (rows) => assertHeldOnce(rows, (ref) => double.control(`/payments?externalId=${ref}`),
        (held) => (held.status === 'SUCCESSFUL' ? 'COMPLETED' : 'FAILED')));
    });
  });
}
