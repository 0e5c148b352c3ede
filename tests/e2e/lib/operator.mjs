// What the operator tests share: each connector's configuration pointed at its double
// (tests/e2e/doubles/, whose default credentials these are), the live demo merchant's token, and a
// JSON client of the gateway on one node. docs/operators.md lists every key.
import assert from 'node:assert/strict';
import { mtnConnector } from './server.mjs';

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
