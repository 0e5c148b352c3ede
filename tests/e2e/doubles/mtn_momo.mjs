#!/usr/bin/env node
// A double of the MTN Mobile Money Open API (Collection, Disbursement, refunds), run as its own
// process over real HTTP, for the connector's tests. It follows MTN's published API
// (momodeveloper.mtn.com, docs/operators.md) and refuses what MTN refuses:
//   - a missing or wrong Ocp-Apim-Subscription-Key: 401 (the API gateway's answer);
//   - a token only from POST /{product}/token/ with Basic apiUser:apiKey, valid `token_ttl` s,
//     for that product only; a missing, foreign or expired Bearer: 401;
//   - X-Reference-Id not a UUID version 4: 400; a reference used before: 409 RESOURCE_ALREADY_EXIST;
//   - X-Target-Environment other than the configured one: 403 NOT_ALLOWED_TARGET_ENVIRONMENT;
//   - amount not a string of a positive amount, currency not the environment's, payerMessage or
//     payeeNote over 160 characters: 400 (or 500 INVALID_CURRENCY as MTN answers);
//   - an X-Callback-Url whose host is not the API user's providerCallbackHost: 400
//     INVALID_CALLBACK_URL_HOST;
//   - status queries over `status_rps` per second (all products): 429.
// The payer's (payee's) number decides the outcome, as in MTN's sandbox, by its last three digits:
//   450 FAILED (INTERNAL_PROCESSING_ERROR), 451 REJECTED (APPROVAL_REJECTED), 452 EXPIRED,
//   453 PENDING then SUCCESSFUL after `late_success_ms`, 454 PENDING for ever,
//   455 FAILED (NOT_ENOUGH_FUNDS), 456 FAILED (PAYER_NOT_FOUND), any other SUCCESSFUL after
//   `settle_ms`.
// When a payment reaches its final state the double calls the X-Callback-Url back (PUT, the
// status body) unless told otherwise.
//
// Control (test code only) on a second port, `--control-port`:
//   GET  /stats                     counters (tokens, requests per route, status queries and the
//                                   most in any one second, 429s, callbacks)
//   POST /behaviour {…}             latency_ms, fail_next (n answers of 500 before any work),
//                                   hang_after_accept (n initiations recorded, then never
//                                   answered), callbacks: "once" | "none" | "twice" | "late",
//                                   late_callback_ms, settle_ms, late_success_ms, down (true:
//                                   the API port refuses connections; false: it listens again)
//   GET  /payments?externalId=…     the payments held (of that externalId), with their referenceId
//   GET  /payments/{ref}            a payment as the double holds it
//   POST /payments/{ref}/complete {status, reason}   moves a PENDING payment to its final state
//   POST /payments/{ref}/status {status, reason}     sets a payment's status whatever it was (the
//                                   operator's books say otherwise from now on; no callback)
//   POST /payments/{ref}/callback   sends its callback again
//   POST /reset                     forgets payments and counters
import { randomBytes } from 'node:crypto';
import { args, sender, readBody, Counters, RateWindow, postJson, callBack, routeTable, serve } from './common.mjs';

const config = {
  host: args.host || '127.0.0.1',
  port: Number(args.port || 0),
  controlPort: Number(args['control-port'] || 0),
  environment: args['target-environment'] || 'mtncameroon',
  currency: args.currency || 'XAF',
  decimals: Number(args.decimals || 0),
  tokenTtl: Number(args['token-ttl'] || 3600),
  statusRps: Number(args['status-rps'] || 10),
  products: {
    collection: {
      subscriptionKey: args['collection-subscription-key'] || 'collection-subscription-key',
      apiUser: args['collection-api-user'] || 'a5b2c3d4-0000-4000-8000-00000000c011',
      apiKey: args['collection-api-key'] || 'collection-api-key',
    },
    disbursement: {
      subscriptionKey: args['disbursement-subscription-key'] || 'disbursement-subscription-key',
      apiUser: args['disbursement-api-user'] || 'a5b2c3d4-0000-4000-8000-00000000d150',
      apiKey: args['disbursement-api-key'] || 'disbursement-api-key',
    },
  },
  callbackHost: args['callback-host'] || '127.0.0.1',
  balance: BigInt(args.balance || '100000000'),
};

