import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeconfigFor, startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { ClusterConfigError, KubeClients, parseClusters } from '../../lib/kube/client.ts';
import { coreV1 } from '../../lib/kube/core-v1.ts';
import { isAlreadyExists, isConflict, isInvalid, isNotFound, isTooManyRequests, retryAfterMs } from '../../lib/kube/errors.ts';
import { ApiBudget } from '../../lib/state/bucket.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';
import tls from 'node:tls';
import { syncBuiltinESMExports } from 'node:module';
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { countDispatcherRequests } from '../support/dispatcher.ts';
import { sendThroughDispatcher } from '../../lib/kube/http.ts';
import { KubeTransport } from '../../lib/forwarder/kube-transport.ts';

describe('KubeClients and API error helpers against the emulator', () => {
  let kube: KubeApi;
  let db: Dynalite;
  let dir: string;
  let kubeconfig: string;
  before(async () => {
    [kube, db] = await Promise.all([startKubeApi({ port: 0 }), startDynalite()]);
    dir = await mkdtemp(join(tmpdir(), 'claimflow-client-'));
    kubeconfig = join(dir, 'kubeconfig');
    await kube.writeKubeconfig(kubeconfig);
  });
  after(async () => {
    await Promise.all([kube.stop(), db.stop(), rm(dir, { recursive: true, force: true })]);
  });

  test('KUBECONFIG serves any cluster id; clients are cached per cluster', async () => {
    const clients = new KubeClients({ env: { KUBECONFIG: kubeconfig } });
    const core = await coreV1(clients, 'local');
    assert.equal(await coreV1(clients, 'local'), core);
    const ns = await core.readNamespace({ name: 'default' });
    assert.equal(ns.metadata?.name, 'default');
  });

  test('CLUSTERS selects a kubeconfig per cluster and rejects unknown ids', async () => {
    const clients = new KubeClients({ env: { CLUSTERS: JSON.stringify({ east: { kubeconfig } }) } });
    assert.equal((await (await coreV1(clients, 'east')).readNamespace({ name: 'kube-system' })).metadata?.name, 'kube-system');
    await assert.rejects(coreV1(clients, 'west'), ClusterConfigError);
    assert.throws(() => parseClusters('{"x":{"eks":{}}}'), ClusterConfigError);
    assert.throws(() => parseClusters('not json'), ClusterConfigError);
    assert.deepEqual(parseClusters('{"prod":{"eks":{"name":"prod","region":"eu-west-1"}}}'), { prod: { eks: { name: 'prod', region: 'eu-west-1' } } });
    await assert.rejects(coreV1(new KubeClients({ env: {} }), 'any'), ClusterConfigError);
  });

  test('error helpers classify real API failures', async () => {
    const core = await coreV1(new KubeClients({ env: { KUBECONFIG: kubeconfig } }), 'local');
    const failure = async (call: () => Promise<unknown>) => {
      try {
        await call();
      } catch (error) {
        return error;
      }
      assert.fail('expected the call to fail');
    };
    const notFound = await failure(() => core.readNamespacedPersistentVolumeClaim({ name: 'nope', namespace: 'default' }));
    assert.ok(isNotFound(notFound) && !isConflict(notFound));
    const body = { metadata: { name: 'cm-1', namespace: 'default' }, data: { a: '1' } };
    const created = await core.createNamespacedConfigMap({ namespace: 'default', body });
    const exists = await failure(() => core.createNamespacedConfigMap({ namespace: 'default', body }));
    assert.ok(isAlreadyExists(exists) && !isConflict(exists));
    await core.replaceNamespacedConfigMap({ name: 'cm-1', namespace: 'default', body: { ...created, data: { a: '2' } } });
    const conflict = await failure(() => core.replaceNamespacedConfigMap({ name: 'cm-1', namespace: 'default', body: { ...created, data: { a: '3' } } }));
    assert.ok(isConflict(conflict) && !isAlreadyExists(conflict));
    const invalid = await failure(() => core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'Not_Valid', namespace: 'default' } } }));
    assert.ok(isInvalid(invalid), `422 expected, got ${(invalid as { code?: number }).code}`);
  });

  test('requests spend the cluster budget; a 429 pauses the whole cluster for its Retry-After', async () => {
    let clock = 1_000_000;
    const sleeps: number[] = [];
    const budget = new ApiBudget({
      doc: db.doc,
      table: db.tables.control,
      cluster: 'budgeted',
      qps: 20,
      burst: 30,
      now: () => clock,
      sleep: async (ms) => {
        sleeps.push(ms);
        clock += ms;
      },
    });
    const clients = new KubeClients({ env: { KUBECONFIG: kubeconfig }, budget: () => budget });
    const core = await coreV1(clients, 'budgeted');
    for (let i = 0; i < 3; i++) await core.readNamespace({ name: 'default' });
    const stored = await budget.read();
    assert.ok(stored && stored.tokens < 30, 'the shared bucket was drawn from');

    kube.faults.inject({ verb: 'get', resource: 'namespaces', count: 1, status: 429, retryAfterSeconds: 7 });
    let throttled: unknown;
    try {
      await core.readNamespace({ name: 'default' });
    } catch (error) {
      throttled = error;
    }
    assert.ok(isTooManyRequests(throttled));
    assert.equal(retryAfterMs(throttled), 7000);
    assert.equal((await budget.read())?.pausedUntil, clock + 7000, 'every container now waits');
    const before = clock;
    await core.readNamespace({ name: 'default' });
    assert.ok(clock - before >= 7000, 'the next request waited out the Retry-After');
  });
});

