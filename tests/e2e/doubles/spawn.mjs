// Starts an operator double as its own process and talks to its control port.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

// Starts doubles/<name>.mjs with `options` as --key=value flags; resolves once it listens, to
// { url, control(path, body?), stats(), stop() }.
export async function startDouble(name, options = {}) {
  const flags = Object.entries(options).map(([k, v]) => `--${k}=${v}`);
  const child = spawn(process.execPath, [path.join(here, `${name}.mjs`), ...flags], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout });
    lines.once('line', (l) => resolve(JSON.parse(l)));
    child.once('exit', (code) => reject(new Error(`double ${name} exited with ${code}`)));
  });
  const controlUrl = `http://127.0.0.1:${first.control}`;
  async function control(p, body) {
    const res = await fetch(controlUrl + p, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
    return res.json();
  }
  return {
    url: `http://127.0.0.1:${first.api}`,
    info: first,
    port: first.api,
    control,
    stats: () => control('/stats'),
    behave: (b) => control('/behaviour', b),
    payment: (ref) => control(`/payments/${ref}`),
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', resolve);
      child.kill('SIGTERM');
    }),
  };
}
