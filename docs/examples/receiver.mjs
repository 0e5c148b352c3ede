// A minimal Sika webhook receiver (Node 18+, no dependencies):
//   SIKA_WEBHOOK_SECRET=whsec_... SIKA_BASE_URL=https://.../api SIKA_TOKEN=... node receiver.mjs [port]
// It verifies the Standard Webhooks signature, rejects stale timestamps, stores the raw payload,
// ignores duplicates by webhook-id, answers 200 {"received": true} at once, and confirms the
// status with POST /collection/status before acting on a COMPLETED payment.
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';

const secrets = (process.env.SIKA_WEBHOOK_SECRET || '').split(',').filter(Boolean); // old,new during a rotation
const baseUrl = process.env.SIKA_BASE_URL;        // e.g. https://pay.example.com/api
const token = process.env.SIKA_TOKEN;             // a client_credentials access token
const port = Number(process.argv[2] || 8000);
const toleranceSeconds = 5 * 60;
const store = process.env.SIKA_RECEIVER_STORE || 'webhooks.jsonl';
const seen = new Set();                           // use your database (a unique key) in production

// Returns true iff one of the space-separated "v1,<base64>" signatures matches one of our secrets.
export function verify(secretList, id, timestamp, body, signatureHeader) {
  const now = Math.floor(Date.now() / 1000);
  const ts = Number(timestamp);
  if (!id || !Number.isInteger(ts) || Math.abs(now - ts) > toleranceSeconds) return false;
  const signed = `${id}.${timestamp}.${body}`;
  for (const secret of secretList) {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    const expected = crypto.createHmac('sha256', key).update(signed).digest();
    for (const candidate of String(signatureHeader || '').split(' ')) {
      const [version, sig] = candidate.split(',');
      if (version !== 'v1' || !sig) continue;
      const got = Buffer.from(sig, 'base64');
      if (got.length === expected.length && crypto.timingSafeEqual(got, expected)) return true;
    }
  }
  return false;
}

async function confirmStatus(reference) {
  if (!baseUrl || !token) return null;
  const r = await fetch(`${baseUrl}/collection/status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sp-auth-token': `Bearer ${token}` },
    body: JSON.stringify({ transaction_reference: reference }),
  });
  const envelope = await r.json();
  return envelope.success ? envelope.data.status : null;
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') { res.writeHead(405).end(); return; }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');  // verify the raw bytes, not re-serialized JSON
    const id = req.headers['webhook-id'];
    if (!verify(secrets, id, req.headers['webhook-timestamp'], body, req.headers['webhook-signature'])) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"received":false}');
      return;
    }
    // Answer first: the work happens after, so a slow step never causes a retry.
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    if (seen.has(id)) return;  // a retry or redelivery of an event already handled
    seen.add(id);
    fs.appendFileSync(store, JSON.stringify({ id, received_at: new Date().toISOString(), body }) + '\n');
    const event = JSON.parse(body);
    if (event.event_type === 'transaction.status_changed' && event.status === 'COMPLETED') {
      // Events of one transaction may arrive out of order: `sequence` orders them.
      confirmStatus(event.transaction_reference).then((status) => {
        if (status === 'COMPLETED') console.log(`deliver the goods for ${event.transaction_reference}`);
      }).catch((e) => console.error('status check failed, retry later:', e.message));
    }
  });
});

if (import.meta.url === `file://${process.argv[1]}`) {
  server.listen(port, () => console.log(`receiver listening on :${port}`));
}
export { server };
