// `kill -9` of sika while Wave checkout sessions are open at the Wave double, some still being
// created: after the restart every collection reaches the double's own outcome (a paid session is
// COMPLETED, an expired one FAILED; one whose creation never reached Wave is created again, once,
// by its idempotency key and client_reference), none is created twice, and the ledger is clean.
// Wave's webhooks sent while sika was down are lost: recovery's status queries find the outcomes.
// On SQLite and on PostgreSQL.
import { test, describe } from 'node:test';
import { backends } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { crashWithPending, assertHeldOnce } from './lib/operator.mjs';

const tails = ['100', '452', '200', '101'];

for (const backend of backends()) {
  describe(`Wave: kill -9 with sessions open at the operator (${backend})`, () => {
    test('after the restart every collection reaches the operator\'s outcome once', async () => {
      const double = await startDouble('wave');
      await crashWithPending(double, {
        backend, kind: 'wave', provider: 'WAVE_CIV', currency: 'XOF', description: 'wave crash',
        wallet: (i) => `22507${String(10000 + i).padStart(5, '0')}${tails[i % tails.length]}`,
        callback: (server) => ({ webhook_url: `${server.baseUrl}/operator/callback/wave` }),
      }, (rows) => assertHeldOnce(rows, (ref) => double.control(`/sessions?client_reference=${ref}`),
        (session) => (session.payment_status === 'succeeded' ? 'COMPLETED' : 'FAILED')));
    });
  });
}
