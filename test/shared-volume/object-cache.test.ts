/**
 * The claim, Service and Endpoints read from the DynamoDB object cache (a GET on a miss), through the stand-ins
 * (API emulator, dynalite, storage control plane). The test plays the forwarder's part where it needs one (it
 * puts the claim, Service and Endpoints into the cache as the forwarder's watches would); everything else is
 * the reconciler's own doing.
 *
 * - our updates are written back (the cache then holds what the API returned); our creates are not: the
 *   forwarder's watch caches every ADDED, and the test plays that part;
 * - with the objects cached, a volume whose entry expired costs no GET, and a failover's updates are made from
 *   cached objects;
 * - a cached object behind the API: the update gets a 409, the object is read from the API and the update made;
 * - a Service or Endpoints the cache answers is absent is created without a GET; one that exists after all (the
 *   cache behind) meets AlreadyExists, is read from the API and used as found (no Created event); one deleted
 *   between that AlreadyExists and the read fails the pass, and the next pass creates it;
 * - a claim's miss or tombstone, and an unreadable cache table, is a GET.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { SharedVolumeCache } from '../../lib/shared-volume/cache.ts';
import { DEFAULT_CONFIG } from '../../lib/shared-volume/config.ts';
import { SharedVolumeReconciler } from '../../lib/shared-volume/reconciler.ts';
import { ObjectCache, type CacheableObject } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import type { SharedVolume } from '../../lib/storage/types.ts';
import { NS, startStandIns, type StandIns } from './support.ts';

const CLUSTER = 'local';

describe('PVC, Service and Endpoints reads from the object cache', () => {
  let s: StandIns;
  let objects: ObjectCache;

  before(async () => {
    s = await startStandIns();
    objects = new ObjectCache(s.db.doc, s.db.tables.cache, { indexer: indexAttributes });
  });
  after(async () => {
    await s?.stop();
  });

  const reconciler = (cache: ObjectCache = objects, recorder = new MemoryEventRecorder()) =>
    new SharedVolumeReconciler({
      storage: s.storage,
      core: s.core,
      recorder,
      cache: new SharedVolumeCache({ doc: s.db.doc, table: s.db.tables.control, cluster: CLUSTER }),
      config: { ...DEFAULT_CONFIG, createPollIntervalMs: 20 },
      objects: cache,
      leases: new LeaseStore({ doc: s.db.doc, table: s.db.tables.control }),
      cluster: CLUSTER,
    });
  const listed = async (id: string): Promise<SharedVolume> => (await s.storage.listSharedVolumes()).find((v) => v.id === id)!;
  /** GETs of the three kinds the reconciler reads. */
  const gets = () => ({
    pvc: s.kube.requests.count('get', 'persistentvolumeclaims'),
    services: s.kube.requests.count('get', 'services'),
    endpoints: s.kube.requests.count('get', 'endpoints'),
  });
  const since = (before: ReturnType<typeof gets>) => {
    const now = gets();
    return { pvc: now.pvc - before.pvc, services: now.services - before.services, endpoints: now.endpoints - before.endpoints };
  };
  /**
   * What the forwarder's watches do: the volume's claim, Service and Endpoints as the API has them, into the
   * cache (the reconciler writes back its updates, never its creates).
   */
  const forward = async (v: { claim: string; pv: string }) => {
    const claim = await s.core.readNamespacedPersistentVolumeClaim({ name: v.claim, namespace: NS });
    await objects.put(CLUSTER, 'PersistentVolumeClaim', { apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...claim } as CacheableObject);
    const service = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    await objects.put(CLUSTER, 'Service', { apiVersion: 'v1', kind: 'Service', ...service } as CacheableObject);
    const endpoints = await s.core.readNamespacedEndpoints({ name: v.pv, namespace: NS });
    await objects.put(CLUSTER, 'Endpoints', { apiVersion: 'v1', kind: 'Endpoints', ...endpoints } as CacheableObject);
  };
  const cachedRv = async (kind: string, name: string) => (await objects.get(CLUSTER, kind, `${NS}/${name}`))?.object.metadata?.resourceVersion;

  it('our creates are left to the forwarder; after our updates the cache holds the objects the API returned', async () => {
    const v = await s.sharedVolume();
    assert.equal(await reconciler().reconcileVolume(await listed(v.id)), 'published');
    assert.equal(await cachedRv('Service', v.pv), undefined, 'the created Service not written back');
    assert.equal(await cachedRv('Endpoints', v.pv), undefined, 'the created Endpoints not written back');
    await forward(v);
    const ep = await s.core.readNamespacedEndpoints({ name: v.pv, namespace: NS });

    await s.storageApi.state.failoverVolume(v.id);
    assert.equal(await reconciler().reconcileVolume(await listed(v.id)), 'ready');
    const moved = await s.core.readNamespacedEndpoints({ name: v.pv, namespace: NS });
    assert.notEqual(moved.metadata!.resourceVersion, ep.metadata!.resourceVersion);
    assert.equal(await cachedRv('Endpoints', v.pv), moved.metadata!.resourceVersion, 'the updated Endpoints written back');
    assert.equal(await cachedRv('Service', v.pv), (await s.core.readNamespacedService({ name: v.pv, namespace: NS })).metadata!.resourceVersion);
  });

  it('with the objects cached, an expired volume costs no GET, and a failover is applied from cached objects', async () => {
    const v = await s.sharedVolume();
    await reconciler().reconcileVolume(await listed(v.id));
    await forward(v);

    let before = gets();
    assert.equal(await reconciler().reconcileVolume(await listed(v.id)), 'ready');
    assert.deepEqual(since(before), { pvc: 0, services: 0, endpoints: 0 }, 'no GET for a volume whose objects are cached');

    const moved = (await s.storageApi.state.failoverVolume(v.id)) as { nfs?: { serviceEndpoint?: string } };
    const port = Number(moved.nfs!.serviceEndpoint!.split(':')[1]);
    const recorder = new MemoryEventRecorder();
    before = gets();
    const updates = s.kube.requests.count('update', 'services') + s.kube.requests.count('update', 'endpoints');
    assert.equal(await reconciler(objects, recorder).reconcileVolume(await listed(v.id)), 'ready');
    assert.deepEqual(since(before), { pvc: 0, services: 0, endpoints: 0 }, 'the failover made no GET');
    assert.equal(s.kube.requests.count('update', 'services') + s.kube.requests.count('update', 'endpoints') - updates, 2);
    assert.equal((await s.core.readNamespacedEndpoints({ name: v.pv, namespace: NS })).subsets?.[0]?.ports?.[0]?.port, port);
    assert.ok(recorder.events.some((e) => e.reason === 'Updated'));
  });

  it('a cached object behind the API: the update gets a 409, is read from the API and made', async () => {
    const v = await s.sharedVolume();
    await reconciler().reconcileVolume(await listed(v.id));
    await forward(v);
    // Someone changes the Service; the cache (no forwarder here) still holds the older version.
    const svc = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    svc.metadata!.annotations = { touched: 'yes' };
    await s.core.replaceNamespacedService({ name: v.pv, namespace: NS, body: svc });
    const moved = (await s.storageApi.state.failoverVolume(v.id)) as { nfs?: { serviceEndpoint?: string } };
    const port = Number(moved.nfs!.serviceEndpoint!.split(':')[1]);
    const before = gets();
    assert.equal(await reconciler().reconcileVolume(await listed(v.id)), 'ready');
    assert.equal(since(before).services, 1, 'one GET after the 409');
    const fixed = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.equal(fixed.spec?.ports?.[0]?.targetPort, port);
    assert.equal(fixed.metadata?.annotations?.touched, 'yes', 'the update was made on the current object');
    assert.equal(await cachedRv('Service', v.pv), fixed.metadata!.resourceVersion);
  });

  it('a new volume: the entries are read in one batch; the Service and Endpoints the cache answers are absent are created without a GET', async () => {
    const v = await s.sharedVolume();
    const recorder = new MemoryEventRecorder();
    // the object cache's own reads, counted by command
    const commands: string[] = [];
    const countingDoc = new Proxy(s.db.doc, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return (command: { constructor: { name: string } }, ...rest: unknown[]) => {
          commands.push(command.constructor.name);
          return (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
        };
      },
    });
    const counted = new ObjectCache(countingDoc, s.db.tables.cache, { indexer: indexAttributes });
    const before = gets();
    const creates = () => s.kube.requests.count('create', 'services') + s.kube.requests.count('create', 'endpoints');
    const createsBefore = creates();
    assert.equal(await reconciler(counted, recorder).reconcileVolume(await listed(v.id)), 'published');
    assert.deepEqual(commands.filter((c) => c === 'BatchGetCommand' || c === 'GetCommand'), ['BatchGetCommand'], 'claim, Service and Endpoints in one read');
    assert.deepEqual(since(before), { pvc: 1, services: 0, endpoints: 0 }, 'only the claim (not cached here) is read from the API');
    assert.equal(creates() - createsBefore, 2);
    assert.deepEqual(recorder.events.map((e) => e.reason), ['Created']);
  });

  it('absent in the cache but there in the API: the create meets AlreadyExists, the objects are read and used as found', async () => {
    const v = await s.sharedVolume();
    await reconciler().reconcileVolume(await listed(v.id));
    await forward(v);
    const service = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    const endpoints = await s.core.readNamespacedEndpoints({ name: v.pv, namespace: NS });
    // The cache behind: tombstones where the objects are (e.g. a deletion and re-creation the forwarder has not seen yet).
    await objects.remove(CLUSTER, 'Service', { apiVersion: 'v1', kind: 'Service', ...service } as CacheableObject, Number(service.metadata!.resourceVersion) + 1000);
    await objects.remove(CLUSTER, 'Endpoints', { apiVersion: 'v1', kind: 'Endpoints', ...endpoints } as CacheableObject, Number(endpoints.metadata!.resourceVersion) + 1000);
    const moved = (await s.storageApi.state.failoverVolume(v.id)) as { nfs?: { serviceEndpoint?: string } };
    const port = Number(moved.nfs!.serviceEndpoint!.split(':')[1]);
    const recorder = new MemoryEventRecorder();
    const before = gets();
    const failedCreates = s.kube.requests.count('create', 'services') + s.kube.requests.count('create', 'endpoints');
    assert.equal(await reconciler(objects, recorder).reconcileVolume(await listed(v.id)), 'ready');
    assert.equal(s.kube.requests.count('create', 'services') + s.kube.requests.count('create', 'endpoints') - failedCreates, 2, 'both creates tried');
    assert.deepEqual(since(before), { pvc: 0, services: 1, endpoints: 1 }, 'each read from the API after its AlreadyExists');
    const now = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.equal(now.metadata!.uid, service.metadata!.uid, 'the same Service, not a new one');
    assert.equal((await s.core.readNamespacedEndpoints({ name: v.pv, namespace: NS })).subsets?.[0]?.ports?.[0]?.port, port, 'the failover applied to the objects found');
    assert.deepEqual(recorder.events.map((e) => e.reason), ['Updated'], 'no Created event for objects that were there');

    // The cache still does not hold them (as when their volume-id label is taken off): from now on they are
    // read with GETs in this container, not created and refused each time.
    await s.storageApi.state.failoverVolume(v.id);
    const again = gets();
    const createsNow = s.kube.requests.count('create', 'services') + s.kube.requests.count('create', 'endpoints');
    assert.equal(await reconciler().reconcileVolume(await listed(v.id)), 'ready');
    assert.equal(s.kube.requests.count('create', 'services') + s.kube.requests.count('create', 'endpoints') - createsNow, 0, 'no create tried again');
    assert.deepEqual(since(again), { pvc: 0, services: 1, endpoints: 1 });
  });

  it('a Service deleted between its AlreadyExists and the read fails the pass with no event; the next pass creates it', async () => {
    const v = await s.sharedVolume();
    await reconciler().reconcileVolume(await listed(v.id));
    await forward(v);
    const service = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    await objects.remove(CLUSTER, 'Service', { apiVersion: 'v1', kind: 'Service', ...service } as CacheableObject, Number(service.metadata!.resourceVersion) + 1000);
    // Someone deletes the Service just after the reconciler's create met it.
    let refused = 0;
    const racing = new Proxy(s.core, {
      get(target, prop, receiver) {
        if (prop !== 'createNamespacedService') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<typeof target.createNamespacedService>) => {
          try {
            return await target.createNamespacedService(...args);
          } catch (error) {
            refused++;
            await target.deleteNamespacedService({ name: v.pv, namespace: NS });
            throw error;
          }
        };
      },
    });
    const recorder = new MemoryEventRecorder();
    const warnings: string[] = [];
    const racingReconciler = new SharedVolumeReconciler({
      logger: { info: () => {}, warn: (message, extra) => warnings.push(`${message}: ${String(extra?.error)}`) },
      storage: s.storage,
      core: racing,
      recorder,
      cache: new SharedVolumeCache({ doc: s.db.doc, table: s.db.tables.control, cluster: CLUSTER }),
      config: { ...DEFAULT_CONFIG, createPollIntervalMs: 20 },
      objects,
      leases: new LeaseStore({ doc: s.db.doc, table: s.db.tables.control }),
      cluster: CLUSTER,
    });
    const before = gets();
    assert.equal(await racingReconciler.reconcileVolume(await listed(v.id)), 'failed');
    assert.equal(refused, 1, 'the create met the Service (AlreadyExists)');
    assert.equal(since(before).services, 1, 'one GET after the AlreadyExists, which found nothing');
    assert.deepEqual(recorder.events, [], 'no event for a Service neither created nor found');
    assert.deepEqual(warnings, [`shared volume create/update failed: EnsureServiceError: service ${NS}/${v.pv} already existed and was deleted before it could be read`]);
    await assert.rejects(s.core.readNamespacedService({ name: v.pv, namespace: NS }), 'the Service is gone');

    // The next pass (its container now reads the Service with GETs: the create met it once) recreates it, and
    // publishes the new Service's address.
    const next = new MemoryEventRecorder();
    assert.equal(await reconciler(objects, next).reconcileVolume(await listed(v.id)), 'published');
    const recreated = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.notEqual(recreated.metadata!.uid, service.metadata!.uid, 'a new Service');
    assert.deepEqual(next.events.map((e) => e.reason), ['Created']);
  });

  it("a claim's miss or tombstone, or an unreadable cache table, is a GET", async () => {
    const v = await s.sharedVolume();
    await reconciler().reconcileVolume(await listed(v.id));
    await forward(v);
    const claim = (await objects.get(CLUSTER, 'PersistentVolumeClaim', `${NS}/${v.claim}`))!.object;
    await objects.remove(CLUSTER, 'PersistentVolumeClaim', claim, Number(claim.metadata!.resourceVersion) + 1000);
    let before = gets();
    assert.equal(await reconciler().reconcileVolume(await listed(v.id)), 'ready', 'a tombstone is not trusted: the claim is read');
    assert.deepEqual(since(before), { pvc: 1, services: 0, endpoints: 0 });

    before = gets();
    assert.equal(await reconciler(new ObjectCache(s.db.doc, 'no-such-table')).reconcileVolume(await listed(v.id)), 'ready');
    assert.deepEqual(since(before), { pvc: 1, services: 1, endpoints: 1 }, 'no cache: every object is read from the API');
  });
});
