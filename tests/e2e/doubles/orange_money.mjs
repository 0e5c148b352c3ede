#!/usr/bin/env node
// A double of Orange Money, run as its own process over real HTTP, for the connector's tests. It
// follows Orange's published APIs (docs/operators.md, "Orange Money") and refuses what they refuse:
//   Web Payment (developer.orange.com, om-webpay):
//   - POST /oauth/v3/token, Basic client_id:client_secret, form grant_type=client_credentials:
//     a Bearer valid `token_ttl` s; wrong credentials 401; a missing, unknown or expired Bearer on
//     any call: 401 {code: 42, "Expired credentials"} / {code: 41, "Invalid credentials"};
//   - POST /orange-money-webpay/{country}/v1/webpayment: merchant_key must be the account's (else
//     403), currency the country's (OUV on dev; else 400), order_id 1..30 characters (else 400),
//     amount a positive integer, return_url / cancel_url / notif_url absolute http(s) URLs, lang
//     fr|en: 201 {status, message, pay_token, payment_url, notif_token}. The same order_id while
//     its payment is INITIATED gets that payment again (the double's assumption, on the
//     certification checklist). A payment is INITIATED until the customer opens payment_url
//     (PENDING), then SUCCESS / FAILED; unpaid after `webpay_ttl_ms` it is EXPIRED;
//   - GET {payment_url}?outcome=SUCCESS|FAILED|PENDING (the customer on Orange's page): the outcome,
//     the notification POSTed to notif_url {status, notif_token, txnid}, and a 302 to return_url;
//   - POST .../transactionstatus {order_id, amount, pay_token}: 201 {status, order_id, txnid};
//     a pay_token or amount not of that order: 400; unknown: 404;
//   Orange Cameroon merchant payment (push), every call with X-AUTH-TOKEN (else 401):
//   - POST /token (Basic, form) as above; POST /omcoreapis/1.0.2/mp/init -> {message, data:
//     {payToken}}; POST .../mp/pay {notifUrl, channelUserMsisdn, amount, subscriberMsisdn, pin,
//     orderId, description, payToken}: the channel number and PIN must be the merchant's (else
//     400), subscriberMsisdn 9 digits of an Orange Cameroon number (69…, 655-659), amount a string
//     of a positive integer, the payToken INITIATED and unused (else 400); the prompt is "sent";
//   - GET .../mp/paymentstatus/{payToken} -> {message, data: {status, txnid, ...}} (INITIATED
//     tokens unused for `init_ttl_ms` are EXPIRED); GET .../mp/push/{payToken} prompts again
//     (PENDING only, else 400);
//   - the customer's number decides a push payment, by its last three digits: 450 FAILED, 451
//     CANCELLED, 452 EXPIRED, 454 PENDING for ever, 455 FAILED 60019 (balance short), any other
//     SUCCESSFULL after `settle_ms`; the notification POSTed to notifUrl carries the payment.
//   - status queries over `status_rps` per second: 429.
// Control on a second port: GET /stats, POST /behaviour {latency_ms, fail_next, hang_after_accept,
// callbacks: once|none|twice|late, late_callback_ms, settle_ms, down, webpay_ttl_ms, init_ttl_ms},
// GET /payments?order_id=…, GET /payments/{order_id}, POST /payments/{order_id}/pay {status}
// (the customer on Orange's page), POST /payments/{order_id}/notify {notif_token?, status?}
// (a notification sent again, or forged), POST /reset.
import { randomBytes } from 'node:crypto';
import { args, sender, readBody, Counters, RateWindow, postJson, callBack, routeTable, serve } from './common.mjs';

const config = {
  host: '127.0.0.1',
  clientId: args['client-id'] || 'orange-client-id',
  clientSecret: args['client-secret'] || 'orange-client-secret',
  merchantKey: args['merchant-key'] || 'orange-merchant-key',
  channelMsisdn: args['channel-msisdn'] || '699000001',
  pin: args.pin || '2580',
  xAuthToken: args['x-auth-token'] || 'orange-x-auth-token',
  tokenTtl: Number(args['token-ttl'] || 3600),
  statusRps: Number(args['status-rps'] || 50),
};
const CURRENCIES = { cm: 'XAF', ci: 'XOF', sn: 'XOF', ml: 'XOF', bf: 'XOF', dev: 'OUV' };
const behaviour = { latency_ms: 0, fail_next: 0, hang_after_accept: 0, callbacks: 'once', late_callback_ms: 2000,
  settle_ms: 20, down: false, webpay_ttl_ms: 600000, init_ttl_ms: 420000 };