const behaviour = {
  latency_ms: 0,
  fail_next: 0,
  hang_after_accept: 0,
  callbacks: 'once',
  late_callback_ms: 2000,
  settle_ms: 20,
  late_success_ms: 30000,
  down: false,
};

const payments = new Map();  // reference -> payment
const tokens = new Map();    // access token -> {product, expires}
const counters = new Counters(() => ({
  tokens_issued: { collection: 0, disbursement: 0 },
  requests: {},
  status_queries: 0,
  status_max_per_second: 0,
  rejected_429: 0,
  callbacks_sent: 0,
  callbacks_failed: 0,
  initiations: 0,
}));
const statusWindow = new RateWindow(() => config.statusRps);

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

const send = sender('application/json; charset=utf-8', { typeWhenEmpty: false });
const problem = (code, message) => ({ code, message });
const count = (route) => counters.count(route);

// The API gateway's check of the product's subscription key.
function subscriptionOk(req, product) {
  return req.headers['ocp-apim-subscription-key'] === config.products[product].subscriptionKey;
}
function denySubscription(res) {
  send(res, 401, { statusCode: 401, message: 'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.' });
}

function issueToken(req, res, product) {
  count(`POST /${product}/token/`);
  if (!subscriptionOk(req, product)) return denySubscription(res);
  const auth = req.headers.authorization || '';
  const p = config.products[product];
  const expected = 'Basic ' + Buffer.from(`${p.apiUser}:${p.apiKey}`).toString('base64');
  if (auth !== expected) return send(res, 401, { error: 'login_failed' });
  const token = randomBytes(24).toString('base64url');
  tokens.set(token, { product, expires: Date.now() + config.tokenTtl * 1000 });
  counters.current.tokens_issued[product] += 1;
  send(res, 200, { access_token: token, token_type: 'access_token', expires_in: config.tokenTtl });
}

// Subscription key, Bearer token of the product, target environment. Answers and returns false
// when one is wrong.
function authorized(req, res, product) {
  if (!subscriptionOk(req, product)) { denySubscription(res); return false; }
  const m = /^Bearer (.+)$/.exec(req.headers.authorization || '');
  const t = m && tokens.get(m[1]);
  if (!t || t.product !== product) {
    send(res, 401, problem('NOT_AUTHORIZED', 'Access token is missing or invalid'));
    return false;
  }
  if (t.expires <= Date.now()) {
    tokens.delete(m[1]);
    send(res, 401, problem('NOT_AUTHORIZED', 'Access token expired'));
    return false;
  }
  if (req.headers['x-target-environment'] !== config.environment) {
    send(res, 403, problem('NOT_ALLOWED_TARGET_ENVIRONMENT', 'Access to target environment is forbidden.'));
    return false;
  }
  return true;
}

function validAmount(a) {
  if (typeof a !== 'string') return false;
  const re = config.decimals > 0 ? new RegExp(`^[0-9]+(\\.[0-9]{1,${config.decimals}})?$`) : /^[0-9]+$/;
  return re.test(a) && Number(a) > 0;
}

function outcomeFor(number) {
  const tail = String(number).slice(-3);
  switch (tail) {
    case '450': return { status: 'FAILED', reason: 'INTERNAL_PROCESSING_ERROR' };
    case '451': return { status: 'FAILED', reason: 'APPROVAL_REJECTED' };
    case '452': return { status: 'FAILED', reason: 'EXPIRED' };
    case '453': return { status: 'SUCCESSFUL', delay: behaviour.late_success_ms };
    case '454': return { status: 'PENDING' };
    case '455': return { status: 'FAILED', reason: 'NOT_ENOUGH_FUNDS' };
    case '456': return { status: 'FAILED', reason: 'PAYER_NOT_FOUND' };
    default: return { status: 'SUCCESSFUL' };
  }
}

