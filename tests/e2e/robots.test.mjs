// GET /robots.txt: crawlers are kept out of every surface (customer pages, APIs, dashboard),
// and the route is rate-limited per address like the other public routes.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';

describe('robots.txt', () => {
  let server;
  before(async () => { server = await startServer(); });
  after(async () => { if (server) await server.stop(); });

  const origin = () => new URL(server.baseUrl).origin;

  test('disallows the checkout pages, the APIs and the dashboard', async () => {
    const res = await fetch(`${origin()}/robots.txt`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain/);
    const lines = (await res.text()).split('\n');
    assert.equal(lines[0], 'User-agent: *');
    for (const surface of ['/checkout/', '/api/', '/auth/', '/link/', '/dashboard/'])
      assert.ok(lines.includes(`Disallow: ${surface}`), `Disallow: ${surface}`);
  });

  test('is rate-limited per address', async () => {
    let refused = null;
    for (let i = 0; i < 80 && !refused; i++) {
      const res = await fetch(`${origin()}/robots.txt`);
      await res.arrayBuffer();
      if (res.status === 429) refused = res;
      else assert.equal(res.status, 200);
    }
    assert.ok(refused, 'a 429 after 60 answers in a minute');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
  });
});
