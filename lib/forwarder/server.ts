/**
 * The forwarder's HTTP endpoints: `/healthz` (the process is alive and its loops are running), `/readyz`
 * (a standby is ready; the leader is ready once every kind's cache is synced) and Prometheus `/metrics`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthSource {
  healthy(): boolean;
  ready(): boolean;
  registry: Registry;
}

/** Starts the server; resolves with it and its bound port. */
export async function startHealthServer(source: HealthSource, port: number, host = '0.0.0.0'): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = (ok: boolean) => {
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' });
      res.end(ok ? 'ok' : 'not ok');
    };
    if (path === '/healthz' || path === '/livez') return answer(source.healthy());
    if (path === '/readyz') return answer(source.ready());
    if (path === '/metrics') {
      source.registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': source.registry.contentType });
          res.end(text);
        })
        .catch((err: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(err.message);
        });
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
