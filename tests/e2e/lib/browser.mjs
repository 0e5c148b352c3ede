// Debian's Chromium, headless, for the page tests (playwright-core drives it; no download).
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { totp } from './totp.mjs';

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
// A reason to skip the page tests when there is no browser, else false.
export const noBrowser = !existsSync(chromiumPath) && `no browser at ${chromiumPath}`;

export function launchBrowser() {
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

// Without JavaScript a customer follows a payment by pressing the page's Refresh link (there is no
// meta refresh), and once it is paid the "Return to the shop" link: until the page's address
// matches `url`. Fails if it is not reached after 40 refreshes.
export async function followWithoutScript(page, url) {
  for (let i = 0; i < 40 && !url.test(page.url()); i++) {
    await page.waitForTimeout(300);
    if (await page.locator('#sika-live[data-next] a.button').count())
      await Promise.all([page.waitForURL(url), page.click('#sika-live a.button')]);
    else if (await page.locator('#sika-refresh').count())
      await Promise.all([page.waitForLoadState('load'), page.click('#sika-refresh')]);
  }
  if (!url.test(page.url())) throw new Error(`${page.url()} is not ${url}`);
}

// Signs the demo merchant's owner in to the dashboard of `server` in a new page of `context`;
// returns the page, back on the dashboard.
export async function signInMerchant(server, context) {
  const dashboard = server.demo.dashboard.url;
  const who = server.demo.dashboard.merchant;
  const page = await context.newPage();
  await page.goto(dashboard + '/');
  await page.fill('#email', who.email);
  await page.fill('#password', who.password);
  await Promise.all([page.waitForURL((u) => u.toString().startsWith(dashboard)), page.click('button[value=approve]')]);
  return page;
}

// Signs the demo's platform operator in to the dashboard of `server` in a new page of `context`,
// with the TOTP second factor; returns the page, on the operators' merchant list.
export async function signInOperator(server, context) {
  const dashboard = server.demo.dashboard.url;
  const page = await context.newPage();
  await page.goto(dashboard + '/');
  await page.fill('#email', server.demo.dashboard.operator.email);
  await page.fill('#password', server.demo.dashboard.operator.password);
  await Promise.all([page.waitForURL((u) => u.toString().startsWith(dashboard)), page.click('button[value=approve]')]);
  const secret = (await page.textContent('#totp-secret')).trim();
  await page.fill('#code', totp(secret));
  await Promise.all([page.waitForURL(/\/operator\/merchants$/), page.click('button')]);
  return page;
}