function view(p) {
  const out = {
    amount: p.amount,
    currency: p.currency,
    externalId: p.externalId,
    [p.partyKey]: p.party,
    payerMessage: p.payerMessage,
    payeeNote: p.payeeNote,
    status: p.status,
  };
  if (p.financialTransactionId) out.financialTransactionId = p.financialTransactionId;
  if (p.kind === 'refund') out.referenceIdToRefund = p.referenceIdToRefund;
  if (p.status === 'FAILED') out.reason = p.reason;
  return out;
}

function callback(p, method = 'PUT') {
  if (!p.callbackUrl) return;
  postJson(p.callbackUrl, JSON.stringify(view(p)), { method, readAnswer: false }).then(({ status }) => {
    if (status) counters.current.callbacks_sent += 1;
    else counters.current.callbacks_failed += 1;
  });
}

function finish(p, status, reason) {
  if (p.status !== 'PENDING') return;
  p.status = status;
  if (p.kind === 'refund') {
    const original = payments.get(p.referenceIdToRefund);
    original.refunding -= p.minor;
    if (status === 'SUCCESSFUL') original.refunded += p.minor;
  }
  if (status === 'SUCCESSFUL') {
    p.financialTransactionId = String(1_000_000_000 + Math.floor(Math.random() * 8_999_999_999));
    if (p.kind === 'collection') config.balance += BigInt(p.minor);
  } else {
    p.reason = reason;
    if (p.kind !== 'collection') config.balance += BigInt(p.minor);
  }
  callBack(behaviour.callbacks, behaviour.late_callback_ms, () => callback(p), () => callback(p, 'POST'));
}

function schedule(p) {
  const o = outcomeFor(p.party.partyId);
  if (o.status === 'PENDING') return;
  const delay = o.delay ?? behaviour.settle_ms;
  setTimeout(() => finish(p, o.status, o.reason), delay);
}

function minorUnits(amount) {
  const [whole, frac = ''] = amount.split('.');
  return Number(whole) * 10 ** config.decimals + Number((frac + '0'.repeat(config.decimals)).slice(0, config.decimals) || 0);
}

