// The timeline of a collection made through the MTN MoMo connector, on the dashboard of the live
// demo merchant, in headless Chromium without JavaScript: its moves, the calls made to the operator
// (requesttopay, the status query that verified the callback; no credential, no token) and the
// callback, in time order, on a phone (390 px) and a desktop, fr and en, axe clean. Screenshots go
// to $SIKA_SCREENSHOTS when set. SQLite.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { startServer, waitFor } from './lib/server.mjs';
import { connectorSetup, liveToken, gateway } from './lib/operator.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { startDouble } from './doubles/spawn.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

describe('an MTN collection on the live merchant\'s dashboard', { skip: noBrowser }, () => {
  let double, server, browser;
  before(async () => {
    double = await startDouble('mtn_momo', { 'status-rps': 1000 });
    const setup = connectorSetup('mtn_momo', double);
    server = await startServer({ backend: 'sqlite', args: ['--set', 'log.access=false', ...setup.args], env: setup.env });
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
    if (double) await double.stop();
  });

  test('its timeline shows the operator calls and the callback, no secret', { timeout: 60000 }, async () => {
    const live = server.demo.live_merchants[0];
    const gw = gateway(server, await liveToken(server, 'mtn_momo', 'payments'));
    const post = async (path, body) => (await gw(path, body)).body;
    const intent = await post('/collection/intent', { amount: 2500, currency: 'XAF', provider: 'MTN_MOMO_CMR',
      customer_wallet: '237670012100', transaction_uuid: randomUUID(), description: 'Commande 42' });
    const reference = intent.data.transaction_reference;
    await post('/collection/execute', { transaction_reference: reference });
    await waitFor(async () => (await post('/collection/status', { transaction_reference: reference })).data.status === 'COMPLETED');

    const dashboard = server.demo.dashboard.url;
    const context = await browser.newContext({ locale: 'en-GB', javaScriptEnabled: false, ...phoneViewport });
    const page = await context.newPage();
    await page.goto(dashboard + '/');
    await page.fill('#email', live.dashboard.email);
    await page.fill('#password', live.dashboard.password);
    await Promise.all([page.waitForURL((u) => u.toString().startsWith(dashboard)), page.click('button[value=approve]')]);
    // The operator calls are written in batches (every 500 ms): the page shows them once written.
    let text = '';
    await waitFor(async () => {
      await page.goto(`${dashboard}/transactions/${reference}`);
      text = await page.textContent('#timeline');
      return /requesttopay/.test(text) && /callback/i.test(text);
    }, 10000);
    assert.match(text, /POST \/collection\/v1_0\/requesttopay/);
    assert.match(text, /GET \/collection\/v1_0\/requesttopay\//, 'the status query that verified the callback');
    assert.match(text, /COMPLETED/);
    const html = await page.content();
    for (const secret of ['collection-api-key', 'collection-subscription-key', 'Bearer '])
      assert.ok(!html.includes(secret), `the page shows no ${secret}`);
    await assertPageStandards(page, 'MTN transaction timeline (phone)');
    if (shots) await page.screenshot({ path: `${shots}/mtn-timeline-phone.png`, fullPage: true });

    const desktop = await browser.newContext({ locale: 'fr-FR', ...desktopViewport, storageState: await context.storageState() });
    const wide = await desktop.newPage();
    await wide.goto(`${dashboard}/transactions/${reference}`);
    assert.match(await wide.textContent('#timeline'), /requesttopay/);
    await assertPageStandards(wide, 'MTN transaction timeline (desktop)');
    if (shots) await wide.screenshot({ path: `${shots}/mtn-timeline-desktop.png`, fullPage: true });
    await desktop.close();
    await context.close();
  });
});
