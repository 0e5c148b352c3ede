// A PostgreSQL cluster owned by one test: initdb and pg_ctl in a temporary directory, listening on
// 127.0.0.1 at a free port with trust authentication, so that the test can stop, restart and
// reconfigure its own server (scripts/with-postgres.sh starts the shared one the same way).
// pgBinaries() is null where the server binaries are absent (the caller skips, saying why).
import { spawnSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './server.mjs';

// The directory of initdb, pg_ctl and postgres (SIKA_PG_BIN, else the newest Debian package), or null.
export function pgBinaries() {
  const candidates = [];
  if (process.env.SIKA_PG_BIN) candidates.push(process.env.SIKA_PG_BIN);
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    for (const v of readdirSync(base).sort((a, b) => Number(b) - Number(a))) candidates.push(path.join(base, v, 'bin'));
  }
  return candidates.find((d) => existsSync(path.join(d, 'initdb')) && existsSync(path.join(d, 'pg_ctl'))) || null;
}

// initdb and postgres refuse to run as root: run them as the postgres OS user then.
function asOwner(cmd, args) {
  if (process.getuid && process.getuid() === 0) return ['runuser', ['-u', 'postgres', '--', cmd, ...args]];
  return [cmd, args];
}

function run(cmd, args) {
  const [c, a] = asOwner(cmd, args);
  const r = spawnSync(c, a, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

// A directory for a cluster's data and socket, writable by the server's OS user.
function clusterDir() {
  const dir = mkdtempSync(path.join(process.env.SIKA_PG_TMPDIR || tmpdir(), 'sika-pgc-'));
  const sock = path.join(dir, 'sock');
  mkdirSync(sock);
  chmodSync(dir, 0o777);
  chmodSync(sock, 0o777);
  if (process.getuid && process.getuid() === 0) spawnSync('chown', ['-R', 'postgres:postgres', dir]);
  return { dir, data: path.join(dir, 'data'), sock };
}

// The handle of a cluster whose data directory exists (see startCluster), not yet started.
async function clusterAt(bin, { dir, data, sock }, settings) {
  const port = await freePort();
  // Without fsync (the machine does not crash, only the server does), but with synchronous_commit
  // on: an immediate shutdown must not lose a commit the client was told about.
  const all = { listen_addresses: '127.0.0.1', port, unix_socket_directories: sock, fsync: 'off',
    synchronous_commit: 'on', full_page_writes: 'off', max_connections: 100, ...settings };
  const options = Object.entries(all).map(([k, v]) => `-c ${k}=${v}`).join(' ');
  const log = path.join(dir, 'postgres.log');
  const pgCtl = path.join(bin, 'pg_ctl');
  const dsn = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let running = false;
  const holders = [];
  const cluster = {
    dir, port, dsn, log,
    start() { run(pgCtl, ['-D', data, '-l', log, '-w', '-t', '60', '-o', options, 'start']); running = true; },
    // mode: fast (sessions ended, clean checkpoint) or immediate (the server killed, recovery at next start).
    stop(mode = 'fast') { run(pgCtl, ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']); running = false; },
    restart(mode = 'fast') { cluster.stop(mode); cluster.start(); },
    // Runs SQL with psql; the rows as arrays of text fields.
    psql(sql) {
      const r = spawnSync('psql', [dsn, '-qAtX', '-F', '|', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${sql}: ${r.stderr}`);
      return r.stdout.split('\n').filter(Boolean).map((l) => l.split('|'));
    },
    // A psql session kept open that runs `sql` (statements on stdin) and then waits; end() closes it.
    session(sql) {
      const child = spawn('psql', [dsn, '-qAtX'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d) => { output += d; });
      child.stderr.on('data', (d) => { output += d; });
      child.stdin.write(sql + '\n');
      const exited = new Promise((resolve) => child.on('exit', resolve));
      const s = { child, output: () => output, async end() { child.stdin.end(); child.kill('SIGTERM'); await exited; } };
      holders.push(s);
      return s;
    },
    async destroy() {
      for (const h of holders) { try { await h.end(); } catch {} }
      if (running) { try { cluster.stop('immediate'); } catch {} }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

// Starts a fresh cluster; `settings` are extra `-c name=value` server settings (e.g.
// { max_connections: 20 }). Returns { dsn, port, psql(sql), session(sql), stop(mode), start(),
// restart(mode), destroy() }.
export async function startCluster(settings = {}) {
  const bin = pgBinaries();
  if (!bin) throw new Error('PostgreSQL server binaries not found');
  const where = clusterDir();
  run(path.join(bin, 'initdb'), ['-D', where.data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-sync']);
  const cluster = await clusterAt(bin, where, settings);
  cluster.start();
  return cluster;
}

// Starts a hot standby of `primary` streaming its WAL (pg_basebackup -R), read-only. Besides the
// cluster's handle: pauseReplay(), resumeReplay(), and caughtUp(), true once it has replayed
// everything the primary has written so far.
export async function startReplica(primary) {
  const bin = pgBinaries();
  const where = clusterDir();
  run(path.join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', where.data,
    '-R', '-X', 'stream', '--no-sync']);
  const replica = await clusterAt(bin, where, { hot_standby: 'on' });
  replica.start();
  replica.pauseReplay = () => replica.psql('SELECT pg_wal_replay_pause()');
  replica.resumeReplay = () => replica.psql('SELECT pg_wal_replay_resume()');
  replica.caughtUp = () => {
    const [[lsn]] = primary.psql('SELECT pg_current_wal_lsn()');
    const [[behind]] = replica.psql(`SELECT pg_wal_lsn_diff('${lsn}', pg_last_wal_replay_lsn()) > 0`);
    return behind === 'f';
  };
  return replica;
}
