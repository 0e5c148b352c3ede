// What every customer and dashboard page must pass in a browser: axe-core finds no violation,
// nothing scrolls sideways, no <meta http-equiv=refresh>, and search engines are told to stay
// out (meta robots noindex; the X-Robots-Tag header is checked on the response).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

// The axe-core violations of the page as "rule: selectors" lines (WCAG 2 A/AA and best practices).
// axe needs JavaScript: a page opened without it is checked as a twin, the same URL opened with
// the same cookies and viewport in a context with JavaScript (the server renders the same HTML).
export async function axeViolations(page) {
  let target = page, twin = null;
  if (page.context()._options?.javaScriptEnabled === false) {
    twin = await page.context().browser().newContext({ viewport: page.viewportSize(),
      storageState: await page.context().storageState() });
    target = await twin.newPage();
    await target.goto(page.url());
  }
  try {
    if (!(await target.evaluate(() => typeof window.axe === 'object'))) await target.evaluate(axeSource);
    return await target.evaluate(async () => {
      const result = await window.axe.run(document, { resultTypes: ['violations'] });
      return result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    });
  } finally {
    if (twin) await twin.close();
  }
}

// Asserts the page standards on the page as it is now; `what` names it in messages.
export async function assertPageStandards(page, what) {
  assert.deepEqual(await axeViolations(page), [], `${what}: axe violations`);
  const sideways = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(sideways[0] <= sideways[1], `${what}: scrolls sideways (${sideways[0]} > ${sideways[1]})`);
  assert.equal(await page.locator('meta[http-equiv=refresh i]').count(), 0, `${what}: meta refresh`);
  assert.match(await page.getAttribute('meta[name=robots]', 'content') ?? '', /noindex/, `${what}: meta robots noindex`);
}

// The page's visible text holds no raw value: no ISO 8601 timestamp, no upper-case status code.
export async function assertNoRawValues(page, what) {
  const text = await page.evaluate(() => document.body.innerText);
  assert.doesNotMatch(text, /\d{4}-\d\d-\d\dT\d\d:\d\d/, `${what}: an ISO timestamp is shown`);
  assert.doesNotMatch(text, /\b(INITIATED|PENDING|COMPLETED|FAILED|EXPIRED|CANCELLED|MONTHLY|ACTIVE)\b/,
    `${what}: a raw status is shown`);
}

export const phoneViewport = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
export const desktopViewport = { viewport: { width: 1280, height: 900 } };