// POST /collection/v1_0/requesttopay, /disbursement/v1_0/transfer, /disbursement/v2_0/refund.
async function initiate(req, res, product, kind, route) {
  count(route);
  const raw = await readBody(req);
  if (!authorized(req, res, product)) return;
  const ref = req.headers['x-reference-id'] || '';
  if (!UUID_V4.test(ref)) return send(res, 400, problem('INVALID_REFERENCE_ID', 'X-Reference-Id must be a UUID version 4'));
  if (payments.has(ref)) return send(res, 409, problem('RESOURCE_ALREADY_EXIST', 'Duplicated reference id. Creation of resource failed.'));
  let body;
  try { body = JSON.parse(raw); } catch { return send(res, 400, problem('INVALID_REQUEST', 'Request body is not valid JSON')); }
  if (!body || typeof body !== 'object') return send(res, 400, problem('INVALID_REQUEST', 'Request body must be an object'));
  if (!validAmount(body.amount)) return send(res, 400, problem('INVALID_AMOUNT', 'amount must be a string holding a positive amount'));
  if (body.currency !== config.currency) return send(res, 500, problem('INVALID_CURRENCY', 'Currency not supported.'));
  for (const f of ['payerMessage', 'payeeNote']) {
    if (body[f] !== undefined && (typeof body[f] !== 'string' || body[f].length > 160)) {
      return send(res, 400, problem('INVALID_REQUEST', `${f} must be a string of at most 160 characters`));
    }
  }
  if (typeof body.externalId !== 'string' || body.externalId === '') return send(res, 400, problem('INVALID_REQUEST', 'externalId is required'));
  const partyKey = kind === 'collection' ? 'payer' : 'payee';
  let party = body[partyKey];
  let minor = minorUnits(body.amount);
  if (kind === 'refund') {
    const original = payments.get(body.referenceIdToRefund);
    if (!original || original.kind !== 'collection') return send(res, 404, problem('RESOURCE_NOT_FOUND', 'Requested resource was not found.'));
    if (original.status !== 'SUCCESSFUL') return send(res, 400, problem('NOT_ALLOWED', 'The transaction to refund is not successful.'));
    if (minor > original.minor - original.refunded - original.refunding) return send(res, 400, problem('NOT_ALLOWED', 'Refund amount exceeds the refundable amount.'));
    party = original.party;
  } else if (!party || !['MSISDN', 'EMAIL', 'PARTY_CODE'].includes(party.partyIdType) || typeof party.partyId !== 'string' || !/^[0-9]{6,15}$/.test(party.partyId)) {
    return send(res, 400, problem('INVALID_REQUEST', `${partyKey} must be {partyIdType: MSISDN, partyId: digits}`));
  }
  const callbackUrl = req.headers['x-callback-url'];
  if (callbackUrl) {
    let host = '';
    try { host = new URL(callbackUrl).hostname; } catch {}
    if (host !== config.callbackHost) return send(res, 400, problem('INVALID_CALLBACK_URL_HOST', 'Callback URL with different host is not allowed.'));
  }
  if (kind !== 'collection') {
    if (config.balance < BigInt(minor)) {
      const p = { kind, ref, amount: body.amount, minor, currency: body.currency, externalId: body.externalId, partyKey, party, payerMessage: body.payerMessage, payeeNote: body.payeeNote, status: 'FAILED', reason: 'NOT_ENOUGH_FUNDS', callbackUrl, refunded: 0, refunding: 0, referenceIdToRefund: body.referenceIdToRefund };
      payments.set(ref, p);
      counters.current.initiations += 1;
      return send(res, 202);
    }
    config.balance -= BigInt(minor);
  }
  const p = { kind, ref, amount: body.amount, minor, currency: body.currency, externalId: body.externalId, partyKey, party, payerMessage: body.payerMessage, payeeNote: body.payeeNote, status: 'PENDING', callbackUrl, refunded: 0, refunding: 0, referenceIdToRefund: body.referenceIdToRefund, created: Date.now() };
  payments.set(ref, p);
  counters.current.initiations += 1;
  if (kind === 'refund') payments.get(body.referenceIdToRefund).refunding += minor;
  schedule(p);
  if (behaviour.hang_after_accept > 0) { behaviour.hang_after_accept -= 1; return; }  // recorded, never answered
  send(res, 202);
}

function statusQuery(req, res, product, kind, ref, route) {
  count(route);
  if (!authorized(req, res, product)) return;
  const stats = counters.current;
  if (!statusWindow.take()) {
    stats.rejected_429 += 1;
    return send(res, 429, { statusCode: 429, message: 'Rate limit is exceeded. Try again in 1 seconds.' }, { 'Retry-After': '1' });
  }
  stats.status_queries += 1;
  stats.status_max_per_second = Math.max(stats.status_max_per_second, statusWindow.count);
  const p = payments.get(ref);
  if (!p || p.kind !== kind) return send(res, 404, problem('RESOURCE_NOT_FOUND', 'Requested resource was not found.'));
  send(res, 200, view(p));
}

