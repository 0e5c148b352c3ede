// GET {base_url}/statements against the real binary, on each backend: a collection and a payout
// made through the API appear as typed movements whose nets add up from the opening to the
// closing balance (the balance GET /balance reports); the CSV has the same rows (comma, or
// semicolon with a BOM); every bad parameter is refused by name; another merchant sees nothing of
// yours; the ledger stays clean.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, backends, merchantToken, waitFor, checkLedger } from './lib/server.mjs';

// The date `days` from today in a zone `offsetMinutes` east of UTC, YYYY-MM-DD.
const localDate = (days, offsetMinutes = 60) =>
  new Date(Date.now() + offsetMinutes * 60000 + days * 86400000).toISOString().slice(0, 10);

for (const backend of backends()) {
  describe(`statements on ${backend}`, () => {
    let server, token, otherToken;
    const call = async (method, path, body, tok = token) => {
      const r = await fetch(`${server.baseUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${tok}`, 'accept-language': 'en' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      let json;
      try { json = JSON.parse(text); } catch {}
      return { status: r.status, body: json, text, headers: r.headers };
    };
    const statement = (params, tok = token) => call('GET', `/statements?${new URLSearchParams(params)}`, undefined, tok);
    const days = () => ({ currency: 'XAF', from: localDate(-1), to: localDate(1) });

    before(async () => {
      server = await startServer({ backend, args: ['--set', 'payments.sandbox_delay_ms=200'] });
      token = await merchantToken(server, 0);
      otherToken = await merchantToken(server, 1);
      // A collection, then a payout from what it brought.
      const c = await call('POST', '/collection/intent', {
        amount: 5000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
        customer_wallet: server.demo.sandbox.msisdn.success, description: 'statement order',
      });
      assert.equal(c.status, 200, c.text);
      await call('POST', '/collection/execute', { transaction_reference: c.body.data.transaction_reference });
      const done = await waitFor(async () => {
        const s = await call('POST', '/collection/status', { transaction_reference: c.body.data.transaction_reference });
        return s.body.data.status === 'COMPLETED';
      });
      assert.ok(done, 'the collection completed');
      const p = await call('POST', '/disbursement/intent', {
        amount: 500, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
        customer_wallet: server.demo.sandbox.msisdn.success,
      });
      assert.equal(p.status, 200, p.text);
      await waitFor(async () => {
        const s = await call('POST', '/disbursement/status', { transaction_reference: p.body.data.transaction_reference });
        return s.body.data.status === 'COMPLETED';
      });
    });
    after(async () => { if (server) await server.stop(); });

    test('JSON: typed movements from the opening to the closing balance, which GET /balance reports', async () => {
      const r = await statement(days());
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.success, true);
      assert.deepEqual(Object.keys(r.body.data),
        ['currency', 'from', 'to', 'opening_balance', 'closing_balance', 'movements']);
      const d = r.body.data;
      assert.equal(d.currency, 'XAF');
      let balance = d.opening_balance;
      for (const m of d.movements) {
        assert.deepEqual(Object.keys(m), ['type', 'reference', 'merchant_reference', 'operator_reference', 'gross',
          'fee', 'net', 'balance_after', 'created_at', 'settled_at']);
        assert.equal(m.gross - m.fee, m.net, JSON.stringify(m));
        balance += m.net;
        assert.equal(m.balance_after, balance, JSON.stringify(m));
      }
      assert.equal(balance, d.closing_balance);
      const bal = await call('GET', '/balance?currency=XAF');
      const xaf = bal.body.data.find((b) => b.currency === 'XAF');
      assert.equal(d.closing_balance, xaf.available, `${r.text} ${bal.text}`);
      // The customer paid 5000 and the fee on top: the merchant is credited 5000.
      const collection = d.movements.find((m) => m.type === 'COLLECTION' && m.net === 5000);
      assert.ok(collection, r.text);
      assert.equal(collection.gross, 5000 + collection.fee);
      assert.ok(collection.fee > 0, r.text);
      assert.match(collection.merchant_reference, /^[0-9a-f-]{36}$/);
      assert.match(collection.reference, /^TX-/);
      const payout = d.movements.find((m) => m.type === 'PAYOUT' && m.gross === -500);
      assert.ok(payout, r.text);
      assert.equal(payout.net, -500 - payout.fee);
      assert.equal(payout.settled_at, null);
    });

    test('CSV: the same rows, comma by default, semicolon with a BOM for Excel', async () => {
      const json = (await statement(days())).body.data;
      const r = await statement({ ...days(), format: 'csv' });
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get('content-type'), /^text\/csv; charset=utf-8/);
      assert.match(r.headers.get('content-disposition'), /attachment; filename="statement-.*\.csv"/);
      const lines = r.text.split('\r\n').filter(Boolean);
      assert.equal(lines[0], 'type,reference,merchant_reference,operator_reference,gross,fee,net,balance_after,created_at,settled_at');
      assert.equal(lines.length - 1, json.movements.length);
      lines.slice(1).forEach((line, i) => {
        const cells = line.split(',');
        const m = json.movements[i];
        assert.equal(cells[0], m.type);
        assert.equal(cells[1], m.reference);
        assert.equal(Number(cells[6]), m.net);
        assert.equal(Number(cells[7]), m.balance_after);
        assert.equal(cells[8], m.created_at);
      });
      const excel = await fetch(`${server.baseUrl}/statements?${new URLSearchParams({ ...days(), format: 'csv', separator: 'semicolon' })}`,
        { headers: { 'x-sp-auth-token': `Bearer ${token}` } });
      const bytes = Buffer.from(await excel.arrayBuffer());
      assert.deepEqual([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
      assert.ok(bytes.subarray(3).toString('utf8').startsWith('type;reference;merchant_reference;'));
    });

    test('every bad parameter: 400 naming it', async () => {
      const refused = async (params, field, text) => {
        const r = await statement(params);
        assert.equal(r.status, 400, r.text);
        assert.equal(r.body.success, false);
        assert.equal(r.body.message, 'empty_data', r.text);
        assert.equal(r.body.error.details[field], text, r.text);
      };
      const base = { currency: 'XAF', from: '2026-03-01', to: '2026-03-31' };
      const { currency, ...noCurrency } = base;
      await refused(noCurrency, 'currency', 'is required');
      await refused({ ...base, currency: 'francs' }, 'currency', 'must be a 3-letter ISO 4217 code');
      const { from, ...noFrom } = base;
      await refused(noFrom, 'from', 'is required');
      await refused({ ...base, from: '2026-02-30' }, 'from', 'must be a date YYYY-MM-DD');
      await refused({ ...base, to: 'yesterday' }, 'to', 'must be a date YYYY-MM-DD');
      await refused({ ...base, to: '2026-02-28' }, 'to', 'must not be before from');
      await refused({ ...base, to: '2026-04-01' }, 'to', 'must cover at most 31 days');
      await refused({ ...base, format: 'pdf' }, 'format', 'must be one of json, csv');
      await refused({ ...base, format: 'csv', separator: 'tab' }, 'separator', 'must be comma or semicolon');
      const noToken = await fetch(`${server.baseUrl}/statements?${new URLSearchParams(base)}`);
      assert.equal(noToken.status, 401);
    });

    test('another merchant sees nothing of yours', async () => {
      const mine = (await statement(days())).body.data;
      assert.ok(mine.movements.length > 0);
      const r = await statement(days(), otherToken);
      assert.equal(r.status, 200, r.text);
      const refs = new Set(mine.movements.map((m) => m.reference));
      assert.ok(!r.body.data.movements.some((m) => refs.has(m.reference)), r.text);
      const csv = await statement({ ...days(), format: 'csv' }, otherToken);
      for (const ref of refs) assert.ok(!csv.text.includes(ref), csv.text);
    });

    test('the ledger stays clean', () => checkLedger(server));
  });
}