describe('connections to an https API server', () => {
  let kube: KubeApi;
  let http1: KubeApi;
  let other: KubeApi;
  let dir: string;
  before(async () => {
    // `kube` and `http1` authenticate: their kubeconfigs carry the admin token, which every request must send.
    // `kube` speaks HTTP/2 and HTTP/1.1 as kube-apiserver does; `http1` HTTPS/1.1 alone.
    [kube, http1, other] = await Promise.all([startKubeApi({ auth: {} }), startKubeApi({ auth: {}, http1: true }), startKubeApi({ tls: true })]);
    dir = await mkdtemp(join(tmpdir(), 'claimflow-tls-'));
  });
  after(async () => {
    await Promise.all([kube.stop(), http1.stop(), other.stop(), rm(dir, { recursive: true, force: true })]);
  });

  /** Counts the TLS secure contexts built while `work` runs (Node builds one per connection unless given one). */
  async function secureContextsBuiltBy(work: () => Promise<void>): Promise<number> {
    const original = tls.createSecureContext;
    let built = 0;
    tls.createSecureContext = (options) => {
      built += 1;
      return original(options);
    };
    syncBuiltinESMExports();
    try {
      await work();
    } finally {
      tls.createSecureContext = original;
      syncBuiltinESMExports();
    }
    return built;
  }

  /** Ten requests one after another, then three rounds of eight at once, through the functions' clients. */
  /** The functions' CoreV1 client for an emulator, through a kubeconfig file of its own (`name`). */
  async function functionsCore(api: KubeApi, name: string): Promise<Awaited<ReturnType<typeof coreV1>>> {
    const file = join(dir, name);
    await api.writeKubeconfig(file);
    return coreV1(new KubeClients({ env: { KUBECONFIG: file } }), 'local');
  }

  async function sequentialThenConcurrent(core: Awaited<ReturnType<typeof coreV1>>): Promise<void> {
    for (let i = 0; i < 10; i++) await core.readNamespace({ name: 'default' });
    for (let round = 0; round < 3; round++) {
      const names = await Promise.all(Array.from({ length: 8 }, () => core.readNamespace({ name: 'kube-system' })));
      assert.ok(names.every((ns) => ns.metadata?.name === 'kube-system'));
    }
  }

  test('functions over HTTP/2 (as to kube-apiserver): every request, concurrent or not, on one connection', async () => {
    const core = await functionsCore(kube, 'functions-h2');
    const opened = kube.connectionsAccepted();
    const built = await secureContextsBuiltBy(() => sequentialThenConcurrent(core));
    assert.equal(kube.connectionsAccepted() - opened, 1, 'the concurrent rounds are streams of the first connection');
    assert.equal(built, 1);
  });

  test('functions: a connection idle for longer than undici\'s default 4 s is used again (kube-apiserver keeps it 90 s)', async () => {
    const core = await functionsCore(kube, 'functions-idle');
    await core.readNamespace({ name: 'default' });
    const opened = kube.connectionsAccepted();
    await sleep(4_500);
    await core.readNamespace({ name: 'default' });
    assert.equal(kube.connectionsAccepted(), opened, 'no new connection, no new TLS handshake');
  });

  test('functions over HTTPS/1.1: one pool per kubeconfig, its connections kept alive and built from one TLS context', async () => {
    const core = await functionsCore(http1, 'functions');
    const opened = http1.connectionsAccepted();
    // Concurrent requests grow the pool: each new connection reuses the context.
    const built = await secureContextsBuiltBy(() => sequentialThenConcurrent(core));
    assert.ok(http1.connectionsAccepted() - opened >= 8, 'the concurrent rounds opened connections');
    assert.equal(built, 1, 'one secure context for every connection of the pool');
    const sequential = http1.connectionsAccepted();
    for (let i = 0; i < 10; i++) await core.readNamespace({ name: 'default' });
    assert.equal(http1.connectionsAccepted(), sequential, 'sequential requests reuse pooled connections');

    const anonymous = join(dir, 'anonymous');
    await writeFile(anonymous, kubeconfigFor(kube.url, undefined, kube.caCert));
    const without = await coreV1(new KubeClients({ env: { KUBECONFIG: anonymous } }), 'local');
    await assert.rejects(without.readNamespace({ name: 'default' }), (error: { code?: number }) => error.code === 401, 'no token, no access: the token above was sent');
  });

  test('forwarder: LIST and GET share one pool, its connections kept alive', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    const transport = new KubeTransport(kc);
    const round = async () => {
      assert.ok(Array.isArray((await transport.list('/api/v1/namespaces')).items));
      assert.equal((await transport.request('GET', '/api/v1/namespaces/default')).metadata.name, 'default');
    };
    let warm = 0;
    const built = await secureContextsBuiltBy(async () => {
      await round(); // a request sent as the previous one ends may find its connection not yet free
      warm = kube.connectionsAccepted();
      for (let i = 0; i < 5; i++) await round();
    });
    assert.equal(kube.connectionsAccepted(), warm, 'ten more requests, no new connection');
    assert.equal(built, 1);
  });

  test('the server certificate is still verified against the kubeconfig CA (and not when skipTLSVerify)', async () => {
    const wrongCa = join(dir, 'wrong-ca');
    // `other`'s certificate as the CA: `kube`'s certificate does not chain to it.
    await writeFile(wrongCa, kubeconfigFor(kube.url, undefined, other.caCert));
    const core = await coreV1(new KubeClients({ env: { KUBECONFIG: wrongCa } }), 'local');
    await assert.rejects(core.readNamespace({ name: 'default' }), (error: Error) => /certificate|self.signed|verify/i.test(`${error.message} ${(error.cause as Error | undefined)?.message ?? ''}`));
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfigFor(kube.url, undefined, other.caCert));
    await assert.rejects(new KubeTransport(kc).request('GET', '/api/v1/namespaces/default'));

    const insecure = join(dir, 'insecure');
    await writeFile(insecure, kubeconfigFor(kube.url, kube.auth?.adminToken));
    const skipping = await coreV1(new KubeClients({ env: { KUBECONFIG: insecure } }), 'local');
    assert.equal((await skipping.readNamespace({ name: 'default' })).metadata?.name, 'default');
  });
});

