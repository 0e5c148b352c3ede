// The Orange Money connector end to end, against the Orange double (doubles/orange_money.mjs, a
// separate process over real HTTP that checks what Orange checks). Two instances: `orange_money`
// (Web Payment, Côte d'Ivoire: the customer pays on Orange's page, reached through our
// confirmation page) and `orange_money_cm` (Orange Cameroon's merchant payment pushed to the
// phone). Each adds a live demo merchant. On SQLite and on two nodes sharing PostgreSQL:
// payments complete by the notification verified with the operator's status; a notification
// without its payment's notif_token is refused (401) and a forged status moves nothing; a lost
// notification is recovered by polling; a creation whose answer never came is neither lost nor
// sent twice; an unreachable operator ends the order it never held; the prompt is sent again on
// request, at most once per 30 s; one token serves many payments.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, backends, checkLedger, sqlRows, waitFor } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { FAST_RECOVERY, connectorSetup, liveToken, gateway } from './lib/operator.mjs';

const rnd = () => String(Math.floor(Math.random() * 1e4)).padStart(4, '0');
export const cmNumber = (tail) => `23769${rnd()}${tail}`;      // Orange Cameroon (69…)
export const ciNumber = (tail) => `22507${rnd()}${rnd().slice(0, 1)}${tail}`;  // Orange Côte d'Ivoire (07…)

// Creates and executes a collection; resolves to its record.
export async function collect(post, provider, wallet, { amount = 1500, description = 'orange e2e' } = {}) {
  const currency = provider.endsWith('CMR') ? 'XAF' : 'XOF';
  const intent = await post('/collection/intent', { amount, currency, provider, customer_wallet: wallet,
    transaction_uuid: randomUUID(), description });
  assert.equal(intent.status, 200, JSON.stringify(intent.body));
  const body = { transaction_reference: intent.body.data.transaction_reference };
  if (provider.endsWith('CIV')) body.otp = '123456';  // the catalog asks one; Orange asks the customer on its page
  const executed = await post('/collection/execute', body);
  assert.equal(executed.status, 200, JSON.stringify(executed.body));
  return executed.body.data;
}

export async function statusOf(post, reference) {
  const r = await post('/collection/status', { transaction_reference: reference });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data;
}

export const finalOf = (post, reference, ms = 20000) => waitFor(async () => {
  const s = await statusOf(post, reference);
  return s.status !== 'PENDING' && s;
}, ms);

export function row(server, reference) {
  const [r] = sqlRows(server, `SELECT provider_reference, customer_url, operator_state FROM pay_transactions WHERE reference = '${reference}'`);
  return { provider_reference: r[0], customer_url: r[1], state: r[2] ? JSON.parse(r[2]) : null };
}

function outcomes(server, reference) {
  return sqlRows(server, 'SELECT c.outcome FROM pay_callbacks c JOIN pay_transactions t ON t.id = c.transaction_id ' +
    `WHERE t.reference = '${reference}'`).map(([o]) => o);
}

