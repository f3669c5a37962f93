import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, RetriesExhaustedError, ServerError, StorageTransportError, isRetryable } from '../../lib/storage/errors.ts';
import { startStorage, type StorageFixture } from './support.ts';
import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { StorageOSTransport } from '../../lib/storage/storageos/transport.ts';

describe('retries: 5xx and transport errors back off, bounded per call', () => {
  let s: StorageFixture;
  before(async () => {
    s = await startStorage({ nodes: ['n1'] });
  });
  after(() => s.stop());

  test('5xx → backoff → success; every attempt is reported to onRequest', async () => {
    const events: Array<[string, string, number | undefined]> = [];
    const client = s.newClient({ onRequest: (e) => events.push([e.method, e.path, e.status]) });
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', status: 503, message: 'store unavailable', times: 2 });
    const before = s.api.requests.get('GET', '/v2/nodes');
    const nodes = await client.listNodes();
    assert.deepEqual(nodes.map((n) => n.name), ['n1']);
    assert.equal(s.api.requests.get('GET', '/v2/nodes') - before, 3, 'two failures, then success');
    assert.deepEqual(events, [
      ['POST', '/auth/login', 200],
      ['GET', '/nodes', 503],
      ['GET', '/nodes', 503],
      ['GET', '/nodes', 200],
    ]);
  });

  test('persistent 5xx: bounded attempts, then a clear error carrying the last failure', async () => {
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', status: 500, message: 'boom', times: -1 });
    const before = s.api.requests.get('GET', '/v2/nodes');
    try {
      await assert.rejects(s.client.listNodes(), (err: unknown) => {
        assert.ok(err instanceof RetriesExhaustedError);
        assert.equal(err.attempts, 4);
        assert.ok(err.cause instanceof ServerError);
        assert.equal(err.cause.status, 500);
        assert.match(err.message, /GET \/v2\/nodes: gave up after 4 attempts: .*500 boom/);
        assert.equal(isRetryable(err), true, 'the runtime may retry the whole reconcile');
        return true;
      });
      assert.equal(s.api.requests.get('GET', '/v2/nodes') - before, 4);
    } finally {
      s.api.faults.clear();
    }
  });

  test('4xx other than 401 are not retried', async () => {
    const route = '/v2/namespaces/{namespaceID}/volumes/{id}';
    const before = s.api.requests.get('GET', route);
    s.api.faults.add({ method: 'GET', path: '/v2/namespaces/*/volumes/*', status: 409, message: 'volume is locked' });
    await assert.rejects(s.client.getVolume({ namespace: 'default', id: 'whatever' }), (err: unknown) => err instanceof ConflictError);
    assert.equal(s.api.requests.get('GET', route) - before, 1);
    assert.equal(s.api.faults.list().length, 0);
  });

  test('a dropped connection is a transport error, retried', async () => {
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', drop: true });
    const before = s.api.requests.get('GET', '/v2/nodes');
    assert.equal((await s.client.listNodes()).length, 1);
    assert.equal(s.api.requests.get('GET', '/v2/nodes') - before, 2);
  });

  test('a request slower than the timeout is a timed-out transport error', async () => {
    const impatient = s.newClient({ timeoutMs: 100, backoff: { attempts: 1 } });
    await impatient.listNodes();
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', latencyMs: 400 });
    await assert.rejects(impatient.listNodes(), (err: unknown) => err instanceof StorageTransportError && err.timedOut);
  });

  test('a create whose response was lost is adopted on retry (409 → read by name): no duplicate', async () => {
    await s.client.listNamespaces();
    // The first POST creates the volume but the connection dies before the answer.
    s.api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', loseResponse: true });
    const posts = s.api.requests.get('POST', '/v2/namespaces/{namespaceID}/volumes');
    const volume = await s.client.createVolume({ namespace: 'default', name: 'pvc-lost', sizeBytes: 2 ** 30 });
    assert.equal(s.api.requests.get('POST', '/v2/namespaces/{namespaceID}/volumes') - posts, 2, 'lost answer, then 409');
    const same = s.api.state.allVolumes().filter((v) => v.name === 'pvc-lost');
    assert.equal(same.length, 1);
    assert.equal(same[0].id, volume.id);
  });

  test('a create that timed out but landed later leaves exactly one volume', async () => {
    const client = s.newClient({ timeoutMs: 150 });
    await client.listNamespaces();
    // The first POST is held 400 ms (past the client's timeout) and then still runs on the server.
    s.api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', latencyMs: 400 });
    const volume = await client.createVolume({ namespace: 'default', name: 'pvc-slow', sizeBytes: 2 ** 30 });
    await new Promise((r) => setTimeout(r, 450)); // let the held request finish on the server
    const same = s.api.state.allVolumes().filter((v) => v.name === 'pvc-slow');
    assert.equal(same.length, 1);
    assert.equal(same[0].id, volume.id);
  });

  test('50 concurrent creates through 5xx, lost answers and timeouts: every call returns the one volume of its name', async () => {
    // A timeout with room for 50 concurrent requests on a loaded 2-core machine (500 ms timed out four times
    // in a row once, with a bundling and a stack running beside the suite); the held requests outlast it.
    const client = s.newClient({ timeoutMs: 1000 });
    await client.listNamespaces();
    s.api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', status: 503, times: 10 });
    s.api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', loseResponse: true, times: 10 });
    s.api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', latencyMs: 2000, times: 5 });
    const names = Array.from({ length: 50 }, (_, i) => `pvc-storm-${i}`);
    const created = await Promise.all(names.map((name) => client.createVolume({ namespace: 'storm', name, sizeBytes: 2 ** 30 })));
    assert.equal(s.api.faults.list().length, 0, 'every fault fired');
    // Requests held past the client's timeout still run on the server; let them finish (they get 409).
    while (s.api.requests.get('POST', '/v2/namespaces/{namespaceID}/volumes') < 50 + 25) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 2050));
    const onServer = s.api.state.allVolumes().filter((v) => v.name.startsWith('pvc-storm-'));
    assert.equal(onServer.length, 50);
    const byName = new Map(onServer.map((v) => [v.name, v.id]));
    for (const [i, v] of created.entries()) assert.equal(v.id, byName.get(names[i]), names[i]);
  });

  test('an aborted call stops during its backoff without further attempts', async () => {
    // A first backoff of 5 s: the abort below lands in it however slowly the test runs (and ends it early).
    const attempts: Array<number | undefined> = [];
    const patient = s.newClient({
      backoff: { attempts: 10, baseDelayMs: 5_000, jitter: false },
      onRequest: (e) => void (e.path === '/nodes' && attempts.push(e.status)),
    });
    await patient.listNodes();
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', status: 503, times: -1 });
    try {
      const before = s.api.requests.get('GET', '/v2/nodes');
      attempts.length = 0;
      const controller = new AbortController();
      const pending = patient.listNodes({ signal: controller.signal });
      pending.catch(() => {}); // not an unhandled rejection if the wait below fails before it is awaited
      // Abort once the first attempt was answered (503) on the server and at the client: it is in its backoff.
      const deadline = Date.now() + 20_000;
      while (s.api.requests.get('GET', '/v2/nodes') < before + 1 || attempts.length < 1) {
        assert.ok(Date.now() < deadline, 'the first attempt answered');
        await new Promise((r) => setTimeout(r, 5));
      }
      controller.abort(new Error('shutting down'));
      await assert.rejects(pending, /shutting down/);
      assert.equal(s.api.requests.get('GET', '/v2/nodes') - before, 1, 'no further request reached the server');
      assert.deepEqual(attempts, [503], 'no further attempt, not even an aborted one: the backoff itself was cut short');
    } finally {
      s.api.faults.clear();
    }
  });

  test('faults and request counts over HTTP (/_storage)', async () => {
    const add = await fetch(`${s.api.url}/_storage/faults`, {
      method: 'POST',
      body: JSON.stringify({ rules: [{ method: 'GET', path: '/v2/nodes', status: 502, times: 1 }] }),
    });
    assert.equal(add.status, 200);
    const listed = (await add.json()) as Array<{ path: string; remaining: number }>;
    assert.deepEqual(listed.map((r) => [r.path, r.remaining]), [['/v2/nodes', 1]]);
    await fetch(`${s.api.url}/_storage/requests`, { method: 'DELETE' });
    await s.client.listNodes();
    const counts = (await (await fetch(`${s.api.url}/_storage/requests`)).json()) as { total: number; calls: Record<string, number> };
    assert.deepEqual(counts, { total: 2, calls: { 'GET /v2/nodes': 2 } });
    const bad = await fetch(`${s.api.url}/_storage/faults`, { method: 'POST', body: JSON.stringify({ path: 'no-slash' }) });
    assert.equal(bad.status, 400);
  });
});