describe("requests through undici's dispatcher API (lib/kube/http.ts)", () => {
  let server: Server;
  let base: string;
  const received: Array<{ method?: string; url?: string; headers: Record<string, unknown>; body: string }> = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push({ method: req.method, url: req.url, headers: req.headers, body });
        if (req.url === '/moved') {
          res.writeHead(302, { location: '/elsewhere' }).end();
          return;
        }
        if (req.url === '/large' && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
          // As an API server answers a large LIST to a client that asks for gzip.
          res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
          res.end(gzipSync(JSON.stringify({ items: Array.from({ length: 2000 }, (_, i) => ({ name: `pv-${i}` })) })));
          return;
        }
        // Two Warning headers, as an API server sends for two deprecations.
        res.writeHead(req.url === '/missing' ? 404 : 200, [['Content-Type', 'application/json'], ['Warning', '299 - "one"'], ['Warning', '299 - "two"']]);
        res.end(JSON.stringify({ echo: body, ünïcode: '✓' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('status, lower-case headers (repeated ones joined as fetch joins them) and the body, read as text or bytes', async () => {
    const context = new RequestContext(`${base}/api/v1/namespaces/default/configmaps?limit=5`, HttpMethod.PATCH);
    context.setHeaderParam('Content-Type', 'application/merge-patch+json');
    context.setBody('{"data":{"a":"1"}}');
    const response = await sendThroughDispatcher(context);
    assert.equal(response.httpStatusCode, 200);
    assert.equal(response.headers['content-type'], 'application/json');
    assert.equal(response.headers.warning, '299 - "one", 299 - "two"');
    assert.deepEqual(JSON.parse(await response.body.text()), { echo: '{"data":{"a":"1"}}', ünïcode: '✓' });
    assert.deepEqual(JSON.parse((await response.body.binary()).toString('utf8')).ünïcode, '✓', 'the body is read once, and kept');
    const sent = received.at(-1)!;
    assert.deepEqual([sent.method, sent.url, sent.headers['content-type']], ['PATCH', '/api/v1/namespaces/default/configmaps?limit=5', 'application/merge-patch+json']);
  });

  test('asks for gzip as fetch does and decompresses a gzipped answer, read as text, bytes or a stream; a caller-set encoding is kept', async () => {
    const expected = { items: Array.from({ length: 2000 }, (_, i) => ({ name: `pv-${i}` })) };
    const large = await sendThroughDispatcher(new RequestContext(`${base}/large`, HttpMethod.GET));
    assert.equal(received.at(-1)!.headers['accept-encoding'], 'gzip');
    assert.equal(large.headers['content-encoding'], 'gzip', 'the server did compress it');
    assert.deepEqual(JSON.parse(await large.body.text()), expected);
    const bytes = await sendThroughDispatcher(new RequestContext(`${base}/large`, HttpMethod.GET));
    assert.deepEqual(JSON.parse((await bytes.body.binary()).toString('utf8')), expected);
    const streamed = await sendThroughDispatcher(new RequestContext(`${base}/large`, HttpMethod.GET));
    assert.deepEqual(JSON.parse(await new Response(streamed.body.stream()).text()), expected);
    const plain = new RequestContext(`${base}/large`, HttpMethod.GET);
    plain.setHeaderParam('Accept-Encoding', 'identity');
    const uncompressed = await sendThroughDispatcher(plain);
    assert.equal(received.at(-1)!.headers['accept-encoding'], 'identity');
    assert.equal(uncompressed.headers['content-encoding'], undefined);
    assert.deepEqual(Object.keys(JSON.parse(await uncompressed.body.text())), ['echo', 'ünïcode']);
  });

  test('a 404 and a redirect reach the caller as they are (no redirect followed)', async () => {
    assert.equal((await sendThroughDispatcher(new RequestContext(`${base}/missing`, HttpMethod.GET))).httpStatusCode, 404);
    const moved = await sendThroughDispatcher(new RequestContext(`${base}/moved`, HttpMethod.GET));
    assert.deepEqual([moved.httpStatusCode, moved.headers.location], [302, '/elsewhere']);
    assert.notEqual(received.at(-1)!.url, '/elsewhere');
  });

  test('an aborted request rejects; a body that is not a string goes through fetch', async () => {
    const aborted = new RequestContext(`${base}/x`, HttpMethod.GET);
    aborted.setSignal(AbortSignal.abort());
    await assert.rejects(sendThroughDispatcher(aborted), (error: Error) => error.name === 'AbortError' || /abort/i.test(error.message));
    const form = new RequestContext(`${base}/form`, HttpMethod.POST);
    form.setBody(new URLSearchParams({ a: '1' }));
    assert.equal((await sendThroughDispatcher(form)).httpStatusCode, 200);
    assert.equal(received.at(-1)!.body, 'a=1');
  });

  test("the functions' API clients send through it, over the kubeconfig's pool", async () => {
    const kube = await startKubeApi({ tls: true });
    const dir = await mkdtemp(join(tmpdir(), 'claimflow-dispatch-'));
    const requests = countDispatcherRequests();
    try {
      const file = join(dir, 'kubeconfig');
      await kube.writeKubeconfig(file);
      const core = await coreV1(new KubeClients({ env: { KUBECONFIG: file } }), 'local');
      const created = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'through' }, data: { a: '1' } } });
      await assert.rejects(core.createNamespacedConfigMap({ namespace: 'default', body: created }), (error) => isAlreadyExists(error));
      const read = await core.readNamespacedConfigMap({ name: 'through', namespace: 'default' });
      assert.deepEqual(read.data, { a: '1' });
      assert.equal(requests.count, 3);
    } finally {
      requests.restore();
      await kube.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
