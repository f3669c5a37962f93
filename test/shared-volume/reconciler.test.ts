/**
 * The reconciler's shell against the stand-ins without the queues: the API emulator, dynalite (the
 * per-volume cache in the control table) and the embedded storage control plane. Proves the cache rules
 * (written only after full success, expiry, equal-hit skips everything), the update path on a mis-shaped
 * Service, the claim check, and a failed list.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { startStorageApi, type StorageApiHandle } from '../../infra/local/storage-api/server.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { SharedVolumeCache, sharedVolumePk } from '../../lib/shared-volume/cache.ts';
import { DEFAULT_CONFIG } from '../../lib/shared-volume/config.ts';
import { isScheduledPoll } from '../../lib/shared-volume/controller.ts';
import { SharedVolumeReconciler, type SharedVolumeReconcilerDeps } from '../../lib/shared-volume/reconciler.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

const NS = 'default';

describe('SharedVolumeReconciler against the stand-ins', () => {
  let kube: KubeApi;
  let db: Dynalite;
  let storageApi: StorageApiHandle;
  let storage: StorageOSClient;
  let core: CoreV1Api;
  let recorder: MemoryEventRecorder;
  let counter = 0;

  before(async () => {
    kube = await startKubeApi({ port: 0 } as never);
    db = await startDynalite();
    storageApi = await startStorageApi({ port: 0, nodes: ['node-1'] });
    storage = new StorageOSClient({ endpoint: storageApi.url, username: 'storageos', password: 'storageos', backoff: { attempts: 1 } });
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
  });
  after(async () => {
    await Promise.all([kube?.stop(), db?.stop(), storageApi?.stop()]);
  });
  beforeEach(() => {
    recorder = new MemoryEventRecorder();
  });

  const reconciler = (overrides: Partial<SharedVolumeReconcilerDeps> = {}) =>
    new SharedVolumeReconciler({
      storage,
      core,
      recorder,
      cache: new SharedVolumeCache({ doc: db.doc, table: db.tables.control, cluster: 'local' }),
      config: { ...DEFAULT_CONFIG, createPollIntervalMs: 20 },
      ...overrides,
    });
  /** A claim and a shared volume for it; returns the ids. */
  const sharedVolume = async (withClaim = true) => {
    const n = ++counter;
    const claim = `claim-${n}`;
    const pv = `pvc-rec-${n}`;
    if (withClaim) {
      await core.createNamespacedPersistentVolumeClaim({
        namespace: NS,
        body: { metadata: { name: claim }, spec: { accessModes: ['ReadWriteMany'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } } },
      });
    }
    const volume = await storage.createVolume({
      namespace: NS,
      name: pv,
      sizeBytes: 1 << 20,
      labels: { 'csi.storage.k8s.io/pv/name': pv, 'csi.storage.k8s.io/pvc/name': claim, 'csi.storage.k8s.io/pvc/namespace': NS },
    });
    await storageApi.state.shareVolume(volume.id);
    return { id: volume.id, pv, claim };
  };
  const only = (id: string) => ({ only: (v: { id: string }) => v.id === id });
  const cacheItem = async (id: string) => (await db.doc.send(new GetCommand({ TableName: db.tables.control, Key: { pk: sharedVolumePk('local', id) } }))).Item;
  const mountEndpoint = async (id: string) => (await storage.getVolume({ namespace: NS, id })).labels['storageos.com/nfs/mount-endpoint'];

  it('a failed publish leaves the volume uncached; the next pass publishes and caches it', async () => {
    const v = await sharedVolume();
    storageApi.faults.add({ method: 'PUT', path: '/v2/namespaces/*/volumes/*/nfs/mount-endpoint', status: 400, message: 'bad request' });
    const failed = await reconciler().pollOnce(only(v.id));
    assert.equal(failed.outcomes?.get(v.id), 'failed');
    assert.equal(await cacheItem(v.id), undefined, 'not cached after a failure');
    assert.equal(await mountEndpoint(v.id), undefined);
    const ok = await reconciler().pollOnce(only(v.id));
    assert.equal(ok.outcomes?.get(v.id), 'published');
    const svc = await core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.equal(await mountEndpoint(v.id), `${svc.spec!.clusterIP}:2049`);
    const item = await cacheItem(v.id);
    assert.equal(JSON.parse(item!.volume as string).externalEndpoint, `${svc.spec!.clusterIP}:2049`);
    assert.equal(recorder.events.filter((e) => e.reason === 'Created').length, 1, 'Created once: the second pass found the Service');
  });

  it('a fresh equal entry skips the volume; an expired one is reconciled again without writes', async () => {
    const v = await sharedVolume();
    // The cache's clock only moves when the test moves it: 'cached' does not depend on how soon the next pass runs.
    let clock = Date.now();
    const cache = new SharedVolumeCache({ doc: db.doc, table: db.tables.control, cluster: 'local', now: () => clock });
    const r = reconciler({ cache, config: { ...DEFAULT_CONFIG, cacheExpiryMs: 300 } });
    assert.equal((await r.pollOnce()).outcomes?.get(v.id), 'published');
    const gets = kube.requests.count('get', 'services');
    assert.equal((await r.pollOnce()).outcomes?.get(v.id), 'cached');
    assert.equal(kube.requests.count('get', 'services'), gets, 'no read while cached');
    clock += 299;
    assert.equal((await r.pollOnce()).outcomes?.get(v.id), 'cached', 'still fresh just before the expiry');
    assert.equal(kube.requests.count('get', 'services'), gets, 'no read while cached');
    clock += 1;
    const updates = kube.requests.count('update', 'services') + kube.requests.count('update', 'endpoints');
    assert.equal((await r.pollOnce()).outcomes?.get(v.id), 'ready');
    assert.ok(kube.requests.count('get', 'services') > gets, 'read again after expiry');
    assert.equal(kube.requests.count('update', 'services') + kube.requests.count('update', 'endpoints'), updates, 'nothing to update');
  });

  it('the cache survives a new container (read back from DynamoDB)', async () => {
    const v = await sharedVolume();
    await reconciler().pollOnce(only(v.id));
    const fresh = reconciler();
    const result = await fresh.pollOnce();
    assert.equal(result.outcomes?.get(v.id), 'cached');
  });

  it('a mis-shaped Service is updated in place: ports fixed, ClusterIP kept, no event', async () => {
    const v = await sharedVolume();
    await reconciler().pollOnce(only(v.id));
    const svc = await core.readNamespacedService({ name: v.pv, namespace: NS });
    svc.spec!.ports = [...svc.spec!.ports!, { name: 'extra', port: 111, protocol: 'TCP', targetPort: 111 }];
    await core.replaceNamespacedService({ name: v.pv, namespace: NS, body: svc });
    const events = recorder.events.length;
    assert.equal((await reconciler().pollOnce(only(v.id))).outcomes?.get(v.id), 'ready');
    const fixed = await core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.equal(fixed.spec?.clusterIP, svc.spec?.clusterIP);
    assert.deepEqual(fixed.spec?.ports?.map((p) => p.name), ['nfs']);
    assert.equal(recorder.events.length, events, 'no event for a Service update');
  });

  it('a missing claim: no Service, counted, not cached', async () => {
    const v = await sharedVolume(false);
    const counts: string[] = [];
    const result = await reconciler({ metrics: { count: (name) => counts.push(name), duration: () => {} } }).pollOnce(only(v.id));
    assert.equal(result.outcomes?.get(v.id), 'claim-missing');
    assert.ok(counts.includes('SharedVolumeClaimMissing'));
    await assert.rejects(core.readNamespacedService({ name: v.pv, namespace: NS }), (e: { code?: number }) => e.code === 404);
    assert.equal(await cacheItem(v.id), undefined);
  });

  it('a failed list reconciles nothing and resets the API client (apiReset)', async () => {
    let resets = 0;
    const failing = Object.assign(Object.create(storage) as StorageOSClient, { reset: () => void resets++ });
    storageApi.faults.add({ method: 'GET', path: '/v2/namespaces', status: 403, message: 'forbidden' });
    const result = await reconciler({ storage: failing }).pollOnce();
    assert.equal(result.outcomes, undefined);
    assert.equal(resets, 1);
  });

  it('tells the scheduled event from an SQS batch', () => {
    assert.equal(isScheduledPoll({ action: 'poll' }), true);
    assert.equal(isScheduledPoll({ Records: [] }), false);
    assert.equal(isScheduledPoll(null), false);
  });
});
