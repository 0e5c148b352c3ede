#!/usr/bin/env node
// A double of the Wave Business API (Checkout, Payout), run as its own process over real HTTP, for
// the connector's tests. It follows Wave's published API (docs.wave.com, docs/operators.md) and
// refuses what Wave refuses:
//   - a missing or wrong `Authorization: Bearer <api key>`: 401 (missing-auth-header,
//     no-matching-api-key);
//   - a POST without `idempotency-key`: 400; the same key again with the same body: the first
//     answer again (nothing created twice); with another body: 409 idempotency-mismatch;
//   - amount / receive_amount not a string of a positive whole number of XOF, currency not XOF,
//     restrict_payer_mobile / mobile not E.164, success_url / error_url not a URL,
//     client_reference over 255 characters: 400 request-validation-error;
//   - more than `rps` requests in one second: 429 rate-limit-exceeded.
// The payer's (payee's) number decides the outcome by its last three digits:
//   455 a failed attempt (insufficient-funds), 457 (kyb-limit-exceeded), 458 (blocked-account);
//   452 the session expires after `expire_ms`; 453 pays after `late_success_ms`; 454 stays open
//   (payout: processing) for ever; 456 (payout) recipient-not-found; any other pays (succeeds)
//   after `settle_ms`.
// Webhooks go to `--webhook-url`, signed `Wave-Signature: t=<s>,v1=<hex HMAC-SHA256(secret, t+body)>`.
//
// Control (test code only) on a second port:
//   GET  /stats                        counters (requests per route, sessions, payouts, 429s, webhooks)
//   POST /behaviour {…}                latency_ms, fail_next (n answers of 500), hang_after_accept (n
//                                      POSTs done, never answered), webhooks: "once" | "none" | "twice",
//                                      settle_ms, expire_ms, late_success_ms, rps, down (true/false)
//   GET  /sessions?client_reference=…  sessions held; GET /payouts?client_reference=… likewise
//   POST /sessions/{id}/pay            the customer pays an open session
//   POST /webhook {session|payout, type, mode}   sends an event of that object; mode "signed"
//                                      (default), "unsigned", "stale", "forged", "duplicate" (the
//                                      last event again); answers {status, body} of the receiver
import { createHmac, randomBytes } from 'node:crypto';
import { args, sender, Counters, RateWindow, postJson, callBack, routeTable, serve } from './common.mjs';

const config = {
  host: '127.0.0.1',
  apiKey: args['api-key'] || 'wave_ci_prod_test-key',
  secret: args['webhook-secret'] || 'wave_ci_WHS_test-secret',
  webhookUrl: args['webhook-url'] || '',
  currency: 'XOF',
};
const behaviour = { latency_ms: 0, fail_next: 0, hang_after_accept: 0, webhooks: 'once', settle_ms: 30,
  expire_ms: 1500, late_success_ms: 30000, rps: Number(args.rps || 1000), down: false };

const sessions = new Map();  // id -> session
const payouts = new Map();   // id -> payout
const keys = new Map();      // idempotency-key -> {body, status, answer}
let lastEvent = null;
const counters = new Counters(() => ({ requests: {}, sessions: 0, payouts: 0, refunds: 0, expired_by_us: 0,
  rejected_429: 0, webhooks_sent: 0, webhook_answers: {}, idempotent_replays: 0 }));
const stats = counters.current;  // never reset: the double has no /reset
const window = new RateWindow(() => behaviour.rps);

const send = sender();
const err = (code, message) => ({ code, message });
const iso = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
const tail = (mobile) => String(mobile).slice(-3);
const validAmount = (a) => typeof a === 'string' && /^[1-9][0-9]*$/.test(a);
const validMobile = (m) => typeof m === 'string' && /^\+[1-9][0-9]{7,14}$/.test(m);
const validUrl = (u) => { try { return ['http:', 'https:'].includes(new URL(u).protocol); } catch { return false; } };
const id = (prefix) => `${prefix}-${randomBytes(8).toString('hex')}`;

