// Debian's Chromium, headless, for the page tests (playwright-core drives it; no download).
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

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
