// A complete merchant site taking payments through Sika's hosted checkout, with Node.js alone
// (no dependency). docs/checkout.md walks through it; tests/e2e/checkout_browser.test.mjs runs
// it against a real server.
//
//   node docs/examples/merchant-site.mjs   (reads SIKA_CHECKOUT_URL, SIKA_API_KEY,
//                                           SIKA_CHECKOUT_SECRET, PORT)
//
// The form is signed (signCheckoutRequest): the customer can read it and change it, but a changed
// amount, orderId, currency or anything that decides where the money goes is refused.
//
// The three rules of a trustworthy return:
//  1. verify the signature of service_data with your checkout secret (constant time);
//  2. check that it is about YOUR order and YOUR money: reference = your orderId, amount and
//     currency = yours, settlement_mode, distribution and fee_bearer = what you asked for, and
//     once COMPLETED, credited_amount = what you expect to be credited;
//  3. before delivering anything valuable, confirm with POST {base_url}/collection/status
//     (and handle the webhook), as the return can be replayed by whoever saw the URL.
import http from 'node:http';
import { createHmac, timingSafeEqual, randomUUID } from 'node:crypto';

// Returns the decoded return data when `signature` is the HMAC-SHA256 of `serviceData` (the
// exact text received, already URL-decoded) under `secret`; null otherwise.
export function verifyServiceData(secret, serviceData, signature) {
  if (typeof serviceData !== 'string' || typeof signature !== 'string') return null;
  const expected = createHmac('sha256', secret).update(serviceData, 'utf8').digest('hex');
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(signature, 'utf8');
  if (a.length !== b.length || !timingSafeEqual(a, b)) return null;
  try {
    return JSON.parse(serviceData);
  } catch {
    return null;
  }
}

// The signature of a checkout request (docs/checkout.md, "Signed requests"): hex HMAC-SHA256,
// under your checkout secret, of the canonical text of the fields that decide the money.
// `amountMinor` is the amount in minor units (5000 XAF, 1050 for 10.50 USD).
export function signCheckoutRequest(secret, { orderId, amountMinor, currency, settlementMode = 'DIRECT',
  distribution = [], feeBearer = 'CUSTOMER' }) {
  const lines = distribution.map((l) => `${l.matricule}:${Math.round(Number(l.rate) * 10000)}`).join(',');
  const canonical = ['sika-checkout-v1', `orderId=${orderId}`, `amount=${amountMinor}`, `currency=${currency}`,
    `settlement_mode=${settlementMode}`, `distribution=${lines}`, `feeBearer=${feeBearer}`].join('\n');
  return createHmac('sha256', secret).update(canonical, 'utf8').digest('hex');
}

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// Starts the site on `port` (0: any free port). Returns { url, orders, close }.
// `amount` is in minor units and `amountText` as posted (major units: "10.00" EUR); `line: 'up'`
// lets the customer pay in another currency (service_data then keeps the order's amount and
// currency, and adds charged_amount, charged_currency and rate).
export async function startMerchantSite({ checkoutUrl, apiKey, checkoutSecret, port = 0, shopName = 'Boutique Akwa',
  currency = 'XAF', amount = 5000, amountText = String(amount), line = '' }) {
  const orders = new Map();  // orderId -> { amount, currency, status, transaction_reference }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, `http://${req.headers.host}`);
    const self = `http://${req.headers.host}`;
    const page = (status, body) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8">`
        + `<meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(shopName)}</title>`
        + `</head><body>${body}</body></html>`);
    };
    if (url.pathname === '/') {
      // A new order for each visit; the amount is the site's own (never the customer's).
      const orderId = `ORD-${randomUUID()}`;
      const phone = url.searchParams.get('phone') || '';
      orders.set(orderId, { amount, currency, status: 'NEW' });
      const label = `${amountText} ${currency}`;
      const signature = signCheckoutRequest(checkoutSecret, { orderId, amountMinor: amount, currency });
      page(200, `<h1>${escapeHtml(shopName)}</h1><p>2 T-shirts: ${escapeHtml(label)}</p>
<form method="post" action="${escapeHtml(checkoutUrl)}" data-sika-checkout data-label="Pay ${escapeHtml(label)}">
  <input type="hidden" name="apiKey" value="${escapeHtml(apiKey)}">
  <input type="hidden" name="amount" value="${escapeHtml(amountText)}">${line ? `
  <input type="hidden" name="line" value="${escapeHtml(line)}">` : ''}
  <input type="hidden" name="currency" value="${currency}">
  <input type="hidden" name="orderId" value="${escapeHtml(orderId)}">
  <input type="hidden" name="description" value="2 T-shirts">
  <input type="hidden" name="shopName" value="${escapeHtml(shopName)}">
  <input type="hidden" name="successUrl" value="${self}/success">
  <input type="hidden" name="failureUrl" value="${self}/failure">
  <input type="hidden" name="customer[phone]" value="${escapeHtml(phone)}">
  <input type="hidden" name="signature" value="${signature}">
  <button type="submit">Pay ${escapeHtml(label)}</button>
</form>
<script src="${escapeHtml(checkoutUrl)}/button.js" async></script>`);
      return;
    }
    if (url.pathname === '/success' || url.pathname === '/failure') {
      const data = verifyServiceData(checkoutSecret, url.searchParams.get('service_data'), url.searchParams.get('signature'));
      if (!data) return page(400, '<h1 id="result">Rejected: the return data is not signed by Sika</h1>');
      const order = orders.get(data.reference);
      if (!order) return page(400, '<h1 id="result">Rejected: unknown order</h1>');
      if (data.amount !== order.amount || data.currency !== order.currency)
        return page(400, '<h1 id="result">Rejected: the amount paid is not the order\'s</h1>');
      // Where the money went: this shop asks for DIRECT settlement, the fee on the customer, and
      // the whole order's amount credited to itself.
      if (data.settlement_mode !== 'DIRECT' || !Array.isArray(data.distribution) || data.distribution.length !== 0
        || data.fee_bearer !== 'CUSTOMER' || (data.status === 'COMPLETED' && data.credited_amount !== order.amount))
        return page(400, '<h1 id="result">Rejected: the money was not settled as this order asked</h1>');
      // Record the outcome; deliver only after POST /collection/status confirms COMPLETED.
      order.status = data.status;
      order.transaction_reference = data.transaction_reference;
      const ok = url.pathname === '/success' && data.success === true && data.status === 'COMPLETED';
      return page(200, `<h1 id="result">${ok ? 'Thank you: payment received' : 'Payment not completed'}</h1>`
        + `<p id="status">${escapeHtml(data.status)}</p><p id="transaction">${escapeHtml(data.transaction_reference)}</p>`);
    }
    page(404, '<h1>Not found</h1>');
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address();
  return {
    url: `http://127.0.0.1:${bound}`,
    orders,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const site = await startMerchantSite({
    checkoutUrl: process.env.SIKA_CHECKOUT_URL,
    apiKey: process.env.SIKA_API_KEY,
    checkoutSecret: process.env.SIKA_CHECKOUT_SECRET,
    port: Number(process.env.PORT || 8080),
  });
  console.log(`merchant site on ${site.url}`);
}