const payments = new Map();  // order_id (webpay) or payToken (push) -> payment
const tokens = new Map();
const counters = new Counters(() => ({ tokens_issued: 0, requests: {}, status_queries: 0, status_max_per_second: 0,
  rejected_429: 0, notifications_sent: 0, notifications_failed: 0, creations: 0, prompts: 0, refused: 0 }));
const statusWindow = new RateWindow(() => config.statusRps);
let apiPort = 0;

const send = sender('application/json', { typeWhenEmpty: false });
function refuse(res, status, code, message) { counters.current.refused += 1; send(res, status, { code, message, description: message }); }
const count = (r) => counters.count(r);
const txnid = () => `MP${Date.now().toString().slice(-6)}.${Math.floor(Math.random() * 1e4)}`;
const absolute = (u) => { try { return ['http:', 'https:'].includes(new URL(u).protocol); } catch { return false; } };

async function issueToken(req, res, route) {
  count(route);
  const raw = await readBody(req);
  if (!/grant_type=client_credentials/.test(raw) || !/x-www-form-urlencoded/.test(req.headers['content-type'] || '')) {
    return refuse(res, 400, 'invalid_request', 'grant_type=client_credentials as a form is required');
  }
  const expected = 'Basic ' + Buffer.from(`${config.clientId}:${config.clientSecret}`).toString('base64');
  if (req.headers.authorization !== expected) return send(res, 401, { error: 'invalid_client', error_description: 'The requested service needs credentials, but the ones provided were invalid.' });
  const token = randomBytes(24).toString('base64url');
  tokens.set(token, Date.now() + config.tokenTtl * 1000);
  counters.current.tokens_issued += 1;
  // Orange Cameroon's gateway writes expires_in as a string, the group's as a number.
  send(res, 200, { token_type: 'Bearer', access_token: token, expires_in: route === 'POST /token' ? String(config.tokenTtl) : config.tokenTtl });
}

function bearer(req, res, push) {
  const m = /^Bearer (.+)$/.exec(req.headers.authorization || '');
  const expires = m && tokens.get(m[1]);
  if (!expires) { refuse(res, 401, 41, 'Invalid credentials'); return false; }
  if (expires <= Date.now()) { tokens.delete(m[1]); refuse(res, 401, 42, 'Expired credentials'); return false; }
  if (push && req.headers['x-auth-token'] !== config.xAuthToken) { refuse(res, 401, 'INVALID_X_AUTH_TOKEN', 'X-AUTH-TOKEN is missing or invalid'); return false; }
  return true;
}

function statusSlot(res) {
  const stats = counters.current;
  if (!statusWindow.take()) {
    stats.rejected_429 += 1;
    send(res, 429, { code: 'TOO_MANY_REQUESTS', message: 'Too many requests' }, { 'Retry-After': '1' });
    return false;
  }
  stats.status_queries += 1;
  stats.status_max_per_second = Math.max(stats.status_max_per_second, statusWindow.count);
  return true;
}

function post(url, body) {
  if (!url) return;
  postJson(url, JSON.stringify(body), { readAnswer: false }).then(({ status }) => {
    if (status) counters.current.notifications_sent += 1;
    else counters.current.notifications_failed += 1;
  });
}

function notification(p, token) {
  return p.flow === 'webpay'
    ? { status: p.status, notif_token: token ?? p.notif_token, txnid: p.txnid }
    : { message: 'notification', data: pushView(p) };
}
function notify(p) {
  const url = p.flow === 'webpay' ? p.notif_url : p.notifUrl;
  callBack(behaviour.callbacks, behaviour.late_callback_ms, () => post(url, notification(p)));
}

function finish(p, status, confirm) {
  if (['SUCCESS', 'SUCCESSFULL', 'FAILED', 'EXPIRED', 'CANCELLED'].includes(p.status)) return;
  p.status = status;
  if (status === 'SUCCESS' || status === 'SUCCESSFULL') p.txnid = txnid();
  if (confirm) p.confirmtxnstatus = confirm;
  if (status !== 'EXPIRED') notify(p);
}

