// Limits behind a reverse proxy, black-box: sika started with the test's own address (127.0.0.1)
// as a trusted proxy, so X-Forwarded-For names the client. Bad token requests from one client
// address throttle that address only: every other client behind the same proxy keeps getting
// tokens with its correct credentials. Runs on SQLite, and on PostgreSQL when SIKA_TEST_PG_DSN is set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, backends } from './lib/server.mjs';

for (const backend of backends()) {
  describe(`limits behind a proxy (${backend})`, () => {
    let server, merchant;
    before(async () => {
      server = await startServer({
        backend, env: { SIKA_TRUSTED_PROXIES: '127.0.0.1, ::1' },
        args: ['--set', 'links.page_views_per_address_per_minute=3'],
      });
      merchant = server.demo.merchants[0];
    });
    after(async () => { await server?.stop(); });

    const token = (forwardedFor, clientId, secret) => fetch(`${server.authUrl}/oauth/v2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
    });

    test('a flood of bad client credentials throttles its own address, not the other clients', async () => {
      for (let i = 1; i <= 30; i++) {
        const r = await token('203.0.113.9', merchant.client_id, `wrong-${i}`);
        // The client's own failure limit (20 per minute) answers 429 first for its later failures.
        assert.equal(r.status, i <= 20 ? 401 : 429, `attempt ${i}`);
      }
      const throttled = await token('203.0.113.9', 'nobody', 'guess');
      assert.equal(throttled.status, 429);
      const body = await throttled.json();
      assert.equal(body.message, 'rate_limited');
      const retry = Number(throttled.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);

      // Before: every client behind the proxy got 429 for a minute. Now the right secret works
      // from any other address...
      const ok = await token('198.51.100.20', merchant.client_id, merchant.client_secret);
      assert.equal(ok.status, 200, JSON.stringify(await ok.json()));
      // ...and the flooding address cannot hide behind an address it writes itself.
      const forged = await token('198.51.100.20, 203.0.113.9', merchant.client_id, merchant.client_secret);
      assert.equal(forged.status, 429);
    });

    test('payment-link page views are limited per client address, each address on its own', async () => {
      const url = server.demo.payment_links[0].payment_url;
      const view = (address) => fetch(url, { headers: { 'x-forwarded-for': address, 'accept-language': 'en' } });
      for (let i = 1; i <= 3; i++) assert.equal((await view('203.0.113.50')).status, 200, `view ${i}`);
      const refused = await view('203.0.113.50');
      assert.equal(refused.status, 429);
      assert.match(refused.headers.get('content-type'), /^text\/html/);
      const retry = Number(refused.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
      assert.doesNotMatch(await refused.text(), /203\.0\.113\.50/);
      assert.equal((await view('203.0.113.51')).status, 200);
    });
  });
}
