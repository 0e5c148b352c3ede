// The merchant's dashboard on a phone (390 px) and a desktop, in headless Chromium: every page
// axe-clean and without sideways scrolling, the menu folded in a <details> on the phone (no
// JavaScript) and taking little of the screen, every table row showing its amount and status
// with their column names, table regions reachable from the keyboard, and times in the
// merchant's time zone (its setting, else its first country's). Screenshots go to
// $SIKA_SCREENSHOTS when set.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { noBrowser, signInMerchant } from './lib/browser.mjs';
import { backends } from './lib/server.mjs';
import { assertPageStandards, phoneViewport, desktopViewport } from './lib/pagecheck.mjs';
import { pageSuite, payFixedLink } from './lib/pagesuite.mjs';

const shots = process.env.SIKA_SCREENSHOTS;
const pages = ['/', '/transactions', '/links', '/payouts', '/subscriptions', '/checkout', '/wallet-links', '/webhooks',
  '/developers', '/sandbox', '/team', '/audit', '/security', '/settings'];

for (const backend of backends()) {
  describe(`dashboard on a phone and a desktop (${backend})`, { skip: noBrowser }, () => {
    let server, browser, reference;
    pageSuite({ backend, args: ['--set', 'payments.sandbox_delay_ms=0'] }, {
      setup: async (s) => {
        ({ server, browser } = s);
        reference = await payFixedLink(server);
      },
    });

    const dashboard = () => server.demo.dashboard.url;
    const signIn = (context) => signInMerchant(server, context);

    test('on a phone: folded menu, cards with amount and status, no sideways scroll, axe-clean', async () => {
      const context = await browser.newContext({ locale: 'fr-FR', javaScriptEnabled: false, ...phoneViewport });
      const page = await signIn(context);
      for (const rel of pages) {
        await page.goto(dashboard() + rel);
        assert.ok(await page.isVisible('nav details.menu-phone summary'), `${rel}: the menu is a <details>`);
        assert.ok(!(await page.isVisible('nav .menu-wide')), `${rel}: the line of links is for wide screens`);
        const navHeight = await page.evaluate(() => document.querySelector('nav').getBoundingClientRect().height);
        assert.ok(navHeight < 844 / 6, `${rel}: the folded menu takes ${navHeight}px`);
        await assertPageStandards(page, `${rel} (phone)`);
        for (const region of await page.$$('.scroll'))
          assert.equal(await region.getAttribute('tabindex'), '0', `${rel}: a table region is keyboard-reachable`);
        if (shots) await page.screenshot({ path: `${shots}/dashboard${rel === '/' ? '-home' : rel.replace('/', '-')}-phone.png`, fullPage: true });
      }
      // The menu opens without JavaScript.
      await page.click('nav details.menu-phone summary');
      assert.ok(await page.isVisible('nav details.menu-phone a[href$="/transactions"]'));
      // Every transaction card shows its amount and status, named.
      await page.goto(`${dashboard()}/transactions`);
      const row = page.locator('tbody tr', { has: page.locator(`a:text("${reference}")`) });
      const status = row.locator('td[data-label=Statut]');
      const amount = row.locator('td[data-label=Montant]');
      assert.ok(await status.isVisible(), 'the status is in view');
      assert.ok(await amount.isVisible(), 'the amount is in view');
      assert.match(await amount.textContent(), /XAF/);
      const box = await amount.boundingBox();
      assert.ok(box.x >= 0 && box.x + box.width <= 390, 'the amount is within the screen');
      if (shots) await page.screenshot({ path: `${shots}/dashboard-transactions-cards-phone.png`, fullPage: true });
      await context.close();
    });

    test('on a desktop: a line of links, tables, axe-clean', async () => {
      const context = await browser.newContext({ locale: 'en-GB', ...desktopViewport });
      const page = await signIn(context);
      for (const rel of pages) {
        await page.goto(dashboard() + rel);
        assert.ok(await page.isVisible('nav .menu-wide a[href$="/transactions"]'), `${rel}: the menu is a line of links`);
        assert.ok(!(await page.isVisible('nav details.menu-phone')), `${rel}: no folded menu`);
        await assertPageStandards(page, `${rel} (desktop)`);
        if (shots) await page.screenshot({ path: `${shots}/dashboard${rel === '/' ? '-home' : rel.replace('/', '-')}-desktop.png`, fullPage: true });
      }
      await context.close();
    });

    test('times are in the merchant\'s time zone, which the owner can change', async () => {
      const context = await browser.newContext({ locale: 'en-GB', ...desktopViewport });
      const page = await signIn(context);
      const created = async () => {
        await page.goto(`${dashboard()}/transactions?q=4321`);
        const row = page.locator('tbody tr', { has: page.locator(`a:text("${reference}")`) });
        return (await row.locator('td').first().textContent()).trim();
      };
      // The demo merchant operates in Cameroon: Africa/Douala, UTC+1.
      assert.match(await page.textContent('nav .menu-wide'), /times in Africa\/Douala \(UTC\+1\)/);
      const douala = await created();
      await page.goto(`${dashboard()}/settings`);
      await page.selectOption('#zone', 'Africa/Nairobi');
      await Promise.all([page.waitForURL(/\/settings$/), page.click('form[action$="/settings"] button')]);
      assert.match(await page.textContent('#time-zone'), /Africa\/Nairobi \(UTC\+3\)/);
      const nairobi = await created();
      const minutes = (s) => { const [d, t] = s.split(' '); return Date.parse(`${d}T${t}:00Z`) / 60000; };
      assert.equal(minutes(nairobi) - minutes(douala), 120, `${douala} in Douala is ${nairobi} in Nairobi`);
      await page.goto(`${dashboard()}/settings`);
      await page.selectOption('#zone', '');
      await Promise.all([page.waitForURL(/\/settings$/), page.click('form[action$="/settings"] button')]);
      assert.equal(await created(), douala);
      await context.close();
    });
  });
}