function age(p) {
  const ttl = p.flow === 'webpay' ? behaviour.webpay_ttl_ms : behaviour.init_ttl_ms;
  if (p.status === 'INITIATED' && Date.now() - p.created > ttl) p.status = 'EXPIRED';
  return p;
}

// --- Web Payment ---------------------------------------------------------------------------------
async function webpayment(req, res, country) {
  count('POST webpayment');
  const raw = await readBody(req);
  if (!bearer(req, res, false)) return;
  let b;
  try { b = JSON.parse(raw); } catch { return refuse(res, 400, 'INVALID_BODY', 'body is not JSON'); }
  if (b.merchant_key !== config.merchantKey) return refuse(res, 403, 'INVALID_MERCHANT_KEY', 'merchant_key is not valid');
  if (b.currency !== CURRENCIES[country]) return refuse(res, 400, 'INVALID_CURRENCY', `currency must be ${CURRENCIES[country]}`);
  if (typeof b.order_id !== 'string' || b.order_id.length < 1 || b.order_id.length > 30) return refuse(res, 400, 'INVALID_ORDER_ID', 'order_id must be 1 to 30 characters');
  if (!Number.isInteger(b.amount) || b.amount <= 0) return refuse(res, 400, 'INVALID_AMOUNT', 'amount must be a positive integer');
  for (const f of ['return_url', 'cancel_url', 'notif_url']) if (!absolute(b[f])) return refuse(res, 400, 'INVALID_URL', `${f} must be an absolute URL`);
  if (!['fr', 'en'].includes(b.lang)) return refuse(res, 400, 'INVALID_LANG', 'lang must be fr or en');
  if (typeof b.reference !== 'string' || b.reference.length > 30) return refuse(res, 400, 'INVALID_REFERENCE', 'reference must be at most 30 characters');
  let p = payments.get(b.order_id);
  if (p && age(p).status !== 'INITIATED') return refuse(res, 400, 'DUPLICATE_ORDER_ID', 'order_id was used before');
  if (!p) {
    const pay_token = randomBytes(16).toString('hex');
    p = { flow: 'webpay', country, order_id: b.order_id, amount: b.amount, currency: b.currency, return_url: b.return_url,
      cancel_url: b.cancel_url, notif_url: b.notif_url, lang: b.lang, reference: b.reference, pay_token,
      notif_token: randomBytes(16).toString('hex'), status: 'INITIATED', created: Date.now(), creations: 0 };
    payments.set(b.order_id, p);
  }
  p.creations += 1;
  counters.current.creations += 1;
  if (behaviour.hang_after_accept > 0) { behaviour.hang_after_accept -= 1; return; }  // recorded, never answered
  send(res, 201, { status: 201, message: 'OK', pay_token: p.pay_token,
    payment_url: `http://${config.host}:${apiPort}/payment/pay_token/${p.pay_token}`, notif_token: p.notif_token });
}

async function transactionStatus(req, res) {
  count('POST transactionstatus');
  const raw = await readBody(req);
  if (!bearer(req, res, false)) return;
  if (!statusSlot(res)) return;
  let b;
  try { b = JSON.parse(raw); } catch { return refuse(res, 400, 'INVALID_BODY', 'body is not JSON'); }
  const p = payments.get(b.order_id);
  if (!p || p.flow !== 'webpay') return refuse(res, 404, 'NOT_FOUND', 'no such order');
  if (b.pay_token !== p.pay_token || b.amount !== p.amount) return refuse(res, 400, 'INVALID_PARAMETERS', 'pay_token or amount does not match the order');
  age(p);
  send(res, 201, { status: p.status, order_id: p.order_id, txnid: p.txnid ?? null });
}

function paymentPage(req, res, token) {
  count('GET payment page');
  req.resume();
  const p = [...payments.values()].find((x) => x.pay_token === token);
  if (!p || age(p).status === 'EXPIRED') return send(res, 404, { message: 'payment not found or expired' });
  const outcome = new URL(req.url, 'http://x').searchParams.get('outcome') || 'SUCCESS';
  if (p.status === 'INITIATED') p.status = 'PENDING';
  if (outcome !== 'PENDING') setTimeout(() => finish(p, outcome), behaviour.settle_ms);
  res.writeHead(302, { Location: outcome === 'FAILED' ? p.cancel_url : p.return_url, 'Content-Length': 0 });
  res.end();
}