function sign(body, t = Math.floor(Date.now() / 1000), secret = config.secret) {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}${body}`).digest('hex')}`;
}

async function post(body, header) {
  if (!config.webhookUrl) return { status: 0, body: '' };
  const answer = await postJson(config.webhookUrl, body, { headers: header ? { 'Wave-Signature': header } : {} });
  if (answer.status) {
    stats.webhooks_sent += 1;
    stats.webhook_answers[answer.status] = (stats.webhook_answers[answer.status] || 0) + 1;
  }
  return answer;
}

function event(type, data) { return { id: `AE_${randomBytes(6).toString('hex')}`, type, data }; }

async function deliver(ev, mode = 'signed') {
  const body = JSON.stringify(ev);
  lastEvent = ev;
  const now = Math.floor(Date.now() / 1000);
  switch (mode) {
    case 'unsigned': return post(body, null);
    case 'stale': return post(body, sign(body, now - 600));
    case 'forged': return post(body, sign(body, now, 'not-the-secret'));
    default: return post(body, sign(body, now));
  }
}

function autoWebhook(type, data) {
  const ev = event(type, data);
  callBack(behaviour.webhooks, 0, () => deliver(ev));
}

const sessionView = (s) => ({ ...s, _timer: undefined });

function settleSession(s) {
  const t = tail(s.restrict_payer_mobile);
  const failures = { 455: 'insufficient-funds', 457: 'kyb-limit-exceeded', 458: 'blocked-account' };
  if (t === '454') return;
  if (t === '452') { setTimeout(() => expire(s), behaviour.expire_ms); return; }
  if (failures[t]) {
    setTimeout(() => {
      if (s.checkout_status !== 'open') return;
      s.payment_status = 'cancelled';
      s.last_payment_error = { code: failures[t], message: 'payment failed' };
      autoWebhook('checkout.session.payment_failed', sessionView(s));
    }, behaviour.settle_ms);
    return;
  }
  setTimeout(() => pay(s), t === '453' ? behaviour.late_success_ms : behaviour.settle_ms);
}

function pay(s) {
  if (s.checkout_status !== 'open') return;
  s.checkout_status = 'complete';
  s.payment_status = 'succeeded';
  s.transaction_id = `T_${randomBytes(6).toString('hex').toUpperCase()}`;
  s.when_completed = iso(Date.now());
  s.last_payment_error = null;
  autoWebhook('checkout.session.completed', sessionView(s));
}

function expire(s) {
  if (s.checkout_status !== 'open') return false;
  s.checkout_status = 'expired';
  s.when_completed = iso(Date.now());
  return true;
}

function settlePayout(p) {
  const t = tail(p.mobile);
  if (t === '454') return;
  const failures = { 455: 'insufficient-funds', 456: 'recipient-not-found', 457: 'recipient-limit-exceeded' };
  setTimeout(() => {
    if (failures[t]) { p.status = 'failed'; p.payout_error = { error_code: failures[t], error_message: 'payout failed' }; }
    else { p.status = 'succeeded'; p.transaction_id = `T_${randomBytes(6).toString('hex').toUpperCase()}`; }
  }, behaviour.settle_ms);
}

// Runs an idempotent POST: the same key and body answer the first answer again.
function idempotent(req, res, raw, create) {
  const key = req.headers['idempotency-key'];
  if (!key) return send(res, 400, err('missing-idempotency-key', 'idempotency-key header is required'));
  const held = keys.get(key);
  if (held) {
    if (held.body !== raw) return send(res, 409, err('idempotency-mismatch', 'the idempotency key was used with another request'));
    stats.idempotent_replays += 1;
    return send(res, held.status, held.answer());
  }
  let body;
  try { body = JSON.parse(raw); } catch { return send(res, 400, err('request-validation-error', 'body is not JSON')); }
  const out = create(body);
  if (out.status === 200) keys.set(key, { body: raw, status: 200, answer: out.answer });
  if (behaviour.hang_after_accept > 0 && out.status === 200) { behaviour.hang_after_accept -= 1; return; }
  send(res, out.status, out.answer());
}

