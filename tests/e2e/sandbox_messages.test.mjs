// GET {base_url}/sandbox/messages?phone=: a sandbox merchant reads the code sent to a sandbox
// number and pays with it (an integrator's CI testing OTP flows); prod merchants get the 404 of a
// route that does not exist and see nothing; messages about prod are never listed; bad input is a
// 400 naming the parameter. On each backend.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, admin, call, prodMerchant } from './lib/server.mjs';

const codeIn = (body) => body.match(/\b(\d{6})\b/)?.[1];

for (const backend of backends()) {
  describe(`sandbox messages on ${backend}`, () => {
    let server, auth, prodAuth, prod;
    const messages = (query, headers = auth) =>
      call(`${server.baseUrl}/sandbox/messages?${new URLSearchParams(query)}`, { headers });
    before(async () => {
      server = await startServer({ backend });
      auth = { 'x-sp-auth-token': `Bearer ${await merchantToken(server, 0)}` };
      ({ merchant: prod, auth: prodAuth } = await prodMerchant(server, 'Messages prod'));
    });
    after(async () => { if (server) await server.stop(); });

    test('a sandbox merchant reads the code sent to a sandbox number and pays with it', async () => {
      // A CMR number of the sandbox that is neither magic nor a demo number: its WALLET code is a
      // random one, sent to its phone (the demo's numbers take the fixed code and get nothing).
      const number = '237690000431';
      admin(server, 'fund-wallet', '--msisdn', number, '--currency', 'XAF', '--amount', '20000');
      const intent = await call(`${server.baseUrl}/collection/intent`, { method: 'POST', headers: auth, body: {
        amount: 1200, currency: 'XAF', provider: server.demo.sandbox.wallet_provider, channel: 'WALLET',
        customer_wallet: number, transaction_uuid: randomUUID() } });
      assert.equal(intent.status, 200, intent.text);
      const tx = intent.body.data;
      assert.equal(tx.confirmation_method, 'OTP');

      for (const phone of [`+${number}`, number]) {
        const list = await messages({ phone });
        assert.equal(list.status, 200, list.text);
        assert.equal(list.body.data.length, 1, list.text);
        const [m] = list.body.data;
        assert.equal(m.to, `+${number}`);
        assert.equal(m.channel, 'sms');
        assert.equal(m.tag, 'otp:wallet_collection');
        assert.ok(m.body.includes(tx.transaction_reference), m.body);
        assert.ok(m.message_id && !Number.isNaN(Date.parse(m.created_at)), list.text);
      }
      const code = codeIn((await messages({ phone: `+${number}` })).body.data[0].body);
      assert.ok(code);
      const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
      const refused = await call(`${server.baseUrl}/collection/execute`, { method: 'POST', headers: auth, body: {
        transaction_reference: tx.transaction_reference, otp: wrong } });
      assert.equal(refused.status, 400, refused.text);
      const paid = await call(`${server.baseUrl}/collection/execute`, { method: 'POST', headers: auth, body: {
        transaction_reference: tx.transaction_reference, otp: code } });
      assert.equal(paid.status, 200, paid.text);
      assert.equal(paid.body.data.status, 'COMPLETED');

      // A second code to the same number: newest first, and limit applies.
      const second = await call(`${server.baseUrl}/collection/intent`, { method: 'POST', headers: auth, body: {
        amount: 700, currency: 'XAF', provider: server.demo.sandbox.wallet_provider, channel: 'WALLET',
        customer_wallet: number, transaction_uuid: randomUUID() } });
      assert.equal(second.status, 200, second.text);
      const both = await messages({ phone: `+${number}` });
      assert.equal(both.body.data.length, 2, both.text);
      assert.ok(both.body.data[0].body.includes(second.body.data.transaction_reference), 'newest first');
      const one = await messages({ phone: `+${number}`, limit: '1' });
      assert.equal(one.body.data.length, 1);
      assert.ok(one.body.data[0].body.includes(second.body.data.transaction_reference));
      // A number nothing was sent to: an empty list, the same answer as for any other number.
      const none = await messages({ phone: '+237690000999' });
      assert.equal(none.status, 200);
      assert.deepEqual(none.body.data, []);
    });

    test('a prod merchant gets the 404 of a route that does not exist, and sees nothing', async () => {
      const number = '237690000432';
      admin(server, 'fund-wallet', '--msisdn', number, '--currency', 'XAF', '--amount', '5000');
      const intent = await call(`${server.baseUrl}/collection/intent`, { method: 'POST', headers: auth, body: {
        amount: 500, currency: 'XAF', provider: server.demo.sandbox.wallet_provider, channel: 'WALLET',
        customer_wallet: number, transaction_uuid: randomUUID() } });
      assert.equal(intent.status, 200, intent.text);
      assert.equal((await messages({ phone: `+${number}` })).body.data.length, 1, 'the sandbox merchant sees it');

      const unknownRoute = await call(`${server.baseUrl}/sandbox/nothing-here`, { headers: prodAuth });
      assert.equal(unknownRoute.status, 404);
      for (const query of [{ phone: `+${number}` }, { phone: 'abc' }, {}]) {
        const r = await messages(query, prodAuth);
        assert.equal(r.status, 404, r.text);
        assert.equal(r.body.message, 'not_found');
        assert.equal(r.body.data, undefined, r.text);
        assert.ok(!r.text.includes(number) && !r.text.includes(intent.body.data.transaction_reference), r.text);
        assert.equal(r.body.message, unknownRoute.body.message);
      }
    });

    test('messages about prod are never listed to a sandbox merchant', async () => {
      // A prod partner's wallet-link consent code to a number goes to the outbox as prod.
      const linkKey = admin(server, 'create-api-key', '--merchant', prod.matricule, '--kind', 'link').api_key;
      const linked = await call(`${server.linkUrl}/api/agent/link/new`, { method: 'POST', headers: { 'x-api-key': linkKey },
        body: { email: 'prod.messages@example.com', phone: '690000433', phoneCountry: '+237' } });
      assert.equal(linked.status, 200, linked.text);
      assert.equal(linked.body.data.consent.sent, true, `a code was sent: ${linked.text}`);
      const r = await messages({ phone: '+237690000433' });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.data, [], r.text);
      // The same number linked by a sandbox partner: only the sandbox's code is listed.
      const sandboxLinked = await call(`${server.linkUrl}/api/agent/link/new`, { method: 'POST',
        headers: { 'x-api-key': server.demo.link_api_key },
        body: { email: 'sandbox.messages@example.com', phone: '690000433', phoneCountry: '+237' } });
      assert.equal(sandboxLinked.status, 200, sandboxLinked.text);
      const listed = await messages({ phone: '+237690000433' });
      assert.equal(listed.body.data.length, 1, listed.text);
      assert.ok(listed.body.data[0].body.includes(sandboxLinked.body.data.link.reference), listed.text);
      assert.ok(!listed.body.data[0].body.includes(linked.body.data.link.reference), listed.text);
    });

    test('bad input: 400 naming the parameter; no token 401; a token without payments 403', async () => {
      for (const [query, field] of [[{}, 'phone'], [{ phone: '' }, 'phone'], [{ phone: 'abc' }, 'phone'],
        [{ phone: '+12345' }, 'phone'], [{ phone: '+1234567890123456' }, 'phone'], [{ phone: '++237690000000' }, 'phone'],
        [{ phone: '+237690000000', limit: '0' }, 'limit'], [{ phone: '+237690000000', limit: '51' }, 'limit'],
        [{ phone: '+237690000000', limit: 'x' }, 'limit'], [{ phone: '+237690000000', limit: '-1' }, 'limit']]) {
        const r = await messages(query);
        assert.equal(r.status, 400, `${JSON.stringify(query)}: ${r.text}`);
        assert.equal(r.body.message, 'empty_data');
        assert.deepEqual(Object.keys(r.body.error.details), [field], r.text);
      }
      assert.equal((await messages({ phone: '+237690000000' }, {})).status, 401);
      const narrow = { 'x-sp-auth-token': `Bearer ${await merchantToken(server, 0, 'services')}` };
      assert.equal((await messages({ phone: '+237690000000' }, narrow)).status, 403);
    });
  });
}
