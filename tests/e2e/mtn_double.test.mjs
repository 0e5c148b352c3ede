// The MTN MoMo double refuses what MTN refuses and answers as MTN documents, so that a connector
// passing against it is held to MTN's published API (doubles/mtn_momo.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startDouble } from './doubles/spawn.mjs';

let mtn;
before(async () => { mtn = await startDouble('mtn_momo', { 'settle-ms': 10, 'status-rps': 10 }); });
after(async () => { await mtn?.stop(); });

const collection = { key: 'collection-subscription-key', user: 'a5b2c3d4-0000-4000-8000-00000000c011', secret: 'collection-api-key' };
const basic = (u, k) => 'Basic ' + Buffer.from(`${u}:${k}`).toString('base64');

async function token(product = 'collection', c = collection) {
  const res = await fetch(`${mtn.url}/${product}/token/`, {
    method: 'POST', headers: { 'Ocp-Apim-Subscription-Key': c.key, Authorization: basic(c.user, c.secret) },
  });
  return { status: res.status, body: await res.json() };
}

function rtp(tok, ref, body, extra = {}) {
  return fetch(`${mtn.url}/collection/v1_0/requesttopay`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${tok}`, 'X-Reference-Id': ref, 'X-Target-Environment': 'mtncameroon',
      'Ocp-Apim-Subscription-Key': collection.key, 'Content-Type': 'application/json', ...extra,
    },
    body: JSON.stringify(body),
  });
}
const payment = (partyId, amount = '1000') => ({ amount, currency: 'XAF', externalId: 'order-1', payer: { partyIdType: 'MSISDN', partyId }, payerMessage: 'pay', payeeNote: 'note' });
const statusOf = (tok, ref) => fetch(`${mtn.url}/collection/v1_0/requesttopay/${ref}`, {
  headers: { Authorization: `Bearer ${tok}`, 'X-Target-Environment': 'mtncameroon', 'Ocp-Apim-Subscription-Key': collection.key },
});

test('a token needs the product subscription key and Basic api user:key, and serves that product only', async () => {
  assert.equal((await token('collection', { ...collection, key: 'wrong' })).status, 401);
  assert.equal((await token('collection', { ...collection, secret: 'wrong' })).status, 401);
  const ok = await token();
  assert.equal(ok.status, 200);
  assert.equal(ok.body.expires_in, 3600);
  const res = await fetch(`${mtn.url}/disbursement/v1_0/account/balance`, {
    headers: { Authorization: `Bearer ${ok.body.access_token}`, 'X-Target-Environment': 'mtncameroon', 'Ocp-Apim-Subscription-Key': 'disbursement-subscription-key' },
  });
  assert.equal(res.status, 401);
});

test('requesttopay refuses a non-UUIDv4 reference, a reused one, a numeric amount, a long message and a foreign environment', async () => {
  const tok = (await token()).body.access_token;
  assert.equal((await rtp(tok, 'not-a-uuid', payment('237670000001'))).status, 400);
  assert.equal((await rtp(tok, '6f1c3a2e-1b2c-1d3e-8f4a-123456789abc', payment('237670000001'))).status, 400, 'v1 UUID');
  assert.equal((await rtp(tok, randomUUID(), { ...payment('237670000001'), amount: 1000 })).status, 400);
  assert.equal((await rtp(tok, randomUUID(), { ...payment('237670000001'), payerMessage: 'x'.repeat(161) })).status, 400);
  assert.equal((await rtp(tok, randomUUID(), payment('237670000001'), { 'X-Target-Environment': 'mtnghana' })).status, 403);
  assert.equal((await rtp(tok, randomUUID(), payment('237670000001'), { 'X-Callback-Url': 'http://evil.example/cb' })).status, 400);
  const ref = randomUUID();
  assert.equal((await rtp(tok, ref, payment('237670000001'))).status, 202);
  const again = await rtp(tok, ref, payment('237670000001'));
  assert.equal(again.status, 409);
  assert.equal((await again.json()).code, 'RESOURCE_ALREADY_EXIST');
});

test('the payer number decides the outcome, PENDING until the operator says otherwise', async () => {
  const tok = (await token()).body.access_token;
  const cases = [['237670000001', 'SUCCESSFUL', undefined], ['237670000450', 'FAILED', 'INTERNAL_PROCESSING_ERROR'],
    ['237670000451', 'FAILED', 'APPROVAL_REJECTED'], ['237670000454', 'PENDING', undefined]];
  const refs = [];
  for (const [number] of cases) {
    const ref = randomUUID();
    refs.push(ref);
    assert.equal((await rtp(tok, ref, payment(number))).status, 202);
  }
  await new Promise((r) => setTimeout(r, 100));
  for (let i = 0; i < cases.length; i++) {
    const res = await statusOf(tok, refs[i]);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.status, cases[i][1], cases[i][0]);
    assert.equal(body.reason, cases[i][2]);
    assert.equal(body.amount, '1000');
    if (body.status === 'SUCCESSFUL') assert.match(body.financialTransactionId, /^[0-9]+$/);
  }
  assert.equal((await statusOf(tok, randomUUID())).status, 404);
});

test('status queries over 10 a second are refused with 429 and counted', async () => {
  const tok = (await token()).body.access_token;
  await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
  const answers = await Promise.all(Array.from({ length: 15 }, () => statusOf(tok, randomUUID())));
  const limited = answers.filter((r) => r.status === 429).length;
  assert.ok(limited >= 5, `${limited} of 15 refused`);
  const stats = await mtn.stats();
  assert.ok(stats.status_max_per_second <= 10);
  assert.ok(stats.rejected_429 >= 5);
});

test('a final state is called back over PUT to the X-Callback-Url, with the status body', async () => {
  const http = await import('node:http');
  const received = [];
  const srv = http.createServer((req, res) => {
    let b = '';
    req.on('data', (c) => { b += c; });
    req.on('end', () => { received.push({ method: req.method, url: req.url, body: JSON.parse(b) }); res.end(); });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const tok = (await token()).body.access_token;
    const ref = randomUUID();
    const cb = `http://127.0.0.1:${srv.address().port}/operator/callback/mtn_momo`;
    assert.equal((await rtp(tok, ref, payment('237670000451'), { 'X-Callback-Url': cb })).status, 202);
    for (let i = 0; i < 50 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(received.length, 1);
    assert.equal(received[0].method, 'PUT');
    assert.equal(received[0].url, '/operator/callback/mtn_momo');
    assert.equal(received[0].body.status, 'FAILED');
    assert.equal(received[0].body.reason, 'APPROVAL_REJECTED');
    assert.equal(received[0].body.externalId, 'order-1');
  } finally {
    srv.close();
  }
});

test('down refuses connections, and the double listens again when told', async () => {
  await mtn.behave({ down: true });
  await assert.rejects(fetch(`${mtn.url}/collection/token/`, { method: 'POST' }));
  await mtn.behave({ down: false });
  assert.equal((await token()).status, 200);
});