function createSession(body) {
  const bad = (m) => ({ status: 400, answer: () => err('request-validation-error', m) });
  if (!validAmount(body.amount)) return bad('amount must be a string of a positive whole number');
  if (body.currency !== config.currency) return bad('currency not supported');
  if (!validUrl(body.success_url) || !validUrl(body.error_url)) return bad('success_url and error_url must be URLs');
  if (body.restrict_payer_mobile !== undefined && !validMobile(body.restrict_payer_mobile)) return bad('restrict_payer_mobile must be E.164');
  if (body.client_reference !== undefined && (typeof body.client_reference !== 'string' || body.client_reference.length > 255)) return bad('client_reference: at most 255 characters');
  const sid = id('cos');
  const now = Date.now();
  const s = { id: sid, amount: body.amount, checkout_status: 'open', client_reference: body.client_reference ?? null,
    currency: body.currency, error_url: body.error_url, success_url: body.success_url, last_payment_error: null,
    business_name: 'Sika Demo', payment_status: 'processing', restrict_payer_mobile: body.restrict_payer_mobile,
    wave_launch_url: `https://pay.wave.com/c/${sid}?a=${body.amount}&c=XOF&m=Sika%20Demo`,
    when_created: iso(now), when_expires: iso(now + 30 * 60 * 1000) };
  sessions.set(sid, s);
  stats.sessions += 1;
  settleSession(s);
  return { status: 200, answer: () => sessionView(s) };
}

function createPayout(body) {
  const bad = (m) => ({ status: 400, answer: () => err('request-validation-error', m) });
  if (!validAmount(body.receive_amount)) return bad('receive_amount must be a string of a positive whole number');
  if (body.currency !== config.currency) return bad('currency not supported');
  if (!validMobile(body.mobile)) return bad('mobile must be E.164');
  if (typeof body.client_reference !== 'string' || body.client_reference.length > 255) return bad('client_reference: at most 255 characters');
  const pid = id('pt');
  const p = { id: pid, currency: body.currency, receive_amount: body.receive_amount, fee: '0', mobile: body.mobile,
    name: body.name, client_reference: body.client_reference, status: 'processing', timestamp: iso(Date.now()) };
  payouts.set(pid, p);
  stats.payouts += 1;
  settlePayout(p);
  return { status: 200, answer: () => ({ ...p }) };
}

const routes = [
  ['POST', /^\/v1\/checkout\/sessions$/, (req, res, m, raw) => idempotent(req, res, raw, createSession)],
  ['GET', /^\/v1\/checkout\/sessions\/search$/, (req, res) => {
    const ref = new URL(req.url, 'http://x').searchParams.get('client_reference');
    send(res, 200, { result: [...sessions.values()].filter((s) => s.client_reference === ref).map(sessionView) });
  }],
  ['GET', /^\/v1\/checkout\/sessions\/([^/]+)$/, (req, res, m) => {
    const s = sessions.get(m[1]);
    return s ? send(res, 200, sessionView(s)) : send(res, 404, err('checkout-session-not-found', 'not found'));
  }],
  ['POST', /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/, (req, res, m) => {
    const s = sessions.get(m[1]);
    if (!s) return send(res, 404, err('checkout-session-not-found', 'not found'));
    if (s.checkout_status === 'complete') return send(res, 409, err('checkout-session-already-completed', 'completed'));
    if (expire(s)) stats.expired_by_us += 1;
    send(res, 200, sessionView(s));
  }],
  ['POST', /^\/v1\/checkout\/sessions\/([^/]+)\/refund$/, (req, res, m) => {
    const s = sessions.get(m[1]);
    if (!s) return send(res, 404, err('checkout-session-not-found', 'not found'));
    if (s.payment_status === 'refunded') return send(res, 200, {});
    if (s.payment_status !== 'succeeded') return send(res, 400, err('checkout-refund-failed', 'nothing to refund'));
    s.payment_status = 'refunded';
    stats.refunds += 1;
    send(res, 200, {});
  }],
  ['POST', /^\/v1\/payout$/, (req, res, m, raw) => idempotent(req, res, raw, createPayout)],
  ['GET', /^\/v1\/payouts\/search$/, (req, res) => {
    const ref = new URL(req.url, 'http://x').searchParams.get('client_reference');
    send(res, 200, { result: [...payouts.values()].filter((p) => p.client_reference === ref) });
  }],
  ['GET', /^\/v1\/payout\/([^/]+)$/, (req, res, m) => {
    const p = payouts.get(m[1]);
    return p ? send(res, 200, p) : send(res, 404, err('payout-not-found', 'not found'));
  }],
  ['POST', /^\/v1\/payout\/([^/]+)\/reverse$/, (req, res, m) => {
    const p = payouts.get(m[1]);
    if (!p) return send(res, 404, err('payout-not-found', 'not found'));
    if (p.status !== 'succeeded') return send(res, 400, err('payout-reversal-failed', 'not reversible'));
    p.status = 'reversed';
    send(res, 200, {});
  }],
];

