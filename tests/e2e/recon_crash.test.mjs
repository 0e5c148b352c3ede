// An import of an operator statement killed mid-way (kill -9 of `sika admin recon import`), on
// SQLite and PostgreSQL (docs/reconciliation.md, "An interrupted import"): the run stays
// `importing` with part of its lines; while the dead importer's lease runs the same file is
// refused (409); once it ended, a second import removes the interrupted run and imports the file
// afresh: one run, its report complete and correct, every line and item once.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, backends, admin, adminJson, sqlRows, checkLedger, sikaBinary, secretKey, sleep, waitFor } from './lib/server.mjs';

const LINES = 60000;
const LEASE_MS = 5000;
const SETTINGS = ['--set', 'recon.batch=1000', '--set', `recon.lease_ms=${LEASE_MS}`];

for (const backend of backends()) {
  describe(`an interrupted statement import (${backend})`, () => {
    let server;
    before(async () => { server = await startServer({ backend }); });
    after(async () => { if (server) await server.stop(); });

    test('killed mid-way, then imported again: one complete run, no duplicate line', async () => {
      const at = new Date(Date.now() - 3600e3).toISOString();
      const rows = ['operator_reference,type,amount,currency,status,timestamp'];
      for (let i = 0; i < LINES; i++) rows.push(`OPK${String(i).padStart(6, '0')},collection,${1000 + (i % 97)},XAF,succeeded,${at}`);
      const file = path.join(server.dir, 'large-statement.csv');
      writeFileSync(file, rows.join('\n') + '\n');
      const args = ['admin', '--db', server.dsn, 'recon', 'import', '--connector', 'sandbox', '--file', file, ...SETTINGS, '--json'];

      const child = spawn(sikaBinary, args, { env: { ...process.env, SIKA_SECRET_KEY: secretKey }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => { stderr += d; });
      let ended = null;
      const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(ended = { code, signal })));
      const started = await waitFor(() => ended || Number(sqlRows(server, 'SELECT COUNT(*) FROM recon_lines')[0][0]) > 0, 60000, 20);
      assert.ok(started && !ended, `the import wrote its first lines and runs on: ${JSON.stringify(ended)} ${stderr}`);
      child.kill('SIGKILL');
      const killedAt = Date.now();
      const end = await exited;
      assert.equal(end.signal, 'SIGKILL', 'killed before it finished');
      const [[runId, status]] = sqlRows(server, 'SELECT id, status FROM recon_runs');
      assert.equal(status, 'importing');
      const partial = Number(sqlRows(server, 'SELECT COUNT(*) FROM recon_lines')[0][0]);
      const partialItems = Number(sqlRows(server, 'SELECT COUNT(*) FROM recon_items')[0][0]);
      assert.ok(partial < LINES || partialItems < LINES, `interrupted mid-way: ${partial} lines, ${partialItems} items`);

      // While the dead importer's lease runs, the file is being imported.
      const early = adminJson(server.dsn, 'recon', 'import', '--connector', 'sandbox', '--file', file, ...SETTINGS);
      if (Date.now() - killedAt < LEASE_MS - 2000) {  // the lease was renewed at most when it was killed
        assert.equal(early.code, 1, early.stderr);
        assert.match(early.stderr, /conflict.*is being imported/);
      }
      await sleep(LEASE_MS + 500);

      const report = admin(server, 'recon', 'import', '--connector', 'sandbox', '--file', file, ...SETTINGS);
      assert.equal(report.replayed, false);
      assert.equal(report.status, 'done');
      assert.equal(report.lines, LINES);
      assert.equal(report.kinds.missing_in_sika, LINES);
      assert.equal(report.states.open, LINES);
      assert.notEqual(String(report.run), runId, 'the interrupted run was removed');
      assert.deepEqual(sqlRows(server, 'SELECT COUNT(*) FROM recon_runs'), [['1']]);
      assert.deepEqual(sqlRows(server, 'SELECT COUNT(*), COUNT(DISTINCT operator_reference) FROM recon_lines'), [[String(LINES), String(LINES)]]);
      assert.deepEqual(sqlRows(server, 'SELECT COUNT(*), COUNT(DISTINCT reference) FROM recon_items'), [[String(LINES), String(LINES)]]);
      assert.deepEqual(sqlRows(server, `SELECT COUNT(*) FROM recon_lines WHERE run_id = ${runId}`), [['0']]);
      const again = admin(server, 'recon', 'import', '--connector', 'sandbox', '--file', file, ...SETTINGS);
      assert.equal(again.replayed, true);
      assert.equal(again.run, report.run);
      checkLedger(server);
    });
  });
}
