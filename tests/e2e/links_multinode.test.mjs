// Single-use payment links raced across two `sika serve` nodes on one PostgreSQL database: the
// use count lives in the link's row, so payers hitting different nodes at the same moment still
// end with exactly one completed payment per link, the others told `link_used_up` before any
// money moves; a use whose payment fails is given back and the next payer can take it. The
// ledger check passes afterwards.
// Needs SIKA_TEST_PG_DSN (skipped without it): scripts/with-postgres.sh node --test links_multinode.test.mjs
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startTwoNodes, merchantToken, sleep, checkLedger } from './lib/server.mjs';

const LINKS = 4;
const PAYERS_PER_LINK = 12;
const ARGS = ['--set', 'payments.sandbox_delay_ms=150',
  '--set', 'links.pay_per_address_per_minute=0', '--set', 'links.pay_per_link_per_minute=0'];

const skip = process.env.SIKA_TEST_PG_DSN ? false : 'SIKA_TEST_PG_DSN is not set';

describe('single-use payment links on two nodes', { skip }, () => {
  let running, first, second, token;
  before(async () => {
    running = await startTwoNodes({ args: ARGS });
    ({ first, second } = running);
    token = await merchantToken(first, 0);
  });
  after(() => running?.stop());

  const call = async (port, method, path, body, auth = true) => {
    const r = await fetch(`http://127.0.0.1:${port}/api${path}`, {
      method,
      headers: {
        'content-type': 'application/json', 'accept-language': 'en',
        ...(auth ? { 'x-sp-auth-token': `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
  const ports = () => [first.port, second.port];
  const payer = (phone) => ({ customer_phone: phone, transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' });
  const waitDone = async (ref) => {
    for (let i = 0; i < 200; i++) {
      const s = (await call(first.port, 'POST', '/collection/status', { transaction_reference: ref })).body.data.status;
      if (s !== 'INITIATED' && s !== 'PENDING') return s;
      await sleep(100);
    }
    return 'TIMEOUT';
  };

  test('payers racing on both nodes: one completed payment per link, the others refused', async () => {
    const links = [];
    for (let i = 0; i < LINKS; i++) {
      const created = await call(first.port, 'POST', '/payment-links', { currency: 'XAF', amount: 4000 + i, max_usage: 1 });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      links.push(created.body.data);
    }
    const results = await Promise.all(links.flatMap((link) => Array.from({ length: PAYERS_PER_LINK }, (_, n) =>
      call(ports()[n % 2], 'POST', `/pay/${link.short_code}/pay`, payer(first.demo.sandbox.msisdn.success), false)
        .then((r) => ({ link: link.reference, node: n % 2, ...r })))));
    for (const link of links) {
      const mine = results.filter((r) => r.link === link.reference);
      const ok = mine.filter((r) => r.status === 200);
      assert.equal(ok.length, 1, `${link.reference}: ${JSON.stringify(mine.map((r) => r.body.message))}`);
      for (const r of mine.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.message, 'link_used_up');
      }
      assert.equal(await waitDone(ok[0].body.data.transaction_reference), 'COMPLETED');
      const shown = await call(second.port, 'GET', `/payment-links/${link.reference}`);
      assert.equal(shown.body.data.payments_completed, 1);
      assert.equal(shown.body.data.total_collected, link.amount);
    }
    // Both nodes took part in the race.
    assert.deepEqual(new Set(results.map((r) => r.node)), new Set([0, 1]));
    // One collection was created per link: the refused payers never reached the operator.
    const refs = links.map((l) => `'${l.reference}'`).join(',');
    const created = execFileSync('psql', [first.dsn, '-At', '-c',
      `SELECT COUNT(*) FROM lnk_payments p JOIN lnk_links l ON l.id = p.link_id WHERE l.reference IN (${refs}) ` +
      `AND p.state <> 'RELEASED'`], { encoding: 'utf8' }).trim();
    assert.equal(created, String(LINKS));
  });

  test('a use whose payment fails is given back, on whichever node the next payer arrives', async () => {
    const link = (await call(first.port, 'POST', '/payment-links', { currency: 'XAF', amount: 2100, max_usage: 1 })).body.data;
    const failing = await call(first.port, 'POST', `/pay/${link.short_code}/pay`, payer(first.demo.sandbox.msisdn.failure), false);
    assert.equal(failing.status, 200, JSON.stringify(failing.body));
    assert.equal(await waitDone(failing.body.data.transaction_reference), 'FAILED');
    const next = await call(second.port, 'POST', `/pay/${link.short_code}/pay`, payer(first.demo.sandbox.msisdn.success), false);
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.equal(await waitDone(next.body.data.transaction_reference), 'COMPLETED');
    const late = await call(first.port, 'POST', `/pay/${link.short_code}/pay`, payer(first.demo.sandbox.msisdn.success), false);
    assert.equal(late.body.message, 'link_used_up');
  });

  test('the ledger balances after the races', () => {
    checkLedger(first);
  });
});
