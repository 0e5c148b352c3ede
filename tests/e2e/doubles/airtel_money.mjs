#!/usr/bin/env node
// A double of the Airtel Money Open API (collections, disbursements, refunds, KYC), run as its own
// process over real HTTP, for the connector's tests. It follows Airtel's published API
// (developers.airtel.africa, docs/operators.md) and refuses what Airtel refuses:
//   - a token only from POST /auth/oauth2/token with JSON {client_id, client_secret, grant_type:
//     client_credentials}, valid `token-ttl` s (expires_in is a string, as Airtel writes it); a
//     missing, unknown or expired Bearer: 401;
//   - X-Country / X-Currency other than the account's: 400 ROUTER006 / ROUTER112;
//   - a subscriber's (payee's) msisdn with the country code or of the wrong length: 400 ESB000036;
//     an amount that is not a positive number with at most the currency's decimals: 400 ESB000008;
//   - a transaction id used before: 400 ESB000041 (collections), DP00900001017 (disbursements);
//   - a disbursement whose PIN does not decrypt (RSA PKCS#1 v1.5, with the key pair it makes at
//     start) to the account's PIN: 400 ROUTER116 (undecryptable) or ROUTER115 (wrong PIN);
//   - status queries over `status-rps` per second: 429.
// It prints {api, control, id, public_key} on its first stdout line: public_key is base64 DER
// (SubjectPublicKeyInfo), what Airtel gives a merchant for the PIN.
// The subscriber's national number decides the outcome by its last three digits:
//   collections: 450 TF DP00800001009 (do not honour), 451 TF DP00800001002 (wrong PIN), 452 TF
//   DP00800001024 (timed out), 453 TA (ambiguous) then TS after `ambiguous_ms`, 454 TIP for ever,
//   455 TF DP00800001007 (not enough balance), 456 TF DP00800001010 (barred / not registered),
//   457 TF without a code, 458 TF DP00800001003 (limit); any other TS after `settle_ms`.
//   disbursements: 556 refused at once DP00900001012 (invalid number), 553 DP00900001000
//   (ambiguous) then TS, 554 DP00900001006 for ever, 555 TF DP00900001007; any other TS.
// When a payment reaches its final state the double POSTs Airtel's callback ({transaction: {id,
// message, status_code, airtel_money_id}}) to the registered callback URL, unless told otherwise.
//
// Control (test code only) on a second port:
//   GET  /stats                     counters
//   POST /behaviour {…}             latency_ms, fail_next (n answers of 500), hang_after_accept (n
//                                   initiations recorded, never answered), callbacks: "once" |
//                                   "none" | "twice" | "late", late_callback_ms, settle_ms,
//                                   ambiguous_ms, callback_url, down (true: the API port refuses
//                                   connections; false: it listens again)
//   GET  /payments?id=…             the payments held (of that transaction id)
//   GET  /payments/{id}             one
//   POST /payments/{id}/complete {status_code, response_code}   moves a pending payment
//   POST /payments/{id}/callback    sends its callback again
//   POST /reset                     forgets payments and counters
import crypto from 'node:crypto';
import { args, sender, Counters, RateWindow, postJson, callBack, routeTable, serve } from './common.mjs';

const config = {
  host: '127.0.0.1',
  port: Number(args.port || 0),
  controlPort: Number(args['control-port'] || 0),
  country: args.country || 'GA',
  currency: args.currency || 'XAF',
  dialling: args.dialling || '241',
  msisdnLength: Number(args['msisdn-length'] || 8),
  decimals: Number(args.decimals || 0),
  clientId: args['client-id'] || 'airtel-client-id',
  clientSecret: args['client-secret'] || 'airtel-client-secret',
  pin: args.pin || '4321',
  tokenTtl: Number(args['token-ttl'] || 180),
  statusRps: Number(args['status-rps'] || 1000),
  balance: Number(args.balance || 100000000),
};

const behaviour = {
  latency_ms: 0, fail_next: 0, hang_after_accept: 0, callbacks: 'once', late_callback_ms: 2000,
  settle_ms: 20, ambiguous_ms: 1500, callback_url: args['callback-url'] || '', down: false,
};

const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const publicKeyB64 = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

