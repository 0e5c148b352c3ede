// The identity service against certified third-party clients: openid-client (discovery,
// client_credentials and its refresh, authorization code + PKCE through the real login form,
// refresh, userinfo, introspection, revocation) and jose (access and ID tokens verified against
// the JWKS).
// Runs on SQLite, and on PostgreSQL when SIKA_TEST_PG_DSN is set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Issuer, generators } from 'openid-client';
import { createRemoteJWKSet, jwtVerify, decodeProtectedHeader } from 'jose';
import { startServer, startTwoNodes, backends } from './lib/server.mjs';

// A tiny browser: keeps cookies per origin-less jar, follows nothing by itself.
class Browser {
  constructor() { this.jar = new Map(); }
  cookieHeader() { return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; '); }
  keep(res) {
    for (const line of res.headers.getSetCookie()) {
      const [nv] = line.split(';');
      const i = nv.indexOf('=');
      const name = nv.slice(0, i).trim();
      const value = nv.slice(i + 1).trim();
      if (/max-age=0/i.test(line) || value === '') this.jar.delete(name); else this.jar.set(name, value);
    }
  }
  async get(url, headers = {}) {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: this.cookieHeader(), ...headers } });
    this.keep(res);
    return res;
  }
  async post(url, fields) {
    const res = await fetch(url, {
      method: 'POST', redirect: 'manual',
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    this.keep(res);
    return res;
  }
}

function decodeEntities(s) {
  return s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

// Parses the first <form> of a page: its action and its hidden inputs.
function parseForm(html) {
  const form = html.match(/<form method="post" action="([^"]+)">/);
  assert.ok(form, 'the page has a form');
  const fields = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[decodeEntities(m[1])] = decodeEntities(m[2]);
  return { action: decodeEntities(form[1]), fields };
}

for (const backend of backends()) {
  describe(`identity (${backend})`, () => {
    let server, issuer, merchant, confidential, pub;
    before(async () => {
      server = await startServer({ backend });
      issuer = await Issuer.discover(server.authUrl);
      merchant = server.demo.merchants[0];
      confidential = new issuer.Client({
        client_id: merchant.client_id, client_secret: merchant.client_secret,
        token_endpoint_auth_method: 'client_secret_basic',
      });
      pub = new issuer.Client({
        client_id: server.demo.public_client.client_id,
        token_endpoint_auth_method: 'none',
        redirect_uris: ['http://127.0.0.1:8765/callback'],
        response_types: ['code'],
        id_token_signed_response_alg: 'RS256',
      });
    });
    after(async () => { await server?.stop(); });

    test('discovery documents and JWKS', async () => {
      assert.equal(issuer.issuer, server.authUrl);
      assert.equal(issuer.token_endpoint, `${server.authUrl}/oauth/v2/token`);
      assert.deepEqual(issuer.code_challenge_methods_supported, ['S256']);
      assert.ok(issuer.id_token_signing_alg_values_supported.includes('RS256'));
      assert.ok(issuer.id_token_signing_alg_values_supported.includes('ES256'));
      const as = await (await fetch(`${server.authUrl}/.well-known/oauth-authorization-server`)).json();
      assert.equal(as.issuer, server.authUrl);
      const jwks = await (await fetch(issuer.jwks_uri)).json();
      assert.ok(jwks.keys.length >= 2);
      for (const k of jwks.keys) assert.equal(k.d, undefined, 'no private parts');
      const alt = await (await fetch(`${server.authUrl}/oauth/v2/jwks`)).json();
      assert.deepEqual(alt, jwks);
    });

    test('client_credentials: openid-client grant, jose verifies against the JWKS', async () => {
      const ts = await confidential.grant({ grant_type: 'client_credentials', scope: 'payments countries' });
      assert.equal(ts.token_type.toLowerCase(), 'bearer');
      assert.equal(ts.expires_in, 3600);
      assert.equal(ts.scope, 'payments countries');
      const JWKS = createRemoteJWKSet(new URL(issuer.jwks_uri));
      const { payload, protectedHeader } = await jwtVerify(ts.access_token, JWKS, {
        issuer: server.authUrl, audience: server.baseUrl, typ: 'at+jwt', algorithms: ['ES256', 'RS256'],
      });
      assert.equal(protectedHeader.alg, 'ES256');
      assert.equal(payload.client_id, merchant.client_id);
      assert.equal(payload.sub, merchant.client_id);
      assert.equal(payload.merchant, merchant.matricule);
      assert.deepEqual(payload.countries, merchant.countries);
      assert.equal(payload.environment, 'sandbox');
      assert.equal(typeof payload.jti, 'string');
      assert.equal(payload.admin, false);
    });

    test('client_credentials answers the five fields; openid-client refreshes and validates the ID token', async () => {
      const ts = await confidential.grant({ grant_type: 'client_credentials', scope: 'payments countries' });
      for (const f of ['token_type', 'expires_in', 'access_token', 'refresh_token', 'id_token']) assert.ok(ts[f] !== undefined, f);
      const JWKS = createRemoteJWKSet(new URL(issuer.jwks_uri));
      const { payload, protectedHeader } = await jwtVerify(ts.id_token, JWKS, {
        issuer: server.authUrl, audience: merchant.client_id, algorithms: ['RS256'],
      });
      assert.equal(protectedHeader.typ, 'JWT');
      assert.equal(payload.sub, merchant.client_id);
      assert.equal(payload.azp, merchant.client_id);
      // refresh() checks the new ID token (signature, iss, aud, azp, at_hash) as an RP does.
      const refreshed = await confidential.refresh(ts.refresh_token);
      assert.notEqual(refreshed.refresh_token, ts.refresh_token);
      assert.equal(refreshed.claims().sub, merchant.client_id);
      assert.equal(refreshed.scope, 'payments countries');
      const gateway = await fetch(`${server.baseUrl}/country/list`, { headers: { 'x-sp-auth-token': `Bearer ${refreshed.access_token}` } });
      if (gateway.status !== 404) assert.equal(gateway.status, 200);
      // Rotation: the first token, presented again after the grace period, would end the family;
      // presented by another client it is refused at once.
      const other = server.demo.merchants[1];
      const stranger = new issuer.Client({ client_id: other.client_id, client_secret: other.client_secret });
      await assert.rejects(stranger.refresh(refreshed.refresh_token), (e) => e.error === 'invalid_grant' || e.response?.statusCode === 400);
    });

    test("revoking another client's token is refused (RFC 7009 2.1) and the token keeps working", async () => {
      const ts = await confidential.grant({ grant_type: 'client_credentials', scope: 'payments countries' });
      const other = server.demo.merchants[1];
      for (const token of [ts.access_token, ts.refresh_token]) {
        const res = await fetch(`${server.authUrl}/oauth/v2/revoke`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token, client_id: other.client_id, client_secret: other.client_secret }),
        });
        assert.equal(res.status, 400);
        const body = await res.json();
        assert.equal(body.success, false);
        assert.equal(body.message, 'unauthorized_client');
        assert.equal(body.error.details.error, 'unauthorized_client');
      }
      assert.equal((await confidential.introspect(ts.access_token)).active, true);
      assert.equal((await confidential.introspect(ts.refresh_token)).active, true);
      const refreshed = await confidential.refresh(ts.refresh_token);
      assert.ok(refreshed.access_token);
    });

    test('token endpoint: JSON and form bodies, spec error envelope', async () => {
      const url = `${server.authUrl}/oauth/v2/token`;
      const form = await fetch(url, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: merchant.client_id, client_secret: merchant.client_secret }),
      });
      assert.equal(form.status, 200);
      assert.equal(form.headers.get('cache-control'), 'no-store');
      const empty = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
      assert.equal(empty.status, 400);
      const eb = await empty.json();
      assert.equal(eb.success, false);
      assert.equal(eb.code, 400);
      assert.equal(eb.message, 'empty_data');
      const bad = await fetch(url, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: merchant.client_id, client_secret: 'wrong' }),
      });
      assert.equal(bad.status, 401);
      const bb = await bad.json();
      assert.equal(bb.message, 'invalid_client');
      assert.equal(bb.error.details.error, 'invalid_client');
      const basic = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${merchant.client_id}:nope`).toString('base64')}` },
        body: 'grant_type=client_credentials',
      });
      assert.equal(basic.status, 401);
      assert.match(basic.headers.get('www-authenticate'), /^Basic/);
      const grant = await fetch(url, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'password', client_id: merchant.client_id, client_secret: merchant.client_secret }),
      });
      assert.equal((await grant.json()).error.details.error, 'unsupported_grant_type');
    });

    test('authorization code + PKCE through the real login form, refresh, userinfo', async () => {
      const browser = new Browser();
      const verifier = generators.codeVerifier();
      const state = generators.state();
      const nonce = generators.nonce();
      const redirect_uri = 'http://127.0.0.1:8765/callback';
      const url = pub.authorizationUrl({
        scope: 'openid profile email offline_access payments', redirect_uri, state, nonce,
        code_challenge: generators.codeChallenge(verifier), code_challenge_method: 'S256',
      });
      const page = await browser.get(url, { 'accept-language': 'fr-CM,fr;q=0.9' });
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /lang="fr"/);
      assert.match(page.headers.get('content-security-policy'), /default-src 'none'/);
      assert.ok(browser.jar.has('sika_csrf'));
      const { action, fields } = parseForm(html);

      // A wrong password shows the form again, without redirecting.
      const wrong = await browser.post(new URL(action, server.publicUrl), { ...fields, email: server.demo.user.email, password: 'not the password', action: 'approve' });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.headers.get('location'), null);

      const res = await browser.post(new URL(action, server.publicUrl), {
        ...fields, email: server.demo.user.email, password: server.demo.user.password, action: 'approve',
      });
      assert.equal(res.status, 303);
      const location = res.headers.get('location');
      assert.ok(location.startsWith(redirect_uri));
      assert.ok(browser.jar.has('sika_session'));
      const params = pub.callbackParams(location);
      assert.equal(params.iss, server.authUrl);
      const ts = await pub.callback(redirect_uri, params, { code_verifier: verifier, state, nonce });
      assert.ok(ts.access_token && ts.refresh_token && ts.id_token);
      const claims = ts.claims();
      assert.equal(claims.nonce, nonce);
      assert.equal(claims.email, server.demo.user.email);
      assert.ok(claims.auth_time > 0);
      assert.equal(decodeProtectedHeader(ts.id_token).alg, 'RS256');

      const info = await pub.userinfo(ts.access_token);
      assert.equal(info.sub, claims.sub);
      assert.equal(info.email, server.demo.user.email);

      const refreshed = await pub.refresh(ts.refresh_token);
      assert.ok(refreshed.access_token);
      assert.notEqual(refreshed.refresh_token, ts.refresh_token);
      assert.equal(refreshed.claims().sub, claims.sub);

      // With the session and the consent given, a second authorization skips the page.
      const again = await browser.get(pub.authorizationUrl({
        scope: 'openid profile email offline_access payments', redirect_uri, state: 'again',
        code_challenge: generators.codeChallenge(verifier), code_challenge_method: 'S256',
      }));
      assert.equal(again.status, 303);
      assert.match(again.headers.get('location'), /code=/);

      // The code is single-use, and a replay revokes what it issued (RFC 6749 §4.1.2).
      await assert.rejects(pub.callback(redirect_uri, params, { code_verifier: verifier, state, nonce }));
      await assert.rejects(pub.userinfo(ts.access_token), /invalid_token/);
      await assert.rejects(pub.refresh(refreshed.refresh_token));
    });

    test('authorize errors: unregistered redirect_uri is a page, others redirect with iss', async () => {
      const bad = await fetch(`${server.authUrl}/oauth/v2/authorize?response_type=code&client_id=${pub.client_id}&redirect_uri=${encodeURIComponent('https://evil.example/cb')}&scope=openid`, { redirect: 'manual' });
      assert.equal(bad.status, 400);
      assert.match(bad.headers.get('content-type'), /text\/html/);
      const noPkce = await fetch(pub.authorizationUrl({ scope: 'openid', redirect_uri: 'http://127.0.0.1:8765/callback', state: 'x' }), { redirect: 'manual' });
      assert.equal(noPkce.status, 303);
      const q = new URL(noPkce.headers.get('location')).searchParams;
      assert.equal(q.get('error'), 'invalid_request');
      assert.equal(q.get('state'), 'x');
      assert.equal(q.get('iss'), server.authUrl);
    });

    test('introspection and revocation; the gateway refuses a revoked token at once', async () => {
      const ts = await confidential.grant({ grant_type: 'client_credentials', scope: 'payments countries' });
      const active = await confidential.introspect(ts.access_token);
      assert.equal(active.active, true);
      assert.equal(active.client_id, merchant.client_id);
      assert.equal(active.merchant, merchant.matricule);

      const gateway = `${server.baseUrl}/country/list`;
      const beforeRevoke = await fetch(gateway, { headers: { 'x-sp-auth-token': `Bearer ${ts.access_token}` } });
      const gatewayRoute = beforeRevoke.status !== 404;
      if (gatewayRoute) assert.equal(beforeRevoke.status, 200);

      await confidential.revoke(ts.access_token, 'access_token');
      assert.equal((await confidential.introspect(ts.access_token)).active, false);
      if (gatewayRoute) {
        const afterRevoke = await fetch(gateway, { headers: { 'x-sp-auth-token': `Bearer ${ts.access_token}` } });
        assert.equal(afterRevoke.status, 401);
        const body = await afterRevoke.json();
        assert.equal(body.success, false);
      }
      // RFC 7009: unknown tokens answer 200.
      await confidential.revoke('no-such-token');
      const raw = await fetch(`${server.authUrl}/oauth/v2/revoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
      assert.equal(raw.status, 400);
      assert.equal((await raw.json()).message, 'empty_data');
    });

    test('a revoked refresh token ends its family', async () => {
      const browser = new Browser();
      const verifier = generators.codeVerifier();
      const redirect_uri = 'http://127.0.0.1:8765/callback';
      const page = await browser.get(pub.authorizationUrl({
        scope: 'openid offline_access', redirect_uri, state: 's1',
        code_challenge: generators.codeChallenge(verifier), code_challenge_method: 'S256',
      }));
      const { action, fields } = parseForm(await page.text());
      const res = await browser.post(new URL(action, server.publicUrl), { ...fields, email: server.demo.user.email, password: server.demo.user.password, action: 'approve' });
      const ts = await pub.callback(redirect_uri, pub.callbackParams(res.headers.get('location')), { code_verifier: verifier, state: 's1' });
      await pub.revoke(ts.refresh_token, 'refresh_token');
      await assert.rejects(pub.refresh(ts.refresh_token), (e) => e.response?.statusCode === 400);
    });
  });
}

// Sign-in throttling behind a trusted proxy (X-Forwarded-For names the client): an attacker's
// failures answer alike for a real and an unknown e-mail, throttle the attacker (429 +
// Retry-After, alike too), and the owner with a device cookie still signs in. On PostgreSQL the
// attempts run concurrently through two nodes sharing the database.
for (const backend of backends()) {
  describe(`sign-in throttling (${backend})`, () => {
    let running, server, second;
    const env = { SIKA_TRUSTED_PROXIES: '127.0.0.1, ::1', SIKA_IDENTITY_MAX_FAILED_LOGINS: '3',
      SIKA_IDENTITY_LOGIN_FAILURES_PER_ACCOUNT: '12' };
    before(async () => {
      // On PostgreSQL a second node on the same database and public URL answers on its own port.
      running = await startTwoNodes({ backend, env });
      ({ first: server, second } = running);
      if (second) second.base = `http://127.0.0.1:${second.port}`;
    });
    after(() => running?.stop());

    // One attempt through the form from `address` on node `node` (0 or 1), with extra cookies.
    const attempt = async (email, password, address, { node = 0, cookies = {} } = {}) => {
      const browser = new Browser();
      for (const [k, v] of Object.entries(cookies)) browser.jar.set(k, v);
      const url = new URL(`${server.authUrl}/oauth/v2/authorize`);
      const origin = node === 1 && second ? second.base : server.publicUrl;
      for (const [k, v] of Object.entries({
        response_type: 'code', client_id: server.demo.public_client.client_id, redirect_uri: 'http://127.0.0.1:8765/callback',
        scope: 'openid email', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256',
        ui_locales: 'en',
      })) url.searchParams.set(k, v);
      const page = await browser.get(new URL(url.pathname + url.search, origin));
      assert.equal(page.status, 200);
      const { action, fields } = parseForm(await page.text());
      const res = await fetch(new URL(action, origin), {
        method: 'POST', redirect: 'manual',
        headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
        body: new URLSearchParams({ ...fields, email, password, action: 'approve' }).toString(),
      });
      browser.keep(res);
      const html = await res.text();
      return { status: res.status, retryAfter: res.headers.get('retry-after'), html, jar: browser.jar };
    };
    const comparable = (html, email) => html.replaceAll(email, 'EMAIL').replace(/name="csrf" value="[^"]*"/, 'name="csrf"');

    test('known and unknown e-mails answer alike; the attacker is throttled; the owner with a device cookie signs in', async () => {
      const user = server.demo.user;
      // The owner signs in once from home: a device cookie is set.
      const home = await attempt(user.email, user.password, '198.51.100.20');
      assert.equal(home.status, 303, home.html);
      const device = home.jar.get('sika_device');
      assert.ok(device, 'a device cookie');

      // The attacker, from one address: the real e-mail and an unknown one, attempt by attempt.
      const unknown = 'nobody-here@example.com';
      for (let i = 0; i < 5; i++) {
        const k = await attempt(user.email, `guess ${i}`, '203.0.113.9');
        const u = await attempt(unknown, `guess ${i}`, '203.0.113.9');
        assert.equal(k.status, i < 3 ? 401 : 429, `attempt ${i}`);
        assert.equal(u.status, k.status, `attempt ${i}`);
        assert.equal(u.retryAfter === null, k.retryAfter === null);
        if (k.status === 429) assert.ok(Number(k.retryAfter) >= 1);
        assert.equal(comparable(k.html, user.email), comparable(u.html, unknown), `attempt ${i}`);
        assert.ok(k.html.includes(`value="${user.email}"`), 'the e-mail typed stays in the form');
      }

      // Distributed guessing, concurrently (through both nodes on PostgreSQL), reaches the
      // account's ceiling: 12 attempts per hour for that e-mail, from all addresses.
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) =>
        attempt(user.email, `spray ${i}`, `203.0.114.${i}`, { node: i % 2 })));
      const statuses = results.map((r) => r.status);
      assert.ok(statuses.every((st) => st === 401 || st === 429), statuses.join());
      // 1 (the owner's sign-in) + 3 (the first address's compared guesses) + 8 = 12 compared.
      assert.equal(statuses.filter((st) => st === 401).length, 8, statuses.join());

      // Without the device cookie the owner waits, like anyone typing that e-mail...
      assert.equal((await attempt(user.email, user.password, '198.51.100.30')).status, 429);
      // ...with it, the owner signs in, on either node.
      const owner = await attempt(user.email, user.password, '198.51.100.30', { node: 1, cookies: { sika_device: device } });
      assert.equal(owner.status, 303, owner.html);
    });
  });
}
