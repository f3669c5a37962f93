// Discovery, /version, server-side Tables, fault injection, request counting, kubeconfig, persistence and the
// standalone process, over real HTTP.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { KubeConfig, KubernetesObjectApi, CoreV1Api } from '@kubernetes/client-node';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';
import { startKubeApi } from '../../infra/local/kube-api/index.ts';
import { fixtureKinds } from '../../infra/local/kube-api/testing/fixture-kinds.ts';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

describe('kube-api HTTP surface', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.api.stop(); });

  it('/version reports a semver gitVersion', async () => {
    const res = await h.http('/version');
    assert.equal(res.status, 200);
    assert.match(res.body.gitVersion, /^v1\.\d+\.\d+$/);
    assert.equal(res.body.major, '1');
  });

  it('legacy discovery in plain application/json: /api, /api/v1 with status subresources, /apis, /apis/<g>/<v>', async () => {
    const api = await h.http('/api', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' });
    assert.equal(api.headers.get('content-type'), 'application/json');
    assert.deepEqual(api.body.versions, ['v1']);
    const v1 = await h.http('/api/v1');
    const byName = new Map<string, any>(v1.body.resources.map((r: any) => [r.name, r]));
    assert.deepEqual(byName.get('persistentvolumeclaims').shortNames, ['pvc']);
    assert.equal(byName.get('persistentvolumeclaims').namespaced, true);
    assert.equal(byName.get('persistentvolumeclaims').kind, 'PersistentVolumeClaim');
    assert.deepEqual(byName.get('persistentvolumeclaims/status').verbs, ['get', 'patch', 'update']);
    assert.equal(byName.get('configmaps/status'), undefined);
    const apis = await h.http('/apis');
    assert.deepEqual(apis.body.groups.map((g: any) => g.name).sort(), ['authentication.k8s.io', 'authorization.k8s.io', 'coordination.k8s.io', 'storage.k8s.io']);
    const storage = await h.http('/apis/storage.k8s.io/v1');
    assert.equal(storage.body.groupVersion, 'storage.k8s.io/v1');
    assert.equal(storage.body.resources[0].name, 'storageclasses');
    assert.equal((await h.http('/apis/storage.k8s.io/v9')).status, 404);
    const v2 = await h.http('/openapi/v2');
    assert.deepEqual([v2.status, v2.body.swagger, v2.body.paths, v2.body.definitions], [200, '2.0', {}, {}]);
    const pb = await fetch(`${h.api.url}/openapi/v2?timeout=32s`, { headers: { Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' } });
    assert.equal(pb.headers.get('content-type'), 'application/octet-stream');
    const bytes = Buffer.from(await pb.arrayBuffer());
    assert.deepEqual([...bytes.subarray(0, 5)], [0x0a, 3, 0x32, 0x2e, 0x30], 'gnostic Document.swagger = "2.0"');
    assert.equal((await h.http('/openapi/v3')).status, 404);
  });

  it('client-node KubernetesObjectApi finds resources through discovery', async () => {
    const objects = KubernetesObjectApi.makeApiClient(h.kc);
    const created = await objects.create({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'via-discovery' } });
    assert.equal(created.metadata!.name, 'via-discovery');
    const read = await objects.read({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-root', namespace: 'default' } }).catch((e) => e);
    assert.equal(read.code, 404);
  });

  it('server-side Table: the kind columns, includeObject, default Name/Age; a Table watch sends columns only first', async () => {
    await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name: 't1' } } });
    const table = await h.http('/api/v1/namespaces/default/persistentvolumeclaims?limit=500', { accept: TABLE });
    assert.equal(table.body.kind, 'Table');
    assert.equal(table.body.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual(table.body.columnDefinitions.map((c: any) => c.name), ['Name', 'Status']);
    assert.deepEqual(table.body.rows[0].cells, ['t1', 'Pending']);
    assert.equal(table.body.rows[0].object.kind, 'PartialObjectMetadata');
    assert.equal(table.body.rows[0].object.metadata.name, 't1');
    const full = await h.http('/api/v1/namespaces/default/persistentvolumeclaims?includeObject=Object', { accept: TABLE });
    assert.equal(full.body.rows[0].object.kind, 'PersistentVolumeClaim');
    const none = await h.http('/api/v1/namespaces/default/persistentvolumeclaims/t1?includeObject=None', { accept: TABLE });
    assert.equal(none.body.rows[0].object, undefined);
    const defaults = await h.http('/api/v1/namespaces', { accept: TABLE });
    assert.deepEqual(defaults.body.columnDefinitions.map((c: any) => c.name), ['Name', 'Age']);
    assert.match(defaults.body.rows[0].cells[1], /^\d+s$/);
    const plain = await h.http('/api/v1/namespaces', { accept: 'application/json' });
    assert.equal(plain.body.kind, 'NamespaceList');

    const rv = h.api.store.revision;
    const res = await fetch(`${h.api.url}/api/v1/namespaces/default/persistentvolumeclaims?watch=true&resourceVersion=${rv}&timeoutSeconds=1`, { headers: { Accept: TABLE } });
    await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name: 't2' } } });
    await h.core.deleteNamespacedPersistentVolumeClaim({ name: 't2', namespace: 'default' });
    const events = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(events.map((e) => e.type), ['ADDED', 'DELETED']);
    assert.equal(events[0].object.kind, 'Table');
    assert.ok(Array.isArray(events[0].object.columnDefinitions));
    assert.equal(events[1].object.columnDefinitions, undefined);
    assert.deepEqual(events[1].object.rows[0].cells, ['t2', 'Pending']);
  });

  it('fault injection in-process: status with Retry-After, scoped by verb/resource/name, consumed after count', async () => {
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'faulty' } } });
    h.api.faults.inject({ verb: 'get', resource: 'configmaps', name: 'faulty', count: 2, status: 429, retryAfterSeconds: 3 });
    const res = await h.http('/api/v1/namespaces/default/configmaps/faulty');
    assert.deepEqual([res.status, res.body.reason, res.headers.get('retry-after'), res.body.details.retryAfterSeconds], [429, 'TooManyRequests', '3', 3]);
    const second = await rejection(h.core.readNamespacedConfigMap({ name: 'faulty', namespace: 'default' }));
    assert.equal(second.code, 429);
    const third = await h.core.readNamespacedConfigMap({ name: 'faulty', namespace: 'default' });
    assert.equal(third.metadata!.name, 'faulty');
    h.api.faults.inject({ verb: 'update', resource: 'persistentvolumeclaims/status', count: 1, status: 503 });
    const pvc = await h.core.readNamespacedPersistentVolumeClaim({ name: 't1', namespace: 'default' });
    const main = await h.core.replaceNamespacedPersistentVolumeClaim({ name: 't1', namespace: 'default', body: pvc });
    assert.equal(main.metadata!.name, 't1');
    const status = await rejection(h.core.replaceNamespacedPersistentVolumeClaimStatus({ name: 't1', namespace: 'default', body: pvc }));
    assert.deepEqual([status.code, status.reason], [503, 'ServiceUnavailable']);
    h.api.faults.inject({ verb: 'list', resource: 'configmaps', count: 1, latencyMs: 150 });
    const started = performance.now();
    const listed = await h.core.listNamespacedConfigMap({ namespace: 'default' });
    assert.ok(performance.now() - started >= 140, 'latency was added');
    assert.ok(listed.items.length > 0);
  });

  it('fault injection and request counts over HTTP (/_emulator)', async () => {
    assert.equal((await h.http('/_emulator/requests', { method: 'DELETE' })).status, 200);
    const injected = await h.http('/_emulator/faults', { method: 'POST', body: { verb: 'create', resource: 'configmaps', count: 1, status: 500, message: 'boom' } });
    assert.equal(injected.status, 201);
    const failed = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { metadata: { name: 'http-fault' } } });
    assert.deepEqual([failed.status, failed.body.reason, failed.body.message], [500, 'InternalError', 'boom']);
    assert.equal((await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { metadata: { name: 'http-fault' } } })).status, 201);
    await h.http('/api/v1/namespaces/default/configmaps/http-fault');
    await h.http('/api/v1/configmaps');
    const counts = await h.http('/_emulator/requests');
    assert.deepEqual(counts.body, { 'create configmaps': 2, 'get configmaps': 1, 'list configmaps': 1 });
    assert.equal(h.api.requests.count('create', 'configmaps'), 2);
    await h.http('/_emulator/faults', { method: 'POST', body: { verb: 'get', resource: 'configmaps', count: 5, status: 503 } });
    assert.equal((await h.http('/_emulator/faults', { method: 'DELETE' })).status, 200);
    assert.equal((await h.http('/api/v1/namespaces/default/configmaps/http-fault')).status, 200);
    assert.equal((await h.http('/_emulator/faults', { method: 'POST', body: { verb: 'fly', resource: 'x', count: 1, status: 500 } })).status, 400);
    h.api.requests.reset();
    assert.deepEqual(h.api.requests.snapshot(), {});
  });
});