const payments = new Map();  // transaction id -> payment
const tokens = new Map();    // access token -> expiry (ms)
const counters = new Counters(() => ({ tokens_issued: 0, requests: {}, status_queries: 0, rejected_429: 0,
  callbacks_sent: 0, callbacks_failed: 0, initiations: 0, duplicates: 0, refused: {}, header_refusals: 0, refunds: 0 }));
const statusWindow = new RateWindow(() => config.statusRps);

const send = sender();
const envelope = (http, { success, result_code, response_code, message }, data) => ({
  ...(data ? { data } : {}),
  status: { code: String(http), message: message || (success ? 'SUCCESS' : 'FAILED'), result_code,
    ...(response_code ? { response_code } : {}), success },
});
function refuse(res, http, result_code, message, response_code) {
  const stats = counters.current;
  stats.refused[result_code || response_code] = (stats.refused[result_code || response_code] || 0) + 1;
  send(res, http, envelope(http, { success: false, result_code, response_code, message }));
}
const count = (route) => counters.count(route);

function issueToken(req, res, raw) {
  count('POST token');
  let body;
  try { body = JSON.parse(raw); } catch { body = null; }
  if (!body || body.grant_type !== 'client_credentials' || body.client_id !== config.clientId ||
      body.client_secret !== config.clientSecret) {
    return send(res, 401, { error: 'invalid_client', error_description: 'Invalid client credentials' });
  }
  const token = crypto.randomBytes(24).toString('base64url');
  tokens.set(token, Date.now() + config.tokenTtl * 1000);
  counters.current.tokens_issued += 1;
  send(res, 200, { access_token: token, expires_in: String(config.tokenTtl), token_type: 'bearer' });
}

// Bearer, X-Country, X-Currency. Answers and returns false when one is wrong.
function authorized(req, res) {
  const m = /^Bearer (.+)$/.exec(req.headers.authorization || '');
  const exp = m && tokens.get(m[1]);
  if (!exp || exp <= Date.now()) {
    if (exp) tokens.delete(m[1]);
    send(res, 401, { error: 'invalid_token', error_description: 'Access token is missing, invalid or expired' });
    return false;
  }
  if (req.headers['x-country'] !== config.country) {
    counters.current.header_refusals += 1;
    refuse(res, 400, 'ROUTER006', 'Invalid country code provided.');
    return false;
  }
  if (req.headers['x-currency'] !== config.currency) {
    counters.current.header_refusals += 1;
    refuse(res, 400, 'ROUTER112', 'Invalid currency provided.');
    return false;
  }
  return true;
}

function validAmount(a) {
  if (typeof a !== 'number' || !(a > 0)) return false;
  const scaled = a * 10 ** config.decimals;
  return Math.abs(scaled - Math.round(scaled)) < 1e-6;
}
const validMsisdn = (m) => typeof m === 'string' && new RegExp(`^[0-9]{${config.msisdnLength}}$`).test(m);

function collectionOutcome(msisdn) {
  switch (msisdn.slice(-3)) {
    case '450': return { status: 'TF', code: 'DP00800001009' };
    case '451': return { status: 'TF', code: 'DP00800001002' };
    case '452': return { status: 'TF', code: 'DP00800001024' };
    case '453': return { status: 'TS', ambiguous: true };
    case '454': return { status: 'TIP' };
    case '455': return { status: 'TF', code: 'DP00800001007' };
    case '456': return { status: 'TF', code: 'DP00800001010' };
    case '457': return { status: 'TF', code: '' };
    case '458': return { status: 'TF', code: 'DP00800001003' };
    default: return { status: 'TS' };
  }
}

function view(p) {
  return { airtel_money_id: p.airtel_money_id, id: p.id, message: p.message, status: p.status };
}
function statusCode(p) {
  if (p.status === 'TS') return p.kind === 'collection' ? 'DP00800001001' : 'DP00900001001';
  if (p.status === 'TF') return p.code;
  return p.kind === 'collection' ? (p.status === 'TA' ? 'DP00800001000' : 'DP00800001006')
    : (p.status === 'TA' ? 'DP00900001000' : 'DP00900001006');
}

