// How every route that takes an `otp` reads it, black-box, with a sandbox code that starts with a
// zero (076300): a JSON integer has lost its leading zeros (76300) and is left-padded to the code
// length; a string of digits is taken as it is; anything else is a 400 naming `otp` that takes no
// attempt of the code (after more malformed requests than there are attempts, the right code
// still works). Routes: POST /collection/execute, POST /pay/{shortCode}/pay and the wallet link
// API's confirm and approve. SQLite, and PostgreSQL when SIKA_TEST_PG_DSN is set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken } from './lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MALFORMED = ['07a300', '', -76300, 76300.5, true, { code: '076300' }, 123456789];

for (const backend of backends()) {
  describe(`otp input (${backend})`, () => {
    let server, token, otherToken;
    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_otp=076300', '--set', 'payments.sandbox_delay_ms=100'] });
      token = await merchantToken(server, 0);
      otherToken = await merchantToken(server, 1);
    });
    after(async () => { await server?.stop(); });

    const call = async (path, body, tok = token, base = server.baseUrl) => {
      const headers = { 'content-type': 'application/json', 'accept-language': 'en' };
      if (tok) headers['x-sp-auth-token'] = `Bearer ${tok}`;
      const r = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      return { status: r.status, body: await r.json() };
    };
    const refusedOnOtp = (r, what) => {
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.notEqual(r.body.message, 'invalid_otp', `${what}: no attempt is taken`);
      assert.equal(typeof r.body.error.details.otp, 'string', `${what}: ${JSON.stringify(r.body)}`);
    };

    test('POST /collection/execute: malformed codes take no attempt; 76300 is 076300', async () => {
      assert.equal(server.demo.sandbox.otp, '076300');
      const wallet = server.demo.sandbox.wallets[0];
      const intent = await call('/collection/intent', {
        amount: 1000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'SIKA_WALLET_CMR', channel: 'WALLET',
        customer_wallet: wallet.msisdn, description: 'otp as an integer',
      });
      assert.equal(intent.status, 200, JSON.stringify(intent.body));
      const reference = intent.body.data.transaction_reference;
      for (const otp of MALFORMED) refusedOnOtp(await call('/collection/execute', { transaction_reference: reference, otp }), JSON.stringify(otp));
      const paid = await call('/collection/execute', { transaction_reference: reference, otp: 76300 });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.status, 'COMPLETED');
    });

    test('POST /pay/{shortCode}/pay: malformed codes take no attempt; 76300 is 076300', async () => {
      // ORANGE_MONEY_CIV asks for a code in the demo catalog: the second demo merchant collects in CIV.
      const link = (await call('/payment-links', { currency: 'XOF', amount: 1500, provider: 'ORANGE_MONEY_CIV' }, otherToken)).body.data;
      const payer = { customer_phone: '2250700000000', transaction_uuid: randomUUID() };
      for (const otp of MALFORMED) refusedOnOtp(await call(`/pay/${link.short_code}/pay`, { ...payer, otp }, null), JSON.stringify(otp));
      const paid = await call(`/pay/${link.short_code}/pay`, { ...payer, otp: 76300 }, null);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      const reference = paid.body.data.transaction_reference;
      for (let i = 0; i < 100; i++) {
        const s = (await call('/collection/status', { transaction_reference: reference }, otherToken)).body.data.status;
        if (s !== 'INITIATED' && s !== 'PENDING') { assert.equal(s, 'COMPLETED'); return; }
        await sleep(100);
      }
      assert.fail('the payment did not end');
    });

    test('wallet link confirm and approve: malformed codes take no attempt', async () => {
      const link = async (path, body) => {
        const r = await fetch(`${server.linkUrl}/api/agent/link/${path}`, {
          method: 'POST', headers: { 'content-type': 'application/json', 'accept-language': 'en', 'x-api-key': server.demo.link_api_key },
          body: JSON.stringify(body),
        });
        return { status: r.status, body: await r.json() };
      };
      const linked = await link('new', { email: 'otp-input@example.com', phone: '690000077', phoneCountry: '+237' });
      assert.equal(linked.status, 200, JSON.stringify(linked.body));
      const { apikey } = linked.body.data;
      for (const otp of MALFORMED) refusedOnOtp(await link('confirm', { apikey, otp }), `confirm ${JSON.stringify(otp)}`);
      // Every attempt is still there: a wrong well-formed code is the first one taken.
      const wrong = await link('confirm', { apikey, otp: '000001' });
      assert.equal(wrong.body.message, 'invalid_otp', JSON.stringify(wrong.body));
      assert.equal(wrong.body.error.details.attempts_left, 2, JSON.stringify(wrong.body));
      for (const otp of MALFORMED) {
        refusedOnOtp(await link('approve', { apikey, transaction_reference: 'TX-NONE', otp }), `approve ${JSON.stringify(otp)}`);
      }
    });
  });
}
