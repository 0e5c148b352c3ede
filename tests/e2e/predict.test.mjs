// GET {base_url}/provider/predict: the operator of a mobile number from its country's numbering
// plan, and the caller's services of it; every bad parameter named; an unknown block predicts
// nothing. And the refusal it backs: a prod collection whose number belongs to another operator's
// block is a 400 naming customer_wallet (a sandbox one is not: test numbers are not subscribers).
// On each backend.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, call, prodMerchant } from './lib/server.mjs';

for (const backend of backends()) {
  describe(`provider prediction on ${backend}`, () => {
    let server, cmr, civ, prodAuth;
    const predict = (query, headers = cmr) =>
      call(`${server.baseUrl}/provider/predict?${new URLSearchParams(query)}`, { headers });
    before(async () => {
      server = await startServer({ backend });
      cmr = { 'x-sp-auth-token': `Bearer ${await merchantToken(server, 0)}` };
      civ = { 'x-sp-auth-token': `Bearer ${await merchantToken(server, 1)}` };
      ({ auth: prodAuth } = await prodMerchant(server, 'Predict prod'));
    });
    after(async () => { if (server) await server.stop(); });

    test('a number is read in every written form and its operator predicted', async () => {
      const orange = await predict({ msisdn: '+237 6 99 00 00 10' });
      assert.equal(orange.status, 200, orange.text);
      assert.equal(orange.body.success, true);
      assert.deepEqual(orange.body.data,
        { msisdn: '237699000010', country: 'CMR', providers: ['ORANGE'], services: ['ORANGE_MONEY_CMR'] });
      const mtn = await predict({ msisdn: '00237670000001' });
      assert.deepEqual(mtn.body.data.providers, ['MTN']);
      assert.deepEqual(mtn.body.data.services, ['MTN_MOMO_CMR']);
      const national = await predict({ msisdn: '07 00 00 00 00', country: 'civ' }, civ);
      assert.equal(national.status, 200, national.text);
      assert.deepEqual(national.body.data,
        { msisdn: '2250700000000', country: 'CIV', providers: ['ORANGE'], services: ['ORANGE_MONEY_CIV'] });
      // Nexttel is in Cameroon's plan but not in the catalog: predicted, no service.
      const nexttel = await predict({ msisdn: '+237660000000' });
      assert.deepEqual(nexttel.body.data.providers, ['NEXTTEL']);
      assert.deepEqual(nexttel.body.data.services, []);
      // A block the plan does not list: nothing predicted, and no error.
      const unknown = await predict({ msisdn: '+237630000000' });
      assert.equal(unknown.status, 200, unknown.text);
      assert.deepEqual(unknown.body.data.providers, []);
      // Another country's number: predicted, but the CMR merchant is offered none of its services.
      const other = await predict({ msisdn: '+2250500000000' });
      assert.deepEqual(other.body.data, { msisdn: '2250500000000', country: 'CIV', providers: ['MTN'], services: [] });
    });

    test('bad input is a 400 naming the parameter; the route needs a token', async () => {
      const cases = [
        [{}, 'msisdn', 'is required'],
        [{ msisdn: '699000010' }, 'msisdn',
          'must begin with the dialling code of a catalog country (e.g. +237), or come with country'],
        [{ msisdn: '69x' }, 'msisdn', "must contain only digits, spaces and a leading '+'"],
        [{ msisdn: '+237 222 000 000' }, 'msisdn', 'is not a mobile number of CMR'],
        [{ msisdn: '+237 69900001' }, 'msisdn', 'must have 9 digits after +237'],
        [{ msisdn: '699000010', country: 'BEN' }, 'country', 'is not a country of the catalog'],
        [{ msisdn: '699000010', country: 'CM' }, 'country', 'must be an ISO 3166-1 alpha-3 country code (e.g. CMR)'],
      ];
      for (const [query, field, text] of cases) {
        const r = await predict(query);
        assert.equal(r.status, 400, `${JSON.stringify(query)}: ${r.text}`);
        assert.equal(r.body.success, false);
        assert.equal(r.body.message, 'empty_data');
        assert.deepEqual(r.body.error.details, { [field]: text }, JSON.stringify(query));
      }
      assert.equal((await predict({ msisdn: '+237699000010' }, {})).status, 401);
    });

    test('prod refuses a number of another operator; an unknown block and the sandbox are not refused', async () => {
      const intent = (headers, customer_wallet, provider = 'MTN_MOMO_CMR') =>
        call(`${server.baseUrl}/collection/intent`, { method: 'POST', headers, body: {
          amount: 1000, currency: 'XAF', provider, customer_wallet, transaction_uuid: randomUUID() } });
      const refused = await intent(prodAuth, '+237 699 00 00 10');
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.message, 'empty_data');
      assert.deepEqual(refused.body.error.details, {
        customer_wallet: 'belongs to Orange, not MTN (the operator is the one of the service chosen in provider)' });
      const nexttel = await intent(prodAuth, '237660000010', 'ORANGE_MONEY_CMR');
      assert.equal(nexttel.status, 400, nexttel.text);
      assert.deepEqual(nexttel.body.error.details, {
        customer_wallet: 'belongs to Nexttel, not Orange (the operator is the one of the service chosen in provider)' });
      for (const number of ['237670000010', '237630000010']) {
        const r = await intent(prodAuth, number);
        assert.ok(!(r.body?.error?.details ?? {}).customer_wallet, `${number}: ${r.text}`);
      }
      const sandbox = await intent(cmr, '237699000010');
      assert.equal(sandbox.status, 200, sandbox.text);
      assert.equal(sandbox.body.data.provider, 'MTN_MOMO_CMR');
    });
  });
}
