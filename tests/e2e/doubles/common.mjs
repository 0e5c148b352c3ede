// What every operator double does the same way: its command line, JSON answers and request bodies,
// counters, a per-second rate limit, callbacks to the platform, the route table, and the two
// servers (the operator's API and the test-only control port). Each double keeps only what its
// operator does differently. Nothing here adds work to a request beyond what the double asks for.
import http from 'node:http';
import { randomUUID } from 'node:crypto';

// The command line's --key=value flags (a bare --flag is 'true').
export const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([^=]+)=(.*)$/.exec(a);
  return m ? [m[1], m[2]] : [a.replace(/^--/, ''), 'true'];
}));

// A send(res, status, body?, headers?) writing `body` as JSON with its Content-Length. With
// `typeWhenEmpty: false`, an answer without a body carries no Content-Type.
export function sender(contentType = 'application/json', { typeWhenEmpty = true } = {}) {
  return (res, status, body, headers) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    const head = text || typeWhenEmpty ? { 'Content-Type': contentType } : {};
    head['Content-Length'] = Buffer.byteLength(text);
    res.writeHead(status, headers ? Object.assign(head, headers) : head);
    res.end(text);
  };
}

// The request's body as text ('' when the connection fails).
export function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}

// Counters that /reset starts again: `fresh()` makes them; `current` is the live object.
export class Counters {
  constructor(fresh) {
    this.fresh = fresh;
    this.reset();
  }
  reset() { this.current = this.fresh(); }
  // One more request on `route` (current.requests[route]).
  count(route) {
    const r = this.current.requests;
    r[route] = (r[route] || 0) + 1;
  }
}

// At most `limit()` takes in one wall-clock second; `count` is this second's takes so far.
export class RateWindow {
  constructor(limit) {
    this.limit = limit;
    this.second = 0;
    this.count = 0;
  }
  take() {
    const second = Math.floor(Date.now() / 1000);
    if (this.second !== second) { this.second = second; this.count = 0; }
    if (this.count >= this.limit()) return false;
    this.count += 1;
    return true;
  }
}

// Sends `text` (JSON) to `url`; resolves to the receiver's {status, body}, status 0 when it could
// not be reached or did not answer within 5 s. With `readAnswer: false` it resolves on the answer's
// status line and drops its body ('').
export function postJson(url, text, { method = 'POST', headers = {}, readAnswer = true } = {}) {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers },
      timeout: 5000,
    }, (res) => {
      if (!readAnswer) {
        res.resume();
        return resolve({ status: res.statusCode, body: '' });
      }
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.on('timeout', () => req.destroy());
    req.end(text);
  });
}

// Sends a final state's callback as the behaviour's mode says: "once", "none", "twice" (`again`
// 50 ms after the first) or "late" (after `lateMs`).
export function callBack(mode, lateMs, first, again = first) {
  if (mode === 'none') return;
  if (mode === 'late') { setTimeout(first, lateMs); return; }
  first();
  if (mode === 'twice') setTimeout(again, 50);
}

// A handler(req, res, raw?, url?) over `routes`, rows of [method, path regexp, fn(req, res, match,
// raw, url)] tried in order on the path without its query. A path matched with another method
// answers `notAllowed(req, res)` when given (else the next rows are tried); no row, `notFound`.
export function routeTable(routes, { notAllowed, notFound }) {
  return (req, res, raw, url) => {
    const path = url ? url.pathname : req.url.split('?')[0];
    for (const [method, re, fn] of routes) {
      const m = re.exec(path);
      if (!m) continue;
      if (req.method !== method) {
        if (!notAllowed) continue;
        return notAllowed(req, res);
      }
      return fn(req, res, m, raw, url);
    }
    return notFound(req, res);
  };
}

// Runs a double: its API on `port` and the control port on `controlPort`, both on `host`, then
// prints the line spawn.mjs reads ({api, control, id, ...info}) and exits on SIGTERM.
//   api(req, res, raw)       the operator's API, after the behaviour's latency_ms; with
//                            `readFirst` the body is read before (raw), else the handler reads it;
//                            with `fail(res)`, behaviour.fail_next answers are fail's, before any work
//   control(req, res, body, url)   the double's own control routes; served here: GET /stats
//                            (stats()), POST /reset (reset(), when given), POST /behaviour (merged
//                            into `behaviour`, then onBehaviour(body); `down` closes the API port
//                            or opens it again)
// Resolves to {apiPort}.
export async function serve({ host = '127.0.0.1', port = 0, controlPort = 0, send, behaviour, api, readFirst = false,
  fail, control, stats, reset, onBehaviour, info = {} }) {
  const server = http.createServer(async (req, res) => {
    const raw = readFirst ? await readBody(req) : undefined;
    if (behaviour.latency_ms > 0) await new Promise((r) => setTimeout(r, behaviour.latency_ms));
    if (fail && behaviour.fail_next > 0) {
      behaviour.fail_next -= 1;
      req.resume();
      return fail(res);
    }
    return api(req, res, raw);
  });
  server.keepAliveTimeout = 30000;
  const listen = (p) => new Promise((resolve) => server.listen(p, host, () => resolve(server.address().port)));

  const controlServer = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    const body = raw ? JSON.parse(raw) : {};
    const url = new URL(req.url, 'http://x');
    const path = url.pathname;
    if (req.method === 'GET' && path === '/stats') return send(res, 200, stats());
    if (req.method === 'POST' && path === '/reset' && reset) { reset(); return send(res, 200, {}); }
    if (req.method === 'POST' && path === '/behaviour') {
      const wasDown = behaviour.down;
      Object.assign(behaviour, body);
      if (onBehaviour) onBehaviour(body);
      if (behaviour.down && !wasDown) {
        server.close();
        server.closeAllConnections();
      } else if (!behaviour.down && wasDown) {
        await listen(apiPort);
      }
      return send(res, 200, behaviour);
    }
    return control(req, res, body, url);
  });

  const apiPort = await listen(port);
  await new Promise((resolve) => controlServer.listen(controlPort, host, resolve));
  // The parent reads this line to learn the ports.
  process.stdout.write(JSON.stringify({ api: apiPort, control: controlServer.address().port, id: randomUUID(), ...info }) + '\n');
  process.on('SIGTERM', () => process.exit(0));
  return { apiPort };
}