function callback(p) {
  if (!behaviour.callback_url) return;
  const body = JSON.stringify({ transaction: { id: p.id, message: p.message, status_code: p.status,
    airtel_money_id: p.airtel_money_id } });
  postJson(behaviour.callback_url, body, { readAnswer: false }).then(({ status }) => {
    if (status) counters.current.callbacks_sent += 1;
    else counters.current.callbacks_failed += 1;
  });
}

function finish(p, status, code) {
  if (p.status === 'TS' || p.status === 'TF') return;
  p.status = status;
  p.code = status === 'TF' ? (code ?? '') : '';
  p.message = status === 'TS' ? 'Transaction Success' : 'Transaction Failed';
  if (status === 'TS' && p.kind === 'collection') config.balance += p.minor;
  if (status === 'TF' && p.kind === 'disbursement') config.balance += p.minor;
  callBack(behaviour.callbacks, behaviour.late_callback_ms, () => callback(p));
}

function later(p, o) {
  if (o.status === 'TIP') return;
  if (o.ambiguous) {
    setTimeout(() => { if (p.status === 'TIP') p.status = 'TA'; }, behaviour.settle_ms);
    setTimeout(() => finish(p, o.status, o.code), behaviour.ambiguous_ms);
    return;
  }
  setTimeout(() => finish(p, o.status, o.code), behaviour.settle_ms);
}

async function collect(req, res, raw) {
  count('POST /merchant/v1/payments/');
  if (!authorized(req, res)) return;
  let b;
  try { b = JSON.parse(raw); } catch { return refuse(res, 400, 'ESB000008', 'Field validation: body is not JSON'); }
  const sub = b?.subscriber, tx = b?.transaction;
  if (typeof b?.reference !== 'string' || !b.reference || !sub || !tx) return refuse(res, 400, 'ESB000008', 'Field validation');
  if (sub.country !== config.country || tx.country !== config.country) return refuse(res, 400, 'ESB000034', 'Invalid Country Name');
  if (sub.currency !== config.currency || tx.currency !== config.currency) return refuse(res, 400, 'ESB000035', 'Invalid Currency Code');
  if (!validMsisdn(sub.msisdn)) return refuse(res, 400, 'ESB000036', `Invalid MSISDN Length. MSISDN Length should be ${config.msisdnLength}`);
  if (!validAmount(tx.amount)) return refuse(res, 400, 'ESB000008', 'Field validation: amount');
  if (typeof tx.id !== 'string' || !/^[A-Za-z0-9]{4,64}$/.test(tx.id)) return refuse(res, 400, 'ESB000008', 'Field validation: id');
  if (payments.has(tx.id)) { counters.current.duplicates += 1; return refuse(res, 400, 'ESB000041', 'External Transaction ID already exists.'); }
  const p = { kind: 'collection', id: tx.id, msisdn: sub.msisdn, amount: tx.amount, minor: Math.round(tx.amount * 10 ** config.decimals),
    reference: b.reference, status: 'TIP', code: '', message: 'In process',
    airtel_money_id: `MP${Date.now().toString(36).toUpperCase()}${crypto.randomBytes(3).toString('hex').toUpperCase()}`, refunded: false };
  payments.set(p.id, p);
  counters.current.initiations += 1;
  later(p, collectionOutcome(p.msisdn));
  if (behaviour.hang_after_accept > 0) { behaviour.hang_after_accept -= 1; return; }  // recorded, never answered
  send(res, 200, envelope(200, { success: true, result_code: 'ESB000010', response_code: 'DP00800001006' },
    { transaction: { id: p.id, status: 'Success.' } }));
}

// RSA PKCS#1 v1.5 decryption done by hand over a raw RSA operation (Node refuses PKCS#1 v1.5
// private decryption by default); null when the block is not a valid type-2 padding.
function decryptPin(b64) {
  try {
    const block = crypto.privateDecrypt({ key: privateKey, padding: crypto.constants.RSA_NO_PADDING }, Buffer.from(b64, 'base64'));
    if (block[0] !== 0 || block[1] !== 2) return null;
    const sep = block.indexOf(0, 2);
    if (sep < 10) return null;
    return block.subarray(sep + 1).toString('utf8');
  } catch { return null; }
}

