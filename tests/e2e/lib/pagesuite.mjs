// What the page tests set up the same way: a server and a headless browser (and the two demo shops
// when asked), started before a describe's tests and stopped after them; a demo payment link paid
// by a customer.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, after } from 'node:test';
import { launchBrowser } from './browser.mjs';
import { startServer, waitFor, sqlRows } from './server.mjs';
import { startDemoShops } from './shops.mjs';

// Registers the enclosing describe's before and after hooks: before, a server started with
// `options` (startServer's), a browser, the demo shops (cmrSite, civSite) when `shops`, then
// `setup(suite)`; after, all of it stopped. Returns the suite object they fill in
// ({ server, browser, cmrSite?, civSite? }).
export function pageSuite(options = {}, { shops = false, setup } = {}) {
  const suite = {};
  before(async () => {
    suite.server = await startServer(options);
    suite.browser = await launchBrowser();
    if (shops) Object.assign(suite, await startDemoShops(suite.server));
    if (setup) await setup(suite);
  });
  after(async () => {
    if (suite.browser) await suite.browser.close();
    if (suite.cmrSite) await suite.cmrSite.close();
    if (suite.civSite) await suite.civSite.close();
    if (suite.server) await suite.server.stop();
  });
  return suite;
}

// A customer pays the demo's fixed-amount payment link (a sandbox MTN number): the answer is a 200;
// with `completed`, the payment is COMPLETED before it resolves. Resolves to its reference.
export async function payFixedLink(server, { completed = false } = {}) {
  const link = server.demo.payment_links.find((l) => l.kind === 'fixed');
  const paid = await fetch(`${server.baseUrl}/pay/${link.short_code}/pay`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ customer_phone: '237690004321', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR' }),
  });
  assert.equal(paid.status, 200, await paid.clone().text());
  const reference = (await paid.json()).data.transaction_reference;
  if (completed) {
    const done = await waitFor(() => sqlRows(server, `SELECT status FROM pay_transactions WHERE reference = '${reference}'`)[0]?.[0] === 'COMPLETED');
    assert.ok(done, 'the payment completed');
  }
  return reference;
}
