// Black-box tests of the foundation: health, envelopes, routing, limits, OpenAPI, shutdown, config.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startServer, backends, sikaBinary } from './lib/server.mjs';

for (const backend of backends()) {
  describe(`foundation on ${backend}`, () => {
    let server;
    before(async () => { server = await startServer({ backend }); });
    after(async () => { if (server) await server.stop(); });

    test('healthz and readyz answer', async () => {
      const h = await fetch(`${server.publicUrl}/healthz`);
      assert.equal(h.status, 200);
      assert.deepEqual(await h.json(), { status: 'ok' });
      const r = await fetch(`${server.publicUrl}/readyz`);
      assert.equal(r.status, 200);
    });

    test('demo JSON has the documented keys, and promises only surfaces that answer', async () => {
      const d = server.demo;
      for (const k of ['base_url', 'auth_url', 'checkout_url', 'merchants'])
        assert.ok(k in d, `demo JSON lacks ${k}`);
      // A surface URL in demo.json must answer something other than "no route" at its root or
      // below; the link API and the dashboard are listed only once they serve routes.
      for (const k of ['link_url', 'dashboard_url']) {
        if (!(k in d)) continue;
        const r = await fetch(d[k]);
        assert.notEqual(r.status, 404, `${k} is listed but its surface answers 404`);
      }
      assert.ok(d.merchants.length >= 2);
      assert.notDeepEqual(d.merchants[0].countries, d.merchants[1].countries);
      assert.match(d.base_url, /\/api$/);
    });

    test('unknown route: 404 in the error envelope; wrong method: 405 with Allow', async () => {
      const r = await fetch(`${server.baseUrl}/no/such/route`, { headers: { 'accept-language': 'en' } });
      assert.equal(r.status, 404);
      const body = await r.json();
      assert.equal(body.success, false);
      assert.equal(body.code, 404);
      assert.equal(body.message, 'not_found');
      assert.ok('details' in body.error);
      const m = await fetch(`${server.baseUrl}/openapi.json`, { method: 'DELETE' });
      assert.equal(m.status, 405);
      assert.match(m.headers.get('allow'), /GET/);
      assert.equal((await m.json()).message, 'method_not_allowed');
    });

    test('locale follows Accept-Language', async () => {
      const fr = await (await fetch(`${server.baseUrl}/nope`, { headers: { 'accept-language': 'fr-CM' } })).json();
      const en = await (await fetch(`${server.baseUrl}/nope`, { headers: { 'accept-language': 'en-GB' } })).json();
      assert.equal(fr.locale, 'fr');
      assert.equal(en.locale, 'en');
      assert.notEqual(fr.error.text, en.error.text);
    });

    test('X-Request-Id is echoed or generated', async () => {
      const r = await fetch(`${server.publicUrl}/healthz`, { headers: { 'x-request-id': 'req-abc-123' } });
      assert.equal(r.headers.get('x-request-id'), 'req-abc-123');
      const g = await fetch(`${server.publicUrl}/healthz`);
      assert.ok(g.headers.get('x-request-id')?.length >= 8);
    });

    test('oversized body is a 413 envelope', async () => {
      const r = await fetch(`${server.baseUrl}/openapi.json`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(2 * 1024 * 1024),
      }).catch((e) => e);
      if (r instanceof Error) return; // the server may close before the client finishes sending
      assert.equal(r.status, 413);
      assert.equal((await r.json()).message, 'payload_too_large');
    });

    test('huge headers are a 431 envelope', async () => {
      const r = await rawRequest(server.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
      assert.match(r, /^HTTP\/1\.1 431/);
      assert.match(r, /header_too_large/);
    });

    test('bad percent-encoding in the path is a 400 envelope', async () => {
      const r = await rawRequest(server.port, 'GET /api/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      assert.match(r, /^HTTP\/1\.1 400/);
      assert.match(r, /"success":false/);
    });

    test('pipelined requests are answered in order on one connection', async () => {
      const r = await rawRequest(server.port,
        'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: one\r\n\r\n' +
        'GET /nope HTTP/1.1\r\nHost: x\r\nX-Request-Id: two\r\n\r\n' +
        'GET /readyz HTTP/1.1\r\nHost: x\r\nX-Request-Id: three\r\nConnection: close\r\n\r\n');
      const ids = [...r.matchAll(/x-request-id: (\w+)/gi)].map((m) => m[1]);
      assert.deepEqual(ids, ['one', 'two', 'three']);
      assert.deepEqual([...r.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]), ['200', '404', '200']);
    });

    test('the OpenAPI document is served and valid OpenAPI 3', async () => {
      const r = await fetch(`${server.baseUrl}/openapi.json`);
      assert.equal(r.status, 200);
      const doc = await r.json();
      assert.equal(doc.info.version, '3.0.0');
      assert.equal(doc.servers[0].url, server.baseUrl);
      await SwaggerParser.validate(structuredClone(doc));
    });
  });
}

test('SIGTERM: graceful shutdown exits 0', async () => {
  const server = await startServer();
  const { code, signal } = await server.stop('SIGTERM');
  assert.equal(signal, null);
  assert.equal(code, 0);
});

test('bad configuration exits non-zero with one line naming the key', () => {
  const r = spawnSync(sikaBinary, ['serve', '--listen', 'nowhere', '--db', 'sqlite:///tmp/x.db'], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], /listen/);
  const r2 = spawnSync(sikaBinary, ['serve', '--db', 'mysql://x'], { encoding: 'utf8' });
  assert.notEqual(r2.status, 0);
  assert.match(r2.stderr, /db: must start with/);
  const r3 = spawnSync(sikaBinary, ['serve', '--set', 'http.io_threads=lots', '--db', 'sqlite:///tmp/x.db'], { encoding: 'utf8' });
  assert.notEqual(r3.status, 0);
  assert.match(r3.stderr, /http\.io_threads/);
});

test('serve --help lists every configuration key', () => {
  const r = spawnSync(sikaBinary, ['serve', '--help'], { encoding: 'utf8' });
  for (const k of ['listen', 'db', 'public_url', 'secret_key', 'http.max_body_bytes', 'default_locale', 'cors.gateway'])
    assert.match(r.stdout, new RegExp(`\\b${k.replace('.', '\\.')}\\b`), `help lacks ${k}`);
  assert.match(r.stdout, /--demo/);
});

function rawRequest(port, text) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    sock.setTimeout(10000, () => { sock.destroy(); resolve(data); });
    sock.on('data', (d) => { data += d; });
    sock.on('end', () => resolve(data));
    sock.on('close', () => resolve(data));
    sock.on('error', (e) => (data ? resolve(data) : reject(e)));
    sock.write(text);
  });
}