async function disburse(req, res, raw) {
  count('POST /standard/v2/disbursements/');
  if (!authorized(req, res)) return;
  let b;
  try { b = JSON.parse(raw); } catch { return refuse(res, 400, 'ESB000008', 'Field validation: body is not JSON'); }
  const payee = b?.payee, tx = b?.transaction;
  if (!payee || !tx || typeof b.reference !== 'string' || typeof b.pin !== 'string') return refuse(res, 400, 'ESB000008', 'Field validation');
  const pin = decryptPin(b.pin);
  if (pin === null) return refuse(res, 400, 'ROUTER116', 'The encrypted value of the pin is incorrect. Kindly re-check the encryption mechanism.');
  if (pin !== config.pin) return refuse(res, 400, 'ROUTER115', 'Pin you have entered is incorrect.');
  if (!validMsisdn(payee.msisdn)) return refuse(res, 400, 'ESB000036', `Invalid MSISDN Length. MSISDN Length should be ${config.msisdnLength}`);
  if (!validAmount(tx.amount) || tx.type !== 'B2C' || typeof tx.id !== 'string' || !/^[A-Za-z0-9]{4,64}$/.test(tx.id)) {
    return refuse(res, 400, 'ESB000008', 'Field validation');
  }
  if (payments.has(tx.id)) { counters.current.duplicates += 1; return refuse(res, 200, undefined, 'Duplicate transaction Id.', 'DP00900001017'); }
  const minor = Math.round(tx.amount * 10 ** config.decimals);
  const tail = payee.msisdn.slice(-3);
  const p = { kind: 'disbursement', id: tx.id, msisdn: payee.msisdn, amount: tx.amount, minor, reference: b.reference,
    status: 'TIP', code: '', message: 'In process', airtel_money_id: `DB${crypto.randomBytes(5).toString('hex').toUpperCase()}` };
  payments.set(p.id, p);
  counters.current.initiations += 1;
  let answer;
  if (tail === '556') {
    p.status = 'TF'; p.code = 'DP00900001012'; p.message = 'Mobile number entered is incorrect.';
    answer = { success: false, response_code: 'DP00900001012', result_code: 'ESB000011', message: p.message };
  } else if (tail === '555' || config.balance < minor) {
    p.status = 'TF'; p.code = 'DP00900001007'; p.message = 'Not enough funds in account to complete the transaction.';
    answer = { success: false, response_code: 'DP00900001007', result_code: 'ESB000011', message: p.message };
  } else {
    config.balance -= minor;
    if (tail === '554') answer = { success: true, response_code: 'DP00900001006', result_code: 'ESB000010' };
    else if (tail === '553') {
      p.status = 'TA';
      setTimeout(() => finish(p, 'TS'), behaviour.ambiguous_ms);
      answer = { success: false, response_code: 'DP00900001000', result_code: 'ESB000010' };
    } else {
      finish(p, 'TS');
      answer = { success: true, response_code: 'DP00900001001', result_code: 'ESB000010' };
    }
  }
  if (behaviour.hang_after_accept > 0) { behaviour.hang_after_accept -= 1; return; }
  send(res, 200, envelope(200, answer, { transaction: { reference_id: b.reference, airtel_money_id: p.airtel_money_id, id: p.id, status: p.status, message: p.message } }));
}

function enquiry(req, res, kind, id) {
  count(`GET ${kind} status`);
  if (!authorized(req, res)) return;
  if (!statusWindow.take()) {
    counters.current.rejected_429 += 1;
    return send(res, 429, { error: 'rate_limited', message: 'Too many requests' });
  }
  counters.current.status_queries += 1;
  const p = payments.get(id);
  if (!p || p.kind !== kind) return refuse(res, 200, 'ESB000045', 'No Transaction Found With Provided Transaction Id.');
  send(res, 200, envelope(200, { success: true, result_code: 'ESB000010', response_code: statusCode(p) }, { transaction: view(p) }));
}