describe('the transport over plain HTTP: a stalled body, gzip, the reason phrase', () => {
  let server: Server;
  let endpoint: string;
  const askedEncodings: Array<string | undefined> = [];
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (req.url === '/v2/auth/login') return void res.writeHead(200, { authorization: 'Bearer t', 'content-length': '0' }).end();
      if (req.url === '/v2/gzipped') {
        askedEncodings.push(req.headers['accept-encoding']);
        const body = gzipSync(JSON.stringify([{ id: 'n1', name: 'node-1' }]));
        return void res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) }).end(body);
      }
      if (req.url === '/v2/teapot') return void res.writeHead(418, 'Short And Stout', { 'content-length': '0' }).end();
      // Anything else gets its headers and the first bytes of a body that never ends.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[{"id":');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('a body that stalls after its headers is a timed-out transport error, under the same timeout as the request', async () => {
    const statuses: Array<number | undefined> = [];
    const transport = new StorageOSTransport({ endpoint, username: 'u', password: 'p', timeoutMs: 200, backoff: { attempts: 1 }, onRequest: (e) => statuses.push(e.status) });
    await assert.rejects(transport.request('GET', '/nodes'), (err: unknown) => err instanceof StorageTransportError && err.timedOut);
    assert.deepEqual(statuses, [200, undefined], 'the login answered; the stalled call has no status');
  });

  test('asks for gzip and reads a gzipped answer', async () => {
    const transport = new StorageOSTransport({ endpoint, username: 'u', password: 'p', backoff: { attempts: 1 } });
    const answer = await transport.request('GET', '/gzipped');
    assert.deepEqual(answer.body, [{ id: 'n1', name: 'node-1' }]);
    assert.equal(answer.headers.get('Content-Type'), 'application/json');
    assert.equal(answer.headers.get('constructor'), null, 'only the answer\'s own headers');
    assert.deepEqual(askedEncodings, ['gzip']);
  });

  test("an error answer without a body is described by the server's reason phrase", async () => {
    const transport = new StorageOSTransport({ endpoint, username: 'u', password: 'p', backoff: { attempts: 1 } });
    await assert.rejects(transport.request('GET', '/teapot'), (err: unknown) => err instanceof Error && /Short And Stout/.test(err.message));
  });
});
