// The dashboard's Operators' health in headless Chromium, without JavaScript: the operator signs
// in with TOTP, sees each connector's state, forces the sandbox CLOSED (the form carries the CSRF
// token; a collection intent is then refused with 503), clears it, and finds both changes in the
// audit log. The page passes axe on a phone (390 px) and on a desktop. Screenshots go to
// $SIKA_SCREENSHOTS when set.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { noBrowser, signInOperator } from './lib/browser.mjs';
import { backends, merchantToken } from './lib/server.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { pageSuite } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;

for (const backend of backends()) {
  describe(`operators' health in a browser (${backend})`, { skip: noBrowser }, () => {
    let server, browser;
    pageSuite({ backend, args: ['--set', 'payments.health_publish_ms=200'] }, { setup: (s) => { ({ server, browser } = s); } });

    test('the operator forces the sandbox CLOSED and clears it, audited, on a phone and a desktop', { timeout: 60000 }, async () => {
      const dashboard = server.demo.dashboard.url;
      const context = await browser.newContext({ locale: 'en-GB', javaScriptEnabled: false, ...phoneViewport });
      const page = await signInOperator(server, context);

      await page.goto(dashboard + '/operator/health');
      const table = page.locator('#operator-health');
      assert.match(await table.textContent(), /sandbox/);
      assert.equal(await page.getAttribute('#operator-health tr:has(td:text-is("sandbox")) td[data-state]', 'data-state'), 'OPERATIONAL');
      await assertPageStandards(page, 'operators health (phone)');
      if (shots) await page.screenshot({ path: `${shots}/operator-health-phone.png`, fullPage: true });

      await page.selectOption('#override-connector', 'sandbox');
      await page.selectOption('#override-state', 'CLOSED');
      await Promise.all([page.waitForURL(/\/operator\/health$/), page.click('#override-apply')]);
      assert.equal(await page.getAttribute('#operator-health tr:has(td:text-is("sandbox")) td[data-state]', 'data-state'), 'CLOSED');
      assert.match(await page.textContent('#operator-health'), /forced by/);
      if (shots) await page.screenshot({ path: `${shots}/operator-health-closed-phone.png`, fullPage: true });

      const token = await merchantToken(server, 0);
      const refused = await fetch(`${server.baseUrl}/collection/intent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}`, 'accept-language': 'en' },
        body: JSON.stringify({ amount: 1000, currency: 'XAF', transaction_uuid: randomUUID(), provider: 'MTN_MOMO_CMR',
          channel: 'PROVIDER', customer_wallet: server.demo.sandbox.msisdn.success }),
      });
      assert.equal(refused.status, 503);
      assert.match((await refused.json()).error.details.provider, /operator CLOSED/);

      const desktop = await browser.newContext({ locale: 'fr-FR', ...desktopViewport,
        storageState: await context.storageState() });
      const wide = await desktop.newPage();
      await wide.goto(dashboard + '/operator/health');
      assert.match(await wide.textContent('h2#oh'), /État des opérateurs/);
      await assertPageStandards(wide, 'operators health (desktop)');
      if (shots) await wide.screenshot({ path: `${shots}/operator-health-desktop.png`, fullPage: true });
      await desktop.close();

      await page.selectOption('#override-connector', 'sandbox');
      await page.selectOption('#override-state', '');
      await Promise.all([page.waitForURL(/\/operator\/health$/), page.click('#override-apply')]);
      assert.equal(await page.getAttribute('#operator-health tr:has(td:text-is("sandbox")) td[data-state]', 'data-state'), 'OPERATIONAL');
      await page.goto(dashboard + '/audit');
      const audit = await page.textContent('table');
      assert.match(audit, /operator_health\.force/);
      assert.match(audit, /operator_health\.clear/);
      await context.close();
    });
  });
}
