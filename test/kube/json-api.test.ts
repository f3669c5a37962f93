/**
 * lib/kube/json-api.ts against the API emulator:
 * - an object written and read back is the server's JSON as it sent it (its timestamps as the server wrote
 *   them, fields the generated models do not know kept), where the generated client turns them into `Date`s;
 * - failures are the generated client's: `ApiException`s the error helpers classify (404, 409 conflict,
 *   422, 401 without a body);
 * - requests go through the configuration's authentication and middleware, both ways, and spend the
 *   cluster's request budget with a 429 pausing it for its Retry-After, as the generated clients do.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ApiException, CoreV1Api, KubeConfig, ServerConfiguration, createConfiguration } from '@kubernetes/client-node';
import { kubeconfigFor, startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { KubeClients } from '../../lib/kube/client.ts';
import { isConflict, isInvalid, isNotFound, isTooManyRequests, retryAfterMs, statusReason } from '../../lib/kube/errors.ts';
import { DISPATCHER_HTTP } from '../../lib/kube/http.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import { ApiBudget } from '../../lib/state/bucket.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; creationTimestamp?: string; uid?: string };
  data?: Record<string, string>;
}

const failure = async (call: () => Promise<unknown>): Promise<unknown> => {
  try {
    await call();
  } catch (error) {
    return error;
  }
  assert.fail('expected the call to fail');
};

describe('KubeJsonApi', () => {
  let kube: KubeApi;
  let db: Dynalite;
  let dir: string;
  let kubeconfig: string;
  let json: KubeJsonApi;
  before(async () => {
    [kube, db] = await Promise.all([startKubeApi({ auth: {} }), startDynalite()]);
    dir = await mkdtemp(join(tmpdir(), 'claimflow-json-api-'));
    kubeconfig = join(dir, 'kubeconfig');
    await kube.writeKubeconfig(kubeconfig);
    json = await new KubeClients({ env: { KUBECONFIG: kubeconfig } }).api('local', KubeJsonApi);
  });
  after(async () => {
    await Promise.all([kube.stop(), db.stop(), rm(dir, { recursive: true, force: true })]);
  });

  test('a patch is sent as the content type given; a delete carries its options (a UID precondition)', async () => {
    const created = await json.post<ConfigMap>('/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'patched' }, data: { a: '1', b: '2' } });
    const merged = await json.patch<ConfigMap>('/api/v1/namespaces/default/configmaps/patched', { data: { a: null, c: '3' } }, 'application/merge-patch+json');
    assert.deepEqual(merged.data, { b: '2', c: '3' }, 'a JSON merge patch: null removes a key');
    const refused = await failure(() => json.patch('/api/v1/namespaces/default/configmaps/patched', { data: { d: '4' } }, 'application/x-not-a-patch'));
    assert.ok(refused instanceof ApiException);
    assert.equal(refused.code, 415, 'the content type reached the server');
    const wrongUid = await failure(() => json.delete('/api/v1/namespaces/default/configmaps/patched', { preconditions: { uid: 'not-its-uid' } }));
    assert.ok(isConflict(wrongUid), 'a UID precondition that does not hold is a 409');
    await json.delete('/api/v1/namespaces/default/configmaps/patched', { preconditions: { uid: created.metadata.uid } });
    assert.ok(isNotFound(await failure(() => json.get('/api/v1/namespaces/default/configmaps/patched'))));
  });

  test('objects cross as the server’s JSON, timestamps and all', async () => {
    const created = await json.post<ConfigMap>('/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'raw' }, data: { a: '1' } });
    assert.match(created.metadata.creationTimestamp ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'as the server wrote it (RFC 3339, whole seconds)');
    const read = await json.get<ConfigMap>('/api/v1/namespaces/default/configmaps/raw');
    assert.deepEqual(read, created);
    const stored = kube.store.get({ resource: '/configmaps', namespace: 'default', name: 'raw' });
    assert.equal(read.metadata.creationTimestamp, stored?.metadata.creationTimestamp);
    // The generated client hands back a Date for the same field.
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const typed = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ name: 'raw', namespace: 'default' });
    assert.ok(typed.metadata?.creationTimestamp instanceof Date);

    // A field client-node's ConfigMap model does not have is sent and returned, where the models drop it.
    const replaced = await json.put<ConfigMap & { futureField?: unknown }>('/api/v1/namespaces/default/configmaps/raw', { ...read, data: { a: '2' }, futureField: { x: 1 } });
    assert.equal(replaced.data?.a, '2');
    assert.deepEqual(replaced.futureField, { x: 1 });
    assert.deepEqual((kube.store.get({ resource: '/configmaps', namespace: 'default', name: 'raw' }) as { futureField?: unknown } | undefined)?.futureField, { x: 1 });
    const viaModels = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ name: 'raw', namespace: 'default' });
    assert.equal((viaModels as { futureField?: unknown }).futureField, undefined, 'the generated client drops it');
    assert.notEqual(replaced.metadata.resourceVersion, read.metadata.resourceVersion);
    await json.post('/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } });
    const listed = await json.get<{ items: ConfigMap[] }>('/api/v1/namespaces/default/configmaps', { fieldSelector: 'metadata.name=raw' });
    assert.deepEqual(listed.items.map((c) => c.metadata.name), ['raw'], 'query parameters are sent');
  });

  test('failures are ApiExceptions the error helpers classify', async () => {
    const missing = await failure(() => json.get('/api/v1/namespaces/default/configmaps/none'));
    assert.ok(missing instanceof ApiException);
    assert.ok(isNotFound(missing));
    assert.equal(statusReason(missing), 'NotFound');

    const created = await json.post<ConfigMap>('/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'stale' } });
    await json.put('/api/v1/namespaces/default/configmaps/stale', { ...created, data: { a: '1' } });
    const conflict = await failure(() => json.put('/api/v1/namespaces/default/configmaps/stale', { ...created, data: { a: '2' } }));
    assert.ok(isConflict(conflict), 'a stale resourceVersion is a 409 Conflict');
    const invalid = await failure(() => json.post('/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'Not_Valid' } }));
    assert.ok(isInvalid(invalid), `422 expected, got ${(invalid as { code?: number }).code}`);

    const anonymous = join(dir, 'anonymous');
    await writeFile(anonymous, kubeconfigFor(kube.url, undefined, kube.caCert));
    const without = await new KubeClients({ env: { KUBECONFIG: anonymous } }).api('local', KubeJsonApi);
    const refused = await failure(() => without.get('/api/v1/namespaces/default'));
    assert.ok(refused instanceof ApiException);
    assert.equal(refused.code, 401);
    assert.equal(refused.body, undefined, 'as the generated client: a 401 carries no body');
  });

  test('requests pass the configuration’s middleware both ways, in order', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const seen: string[] = [];
    const tap = (name: string) => ({
      pre: async (context: Parameters<typeof DISPATCHER_HTTP.send>[0]) => (seen.push(`${name} pre ${context.getHttpMethod()} ${new URL(context.getUrl()).pathname}`), context),
      post: async (context: { httpStatusCode: number }) => (seen.push(`${name} post ${context.httpStatusCode}`), context),
    });
    const api = new KubeJsonApi(
      createConfiguration({
        baseServer: new ServerConfiguration(kc.getCurrentCluster()!.server, {}),
        authMethods: { default: kc },
        httpApi: DISPATCHER_HTTP,
        promiseMiddleware: [tap('a'), tap('b')] as never,
      }),
    );
    await api.get('/api/v1/namespaces/default');
    assert.deepEqual(seen, ['a pre GET /api/v1/namespaces/default', 'b pre GET /api/v1/namespaces/default', 'b post 200', 'a post 200']);
  });

  test('requests spend the cluster budget; a 429 pauses the cluster for its Retry-After', async () => {
    let clock = 1_000_000;
    const budget = new ApiBudget({
      doc: db.doc,
      table: db.tables.control,
      cluster: 'json-budget',
      qps: 20,
      burst: 30,
      now: () => clock,
      sleep: async (ms) => void (clock += ms),
    });
    const budgeted = await new KubeClients({ env: { KUBECONFIG: kubeconfig }, budget: () => budget }).api('json-budget', KubeJsonApi);
    for (let i = 0; i < 3; i++) await budgeted.get('/api/v1/namespaces/default');
    assert.ok(((await budget.read())?.tokens ?? 30) < 30, 'the shared bucket was drawn from');
    kube.faults.inject({ verb: 'get', resource: 'namespaces', count: 1, status: 429, retryAfterSeconds: 5 });
    const throttled = await failure(() => budgeted.get('/api/v1/namespaces/default'));
    assert.ok(isTooManyRequests(throttled));
    assert.equal(retryAfterMs(throttled), 5000);
    assert.equal((await budget.read())?.pausedUntil, clock + 5000, 'every container now waits');
  });
});
