// What the operator tests share: each connector's configuration pointed at its double
// (tests/e2e/doubles/, whose default credentials these are), the live demo merchant's token, and a
// JSON client of the gateway on one node. docs/operators.md lists every key.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mtnConnector, startServer, startTwoNodes, checkLedger, sqlRows, waitFor, sleep } from './server.mjs';
import { startDouble } from '../doubles/spawn.mjs';

// Recovery asks soon and often, and operator health is judged on a short window, so that a lost
// callback is recovered, and an operator that is back is OPERATIONAL again, within a test's wait.
export const FAST_RECOVERY = ['--set', 'log.access=false', '--set', 'payments.recovery_delays_ms=400,800,1500',
  '--set', 'payments.recovery_interval_ms=100', '--set', 'payments.recovery_lease_ms=3000',
  '--set', 'payments.health_window_seconds=3', '--set', 'payments.health_recover_seconds=1'];

// After a kill -9: recovery asks soon, and the dead process's claims lapse after 2 s.
export const CRASH_RECOVERY = ['--set', 'log.access=false', '--set', 'payments.recovery_delays_ms=500,1000,2000',
  '--set', 'payments.recovery_interval_ms=100', '--set', 'payments.recovery_lease_ms=2000'];

const key = (instance, name, value) => ['--set', `connectors.${instance}.${name}=${value}`];

// The configuration { args, env } of the instances of `kind` pointed at `double`: plain keys by
// --set, credentials by the environment, as a deployment passes them. Status queries are allowed
// 100 per second (the doubles allow 1000 here; the recovery bench holds MTN's real 10).
//   mtn_momo      instance mtn_momo (Cameroon)
//   wave          instance wave (Côte d'Ivoire)
//   airtel_money  instance airtel_money (Gabon); options.pin, the disbursement PIN
//   orange_money  instances orange_money (Web Payment, Côte d'Ivoire) and orange_money_cm (Cameroon push)
export function connectorSetup(kind, double, options = {}) {
  const rate = (instance) => key(instance, 'status_queries_per_second', 100);
  switch (kind) {
    case 'mtn_momo':
      return mtnConnector(double.url, rate('mtn_momo'));
    case 'wave':
      return {
        args: [...key('wave', 'kind', 'wave'), ...key('wave', 'base_url', double.url), ...rate('wave')],
        env: { SIKA_CONNECTORS_WAVE_API_KEY: 'wave_ci_prod_test-key', SIKA_CONNECTORS_WAVE_WEBHOOK_SECRET: 'wave_ci_WHS_test-secret' },
      };
    case 'airtel_money':
      return {
        args: [...key('airtel_money', 'kind', 'airtel_money'), ...key('airtel_money', 'base_url', double.url),
          ...key('airtel_money', 'country', 'GA'), ...key('airtel_money', 'currency', 'XAF'), ...rate('airtel_money')],
        env: {
          SIKA_CONNECTORS_AIRTEL_MONEY_CLIENT_ID: 'airtel-client-id',
          SIKA_CONNECTORS_AIRTEL_MONEY_CLIENT_SECRET: 'airtel-client-secret',
          SIKA_CONNECTORS_AIRTEL_MONEY_PIN: options.pin ?? '4321',
          SIKA_CONNECTORS_AIRTEL_MONEY_PUBLIC_KEY: double.info.public_key,
        },
      };
    case 'orange_money':
      return {
        args: [...key('orange_money', 'kind', 'orange_money'), ...key('orange_money', 'base_url', double.url),
          ...key('orange_money', 'country', 'ci'), ...key('orange_money', 'flow', 'webpay'),
          ...key('orange_money', 'timeout_ms', 1000),
          ...key('orange_money_cm', 'kind', 'orange_money'), ...key('orange_money_cm', 'base_url', double.url),
          ...key('orange_money_cm', 'country', 'cm'), ...key('orange_money_cm', 'flow', 'push'),
          ...key('orange_money_cm', 'channel_msisdn', '699000001'), ...key('orange_money_cm', 'timeout_ms', 1000)],
        env: {
          SIKA_CONNECTORS_ORANGE_MONEY_CLIENT_ID: 'orange-client-id',
          SIKA_CONNECTORS_ORANGE_MONEY_CLIENT_SECRET: 'orange-client-secret',
          SIKA_CONNECTORS_ORANGE_MONEY_MERCHANT_KEY: 'orange-merchant-key',
          SIKA_CONNECTORS_ORANGE_MONEY_CM_CLIENT_ID: 'orange-client-id',
          SIKA_CONNECTORS_ORANGE_MONEY_CM_CLIENT_SECRET: 'orange-client-secret',
          SIKA_CONNECTORS_ORANGE_MONEY_CM_PIN: '2580',
          SIKA_CONNECTORS_ORANGE_MONEY_CM_X_AUTH_TOKEN: 'orange-x-auth-token',
        },
      };
    default:
      throw new Error(`no connector setup for ${kind}`);
  }
}