const notify = (server, instance, ref, body, extra = '') => fetch(`${server.baseUrl}/operator/callback/${instance}?ref=${ref}${extra}`,
  { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

for (const backend of backends()) {
  describe(`Orange Money through its double (${backend})`, () => {
    let double, nodes, server, webPosts, pushPosts;
    before(async () => {
      double = await startDouble('orange_money', { 'status-rps': 1000 });
      const setup = connectorSetup('orange_money', double);
      nodes = await startTwoNodes({ backend, args: [...FAST_RECOVERY, ...setup.args], env: setup.env });
      server = nodes.first;
      const web = await liveToken(server, 'orange_money');
      const push = await liveToken(server, 'orange_money_cm');
      webPosts = nodes.ports.map((port) => gateway(server, web, port));
      pushPosts = nodes.ports.map((port) => gateway(server, push, port));
    });
    after(async () => {
      await nodes?.stop();
      await double?.stop();
    });

    test('demo.json lists a live merchant per instance, of its country', () => {
      const live = Object.fromEntries(server.demo.live_merchants.map((m) => [m.connector, m]));
      assert.deepEqual(live.orange_money.countries, ['CIV']);
      assert.deepEqual(live.orange_money_cm.countries, ['CMR']);
    });

    test('Web Payment: the confirmation page sends the customer to Orange, who pays; COMPLETED on every node', async () => {
      for (const post of webPosts) {
        const tx = await collect(post, 'ORANGE_MONEY_CIV', ciNumber('100'), { amount: 2500 });
        assert.equal(tx.status, 'PENDING');
        const { provider_reference, customer_url, state } = row(server, tx.transaction_reference);
        assert.match(customer_url, /\/payment\/pay_token\//);
        assert.equal(state.flow, 'webpay');
        assert.ok(state.order_id.length <= 30);
        const held = await double.control(`/payments/${state.order_id}`);
        assert.equal(held.amount, tx.required_total, 'the customer pays the total');
        assert.equal(held.currency, 'XOF');
        assert.ok(held.notif_url.endsWith(`?ref=${provider_reference}`), held.notif_url);
        assert.equal(held.return_url, tx.confirmation_url.replace(/&amp;/g, '&'));
        // The confirmation page shows the way to Orange's page.
        const page = await (await fetch(tx.confirmation_url + '&lang=en')).text();
        assert.ok(page.includes('You will be taken to Orange Money'), page);
        assert.ok(page.includes(customer_url.replace(/&/g, '&amp;')), 'the link to the payment page');
        // The customer pays on Orange's page and is sent back to the confirmation page.
        const back = await fetch(customer_url + '?outcome=SUCCESS', { redirect: 'manual' });
        assert.equal(back.status, 302);
        assert.equal(back.headers.get('location'), held.return_url);
        const done = await finalOf(post, tx.transaction_reference);
        assert.equal(done.status, 'COMPLETED');
        assert.ok(outcomes(server, tx.transaction_reference).includes('applied'));
      }
      checkLedger(server);
    });

    test('Web Payment: a refused or expired payment FAILS with our reason', async () => {
      const refused = await collect(webPosts[0], 'ORANGE_MONEY_CIV', ciNumber('101'));
      await fetch(row(server, refused.transaction_reference).customer_url + '?outcome=FAILED', { redirect: 'manual' });
      const f = await finalOf(webPosts[0], refused.transaction_reference);
      assert.equal(f.status, 'FAILED');
      assert.equal(f.failure_reason, 'OPERATOR_REFUSED');
      await double.behave({ webpay_ttl_ms: 300 });
      try {
        const unpaid = await collect(webPosts[0], 'ORANGE_MONEY_CIV', ciNumber('102'));
        const e = await finalOf(webPosts[0], unpaid.transaction_reference);
        assert.equal(e.status, 'FAILED');
        assert.equal(e.failure_reason, 'TIMEOUT');
      } finally {
        await double.behave({ webpay_ttl_ms: 600000 });
      }
      checkLedger(server);
    });

    test('a notification without its own notif_token is refused; a forged status moves nothing', async () => {
      const tx = await collect(webPosts[0], 'ORANGE_MONEY_CIV', ciNumber('103'));
      const { provider_reference, state } = row(server, tx.transaction_reference);
      const other = await collect(webPosts[0], 'ORANGE_MONEY_CIV', ciNumber('104'));
      for (const token of ['', 'f'.repeat(32), row(server, other.transaction_reference).state.notif_token]) {
        const r = await notify(server, 'orange_money', provider_reference, { status: 'SUCCESS', notif_token: token, txnid: 'MP1' });
        assert.equal(r.status, 401, token);
        assert.equal((await r.json()).success, false);
      }
      // A payment that does not exist is refused alike.
      assert.equal((await notify(server, 'orange_money', randomUUID(), { status: 'SUCCESS', notif_token: state.notif_token })).status, 401);
      // Its own token but a status Orange does not hold: verified, contradicted, nothing moves.
      const r = await notify(server, 'orange_money', provider_reference, { status: 'SUCCESS', notif_token: state.notif_token, txnid: 'MP1' });
      assert.equal(r.status, 200);
      assert.equal((await r.json()).outcome, 'contradicted');
      assert.equal((await statusOf(webPosts[0], tx.transaction_reference)).status, 'PENDING');
      const bad = await fetch(`${server.baseUrl}/operator/callback/orange_money`, { method: 'POST',
        headers: { 'content-type': 'application/json' }, body: '{"status":"SUCCESS"}' });
      assert.equal(bad.status, 400);
      assert.ok((await bad.json()).error.details.ref);
      checkLedger(server);
    });

    test('notifications twice, late, or none: the payment completes once', async () => {
      for (const mode of ['twice', 'late', 'none']) {
        await double.behave({ callbacks: mode, late_callback_ms: 300 });
        const tx = await collect(webPosts[webPosts.length - 1], 'ORANGE_MONEY_CIV', ciNumber('105'));
        await double.control(`/payments/${row(server, tx.transaction_reference).state.order_id}/pay`, { status: 'SUCCESS' });
        const done = await finalOf(webPosts[0], tx.transaction_reference);
        assert.equal(done.status, 'COMPLETED', mode);
        if (mode === 'twice') {
          await waitFor(() => outcomes(server, tx.transaction_reference).length >= 2, 5000);
          const o = outcomes(server, tx.transaction_reference);
          assert.equal(o.filter((x) => x === 'applied').length, 1, JSON.stringify(o));
        }
      }
      await double.behave({ callbacks: 'once' });
      checkLedger(server);
    });

    test('push: the prompt reaches the phone; COMPLETED on every node, and Orange\'s failures become ours', async () => {
      for (const post of pushPosts) {
        const tx = await collect(post, 'ORANGE_MONEY_CMR', cmNumber('100'));
        const { state } = row(server, tx.transaction_reference);
        assert.equal(state.flow, 'push');
        const done = await finalOf(post, tx.transaction_reference);
        assert.equal(done.status, 'COMPLETED');
        const held = await double.control(`/payments/${state.pay_token}`);
        assert.equal(held.amount, String(tx.required_total));
        assert.equal(held.subscriberMsisdn.length, 9);
        assert.ok(held.orderId.length <= 30);
      }
      for (const [tail, reason] of [['455', 'INSUFFICIENT_FUNDS'], ['451', 'REJECTED_BY_CUSTOMER'], ['452', 'TIMEOUT'], ['450', 'OPERATOR_REFUSED']]) {
        const tx = await collect(pushPosts[0], 'ORANGE_MONEY_CMR', cmNumber(tail));
        const f = await finalOf(pushPosts[0], tx.transaction_reference);
        assert.equal(f.failure_reason, reason, tail);
      }
      checkLedger(server);
    });

    test('push: "send the prompt again" from the confirmation page, at most once per 30 s, on any node', async () => {
      const tx = await collect(pushPosts[0], 'ORANGE_MONEY_CMR', cmNumber('454'));  // pending for ever
      const page = await (await fetch(tx.confirmation_url + '&lang=fr')).text();
      assert.ok(page.includes('Confirmez le paiement sur votre téléphone'), page);
      assert.ok(page.includes('value="prompt"'));
      const sig = new URL(tx.confirmation_url).searchParams.get('sig');
      const form = new URLSearchParams({ sig, lang: 'en', action: 'prompt' }).toString();
      const urls = nodes.ports.map((port) => tx.confirmation_url.replace(`:${server.checkoutPort ?? new URL(tx.confirmation_url).port}/`, `:${port}/`));
      const first = await fetch(urls[0], { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
      assert.equal(first.status, 200);
      assert.ok((await first.text()).includes('sent to your phone again'));
      const again = await fetch(urls[urls.length - 1], { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
      assert.equal(again.status, 400);
      const held = await double.control(`/payments/${row(server, tx.transaction_reference).state.pay_token}`);
      assert.equal(held.prompts, 2, 'the first prompt and one again');
    });

    test('a creation whose answer never came is neither lost nor sent twice', async () => {
      await double.behave({ hang_after_accept: 1 });
      const web = await collect(webPosts[0], 'ORANGE_MONEY_CIV', ciNumber('106'));
      const { state } = row(server, web.transaction_reference);
      const held = await double.control(`/payments/${state.order_id}`);
      assert.equal(held.creations, 2, 'created again with the same order_id');
      await double.control(`/payments/${state.order_id}/pay`, {});
      assert.equal((await finalOf(webPosts[0], web.transaction_reference)).status, 'COMPLETED');
      // mp/pay is never sent twice: the payToken's status decides.
      await double.behave({ hang_after_accept: 1 });
      const push = await collect(pushPosts[0], 'ORANGE_MONEY_CMR', cmNumber('107'));
      assert.equal(push.status, 'PENDING');
      assert.equal((await finalOf(pushPosts[0], push.transaction_reference, 30000)).status, 'COMPLETED');
      const p = await double.control(`/payments/${row(server, push.transaction_reference).state.pay_token}`);
      assert.equal(p.prompts, 1);
      checkLedger(server);
    });

    test('an unreachable operator: the order it never held FAILS (OPERATOR_ERROR) once nobody can pay it', async () => {
      await double.behave({ down: true });
      let tx;
      try {
        tx = await collect(webPosts[0], 'ORANGE_MONEY_CIV', ciNumber('108'));
        assert.equal(tx.status, 'PENDING');
        assert.ok(!row(server, tx.transaction_reference).customer_url, 'no link: nothing payable exists');
      } finally {
        await double.behave({ down: false });
      }
      const f = await finalOf(webPosts[0], tx.transaction_reference, 40000);
      assert.equal(f.status, 'FAILED');
      assert.equal(f.failure_reason, 'OPERATOR_ERROR');
      checkLedger(server);
    });

    test('tokens are shared: a burst of payments uses the token fetched earlier', async () => {
      const before = (await double.stats()).tokens_issued;
      const txs = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        collect(pushPosts[i % pushPosts.length], 'ORANGE_MONEY_CMR', cmNumber('109'))));
      await waitFor(async () => {
        for (const t of txs) if ((await statusOf(pushPosts[0], t.transaction_reference)).status !== 'COMPLETED') return false;
        return true;
      }, 30000);
      assert.equal((await double.stats()).tokens_issued - before, 0);
      checkLedger(server);
    });
  });
}
