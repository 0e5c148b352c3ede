// A read replica (`database.read_url`, docs/deployment.md) against a real streaming replica that
// this test starts (pg_basebackup -R from its own primary): statements and the dashboard's
// transaction list read from the replica (with its replay paused they lag the primary, while the
// API's own reads do not; resumed, they catch up); while the replica is down they are answered by
// the primary; a replica beside an SQLite database is refused at start.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, spawnServe, merchantToken, postgresRequired, waitFor, checkLedger } from './lib/server.mjs';
import { pgBinaries, startCluster, startReplica } from './lib/pgcluster.mjs';
import { launchBrowser, noBrowser, signInMerchant } from './lib/browser.mjs';

const binaries = pgBinaries();
const skip = binaries ? false : 'PostgreSQL server binaries not found (apt-get install postgresql, or set SIKA_PG_BIN)';
if (!binaries && postgresRequired()) throw new Error(skip);

// The date `days` from today in a zone `offsetMinutes` east of UTC (the demo merchant's), YYYY-MM-DD.
const localDate = (days, offsetMinutes = 60) =>
  new Date(Date.now() + offsetMinutes * 60000 + days * 86400000).toISOString().slice(0, 10);

describe('a read replica', { skip }, () => {
  let primary, replica, node, dir, demo, token;
  const api = async (method, p, body) => {
    const r = await fetch(`${demo.base_url}${p}`, {
      method,
      headers: { 'content-type': 'application/json', 'accept-language': 'en', 'x-sp-auth-token': `Bearer ${token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
  const statement = async () => {
    const r = await api('GET', `/statements?${new URLSearchParams({ currency: 'XAF', from: localDate(-1), to: localDate(1) })}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.data;
  };
  // A sandbox collection of `amount`, COMPLETED as the primary says.
  const collected = async (amount) => {
    const c = await api('POST', '/collection/intent', {
      amount, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR', channel: 'PROVIDER',
      customer_wallet: demo.sandbox.msisdn.success, description: 'replica e2e' });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    const ref = c.body.data.transaction_reference;
    assert.equal((await api('POST', '/collection/execute', { transaction_reference: ref })).status, 200);
    const done = await waitFor(async () =>
      (await api('POST', '/collection/status', { transaction_reference: ref })).body.data.status === 'COMPLETED');
    assert.ok(done, 'the collection completed');
    return ref;
  };
  const caughtUp = async () => assert.ok(await waitFor(() => replica.caughtUp(), 30000), 'the replica caught up');

  before(async () => {
    primary = await startCluster();
    replica = await startReplica(primary);
    dir = mkdtempSync(path.join(tmpdir(), 'sika-replica-'));
    const demoFile = path.join(dir, 'demo.json');
    const port = await freePort();
    node = await spawnServe({ port, dsn: primary.dsn, publicUrl: `http://127.0.0.1:${port}`,
      args: ['--demo', demoFile, '--set', `database.read_url=${replica.dsn}`, '--set', 'log.access=false',
        '--set', 'payments.sandbox_delay_ms=0'],
      ready: () => existsSync(demoFile) });
    demo = JSON.parse(readFileSync(demoFile, 'utf8'));
    token = await merchantToken({ demo, authUrl: demo.auth_url });
  });

  after(async () => {
    if (node) {
      node.child.kill('SIGTERM');
      await node.exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (replica) await replica.destroy();
    if (primary) await primary.destroy();
  });

  test('statements and the dashboard list read from the replica, and catch up with it', async () => {
    await collected(4000);
    await caughtUp();
    const before = await statement();
    assert.ok(before.movements.length >= 1, 'the first collection is in the statement');

    replica.pauseReplay();
    const late = await collected(7000);  // the primary answers: COMPLETED
    const stale = await statement();
    assert.equal(stale.closing_balance, before.closing_balance, 'the paused replica does not know the new collection');
    assert.equal(stale.movements.length, before.movements.length);

    let browser;
    if (!noBrowser) {
      browser = await launchBrowser();
      const context = await browser.newContext();
      const page = await signInMerchant({ demo }, context);
      await page.goto(`${demo.dashboard.url}/transactions`);
      assert.equal(await page.locator(`text=${late}`).count(), 0, 'the list read from the paused replica');
      replica.resumeReplay();
      await caughtUp();
      await page.goto(`${demo.dashboard.url}/transactions`);
      assert.ok(await page.locator(`text=${late}`).count() >= 1, 'the list shows it once replayed');
      await browser.close();
    } else {
      replica.resumeReplay();
      await caughtUp();
    }
    const fresh = await statement();
    assert.ok(fresh.closing_balance > before.closing_balance, 'the statement has it once replayed');
    assert.equal(fresh.closing_balance, fresh.opening_balance + fresh.movements.reduce((s, m) => s + m.net, 0));
  });

  test('while the replica is down, the primary answers', async () => {
    const ref = await collected(2500);
    replica.stop('fast');
    try {
      const s = await statement();
      assert.equal(s.closing_balance, s.opening_balance + s.movements.reduce((a, m) => a + m.net, 0));
      const [[primaryCount]] = primary.psql(
        `SELECT count(*) FROM pay_transactions WHERE reference = '${ref}' AND status = 'COMPLETED'`);
      assert.equal(primaryCount, '1');
      assert.ok(s.movements.some((m) => m.reference === ref), 'the newest collection, read from the primary');
      assert.equal((await fetch(`http://127.0.0.1:${node.port}/readyz`)).status, 200, 'ready: the primary is up');
    } finally {
      replica.start();
    }
    checkLedger({ dsn: primary.dsn });
  });

  test('a replica beside an SQLite database is refused at start', async () => {
    const port = await freePort();
    await assert.rejects(
      spawnServe({ port, dsn: `sqlite://${path.join(dir, 'one.db')}`, publicUrl: `http://127.0.0.1:${port}`,
        args: ['--set', `database.read_url=${replica.dsn}`] }),
      /database\.read_url/);
  });
});
