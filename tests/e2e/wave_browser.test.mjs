// The confirmation page of a PENDING Wave collection: a "Pay with Wave" link to the session's
// wave_launch_url and, on a computer, its QR code (inline SVG, no script, no third-party host);
// axe-clean on a phone (390 px) and a desktop, in French and English.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { startServer, sqlRows } from './lib/server.mjs';
import { startDouble } from './doubles/spawn.mjs';
import { connectorSetup, liveToken, gateway } from './lib/operator.mjs';
import { launchBrowser, noBrowser } from './lib/browser.mjs';
import { assertPageStandards } from './lib/pagecheck.mjs';

const shots = process.env.SIKA_SHOTS_DIR || '/tmp/shots/feat-wave';

test('a PENDING Wave collection shows the link to Wave and, on a computer, its QR code', { skip: noBrowser }, async () => {
  const double = await startDouble('wave');
  const setup = connectorSetup('wave', double);
  const server = await startServer({ backend: 'sqlite', args: ['--set', 'log.access=false', ...setup.args], env: setup.env });
  const browser = await launchBrowser();
  try {
    const gw = gateway(server, await liveToken(server, 'wave', 'payments'));
    const post = async (path, body) => (await gw(path, body)).body;
    const intent = await post('/collection/intent', { amount: 1500, currency: 'XOF', provider: 'WAVE_CIV',
      customer_wallet: '2250701234454', transaction_uuid: randomUUID(), description: 'Commande 42' });
    const reference = intent.data.transaction_reference;
    const url = intent.data.confirmation_url;
    assert.ok(url, JSON.stringify(intent));
    await post('/collection/execute', { transaction_reference: reference });
    const [[launch]] = sqlRows(server, `SELECT customer_url FROM pay_transactions WHERE reference = '${reference}'`);
    assert.match(launch, /^https:\/\/pay\.wave\.com\/c\/cos-/);
    mkdirSync(shots, { recursive: true });
    for (const [name, viewport] of [['phone', { width: 390, height: 844 }], ['desktop', { width: 1280, height: 900 }]]) {
      for (const lang of ['fr', 'en']) {
        const context = await browser.newContext({ viewport, javaScriptEnabled: false });
        const page = await context.newPage();
        await page.goto(`${url}&lang=${lang}`);
        assert.equal(await page.getAttribute('#operator-link', 'href'), launch);
        assert.equal(await page.textContent('#operator-link'), lang === 'fr' ? 'Payer avec Wave' : 'Pay with Wave');
        assert.ok(await page.getAttribute('#operator-qr', 'aria-label'));
        assert.equal(await page.isVisible('#operator-qr'), name === 'desktop', 'the QR code is for a computer');
        await assertPageStandards(page, `confirmation page ${name} ${lang}`);
        await page.screenshot({ path: `${shots}/wave-confirm-${name}-${lang}.png`, fullPage: true });
        await context.close();
      }
    }
  } finally {
    await browser.close();
    await server.stop();
    await double.stop();
  }
});
