// Real headless Chromium (Debian's package) driving the pages a person sees: the identity
// service's login and consent page, and the hosted payment confirmation page.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { noBrowser } from './lib/browser.mjs';
import { merchantToken } from './lib/server.mjs';
import { pageSuite } from './lib/pagesuite.mjs';

const b64url = (buf) => buf.toString('base64url');

describe('pages in a real browser', { skip: noBrowser }, () => {
  let server, browser;
  pageSuite({}, { setup: (s) => { ({ server, browser } = s); } });

  test('a user signs in through the login and consent page and comes back with a code', async () => {
    const client = server.demo.public_client;
    // A real callback receiver on a loopback port (RFC 8252: any port of a loopback redirect URI).
    let callback = null;
    const receiver = http.createServer((req, res) => {
      const url = new URL(req.url, 'http://127.0.0.1');
      if (url.pathname === '/callback') callback = url;  // not the browser's own /favicon.ico
      res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in');
    });
    await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const redirectUri = `http://127.0.0.1:${receiver.address().port}/callback`;
    const verifier = b64url(randomBytes(32));
    const challenge = b64url(createHash('sha256').update(verifier).digest());
    const state = b64url(randomBytes(12));
    const url = new URL(`${server.authUrl}/oauth/v2/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri,
      scope: 'openid profile email', state, nonce: 'n-' + state, code_challenge: challenge, code_challenge_method: 'S256' }))
      url.searchParams.set(k, v);

    const context = await browser.newContext({ locale: 'en-GB' });
    const page = await context.newPage();
    await page.goto(url.toString());
    assert.equal(await page.getAttribute('html', 'lang'), 'en');
    await page.fill('#email', server.demo.user.email);
    await page.fill('#password', 'wrong password');
    await page.click('button[value=approve]');
    assert.equal(callback, null, 'a wrong password must not redirect');
    assert.ok(await page.isVisible('#password'), 'the form is shown again');
    await page.fill('#email', server.demo.user.email);
    await page.fill('#password', server.demo.user.password);
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[value=approve]')]);
    receiver.close();
    assert.ok(callback, 'the browser was sent to the redirect URI');
    assert.equal(callback.searchParams.get('state'), state);
    assert.equal(callback.searchParams.get('iss'), server.authUrl);
    const code = callback.searchParams.get('code');
    assert.ok(code);

    const token = await fetch(`${server.authUrl}/oauth/v2/token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri,
        client_id: client.client_id, code_verifier: verifier }),
    });
    assert.equal(token.status, 200);
    assert.ok((await token.json()).id_token);
    await context.close();
  });

  test('the hosted confirmation page shows the payment and pushes it to the phone', async () => {
    const token = await merchantToken(server);
    const intent = await (await fetch(`${server.baseUrl}/collection/intent`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
      body: JSON.stringify({ amount: 2500, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
        channel: 'PROVIDER', customer_wallet: server.demo.sandbox.msisdn.success, description: 'Panier 17',
        settlement_mode: 'DIRECT' }),
    })).json();
    assert.equal(intent.success, true, JSON.stringify(intent));
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    await page.goto(intent.data.confirmation_url);
    const text = await page.textContent('body');
    assert.match(text, /Panier 17/);
    assert.match(text.replace(/\s/g, ''), /2[\s.,]?500/);
    assert.match(text, /XAF|FCFA/);
    const button = page.locator('button[type=submit]').first();
    await Promise.all([page.waitForLoadState('load'), button.click()]);
    const status = await (await fetch(`${server.baseUrl}/collection/status`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
      body: JSON.stringify({ transaction_reference: intent.data.transaction_reference }),
    })).json();
    assert.notEqual(status.data.status, 'INITIATED', 'the page pushed the request');
    await context.close();
  });
});