// Every route counts its requests under "<method> <path regexp>".
const table = routeTable(routes.map(([method, re, fn]) => {
  const route = `${method} ${re.source}`;
  return [method, re, (req, res, m, raw) => { counters.count(route); return fn(req, res, m, raw); }];
}), { notFound: (req, res) => send(res, 404, err('not-found', 'Resource not found')) });

function api(req, res, raw) {
  const auth = req.headers.authorization;
  if (!auth) return send(res, 401, err('missing-auth-header', 'Your request should include an HTTP auth header.'));
  if (auth !== `Bearer ${config.apiKey}`) return send(res, 401, err('no-matching-api-key', "The key you provided doesn't exist in our system."));
  if (!window.take()) { stats.rejected_429 += 1; return send(res, 429, err('rate-limit-exceeded', 'Too many requests')); }
  if (behaviour.fail_next > 0) { behaviour.fail_next -= 1; return send(res, 500, err('internal-server-error', 'internal error')); }
  return table(req, res, raw);
}

// The control port's own routes (GET /stats and POST /behaviour are common.mjs's).
const controlRoutes = routeTable([
  ['GET', /^\/sessions$/, (req, res, m, body, u) => {
    const ref = u.searchParams.get('client_reference');
    send(res, 200, [...sessions.values()].filter((s) => !ref || s.client_reference === ref).map(sessionView));
  }],
  ['GET', /^\/payouts$/, (req, res, m, body, u) => {
    const ref = u.searchParams.get('client_reference');
    send(res, 200, [...payouts.values()].filter((p) => !ref || p.client_reference === ref));
  }],
  ['POST', /^\/sessions\/([^/]+)\/pay$/, (req, res, m) => {
    const s = sessions.get(m[1]);
    if (!s) return send(res, 404, {});
    pay(s);
    return send(res, 200, sessionView(s));
  }],
  ['POST', /^\/webhook$/, async (req, res, m, body) => {
    if (body.mode === 'duplicate') return send(res, 200, lastEvent ? await deliver(lastEvent) : { status: 0 });
    const data = body.session ? sessions.get(body.session) : payouts.get(body.payout);
    if (!data) return send(res, 404, {});
    const ev = event(body.type || 'checkout.session.completed', body.session ? sessionView(data) : { ...data });
    if (body.data) Object.assign(ev.data, body.data);
    return send(res, 200, await deliver(ev, body.mode));
  }],
], { notFound: (req, res) => send(res, 404, {}) });

await serve({
  host: config.host, port: Number(args.port || 0), controlPort: Number(args['control-port'] || 0), send, behaviour,
  api, readFirst: true, control: controlRoutes, stats: () => stats,
  onBehaviour: (body) => { if (body.webhook_url) config.webhookUrl = body.webhook_url; },
});
