// Refunds of a converted checkout order (docs/refunds.md, "Converted collections") against the real
// binary on each backend (two nodes on PostgreSQL): a 10.00 EUR order with line=up paid in XOF is
// refunded through POST /collection/refund in XOF, in two parts; the merchant's euro balance goes
// down by each refund's cost and ends at exactly what the order credited less all of it; the euro
// statement lists each refund as a REFUND movement; the signed return says what came back in XOF;
// refunds of one converted collection asked at once of both nodes cost the merchant exactly the
// euros it was credited; the ledger check is clean.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, merchantToken, waitFor, checkLedger } from './lib/server.mjs';
import { verifyServiceData } from '../../docs/examples/merchant-site.mjs';

// The date `days` from today in a zone `offsetMinutes` east of UTC, YYYY-MM-DD.
const localDate = (days, offsetMinutes = 60) =>
  new Date(Date.now() + offsetMinutes * 60000 + days * 86400000).toISOString().slice(0, 10);

for (const backend of backends()) {
  describe(`refunds of a converted order on ${backend}`, () => {
    let running, server, secondBase, civ, token;
    const call = async (method, path, body, base) => {
      const r = await fetch(`${base ?? server.baseUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      let json;
      try { json = JSON.parse(text); } catch {}
      return { status: r.status, body: json, text };
    };
    const euros = async () => {
      const r = await call('GET', '/balance');
      assert.equal(r.status, 200, r.text);
      return r.body.data.find((b) => b.currency === 'EUR');
    };
    // The second node when there is one (PostgreSQL): refunds are asked of both nodes.
    const bases = () => [server.baseUrl, secondBase ?? server.baseUrl];
    const refund = async (ref, amount, base) => {
      const r = await call('POST', '/collection/refund',
        { transaction_reference: ref, refund_uuid: randomUUID(), reason: 'REQUESTED_BY_CUSTOMER', amount }, base);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.amount, amount);
      assert.equal(r.body.data.currency, 'XOF');
      const done = await waitFor(async () => {
        const s = await call('POST', '/collection/refund/status', { refund_reference: r.body.data.refund_reference });
        return s.body.data.status === 'COMPLETED' ? s.body.data : null;
      });
      assert.ok(done, 'the refund completed');
      return done;
    };

    // Opens a 10.00 EUR order with line=up, pays it in XOF (MTN CIV sandbox) and returns its
    // collection's reference once COMPLETED and the merchant's euros once credited.
    const payConverted = async () => {
      const opened = await fetch(server.checkoutUrl, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: civ.api_key, amount: '10.00', currency: 'EUR', line: 'up',
          orderId: `ORD-${randomUUID()}`, description: 'x', shopName: 'Boutique Euro',
          successUrl: 'https://shop.example/ok', failureUrl: 'https://shop.example/ko' }),
      });
      const o = await opened.json();
      assert.equal(opened.status, 201, JSON.stringify(o));
      const before = (await euros())?.available ?? 0;
      const pay = await fetch(`${o.data.page_url}?lang=en`, {
        method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ attempt: '0', provider: 'MTN_MOMO_CIV', customer_phone: '2250500000000' }).toString(),
      });
      assert.equal(pay.status, 303);
      const ref = await waitFor(async () => {
        const r = await fetch(`${o.data.page_url}/return`, { redirect: 'manual' });
        const loc = r.headers.get('location');
        if (!loc) return null;
        const u = new URL(loc, o.data.page_url);
        if (!u.searchParams.get('service_data')) return null;  // not paid yet: back to the page
        const data = verifyServiceData(civ.checkout_secret, u.searchParams.get('service_data'), u.searchParams.get('signature'));
        return data?.status === 'COMPLETED' ? data.transaction_reference : null;
      });
      assert.ok(ref, 'the order was paid');
      assert.ok(await waitFor(async () => ((await euros())?.available ?? 0) >= before + 1000 || null), 'credited');
      return { ref, pageUrl: o.data.page_url };
    };

    before(async () => {
      running = await startTwoNodes({ backend, args: ['--set', 'payments.sandbox_delay_ms=150'] });
      server = running.first;
      if (running.second) {
        const u = new URL(server.baseUrl);
        u.port = String(running.second.port);
        secondBase = u.toString().replace(/\/$/, '');
      }
      civ = server.demo.merchants[1];
      token = await merchantToken(server, 1);
    });
    after(async () => { if (running) await running.stop(); });

    test('a euro order paid in XOF is refunded in XOF in two parts; it costs the merchant its euros back', async () => {
      const { ref, pageUrl } = await payConverted();
      const start = (await euros()).available;

      // 2000 of 6560 XOF: ceil(2000 * 1000 / 6560) = 305 cents.
      await refund(ref, 2000, bases()[0]);
      assert.equal((await euros()).available, start - 305);
      // The rest, asked of the other node: exactly the 695 cents left of the 1000 the order credited.
      await refund(ref, 4560, bases()[1]);
      assert.equal((await euros()).available, start - 1000);
      const tx = await call('POST', '/collection/status', { transaction_reference: ref });
      assert.equal(tx.body.data.status, 'REFUNDED');
      assert.equal(tx.body.data.refunded_amount, 6560);
      // The signed return says what came back, in the currency the customer paid.
      const back = await fetch(`${pageUrl}/return`, { redirect: 'manual' });
      const bu = new URL(back.headers.get('location'), pageUrl);
      const data = verifyServiceData(civ.checkout_secret, bu.searchParams.get('service_data'), bu.searchParams.get('signature'));
      assert.ok(data);
      assert.equal(data.refund_state, 'FULL');
      assert.equal(data.refunded_amount, 6560);
      assert.equal(data.charged_currency, 'XOF');
      assert.equal(data.currency, 'EUR');
      assert.equal(data.credited_amount, 1000);
      // Nothing is left to refund.
      const more = await call('POST', '/collection/refund',
        { transaction_reference: ref, refund_uuid: randomUUID(), reason: 'OTHER', amount: 1 });
      assert.equal(more.status, 409, more.text);

      const st = await call('GET', `/statements?${new URLSearchParams({ currency: 'EUR', from: localDate(-1), to: localDate(1) })}`);
      assert.equal(st.status, 200, st.text);
      const refunds = st.body.data.movements.filter((m) => m.type === 'REFUND');
      assert.deepEqual(refunds.map((m) => m.net).sort((a, b) => a - b), [-695, -305], JSON.stringify(st.body.data));
      let balance = st.body.data.opening_balance;
      for (const m of st.body.data.movements) balance += m.net;
      assert.equal(balance, st.body.data.closing_balance);
      checkLedger(server);
    });

    test('refunds of one converted collection asked at once (of both nodes) cost the merchant exactly its euros', async () => {
      if (backend === 'postgres') assert.notEqual(bases()[0], bases()[1], 'two nodes');
      const { ref } = await payConverted();
      const start = (await euros()).available;
      const status = async () => (await call('POST', '/collection/status', { transaction_reference: ref })).body.data;
      const accepted = [];
      await Promise.all(Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < 200 && (await status()).status !== 'REFUNDED'; i++) {
          const amount = (w + i) % 4 === 3 ? undefined : 411 + 53 * w;  // now and then: whatever is left
          const r = await call('POST', '/collection/refund', { transaction_reference: ref, refund_uuid: randomUUID(),
            reason: 'OTHER', ...(amount ? { amount } : {}) }, bases()[w % 2]);
          assert.ok([200, 400, 409].includes(r.status), r.text);
          if (r.status === 200) accepted.push(r.body.data.refund_reference);
          await new Promise((res) => setTimeout(res, 20));
        }
      }));
      const done = await status();
      assert.equal(done.status, 'REFUNDED');
      assert.equal(done.refunded_amount, 6560);
      assert.ok(accepted.length > 1);
      assert.equal((await euros()).available, start - 1000);
      checkLedger(server);
    });
  });
}