async function refund(req, res, raw) {
  count('POST /standard/v2/payments/refund');
  if (!authorized(req, res)) return;
  let b;
  try { b = JSON.parse(raw); } catch { return refuse(res, 400, 'ESB000008', 'Field validation'); }
  const amid = b?.transaction?.airtel_money_id;
  const p = [...payments.values()].find((x) => x.kind === 'collection' && x.airtel_money_id === amid);
  if (!p) return refuse(res, 400, 'ESB000045', 'No Transaction Found With Provided Transaction Id.');
  if (p.status !== 'TS' || p.refunded) return refuse(res, 400, 'ESB000011', 'Failed');
  p.refunded = true;
  counters.current.refunds += 1;
  config.balance -= p.minor;
  send(res, 200, envelope(200, { success: true, result_code: 'ESB000010' }, { transaction: { airtel_money_id: amid, status: 'SUCCESS' } }));
}

function user(req, res, msisdn) {
  count('GET user');
  if (!authorized(req, res)) return;
  if (!validMsisdn(msisdn)) return refuse(res, 400, 'ESB000036', 'Invalid MSISDN Length');
  if (msisdn.endsWith('456') || msisdn.endsWith('556')) return refuse(res, 200, undefined, 'User not found', 'DP02200000002');
  send(res, 200, envelope(200, { success: true, result_code: 'ESB000010', response_code: 'DP02200000001' },
    { first_name: 'Ines', last_name: 'Mba', msisdn, is_barred: false, is_pin_set: true, grade: 'SUBS', reg_status: 'SUBS' }));
}

const routes = [
  ['POST', /^\/auth\/oauth2\/token$/, (req, res, m, raw) => issueToken(req, res, raw)],
  ['POST', /^\/merchant\/v1\/payments\/$/, (req, res, m, raw) => collect(req, res, raw)],
  ['GET', /^\/standard\/v1\/payments\/([^/]+)$/, (req, res, m) => enquiry(req, res, 'collection', m[1])],
  ['POST', /^\/standard\/v2\/payments\/refund$/, (req, res, m, raw) => refund(req, res, raw)],
  ['POST', /^\/standard\/v2\/disbursements\/$/, (req, res, m, raw) => disburse(req, res, raw)],
  ['GET', /^\/standard\/v2\/disbursements\/([^/]+)$/, (req, res, m) => enquiry(req, res, 'disbursement', m[1])],
  ['GET', /^\/standard\/v1\/users\/([^/]+)$/, (req, res, m) => user(req, res, m[1])],
];

// The control port's own routes (GET /stats, POST /reset and /behaviour are common.mjs's).
const controlRoutes = routeTable([
  ['GET', /^\/payments$/, (req, res, m, body, url) => {
    const id = url.searchParams.get('id');
    send(res, 200, [...payments.values()].filter((p) => !id || p.id === id).map((p) => ({ kind: p.kind, msisdn: p.msisdn, amount: p.amount, code: p.code, refunded: p.refunded, ...view(p) })));
  }],
  ['GET', /^\/payments\/([^/]+)$/, (req, res, m) => {
    const p = payments.get(m[1]);
    return p ? send(res, 200, { kind: p.kind, msisdn: p.msisdn, ...view(p) }) : send(res, 404, {});
  }],
  ['POST', /^\/payments\/([^/]+)\/complete$/, (req, res, m, body) => {
    const p = payments.get(m[1]);
    if (!p) return send(res, 404, {});
    finish(p, body.status_code || 'TS', body.response_code);
    return send(res, 200, view(p));
  }],
  ['POST', /^\/payments\/([^/]+)\/callback$/, (req, res, m) => {
    const p = payments.get(m[1]);
    if (!p) return send(res, 404, {});
    callback(p);
    return send(res, 200, {});
  }],
], { notFound: (req, res) => send(res, 404, {}) });

await serve({
  host: config.host, port: config.port, controlPort: config.controlPort, send, behaviour, readFirst: true,
  api: routeTable(routes, { notFound: (req, res) => send(res, 404, { error: 'not_found', message: 'Resource not found' }) }),
  fail: (res) => send(res, 500, envelope(500, { success: false, result_code: 'ESB000001', message: 'Something went wrong.' })),
  control: controlRoutes,
  stats: () => ({ ...counters.current, balance: config.balance }),
  reset: () => { payments.clear(); counters.reset(); },
  info: { public_key: publicKeyB64 },
});