// --- Cameroon merchant payment -------------------------------------------------------------------
function pushView(p) {
  return { id: p.id, createtime: String(p.created), subscriberMsisdn: p.subscriberMsisdn ?? null, amount: p.amount ?? null,
    payToken: p.payToken, txnid: p.txnid ?? null, txnmode: 'OMMP', inittxnmessage: 'Paiement en attente de confirmation',
    inittxnstatus: p.status === 'INITIATED' ? null : '200', confirmtxnstatus: p.confirmtxnstatus ?? null,
    confirmtxnmessage: null, status: p.status, notifUrl: p.notifUrl ?? '', description: p.description ?? '',
    channelUserMsisdn: config.channelMsisdn, orderId: p.orderId ?? null };
}
let pushIds = 0;
async function mpInit(req, res) {
  count('POST mp/init');
  req.resume();
  if (!bearer(req, res, true)) return;
  const payToken = 'MP' + randomBytes(12).toString('hex').toUpperCase();
  payments.set(payToken, { flow: 'push', id: ++pushIds, payToken, status: 'INITIATED', created: Date.now(), prompts: 0 });
  send(res, 200, { message: 'Payment request successfully initiated', data: { payToken } });
}

function pushOutcome(number) {
  switch (String(number).slice(-3)) {
    case '450': return ['FAILED', '60001'];
    case '451': return ['CANCELLED'];
    case '452': return ['EXPIRED'];
    case '454': return ['PENDING'];
    case '455': return ['FAILED', '60019'];
    default: return ['SUCCESSFULL', '200'];
  }
}

async function mpPay(req, res) {
  count('POST mp/pay');
  const raw = await readBody(req);
  if (!bearer(req, res, true)) return;
  let b;
  try { b = JSON.parse(raw); } catch { return refuse(res, 400, 'INVALID_BODY', 'body is not JSON'); }
  const p = payments.get(b.payToken);
  if (!p || p.flow !== 'push' || age(p).status !== 'INITIATED') return refuse(res, 400, 'INVALID_PAYTOKEN', 'payToken is unknown, used or expired');
  if (b.channelUserMsisdn !== config.channelMsisdn || b.pin !== config.pin) return refuse(res, 400, 'INVALID_CHANNEL_USER', 'channel user or PIN is not valid');
  if (typeof b.subscriberMsisdn !== 'string' || !/^(69\d|65[5-9]|64\d|68[6-9])\d{6}$/.test(b.subscriberMsisdn)) return refuse(res, 400, 'INVALID_SUBSCRIBER', 'subscriberMsisdn must be an Orange Cameroon number of 9 digits');
  if (typeof b.amount !== 'string' || !/^[1-9]\d*$/.test(b.amount)) return refuse(res, 400, 'INVALID_AMOUNT', 'amount must be a string of a positive integer');
  if (typeof b.orderId !== 'string' || b.orderId.length < 1 || b.orderId.length > 30) return refuse(res, 400, 'INVALID_ORDER_ID', 'orderId must be 1 to 30 characters');
  if (!absolute(b.notifUrl)) return refuse(res, 400, 'INVALID_URL', 'notifUrl must be an absolute URL');
  Object.assign(p, { subscriberMsisdn: b.subscriberMsisdn, amount: b.amount, orderId: b.orderId, notifUrl: b.notifUrl,
    description: b.description, status: 'PENDING', prompts: 1 });
  counters.current.creations += 1;
  counters.current.prompts += 1;
  const [status, confirm] = pushOutcome(b.subscriberMsisdn);
  if (status !== 'PENDING') setTimeout(() => finish(p, status, confirm), behaviour.settle_ms);
  if (behaviour.hang_after_accept > 0) { behaviour.hang_after_accept -= 1; return; }
  send(res, 200, { message: 'Paiement en attente de confirmation', data: pushView(p) });
}

function mpStatus(req, res, token) {
  count('GET mp/paymentstatus');
  req.resume();
  if (!bearer(req, res, true)) return;
  if (!statusSlot(res)) return;
  const p = payments.get(token);
  if (!p || p.flow !== 'push') return refuse(res, 404, 'NOT_FOUND', 'payToken not found');
  send(res, 200, { message: 'Transaction status', data: pushView(age(p)) });
}

