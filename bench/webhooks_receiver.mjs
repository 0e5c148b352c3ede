// Local receivers for bench/webhooks_bench.sh: `--ports N` healthy servers answering
// 200 {"received":true} at once, and one that accepts requests and never answers (a hanging
// endpoint). Prints one JSON line {"ports":[...],"hang":PORT}, then the request counts on SIGTERM.
import http from 'node:http';

const n = Number(process.argv[process.argv.indexOf('--ports') + 1] || 4);
const counts = {};
const servers = [];
const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));

const ports = [];
for (let i = 0; i < n; i++) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      counts[req.socket.localPort] = (counts[req.socket.localPort] || 0) + 1;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 17 }).end('{"received":true}');
    });
  });
  server.keepAliveTimeout = 60000;
  servers.push(server);
  ports.push(await listen(server));
}
const held = [];
const hang = http.createServer((req, res) => { req.resume(); held.push(res); counts.hang = (counts.hang || 0) + 1; });
servers.push(hang);
const hangPort = await listen(hang);
console.log(JSON.stringify({ ports, hang: hangPort }));
process.on('SIGTERM', () => {
  console.log(JSON.stringify({ counts }));
  process.exit(0);
});
