/**
 * A claim deleted while it binds (found by the chaos soak): its dynamically provisioned volume (reclaim
 * policy Delete) already names it in `spec.claimRef` (with its uid), but the claim never got
 * `spec.volumeName`, so the deleted claim's last state names no volume. Upstream's deleteClaim enqueues
 * only `claim.spec.volumeName` and leaves such a volume to its periodic resync of every PV; the binder's
 * resync reads a sparse index that holds no Pending or Bound volume, so the deletion itself must find the
 * volumes that point at the claim (`byClaimRef`). The volume then turns Released (after upstream's live
 * GET) and is left to its external deleter.
 *
 * Against the real stand-ins: the Kubernetes API emulator over HTTP and dynalite; the test plays the
 * forwarder (API → cache) and the queue (it reconciles the keys the binder asked to requeue).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { statusCode } from '../../lib/kube/errors.ts';
import type { WatchedKind } from '../../lib/runtime/message.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { reconcileBinder, type BinderDeps, type BinderOutcome } from '../../lib/binder/controller.ts';
import { startBinderShell, type BinderShell } from './shell.ts';

const CLUSTER = 'local';
const PROVISIONER = 'external.example.com';

const json = <T>(o: unknown): T => JSON.parse(JSON.stringify(o)) as T;

describe('binder: a claim deleted while it binds releases the volume that names it', () => {
  let core: CoreV1Api;
  let cache: ObjectCache;
  let deps: BinderDeps;
  let queue: Array<{ kind: WatchedKind; key: string }>;
  let ns: string;
  let counter = 0;

  let shell: BinderShell;

  before(async () => {
    shell = await startBinderShell(CLUSTER);
    ({ core, cache, deps, queue } = shell);
  });
  after(() => shell.stop());
  beforeEach(async () => {
    ns = `gone${++counter}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    queue.length = 0;
  });

  /** The forwarder: the API's current object into the cache, or a tombstone (its last cached state) once gone. */
  async function observe(kind: 'PersistentVolume' | 'PersistentVolumeClaim', name: string): Promise<void> {
    const key = kind === 'PersistentVolume' ? name : `${ns}/${name}`;
    try {
      const object = kind === 'PersistentVolume'
        ? await core.readPersistentVolume({ name })
        : await core.readNamespacedPersistentVolumeClaim({ name, namespace: ns });
      await cache.put(CLUSTER, kind, json(object));
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      const hit = await cache.get(CLUSTER, kind, key);
      if (hit && !hit.deleted) await cache.remove(CLUSTER, kind, hit.object, hit.rv + 1); // the deletion's own version is newer; later objects newer still
    }
  }
  const reconcile = (kind: WatchedKind, key: string, type: 'MODIFIED' | 'DELETED' | 'REQUEUE' = 'MODIFIED', using: BinderDeps = deps): Promise<BinderOutcome> =>
    reconcileBinder({ kind, key, event: { v: 1, cluster: CLUSTER, kind, type, key, uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } }, using);
  /** Upstream's path: the volume's sync only requeues its claim (no inline bind). */
  const requeueOnly = (): BinderDeps => ({ ...deps, inlineBind: false });
  async function drain(): Promise<void> {
    for (let i = 0; queue.length && i < 50; i++) {
      const { kind, key } = queue.shift()!;
      await reconcile(kind, key, 'REQUEUE');
    }
  }

  /** A claim of a class handed to an external provisioner, and the PV that provisioner made for it. */
  async function provisioned(claimName: string): Promise<{ uid: string; pvName: string }> {
    const claim = await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: claimName, annotations: { 'volume.kubernetes.io/storage-provisioner': PROVISIONER } },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: ns },
      },
    });
    await observe('PersistentVolumeClaim', claimName);
    const uid = claim.metadata!.uid!;
    const pvName = `pvc-${uid}`;
    await core.createPersistentVolume({
      body: {
        metadata: { name: pvName, annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Delete',
          storageClassName: ns,
          csi: { driver: PROVISIONER, volumeHandle: uid },
          claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: claimName, uid, resourceVersion: claim.metadata!.resourceVersion },
        },
      },
    });
    await observe('PersistentVolume', pvName);
    return { uid, pvName };
  }

  async function deleteClaim(name: string): Promise<void> {
    await core.deleteNamespacedPersistentVolumeClaim({ name, namespace: ns });
    for (let i = 0; i < 100; i++) {
      try {
        await core.readNamespacedPersistentVolumeClaim({ name, namespace: ns });
        await new Promise((r) => setTimeout(r, 20));
      } catch {
        return;
      }
    }
    assert.fail(`claim ${name} not gone`);
  }

  it('volume bound on its side only (phase Pending): the claim\'s deletion requeues it, it turns Released', async () => {
    const { pvName } = await provisioned('early');
    // syncVolume: the claim exists but has no volumeName yet ⇒ requeue the claim, the phase stays.
    await reconcile('PersistentVolume', pvName, 'MODIFIED', requeueOnly());
    assert.deepEqual(queue, [{ kind: 'PersistentVolumeClaim', key: `${ns}/early` }]);
    queue.length = 0;
    await deleteClaim('early'); // deleted before the claim sync ran
    await observe('PersistentVolumeClaim', 'early');
    await reconcile('PersistentVolumeClaim', `${ns}/early`, 'DELETED'); // deleteClaim
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: pvName }], 'the volume naming the deleted claim is requeued');
    await drain();
    const volume = await core.readPersistentVolume({ name: pvName });
    assert.equal(volume.status?.phase, 'Released', 'left Released for its external deleter');
  });

  it('claim deleted during its bind (PV Bound, claim PUT 404): no retry loop; the deletion releases the volume', async () => {
    const { pvName } = await provisioned('late');
    await reconcile('PersistentVolume', pvName, 'MODIFIED', requeueOnly());
    queue.length = 0;
    // The claim is deleted in the API while the cache still has it: the bind writes the PV (spec, then
    // status Bound) and its claim PUT finds the claim gone.
    await deleteClaim('late');
    const outcome = await reconcile('PersistentVolumeClaim', `${ns}/late`, 'REQUEUE');
    assert.equal((await core.readPersistentVolume({ name: pvName })).status?.phase, 'Bound', 'the PV side of the bind was written');
    assert.equal(outcome.writes, 2, 'the volume status, then the claim PUT that found it gone');
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: pvName }], 'the volume written before the refused claim write is requeued');
    // The forwarder delivers the deletion; the claim's last state has no volumeName.
    await observe('PersistentVolumeClaim', 'late');
    await reconcile('PersistentVolumeClaim', `${ns}/late`, 'DELETED');
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: pvName }, { kind: 'PersistentVolume', key: pvName }], 'and again by the deletion (byClaimRef)');
    await drain();
    assert.equal((await core.readPersistentVolume({ name: pvName })).status?.phase, 'Released');
  });

  it('claim deleted before its volume\'s reconcile: the inline bind stops at the claim PUT (404), requeues the claim; the deletion releases the volume', async () => {
    const { pvName } = await provisioned('inline');
    await deleteClaim('inline'); // the cache still has it
    const outcome = await reconcile('PersistentVolume', pvName);
    assert.equal(outcome.writes, 2, 'the volume status, then the claim PUT that found it gone');
    assert.equal(outcome.inlineBound, undefined);
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: pvName }, { kind: 'PersistentVolumeClaim', key: `${ns}/inline` }], 'the volume (its status was written) and the claim are requeued: their own syncs decide');
    assert.equal((await core.readPersistentVolume({ name: pvName })).status?.phase, 'Bound', 'the PV side of the bind was written');
    queue.length = 0;
    await observe('PersistentVolumeClaim', 'inline');
    await reconcile('PersistentVolumeClaim', `${ns}/inline`, 'DELETED');
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: pvName }]);
    await drain();
    assert.equal((await core.readPersistentVolume({ name: pvName })).status?.phase, 'Released');
  });

  it('the deletion requeues only volumes naming this claim uid, not one of a re-created claim of the same name', async () => {
    const first = await provisioned('again');
    await deleteClaim('again');
    await observe('PersistentVolumeClaim', 'again');
    await reconcile('PersistentVolumeClaim', `${ns}/again`, 'DELETED');
    assert.deepEqual(queue, [{ kind: 'PersistentVolume', key: first.pvName }]);
    await drain();
    assert.equal((await core.readPersistentVolume({ name: first.pvName })).status?.phase, 'Released');
    queue.length = 0;
    const second = await provisioned('again');
    await reconcile('PersistentVolume', second.pvName);
    queue.length = 0;
    await deleteClaim('again');
    await observe('PersistentVolumeClaim', 'again');
    await reconcile('PersistentVolumeClaim', `${ns}/again`, 'DELETED');
    // The volume's reconcile bound the second claim inline, so its deletion syncs that volume itself.
    assert.deepEqual(queue, [], 'the first claim\'s Released volume is not requeued again');
    assert.equal((await core.readPersistentVolume({ name: second.pvName })).status?.phase, 'Released');
  });
});