function mpPush(req, res, token) {
  count('GET mp/push');
  req.resume();
  if (!bearer(req, res, true)) return;
  const p = payments.get(token);
  if (!p || p.flow !== 'push') return refuse(res, 404, 'NOT_FOUND', 'payToken not found');
  if (p.status !== 'PENDING') return refuse(res, 400, 'NOT_PENDING', 'the payment is not waiting for the customer');
  p.prompts += 1;
  counters.current.prompts += 1;
  send(res, 200, { message: 'Push sent', data: pushView(p) });
}

const routes = [
  ['POST', /^\/oauth\/v3\/token$/, (req, res) => issueToken(req, res, 'POST /oauth/v3/token')],
  ['POST', /^\/token$/, (req, res) => issueToken(req, res, 'POST /token')],
  ['POST', /^\/orange-money-webpay\/(dev|cm|ci|sn|ml|bf)\/v1\/webpayment$/, (req, res, m) => webpayment(req, res, m[1])],
  ['POST', /^\/orange-money-webpay\/(dev|cm|ci|sn|ml|bf)\/v1\/transactionstatus$/, (req, res) => transactionStatus(req, res)],
  ['GET', /^\/payment\/pay_token\/([0-9a-f]+)$/, (req, res, m) => paymentPage(req, res, m[1])],
  ['POST', /^\/omcoreapis\/1\.0\.2\/mp\/init$/, (req, res) => mpInit(req, res)],
  ['POST', /^\/omcoreapis\/1\.0\.2\/mp\/pay$/, (req, res) => mpPay(req, res)],
  ['GET', /^\/omcoreapis\/1\.0\.2\/mp\/paymentstatus\/([^/]+)$/, (req, res, m) => mpStatus(req, res, m[1])],
  ['GET', /^\/omcoreapis\/1\.0\.2\/mp\/push\/([^/]+)$/, (req, res, m) => mpPush(req, res, m[1])],
];

function view(p) { return p.flow === 'webpay' ? { ...p } : { flow: 'push', ...pushView(p), prompts: p.prompts }; }
const find = (id) => payments.get(id) || [...payments.values()].find((p) => p.orderId === id);

// The control port's own routes (GET /stats, POST /reset and /behaviour are common.mjs's).
const controlRoutes = routeTable([
  ['GET', /^\/payments$/, (req, res, m, body, url) => {
    const id = url.searchParams.get('order_id');
    send(res, 200, [...payments.values()].filter((p) => !id || p.order_id === id || p.orderId === id).map((p) => view(age(p))));
  }],
  ['GET', /^\/payments\/([^/]+)$/, (req, res, m) => {
    const p = find(m[1]);
    return p ? send(res, 200, view(age(p))) : send(res, 404, {});
  }],
  ['POST', /^\/payments\/([^/]+)\/pay$/, (req, res, m, body) => {
    const p = find(m[1]);
    if (!p) return send(res, 404, {});
    if (p.status === 'INITIATED') p.status = 'PENDING';
    finish(p, body.status || (p.flow === 'webpay' ? 'SUCCESS' : 'SUCCESSFULL'), body.confirm);
    return send(res, 200, view(p));
  }],
  ['POST', /^\/payments\/([^/]+)\/notify$/, (req, res, m, body) => {
    const p = find(m[1]);
    if (!p) return send(res, 404, {});
    const n = notification(p, body.notif_token);
    if (body.status) { if (p.flow === 'webpay') n.status = body.status; else n.data.status = body.status; }
    post(body.url || (p.flow === 'webpay' ? p.notif_url : p.notifUrl), n);
    return send(res, 200, n);
  }],
], { notFound: (req, res) => send(res, 404, {}) });

({ apiPort } = await serve({
  host: config.host, port: Number(args.port || 0), controlPort: Number(args['control-port'] || 0), send, behaviour,
  api: routeTable(routes, {
    notAllowed: (req, res) => { req.resume(); send(res, 405, { code: 'METHOD_NOT_ALLOWED', message: 'Method not allowed' }); },
    notFound: (req, res) => { req.resume(); send(res, 404, { code: 'NOT_FOUND', message: 'Resource not found' }); },
  }),
  fail: (res) => send(res, 503, { code: 'SERVICE_UNAVAILABLE', message: 'Service temporarily unavailable' }),
  control: controlRoutes,
  stats: () => counters.current,
  reset: () => { payments.clear(); counters.reset(); },
}));