const routes = [
  ['POST', /^\/(collection|disbursement)\/token\/?$/, (req, res, m) => issueToken(req, res, m[1])],
  ['POST', /^\/collection\/v1_0\/requesttopay$/, (req, res) => initiate(req, res, 'collection', 'collection', 'POST requesttopay')],
  ['GET', /^\/collection\/v1_0\/requesttopay\/([^/]+)$/, (req, res, m) => statusQuery(req, res, 'collection', 'collection', m[1], 'GET requesttopay')],
  ['POST', /^\/disbursement\/v1_0\/transfer$/, (req, res) => initiate(req, res, 'disbursement', 'transfer', 'POST transfer')],
  ['GET', /^\/disbursement\/v1_0\/transfer\/([^/]+)$/, (req, res, m) => statusQuery(req, res, 'disbursement', 'transfer', m[1], 'GET transfer')],
  ['POST', /^\/disbursement\/v2_0\/refund$/, (req, res) => initiate(req, res, 'disbursement', 'refund', 'POST refund')],
  ['GET', /^\/disbursement\/v1_0\/refund\/([^/]+)$/, (req, res, m) => statusQuery(req, res, 'disbursement', 'refund', m[1], 'GET refund')],
  ['GET', /^\/(collection|disbursement)\/v1_0\/account\/balance$/, (req, res, m) => {
    count(`GET ${m[1]} balance`);
    if (!authorized(req, res, m[1])) return;
    const whole = config.balance / BigInt(10 ** config.decimals);
    send(res, 200, { availableBalance: String(whole), currency: config.currency });
  }],
  ['GET', /^\/collection\/v1_0\/accountholder\/msisdn\/([^/]+)\/basicuserinfo$/, (req, res, m) => {
    count('GET collection basicuserinfo');
    if (!authorized(req, res, 'collection')) return;
    if (m[1].endsWith('456')) return send(res, 404, problem('RESOURCE_NOT_FOUND', 'Requested resource was not found.'));
    send(res, 200, { given_name: 'Awa', family_name: 'Mbarga', name: 'Awa Mbarga', locale: 'fr', gender: 'FEMALE', status: 'ACTIVE' });
  }],
  ['GET', /^\/(collection|disbursement)\/v1_0\/accountholder\/msisdn\/([^/]+)\/active$/, (req, res, m) => {
    count(`GET ${m[1]} accountholder`);
    if (!authorized(req, res, m[1])) return;
    send(res, 200, { result: !m[2].endsWith('456') });
  }],
];

// The control port's own routes (GET /stats, POST /reset and /behaviour are common.mjs's).
const controlRoutes = routeTable([
  ['GET', /^\/payments$/, (req, res, m, body, url) => {
    const externalId = url.searchParams.get('externalId');
    const list = [...payments.values()].filter((p) => !externalId || p.externalId === externalId)
      .map((p) => ({ referenceId: p.ref, kind: p.kind, ...view(p) }));
    send(res, 200, list);
  }],
  ['GET', /^\/payments\/([^/]+)$/, (req, res, m) => {
    const p = payments.get(m[1]);
    return p ? send(res, 200, { kind: p.kind, ...view(p) }) : send(res, 404, {});
  }],
  ['POST', /^\/payments\/([^/]+)\/complete$/, (req, res, m, body) => {
    const p = payments.get(m[1]);
    if (!p) return send(res, 404, {});
    finish(p, body.status || 'SUCCESSFUL', body.reason);
    return send(res, 200, view(p));
  }],
  ['POST', /^\/payments\/([^/]+)\/status$/, (req, res, m, body) => {
    // The operator's books say otherwise from now on (a reversal, a late success), whatever the
    // payment's state: no callback is sent.
    const p = payments.get(m[1]);
    if (!p) return send(res, 404, {});
    p.status = body.status;
    p.reason = body.reason;
    return send(res, 200, view(p));
  }],
  ['POST', /^\/payments\/([^/]+)\/callback$/, (req, res, m, body) => {
    const p = payments.get(m[1]);
    if (!p) return send(res, 404, {});
    callback(p, body.method || 'PUT');
    return send(res, 200, {});
  }],
], { notFound: (req, res) => send(res, 404, {}) });

await serve({
  host: config.host, port: config.port, controlPort: config.controlPort, send, behaviour,
  api: routeTable(routes, {
    notAllowed: (req, res) => { req.resume(); send(res, 405, problem('METHOD_NOT_ALLOWED', 'Method not allowed')); },
    notFound: (req, res) => { req.resume(); send(res, 404, { statusCode: 404, message: 'Resource not found' }); },
  }),
  fail: (res) => send(res, 500, problem('INTERNAL_PROCESSING_ERROR', 'An internal error occurred while processing.')),
  control: controlRoutes,
  stats: () => counters.current,
  reset: () => { payments.clear(); counters.reset(); },
});
