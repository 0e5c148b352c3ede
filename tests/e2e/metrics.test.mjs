// Every metric family docs/metrics.md documents is in the first scrape of a fresh server, with
// zero values where nothing happened yet (dashboards and alerts need the series before the
// first event, and on both backends).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, backends } from './lib/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// The families of the "What is exposed" table: `sika_a_total`, `_b_total` (a suffix of the
// first name's stem) and the limit names of sika_rate_limit_refusals_total.
function documented() {
  const md = readFileSync(path.join(root, 'docs/metrics.md'), 'utf8');
  const table = md.slice(md.indexOf('## What is exposed'), md.indexOf('\n## ', md.indexOf('## What is exposed') + 5));
  const families = new Set();
  let limits = [];
  for (const line of table.split('\n')) {
    if (!line.startsWith('| `sika_')) continue;
    const cell = line.split('|')[1];
    const names = [...cell.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
    const first = names[0];
    for (const n of names) {
      if (n.startsWith('sika_')) families.add(n);
      else if (n.startsWith('_')) families.add(first.replace(/_total$/, '') + n);
    }
    if (first === 'sika_rate_limit_refusals_total')
      limits = [...line.split('|')[4].matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
  }
  return { families: [...families], limits };
}

for (const backend of backends()) {
  describe(`metrics on ${backend}`, () => {
    let server;
    before(async () => { server = await startServer({ backend }); });
    after(async () => { if (server) await server.stop(); });

    test('every documented family is present from the start, with zero values', async () => {
      const { families, limits } = documented();
      assert.ok(families.length >= 20, `parsed ${families.length} families from docs/metrics.md`);
      assert.ok(limits.length >= 10, `parsed ${limits.length} limit names`);
      const text = await (await fetch(`${server.publicUrl}/metrics`)).text();
      const missing = families.filter((f) => !new RegExp(`^# TYPE ${f} `, 'm').test(text));
      assert.deepEqual(missing, [], `families missing from the first scrape:\n${missing.join('\n')}`);
      for (const limit of limits)
        assert.match(text, new RegExp(`^sika_rate_limit_refusals_total\\{limit="${limit}"\\} 0$`, 'm'),
          `sika_rate_limit_refusals_total{limit="${limit}"} 0`);
      for (const queue of ['billing.charge', 'billing.retry', 'billing.link_deadline']) {
        for (const state of ['pending', 'running', 'dead'])
          assert.match(text, new RegExp(`^sika_jobs\\{queue="${queue}",state="${state}"\\} 0$`, 'm'), `sika_jobs ${queue} ${state}`);
        assert.match(text, new RegExp(`^sika_jobs_oldest_due_seconds\\{queue="${queue}"\\} 0$`, 'm'), `oldest due ${queue}`);
      }
      for (const f of ['sika_http_rejected_busy_total', 'sika_access_log_dropped_total', 'sika_webhook_attempts_failed_total'])
        assert.match(text, new RegExp(`^${f} 0$`, 'm'), f);
    });
  });
}