// An access token of the live demo merchant whose payments go through instance `connector`
// (demo.json live_merchants).
export async function liveToken(server, connector, scope = 'payments services countries providers') {
  const m = server.demo.live_merchants.find((x) => x.connector === connector);
  assert.ok(m, `a live merchant of ${connector}`);
  const r = await fetch(`${server.authUrl}/oauth/v2/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: m.client_id, client_secret: m.client_secret, scope }),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return body.access_token;
}

// post(path, body) -> { status, body }: the gateway of node `port` of `server` (its first node by
// default), with `token`.
export function gateway(server, token, port = server.port) {
  const base = server.baseUrl.replace(`:${server.port}/`, `:${port}/`);
  return async (path, body) => {
    const r = await fetch(base + path, { method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: r.status, body: await r.json() };
  };
}

// The availability of each provider as a merchant sees it (GET /provider/list): { code: availability }.
export async function availability(server, token) {
  const r = await fetch(`${server.baseUrl}/provider/list`, { headers: { authorization: `Bearer ${token}` } });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return Object.fromEntries(body.data.map((p) => [p.code, p.availability]));
}

// The operator tests' two nodes (one on SQLite) of `backend`, started with `args` too, pointed at a
// double of `kind` started with `options`: resolves to { double, nodes, server (the first node),
// token (the live merchant's), posts (a gateway client per node), stop() }. `callback(server)`,
// when given, is the behaviour that points the double's callbacks at the server.
export async function operatorNodes(backend, kind, { options = {}, callback, args = [] } = {}) {
  const double = await startDouble(kind, options);
  const setup = connectorSetup(kind, double);
  const nodes = await startTwoNodes({ backend, args: [...FAST_RECOVERY, ...setup.args, ...args], env: setup.env });
  const server = nodes.first;
  if (callback) await double.behave(callback(server));
  const token = await liveToken(server, kind);
  const posts = nodes.ports.map((port) => gateway(server, token, port));
  const stop = async () => {
    await nodes.stop();
    await double.stop();
  };
  return { double, nodes, server, token, posts, stop };
}

// collect(post, wallet, amount = 1500): creates and executes a collection of `provider` in
// `currency` described as `description`; resolves to its transaction_reference.
export function collector(provider, currency, description) {
  return async (post, wallet, amount = 1500) => {
    const intent = await post('/collection/intent', {
      amount, currency, provider, customer_wallet: wallet, transaction_uuid: randomUUID(), description,
    });
    assert.equal(intent.status, 200, JSON.stringify(intent.body));
    const reference = intent.body.data.transaction_reference;
    const executed = await post('/collection/execute', { transaction_reference: reference });
    assert.equal(executed.status, 200, JSON.stringify(executed.body));
    return reference;
  };
}

// A payment's record as the status route `path` answers it (200 asserted).
export async function statusOf(post, reference, path = '/collection/status') {
  const r = await post(path, { transaction_reference: reference });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data;
}

// Resolves to the payment's record once it is `status` (within `ms`), else to false.
export function until(post, reference, status, ms = 15000, path = '/collection/status') {
  return waitFor(async () => {
    const s = await statusOf(post, reference, path);
    return s.status === status && s;
  }, ms);
}

// The reference the operator knows a payment by.
export function providerReference(server, reference) {
  return sqlRows(server, `SELECT provider_reference FROM pay_transactions WHERE reference = '${reference}'`)[0][0];
}

// The outcomes of a payment's callbacks, in the order they came.
export function callbackOutcomes(server, reference) {
  return sqlRows(server, 'SELECT c.outcome FROM pay_callbacks c JOIN pay_transactions t ON t.id = c.transaction_id ' +
    `WHERE t.reference = '${reference}' ORDER BY c.id`).map(([o]) => o);
}

// The outcomes of recovery's status queries about a payment.
export function statusCheckOutcomes(server, reference) {
  return sqlRows(server, 'SELECT c.outcome FROM pay_status_checks c JOIN pay_transactions t ON ' +
    `t.id = c.transaction_id WHERE t.reference = '${reference}'`).map(([o]) => o);
}

// Asserts that recovery asked the operator about the payment and learnt it succeeded.
export function assertRecoveredByPolling(server, reference) {
  const checks = statusCheckOutcomes(server, reference);
  assert.ok(checks.includes('succeeded'), JSON.stringify(checks));
}

// `kill -9` of sika (on `backend`) while `count` collections are executed through `double`
// (connector `kind`, the live merchant of `live`): the double is slow to settle (payments stay
// pending at the kill) and slow to answer (some initiations are in flight), and what it sends while
// sika is down is lost. Collection i is of `provider` in `currency` from wallet(i), described as
// `description`; `callback(server)` points the double's callbacks at sika; `resume` is the
// double's behaviour once sika is down. After the restart, once none is PENDING (within `ms`),
// `check(rows)` asserts each row [reference, status, ...columns] of pay_transactions against the
// double and resolves to how many reached the operator (asserted > 0); then the ledger is checked.
// Stops sika and the double.
export async function crashWithPending(double, { backend, kind, live = kind, provider, currency, wallet, description,
  callback, resume = {}, columns = 'provider_reference', ms = 60000, count = 24 }, check) {
  try {
    await double.behave({ settle_ms: 2500, latency_ms: 150 });
    const setup = connectorSetup(kind, double);
    const start = (reuse) => startServer({ backend, reuse, env: setup.env, args: [...CRASH_RECOVERY, ...setup.args] });
    let server = await start();
    try {
      if (callback) await double.behave(callback(server));
      const post = gateway(server, await liveToken(server, live));
      const created = [];
      for (let i = 0; i < count; i++) {
        const intent = await post('/collection/intent', {
          amount: 1000 + i, currency, provider, customer_wallet: wallet(i), transaction_uuid: randomUUID(), description,
        });
        assert.equal(intent.status, 200, JSON.stringify(intent.body));
        created.push(intent.body.data.transaction_reference);
      }
      // Executes in flight when the kill lands: some sent, some on the wire, some not yet.
      const executing = created.map((reference) => post('/collection/execute', { transaction_reference: reference })
        .catch(() => null));
      await sleep(400);
      await server.crash();
      await Promise.all(executing);
      await double.behave({ latency_ms: 0, ...resume });
      server = await start(server);

      const rows = () => sqlRows(server, `SELECT reference, status, ${columns} FROM pay_transactions ` +
        `WHERE description = '${description}'`);
      await waitFor(async () => rows().every(([, status]) => status !== 'PENDING'), ms);
      const submitted = await check(rows());
      assert.ok(submitted > 0, 'some collections were executed before the kill');
      checkLedger(server);
    } finally {
      await server.stop();
    }
  } finally {
    await double.stop();
  }
}

// For crashWithPending's check: each row [reference, status, provider_reference] against what the
// double holds of it (held(provider_reference) resolves to a list): at most one; none while the
// row is INITIATED; else exactly one, whose outcome is the row's (outcome(held) is 'COMPLETED' or
// 'FAILED'). Resolves to how many the operator holds.
export async function assertHeldOnce(rows, held, outcome) {
  let submitted = 0;
  for (const [reference, status, providerRef] of rows) {
    const list = await held(providerRef);
    assert.ok(list.length <= 1, `${reference} held ${list.length} times at the operator`);
    if (status === 'INITIATED') {
      assert.equal(list.length, 0, `${reference} is INITIATED but the operator holds it`);
      continue;
    }
    submitted += 1;
    assert.equal(list.length, 1, `${reference} is ${status} but the operator never received it`);
    assert.equal(status, outcome(list[0]), `${reference}: operator says ${JSON.stringify(list[0])}`);
  }
  return submitted;
}
