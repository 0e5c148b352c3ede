// A webhook receiver on 127.0.0.1 that verifies every delivery with the `standardwebhooks` library:
// `deliveries` holds { id, payload } of each verified one, `invalid` what failed verification
// (answered 400). Set `secret` (the endpoint's) before the first delivery.
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

export class Receiver {
  constructor() {
    this.secret = null;
    this.deliveries = [];
    this.invalid = [];
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = { 'webhook-id': req.headers['webhook-id'], 'webhook-timestamp': req.headers['webhook-timestamp'],
          'webhook-signature': req.headers['webhook-signature'] };
        try {
          this.deliveries.push({ id: headers['webhook-id'], payload: new Webhook(this.secret).verify(body, headers) });
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
        } catch {
          this.invalid.push({ headers, body });
          res.writeHead(400).end();
        }
      });
    });
  }
  async listen() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}/hooks`;
  }
  async close() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(() => resolve()));
  }
}
