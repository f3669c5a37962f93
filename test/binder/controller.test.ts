/**
 * The binder shell against the real stand-ins: the Kubernetes API emulator over HTTP (objects created
 * with @kubernetes/client-node), dynalite holding the object cache and the event-correlation records.
 * The test plays the forwarder (it copies what the API returns into the cache, as the forwarder does
 * before publishing) and the queue (it reconciles the keys the binder asked to requeue).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CoreV1Api, StorageV1Api, type CoreV1Event } from '@kubernetes/client-node';
import type { KubeApi } from '../../infra/local/kube-api/index.ts';
import { isConflict, statusCode } from '../../lib/kube/errors.ts';
import type { WatchedKind } from '../../lib/runtime/message.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { reconcileBinder, type BinderDeps, type BinderOutcome } from '../../lib/binder/controller.ts';
import { startBinderShell, type BinderShell } from './shell.ts';

const CLUSTER = 'local';

const json = <T>(o: unknown): T => JSON.parse(JSON.stringify(o)) as T;

describe('binder shell against the emulator and dynalite', () => {
  let kube: KubeApi;
  let core: CoreV1Api;
  let storageV1: StorageV1Api;
  let cache: ObjectCache;
  let deps: BinderDeps;
  let queue: Array<{ kind: WatchedKind; key: string }>;
  let ns: string;
  let counter = 0;

  let shell: BinderShell;

  before(async () => {
    shell = await startBinderShell(CLUSTER);
    ({ kube, core, cache, deps, queue } = shell);
    storageV1 = shell.storageV1;
  });
  after(() => shell.stop());
  beforeEach(async () => {
    ns = `ns${++counter}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    queue.length = 0;
  });

  /** The forwarder's part: the API's current object into the cache. */
  async function observePV(name: string): Promise<void> {
    try {
      await cache.put(CLUSTER, 'PersistentVolume', json(await core.readPersistentVolume({ name })));
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      const hit = await cache.get(CLUSTER, 'PersistentVolume', name);
      if (hit && !hit.deleted) await cache.remove(CLUSTER, 'PersistentVolume', hit.object, hit.rv + 1_000_000);
    }
  }
  async function observePVC(name: string): Promise<void> {
    try {
      await cache.put(CLUSTER, 'PersistentVolumeClaim', json(await core.readNamespacedPersistentVolumeClaim({ name, namespace: ns })));
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      const hit = await cache.get(CLUSTER, 'PersistentVolumeClaim', `${ns}/${name}`);
      if (hit && !hit.deleted) await cache.remove(CLUSTER, 'PersistentVolumeClaim', hit.object, hit.rv + 1_000_000);
    }
  }
  /** `retry`: what the runtime says of a redelivery or of a key with a failure on record. */
  /** A message of the key: MODIFIED, REQUEUE with `retry`, or `type` (a deletion's DELETED). */
  const reconcile = (kind: WatchedKind, key: string, options: { retry?: boolean; type?: 'DELETED' } = {}, using: BinderDeps = deps): Promise<BinderOutcome> =>
    reconcileBinder({ kind, key, event: { v: 1, cluster: CLUSTER, kind, type: options.type ?? (options.retry ? 'REQUEUE' : 'MODIFIED'), key, uid: '', resourceVersion: '0', observedAt: new Date().toISOString() }, retry: options.retry ?? false }, using);

  type PVExtra = { policy?: string; className?: string; claimRef?: { name: string; uid?: string }; modes?: string[] };
  /** A volume created and cached, its syncVolume (Pending → Available) run. */
  async function createPV(name: string, size: string, extra: PVExtra = {}) {
    await createUnsyncedPV(name, size, extra);
    await reconcile('PersistentVolume', name); // syncVolume: Pending → Available
  }
  /** A volume created and cached, nothing reconciled yet. */
  async function createUnsyncedPV(name: string, size: string, extra: PVExtra = {}) {
    await core.createPersistentVolume({
      body: {
        metadata: { name },
        spec: {
          capacity: { storage: size },
          accessModes: extra.modes ?? ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: extra.policy ?? 'Retain',
          storageClassName: extra.className ?? ns,
          hostPath: { path: `/tmp/${name}` },
          ...(extra.claimRef ? { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: extra.claimRef.name, uid: extra.claimRef.uid } } : {}),
        },
      },
    });
    await observePV(name);
  }
  /** Volumes are cluster-scoped: each test uses its namespace as its class, so tests never share volumes. */
  async function createPVC(name: string, size: string, className: string | null = ns, modes = ['ReadWriteOnce']) {
    const out = await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name },
        spec: { accessModes: modes, resources: { requests: { storage: size } }, ...(className !== null ? { storageClassName: className } : {}) },
      },
    });
    await observePVC(name);
    return out;
  }
  const pvc = (name: string) => core.readNamespacedPersistentVolumeClaim({ name, namespace: ns });
  const pv = (name: string) => core.readPersistentVolume({ name });
  /** Deletes a claim, waits until the API no longer has it (pvc-protection lets it go: no pod uses it), caches its tombstone. */
  async function deletePVC(name: string): Promise<void> {
    await core.deleteNamespacedPersistentVolumeClaim({ name, namespace: ns });
    for (let i = 0; i < 100; i++) {
      try {
        await pvc(name);
        await new Promise((r) => setTimeout(r, 20));
      } catch {
        break;
      }
    }
    await observePVC(name);
  }
  async function eventsFor(name: string): Promise<CoreV1Event[]> {
    const list = await core.listNamespacedEvent({ namespace: ns });
    return list.items.filter((e) => e.involvedObject.name === name);
  }
  /** Reconciles requeued keys until the queue is empty (the FIFO queue's part). */
  async function drain(): Promise<void> {
    for (let i = 0; queue.length && i < 50; i++) {
      const { kind, key } = queue.shift()!;
      await reconcile(kind, key);
    }
  }

  it('binds each claim to the smallest sufficient volume with upstream\'s four writes', async () => {
    const sizes = ['1Gi', '2Gi', '5Gi', '10Gi', '20Gi'];
    for (const s of sizes) await createPV(`${ns}-pv-${s.toLowerCase()}`, s);
    for (const s of sizes) assert.equal((await pv(`${ns}-pv-${s.toLowerCase()}`)).status?.phase, 'Available');
    const wants = [['c-small', '1500Mi', '2Gi'], ['c-mid', '4Gi', '5Gi'], ['c-exact', '10Gi', '10Gi']];
    for (const [claim, request, expected] of wants) {
      await createPVC(claim, request);
      const before = { ...snapshotCounts() };
      const outcome = await reconcile('PersistentVolumeClaim', `${ns}/${claim}`);
      assert.equal(outcome.writes, 4, 'PV, PV status, PVC, PVC status');
      const after = snapshotCounts();
      assert.equal(after['update persistentvolumes'] - before['update persistentvolumes'], 1);
      assert.equal(after['update persistentvolumes/status'] - before['update persistentvolumes/status'], 1);
      assert.equal(after['update persistentvolumeclaims'] - before['update persistentvolumeclaims'], 1);
      assert.equal(after['update persistentvolumeclaims/status'] - before['update persistentvolumeclaims/status'], 1);
      const bound = await pvc(claim);
      assert.equal(bound.spec?.volumeName, `${ns}-pv-${expected.toLowerCase()}`);
      assert.equal(bound.status?.phase, 'Bound');
      assert.equal(bound.metadata?.annotations?.['pv.kubernetes.io/bind-completed'], 'yes');
      assert.equal(bound.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
      assert.equal(bound.status?.capacity?.storage, expected);
      const volume = await pv(`${ns}-pv-${expected.toLowerCase()}`);
      assert.equal(volume.status?.phase, 'Bound');
      assert.equal(volume.spec?.claimRef?.uid, bound.metadata?.uid);
      // The cache holds what the API returned (the shell wrote it back).
      const cached = await cache.get(CLUSTER, 'PersistentVolumeClaim', `${ns}/${claim}`);
      assert.equal(cached?.object.metadata?.resourceVersion, bound.metadata?.resourceVersion);
      // A second reconcile of a bound claim writes nothing.
      assert.equal((await reconcile('PersistentVolumeClaim', `${ns}/${claim}`)).writes, 0);
    }
  });

  function snapshotCounts(): Record<string, number> {
    const keys = ['update persistentvolumes', 'update persistentvolumes/status', 'update persistentvolumeclaims', 'update persistentvolumeclaims/status'];
    return Object.fromEntries(keys.map((k) => [k, kube.requests.count(...(k.split(' ') as [never, string]))]));
  }

  it('the reads of a bind do not grow with the number of volumes (index Queries, never a Scan)', async () => {
    const readsWith = async (extra: number, tag: string): Promise<BinderOutcome['stats']> => {
      // Bigger volumes of the same class and modes, only in the cache (the bind never writes them).
      for (let i = 0; i < extra; i++) {
        await cache.put(CLUSTER, 'PersistentVolume', {
          apiVersion: 'v1', kind: 'PersistentVolume',
          metadata: { name: `${ns}-${tag}-${i}`, uid: `${tag}-${i}`, resourceVersion: '1' },
          spec: { capacity: { storage: `${100 + i}Gi` }, accessModes: ['ReadWriteOnce'], storageClassName: ns, persistentVolumeReclaimPolicy: 'Retain' },
          status: { phase: 'Available' },
        });
      }
      await createPV(`${ns}-${tag}-fit`, '1Gi');
      await createPVC(`${tag}-claim`, '1Gi');
      const outcome = await reconcile('PersistentVolumeClaim', `${ns}/${tag}-claim`);
      assert.equal((await pvc(`${tag}-claim`)).spec?.volumeName, `${ns}-${tag}-fit`);
      return outcome.stats;
    };
    const few = await readsWith(5, 'few');
    const many = await readsWith(300, 'many');
    assert.equal(many.queries, few.queries);
    assert.ok(many.itemsRead <= 16 + 1, `items read ${many.itemsRead}`);
  });

  it('a claim with no volume stays Pending with one aggregated FailedBinding event', async () => {
    await createPVC('lonely', '1Ti', '');
    for (let i = 0; i < 3; i++) await reconcile('PersistentVolumeClaim', `${ns}/lonely`);
    assert.equal((await pvc('lonely')).status?.phase, 'Pending');
    const events = await eventsFor('lonely');
    assert.equal(events.length, 1);
    assert.equal(events[0].reason, 'FailedBinding');
    assert.equal(events[0].type, 'Normal');
    assert.equal(events[0].count, 3);
    assert.equal(events[0].source?.component, 'persistentvolume-controller');
    assert.equal(events[0].message, 'no persistent volumes available for this claim and no storage class is set');
  });

  it('a volume becoming Available requeues the pending claims it can satisfy', async () => {
    await createPVC('waiting', '3Gi');
    await createPVC('too-big', '30Gi');
    await reconcile('PersistentVolumeClaim', `${ns}/waiting`);
    await reconcile('PersistentVolumeClaim', `${ns}/too-big`);
    await observePVC('waiting');
    await observePVC('too-big');
    queue.length = 0;
    await createPV(`${ns}-late`, '4Gi');
    assert.deepEqual(queue.filter((q) => q.key.startsWith(`${ns}/`)), [{ kind: 'PersistentVolumeClaim', key: `${ns}/waiting` }]);
    await drain();
    assert.equal((await pvc('waiting')).spec?.volumeName, `${ns}-late`);
    assert.equal((await pvc('too-big')).status?.phase, 'Pending');
  });

  it('pre-bound volume and pre-bound claim', async () => {
    await createPV(`${ns}-big`, '10Gi', { claimRef: { name: 'wants-big' } });
    await createPV(`${ns}-small`, '1Gi');
    await createPVC('wants-big', '1Gi');
    await reconcile('PersistentVolumeClaim', `${ns}/wants-big`);
    assert.equal((await pvc('wants-big')).spec?.volumeName, `${ns}-big`, 'the pre-bound volume wins over a smaller free one');
    assert.equal((await pv(`${ns}-big`)).metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], undefined);

    await createPV(`${ns}-named`, '5Gi');
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: 'names-it' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: ns, volumeName: `${ns}-named` } },
    });
    await observePVC('names-it');
    await reconcile('PersistentVolumeClaim', `${ns}/names-it`);
    const claim = await pvc('names-it');
    assert.equal(claim.status?.phase, 'Bound');
    assert.equal(claim.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], undefined);
    assert.equal((await pv(`${ns}-named`)).metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
  });

  it('deleting a claim releases its volume (Retain stays Released; Delete without a deleter fails)', async () => {
    await createPV(`${ns}-keep`, '1Gi');
    await createPV(`${ns}-del`, '2Gi', { policy: 'Delete' });
    await createPVC('keep', '1Gi');
    await createPVC('del', '2Gi');
    await reconcile('PersistentVolumeClaim', `${ns}/keep`);
    await reconcile('PersistentVolumeClaim', `${ns}/del`);
    for (const name of ['keep', 'del']) {
      await deletePVC(name);
      await reconcile('PersistentVolumeClaim', `${ns}/${name}`, { type: 'DELETED' }); // deleteClaim → its volume's sync, inline
    }
    assert.deepEqual(queue.map((q) => q.key), [], 'both volumes synced in their claim’s deletion reconcile');
    const kept = await pv(`${ns}-keep`);
    assert.equal(kept.status?.phase, 'Released');
    assert.equal(kept.spec?.claimRef?.name, 'keep', 'Retain keeps the claimRef');
    const failed = await pv(`${ns}-del`);
    assert.equal(failed.status?.phase, 'Failed');
    assert.equal(failed.status?.message, `error getting deleter volume plugin for volume "${ns}-del": no volume plugin matched`);
    const warning = (await core.listEventForAllNamespaces()).items.find((e) => e.involvedObject.name === `${ns}-del`);
    assert.equal(warning?.reason, 'VolumeFailedDelete');
  });

  it('a deleted claim whose volume cannot be released inline (a newer version the cache has not seen) requeues it; upstream’s path requeues it always', async () => {
    await createPV(`${ns}-moved`, '1Gi');
    await createPV(`${ns}-upstream`, '1Gi', { className: `${ns}-u` });
    await createPVC('moved', '1Gi');
    await createPVC('upstream', '1Gi', `${ns}-u`);
    await reconcile('PersistentVolumeClaim', `${ns}/moved`);
    await reconcile('PersistentVolumeClaim', `${ns}/upstream`);
    // Someone labels the volume; the cache (the forwarder) has not seen that version yet.
    const bound = await pv(`${ns}-moved`);
    await core.replacePersistentVolume({ name: `${ns}-moved`, body: { ...bound, metadata: { ...bound.metadata, labels: { touched: 'yes' } } } });
    for (const name of ['moved', 'upstream']) await deletePVC(name);
    const outcome = await reconcile('PersistentVolumeClaim', `${ns}/moved`, { type: 'DELETED' });
    assert.equal(outcome.enqueued, 1);
    assert.deepEqual(queue.map((q) => q.key), [`${ns}-moved`], 'the refused release requeues the volume');
    assert.equal((await pv(`${ns}-moved`)).status?.phase, 'Bound', 'nothing written over the newer version');
    await observePV(`${ns}-moved`);
    await drain();
    assert.equal((await pv(`${ns}-moved`)).status?.phase, 'Released', 'its own sync releases it');

    await reconcileBinder({ kind: 'PersistentVolumeClaim', key: `${ns}/upstream`, event: { v: 1, cluster: CLUSTER, kind: 'PersistentVolumeClaim', type: 'DELETED', key: `${ns}/upstream`, uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } }, { ...deps, inlineRelease: false });
    assert.deepEqual(queue.map((q) => q.key), [`${ns}-upstream`], 'inlineRelease false: requeued, as upstream');
    assert.equal((await pv(`${ns}-upstream`)).status?.phase, 'Bound');
    await drain();
    assert.equal((await pv(`${ns}-upstream`)).status?.phase, 'Released');
  });

  it('a change its deletion overtook does nothing; the DELETED message releases the volume, with no live GET of a claim the cache saw deleted', async () => {
    await createPV(`${ns}-over`, '1Gi');
    await createPVC('over', '1Gi');
    await reconcile('PersistentVolumeClaim', `${ns}/over`);
    const last = await pvc('over');
    assert.equal(last.status?.phase, 'Bound');
    await deletePVC('over'); // the cache holds its tombstone
    let liveReads = 0;
    const api = new Proxy(deps.api, {
      get(target, property) {
        if (property === 'readClaim') {
          return (...args: Parameters<typeof target.readClaim>) => {
            liveReads++;
            return target.readClaim(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const counted: BinderDeps = { ...deps, api };
    // The claim's last change before it went (its version, older than the tombstone) reaches the binder after.
    const overtaken = await reconcileBinder(
      { kind: 'PersistentVolumeClaim', key: `${ns}/over`, event: { v: 1, cluster: CLUSTER, kind: 'PersistentVolumeClaim', type: 'MODIFIED', key: `${ns}/over`, uid: last.metadata!.uid!, resourceVersion: last.metadata!.resourceVersion!, object: json(last), observedAt: new Date().toISOString() } },
      counted,
    );
    assert.deepEqual([overtaken.writes, overtaken.enqueued, queue.length], [0, 0, 0], 'nothing done: the DELETED message follows');
    assert.equal((await pv(`${ns}-over`)).status?.phase, 'Bound');
    await reconcile('PersistentVolumeClaim', `${ns}/over`, { type: 'DELETED' }, counted);
    assert.equal((await pv(`${ns}-over`)).status?.phase, 'Released', 'released by the deletion');
    assert.equal(liveReads, 0, 'the tombstone holds the claimRef uid: no GET (upstream GETs after an informer miss)');
    assert.deepEqual(queue, []);
  });

  it('a claim whose volume is deleted becomes Lost', async () => {
    await createPV(`${ns}-gone`, '1Gi');
    await createPVC('loses', '1Gi');
    await reconcile('PersistentVolumeClaim', `${ns}/loses`);
    await core.deletePersistentVolume({ name: `${ns}-gone` });
    // pv-protection holds a Bound volume: an admin forces it away by dropping the finalizer.
    const stuck = await pv(`${ns}-gone`);
    await core.replacePersistentVolume({ name: `${ns}-gone`, body: { ...stuck, metadata: { ...stuck.metadata, finalizers: [] } } });
    await observePV(`${ns}-gone`);
    await reconcile('PersistentVolume', `${ns}-gone`, { type: 'DELETED' }); // deleteVolume → requeue its claim
    await drain();
    const claim = await pvc('loses');
    assert.equal(claim.status?.phase, 'Lost');
    const events = await eventsFor('loses');
    assert.equal(events[0]?.reason, 'ClaimLost');
    assert.equal(events[0]?.message, 'Bound claim has lost its PersistentVolume. Data on the volume is lost!');
  });

  it('a 409 stops the sync without a blind overwrite; a crash between the PV and PVC writes heals', async () => {
    await createPV(`${ns}-c`, '1Gi');
    await createPVC('conflicted', '1Gi');
    kube.faults.inject({ verb: 'update', resource: 'persistentvolumes', name: `${ns}-c`, count: 1, status: 409 });
    await assert.rejects(reconcile('PersistentVolumeClaim', `${ns}/conflicted`), (e: unknown) => isConflict(e));
    assert.equal((await pv(`${ns}-c`)).spec?.claimRef, undefined);
    // Now the PVC write fails after both PV writes succeeded (the function "crashes" there).
    kube.faults.inject({ verb: 'update', resource: 'persistentvolumeclaims', name: 'conflicted', count: 1, status: 500 });
    await assert.rejects(reconcile('PersistentVolumeClaim', `${ns}/conflicted`), (e: unknown) => statusCode(e) === 500);
    assert.equal((await pv(`${ns}-c`)).status?.phase, 'Bound');
    assert.equal((await pvc('conflicted')).spec?.volumeName ?? '', '');
    const outcome = await reconcile('PersistentVolumeClaim', `${ns}/conflicted`);
    assert.equal(outcome.writes, 2, 'only the claim side is left to write');
    assert.equal((await pvc('conflicted')).status?.phase, 'Bound');
  });

  it('stale cache: a write computed from an old resourceVersion gets 409 and the retry converges', async () => {
    await createPV(`${ns}-s`, '1Gi');
    await createPVC('stale', '1Gi');
    // Someone changes the volume behind the cache's back.
    const current = await pv(`${ns}-s`);
    await core.replacePersistentVolume({ name: `${ns}-s`, body: { ...current, metadata: { ...current.metadata, labels: { touched: 'yes' } } } });
    await assert.rejects(reconcile('PersistentVolumeClaim', `${ns}/stale`), (e: unknown) => isConflict(e));
    assert.equal((await pv(`${ns}-s`)).metadata?.labels?.touched, 'yes');
    await observePV(`${ns}-s`); // the forwarder delivers the newer version
    await reconcile('PersistentVolumeClaim', `${ns}/stale`);
    const bound = await pv(`${ns}-s`);
    assert.equal(bound.status?.phase, 'Bound');
    assert.equal(bound.metadata?.labels?.touched, 'yes', 'the other writer\'s change survived');
  });

  it('external provisioner: both annotations and ExternalProvisioning, then binds to the PV it creates', async () => {
    const className = `${ns}-ext`;
    await storageV1.createStorageClass({ body: { metadata: { name: className }, provisioner: 'ext.example.com', volumeBindingMode: 'Immediate' } });
    await cache.put(CLUSTER, 'StorageClass', json(await storageV1.readStorageClass({ name: className })));
    const created = await createPVC('dyn', '1Gi', className);
    await reconcile('PersistentVolumeClaim', `${ns}/dyn`);
    let claim = await pvc('dyn');
    assert.equal(claim.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'], 'ext.example.com');
    assert.equal(claim.metadata?.annotations?.['volume.beta.kubernetes.io/storage-provisioner'], 'ext.example.com');
    assert.equal((await eventsFor('dyn'))[0]?.reason, 'ExternalProvisioning');
    // The provisioner creates the PV pointing at the claim.
    await core.createPersistentVolume({
      body: {
        metadata: { name: `pvc-${created.metadata?.uid}`, annotations: { 'pv.kubernetes.io/provisioned-by': 'ext.example.com' } },
        spec: {
          capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete', storageClassName: className,
          csi: { driver: 'ext.example.com', volumeHandle: 'vol-1' },
          claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'dyn', uid: created.metadata?.uid },
        },
      },
    });
    await observePV(`pvc-${created.metadata?.uid}`);
    await observePVC('dyn');
    queue.length = 0;
    // The volume's reconcile completes the bind its claim's sync would make (no requeue, no second message).
    const outcome = await reconcile('PersistentVolume', `pvc-${created.metadata?.uid}`);
    assert.deepEqual(queue, [], 'nothing requeued');
    assert.equal(outcome.inlineBound, `${ns}/dyn`);
    assert.equal(outcome.writes, 3, 'volume status Bound, claim volumeName, claim status Bound');
    claim = await pvc('dyn');
    assert.equal(claim.status?.phase, 'Bound');
    assert.equal(claim.spec?.volumeName, `pvc-${created.metadata?.uid}`);
    assert.equal(claim.metadata?.annotations?.['pv.kubernetes.io/bind-completed'], 'yes');
    assert.equal((await core.readPersistentVolume({ name: `pvc-${created.metadata?.uid}` })).status?.phase, 'Bound');
  });

  it('a volume pre-bound to a claim it is too small for binds nothing itself: the claim is requeued and its sync picks a free volume', async () => {
    await createPV(`${ns}-big`, '5Gi');
    const created = await createPVC('c', '3Gi');
    queue.length = 0;
    await createUnsyncedPV(`${ns}-small`, '1Gi', { modes: ['ReadWriteOnce'], claimRef: { name: 'c', uid: created.metadata?.uid } });
    const outcome = await reconcile('PersistentVolume', `${ns}-small`);
    assert.equal(outcome.inlineBound, undefined);
    assert.equal(outcome.writes, 0);
    assert.deepEqual(queue, [{ kind: 'PersistentVolumeClaim', key: `${ns}/c` }], 'upstream\'s requeue: the claim\'s own sync decides over every volume');
    await drain();
    assert.equal((await pvc('c')).spec?.volumeName, `${ns}-big`, 'the smallest free volume that fits, as upstream');
  });

  it('a volume pre-bound in a wider access-mode set than its claim\'s binds nothing itself: a free volume in the claim\'s own set wins, as upstream', async () => {
    // Upstream searches the claim's own mode set first and stops at its first match, so a free RWO volume
    // beats a RWO+ROX volume pre-bound to the claim; only a pre-bound volume in the claim's own set is sure to win.
    await createPV(`${ns}-rwo`, '1Gi');
    const created = await createPVC('c', '1Gi');
    queue.length = 0;
    await createUnsyncedPV(`${ns}-wide`, '1Gi', { modes: ['ReadWriteOnce', 'ReadOnlyMany'], claimRef: { name: 'c', uid: created.metadata?.uid } });
    const outcome = await reconcile('PersistentVolume', `${ns}-wide`);
    assert.equal(outcome.inlineBound, undefined, 'no inline bind across access-mode sets');
    assert.deepEqual(queue.filter((q) => q.kind === 'PersistentVolumeClaim'), [{ kind: 'PersistentVolumeClaim', key: `${ns}/c` }]);
    await drain();
    assert.equal((await pvc('c')).spec?.volumeName, `${ns}-rwo`, 'the free volume of the claim\'s own mode set');
  });

  it('a claim write refused after its volume\'s writes requeues the volume: its sync unbinds it once the claim is bound elsewhere', async () => {
    await createPV(`${ns}-a`, '1Gi');
    await createPV(`${ns}-b`, '2Gi');
    await createPVC('c', '1Gi');
    queue.length = 0;
    kube.faults.inject({ verb: 'update', resource: 'persistentvolumeclaims', name: 'c', count: 1, status: 409 });
    await assert.rejects(reconcile('PersistentVolumeClaim', `${ns}/c`), (e: unknown) => isConflict(e));
    assert.equal((await pv(`${ns}-a`)).status?.phase, 'Bound', 'both volume writes landed');
    // Tagged as the binder's own and Bound (out of the resync index): only this requeue brings the volume back.
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: `${ns}-a` }]);
    // Meanwhile the claim's author binds it to the other volume.
    const claim = await pvc('c');
    await core.replaceNamespacedPersistentVolumeClaim({ name: 'c', namespace: ns, body: { ...claim, spec: { ...claim.spec, volumeName: `${ns}-b` } } });
    await observePVC('c');
    await observePV(`${ns}-a`);
    await drain();
    const a = await pv(`${ns}-a`);
    assert.equal(a.spec?.claimRef, undefined, 'the controller-bound volume is unbound, as upstream\'s syncVolume does');
    assert.equal(a.status?.phase, 'Available');
  });

  /**
   * Claim `c`'s bind to volume `<ns>-a` is refused twice (two 409s on the claim's PUT): its own sync writes the
   * volume's side and requeues the volume; the volume's requeue (a retry) tries the inline bind, which is
   * refused too and requeues only the claim.
   */
  async function refuseBindTwice(): Promise<void> {
    queue.length = 0;
    kube.faults.inject({ verb: 'update', resource: 'persistentvolumeclaims', name: 'c', count: 2, status: 409 });
    await assert.rejects(reconcile('PersistentVolumeClaim', `${ns}/c`), (e: unknown) => isConflict(e));
    assert.deepEqual(queue.splice(0), [{ kind: 'PersistentVolume', key: `${ns}-a` }]);
    await observePV(`${ns}-a`);
    await reconcile('PersistentVolume', `${ns}-a`, { retry: true });
    assert.deepEqual(queue.splice(0), [{ kind: 'PersistentVolumeClaim', key: `${ns}/c` }], 'the inline bind was refused: only the claim is requeued');
  }

  it('a volume whose requeue ran before its claim decided is requeued again when a retry binds the claim elsewhere', async () => {
    // The volume's requeue (no backoff) usually runs before the claim's retry (backoff): its inline bind is
    // refused too and writes nothing, so nothing on the volume's side requeues it again. The claim's retry
    // that binds it elsewhere does.
    await createPV(`${ns}-a`, '1Gi');
    await createPV(`${ns}-b`, '2Gi');
    await createPVC('c', '1Gi');
    await refuseBindTwice();
    // The claim's author names the other volume; the claim's retry binds it there.
    const claim = await pvc('c');
    await core.replaceNamespacedPersistentVolumeClaim({ name: 'c', namespace: ns, body: { ...claim, spec: { ...claim.spec, volumeName: `${ns}-b` } } });
    await observePVC('c');
    const outcome = await reconcile('PersistentVolumeClaim', `${ns}/c`, { retry: true });
    assert.equal((await pvc('c')).spec?.volumeName, `${ns}-b`);
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: `${ns}-a` }], 'the other volume naming the claim is requeued');
    assert.equal(outcome.enqueued, 1);
    await drain();
    const a = await pv(`${ns}-a`);
    assert.equal(a.spec?.claimRef, undefined, 'the controller-bound volume is unbound');
    assert.equal(a.status?.phase, 'Available');
  });

  it('a claim bound meanwhile by another volume\'s inline bind: its retry requeues the volume its failed bind left', async () => {
    await createPV(`${ns}-a`, '1Gi');
    const created = await createPVC('c', '1Gi');
    await refuseBindTwice();
    // An admin pre-binds another volume to the claim; its own reconcile binds the claim inline.
    await createUnsyncedPV(`${ns}-w`, '1Gi', { claimRef: { name: 'c', uid: created.metadata?.uid } });
    const inline = await reconcile('PersistentVolume', `${ns}-w`);
    assert.equal(inline.inlineBound, `${ns}/c`);
    assert.equal((await pvc('c')).spec?.volumeName, `${ns}-w`);
    queue.length = 0;
    // The claim's retry (its failure is on record) finds it bound and requeues the volume the failed bind left.
    await reconcile('PersistentVolumeClaim', `${ns}/c`, { retry: true });
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: `${ns}-a` }]);
    await drain();
    const a = await pv(`${ns}-a`);
    assert.equal(a.spec?.claimRef, undefined, 'the controller-bound volume is unbound');
    assert.equal(a.status?.phase, 'Available');
  });

  it('a volume too large for the cache keeps its kubectl last-applied annotation through a bind', async () => {
    // The cache keeps such objects without the annotation (400 KB items); the binder PUTs what it read from
    // the cache, so without a live read first the bind would delete it on the API server.
    // Annotations are capped at 256 KiB in all, so the rest of the size is mount options.
    const applied = JSON.stringify({ note: 'x'.repeat(250_000) });
    const mountOptions = Array.from({ length: 120 }, (_, i) => `opt${i}=${'y'.repeat(1000)}`);
    await core.createPersistentVolume({
      body: {
        metadata: { name: `${ns}-fat`, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': applied } },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: ns, mountOptions, nfs: { server: 'nfs.example.com', path: '/fat' } },
      },
    });
    await observePV(`${ns}-fat`);
    const cached = await cache.get(CLUSTER, 'PersistentVolume', `${ns}-fat`);
    assert.equal(cached?.object.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration'], undefined, 'trimmed in the cache');
    await reconcile('PersistentVolume', `${ns}-fat`);
    await createPVC('c', '1Gi');
    await reconcile('PersistentVolumeClaim', `${ns}/c`);
    const bound = await pv(`${ns}-fat`);
    assert.equal(bound.spec?.claimRef?.name, 'c');
    assert.equal(bound.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration'], applied);
    assert.equal(bound.metadata?.annotations?.['claimflow.io/cache-trimmed'], undefined, 'the cache\'s marker never reaches the API');
  });

  it('WaitForFirstConsumer: a pre-bound volume binds in its own reconcile exactly as the requeued claim\'s sync binds it', async () => {
    // Upstream's PV controller matches with no node (findMatchingVolume(..., nil node, ...)): a volume pre-bound
    // to the claim binds even in delayed binding. Twin claims, one through each path, end alike.
    const className = `${ns}-wffc`;
    await storageV1.createStorageClass({ body: { metadata: { name: className }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' } });
    await cache.put(CLUSTER, 'StorageClass', json(await storageV1.readStorageClass({ name: className })));
    const outcomes: Record<string, BinderOutcome> = {};
    for (const [name, inlineBind] of [['twin-inline', true], ['twin-queue', false]] as const) {
      const created = await core.createNamespacedPersistentVolumeClaim({
        namespace: ns,
        body: {
          metadata: { name, annotations: { 'volume.kubernetes.io/selected-node': 'node-b' } },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: className },
        },
      });
      await observePVC(name);
      await core.createPersistentVolume({
        body: {
          metadata: { name: `${ns}-${name}` },
          spec: {
            capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: className, local: { path: '/mnt/a' },
            nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-a'] }] }] } },
            claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name, uid: created.metadata?.uid },
          },
        },
      });
      await observePV(`${ns}-${name}`);
      queue.length = 0;
      outcomes[name] = await reconcileBinder(
        { kind: 'PersistentVolume', key: `${ns}-${name}`, event: { v: 1, cluster: CLUSTER, kind: 'PersistentVolume', type: 'MODIFIED', key: `${ns}-${name}`, uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } },
        { ...deps, inlineBind },
      );
      await drain();
    }
    assert.equal(outcomes['twin-inline']!.inlineBound, `${ns}/twin-inline`);
    assert.equal(outcomes['twin-queue']!.inlineBound, undefined);
    for (const name of ['twin-inline', 'twin-queue']) {
      const claim = await pvc(name);
      assert.equal(claim.spec?.volumeName, `${ns}-${name}`, name);
      assert.equal(claim.status?.phase, 'Bound', name);
      assert.equal((await pv(`${ns}-${name}`)).status?.phase, 'Bound', name);
    }
  });

  it('retroactive default class: a class-less claim gets the default as soon as it appears', async () => {
    await createPVC('classless', '1Gi', null);
    await reconcile('PersistentVolumeClaim', `${ns}/classless`);
    assert.equal((await pvc('classless')).spec?.storageClassName, undefined);
    const className = `${ns}-default`;
    await storageV1.createStorageClass({
      body: { metadata: { name: className, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }, provisioner: 'ext.example.com', volumeBindingMode: 'Immediate' },
    });
    await cache.put(CLUSTER, 'StorageClass', json(await storageV1.readStorageClass({ name: className })));
    queue.length = 0;
    await reconcile('StorageClass', className);
    assert.ok(queue.some((q) => q.key === `${ns}/classless`));
    await drain();
    const assigned = await pvc('classless');
    assert.equal(assigned.spec?.storageClassName, className);
    // Its follow-up sync (upstream: the claim's update event, here the binder's own write) hands it to the
    // class's provisioner without waiting for the resync.
    assert.equal(assigned.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'], 'ext.example.com');
    await storageV1.deleteStorageClass({ name: className });
    const hit = await cache.get(CLUSTER, 'StorageClass', className);
    await cache.remove(CLUSTER, 'StorageClass', hit!.object, hit!.rv + 1_000_000);
  });
});
