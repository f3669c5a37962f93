import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { ClusterConfigError, KubeClients, parseClusters } from '../../lib/kube/client.ts';
import { isAlreadyExists, isConflict, isInvalid, isNotFound, isTooManyRequests, retryAfterMs } from '../../lib/kube/errors.ts';
import { ApiBudget } from '../../lib/state/bucket.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

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
    const core = await clients.coreV1('local');
    assert.equal(await clients.coreV1('local'), core);
    const ns = await core.readNamespace({ name: 'default' });
    assert.equal(ns.metadata?.name, 'default');
  });

  test('CLUSTERS selects a kubeconfig per cluster and rejects unknown ids', async () => {
    const clients = new KubeClients({ env: { CLUSTERS: JSON.stringify({ east: { kubeconfig } }) } });
    assert.equal((await (await clients.coreV1('east')).readNamespace({ name: 'kube-system' })).metadata?.name, 'kube-system');
    await assert.rejects(clients.coreV1('west'), ClusterConfigError);
    assert.throws(() => parseClusters('{"x":{"eks":{}}}'), ClusterConfigError);
    assert.throws(() => parseClusters('not json'), ClusterConfigError);
    assert.deepEqual(parseClusters('{"prod":{"eks":{"name":"prod","region":"eu-west-1"}}}'), { prod: { eks: { name: 'prod', region: 'eu-west-1' } } });
    await assert.rejects(new KubeClients({ env: {} }).coreV1('any'), ClusterConfigError);
  });

  test('error helpers classify real API failures', async () => {
    const core = await new KubeClients({ env: { KUBECONFIG: kubeconfig } }).coreV1('local');
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
    const core = await clients.coreV1('budgeted');
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