describe('kube-api lifecycle', () => {
  it('many instances per process, each with its own kubeconfig for plain http', async () => {
    const [a, b] = await Promise.all([startKubeApi({ kinds: fixtureKinds() }), startKubeApi({ kinds: fixtureKinds() })]);
    try {
      assert.notEqual(a.port, b.port);
      const dir = await mkdtemp(join(tmpdir(), 'kube-api-'));
      await a.writeKubeconfig(join(dir, 'config'));
      const kc = new KubeConfig();
      kc.loadFromFile(join(dir, 'config'));
      assert.equal(kc.getCurrentCluster()!.server, a.url);
      await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'only-in-a' } } });
      assert.ok(a.store.get({ resource: '/configmaps', namespace: 'default', name: 'only-in-a' }));
      assert.equal(b.store.get({ resource: '/configmaps', namespace: 'default', name: 'only-in-a' }), undefined);
      await rm(dir, { recursive: true });
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('--data persistence: objects and the revision counter survive a restart; older watch RVs get 410', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kube-api-data-'));
    const dataFile = join(dir, 'state.json');
    try {
      const first = await startKubeApi({ kinds: fixtureKinds(), dataFile });
      first.store.create('/configmaps', { metadata: { name: 'kept', namespace: 'default' }, data: { a: '1' } });
      const rv = first.store.revision;
      await first.stop();
      assert.equal(JSON.parse(await readFile(dataFile, 'utf8')).revision, rv);
      const second = await startKubeApi({ kinds: fixtureKinds(), dataFile });
      try {
        assert.equal(second.store.revision, rv);
        assert.equal(second.store.get({ resource: '/configmaps', namespace: 'default', name: 'kept' })!.data.a, '1');
        const next = second.store.create('/configmaps', { metadata: { name: 'after', namespace: 'default' } });
        assert.equal(Number(next.metadata.resourceVersion), rv + 1);
        const res = await fetch(`${second.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv - 1}`);
        const line = JSON.parse((await res.text()).trim());
        assert.equal(line.object.code, 410);
      } finally {
        await second.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('npm run kube-api: prints exactly one line once listening and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [fileURLToPath(new URL('../../infra/local/kube-api/main.ts', import.meta.url)), '--port', '0', '--watch-history', '100'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const first = await new Promise<string>((resolve) => lines.once('line', resolve));
    const m = /^kube-api listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(first);
    assert.ok(m, first);
    const res = await fetch(`${m[1]}/api/v1/namespaces/kube-node-lease`);
    assert.equal(res.status, 200);
    const more: string[] = [];
    lines.on('line', (l) => more.push(l));
    const code = await new Promise<number | null>((resolve) => { child.on('exit', resolve); child.kill('SIGTERM'); });
    assert.equal(code, 0);
    assert.deepEqual(more, []);
  });
});
