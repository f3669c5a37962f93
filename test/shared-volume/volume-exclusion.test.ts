/**
 * Per-volume exclusion between the scheduled poll and the event path, through the stand-ins (API emulator,
 * dynalite, storage control plane): a volume is held (its mount-endpoint PUT kept waiting until the test has seen
 * what it asserts) by one invocation while another reaches it.
 *
 * - the poll finds the volume held by the event path: it skips it (`busy`), nothing is written twice;
 * - the event path finds it held by the poll: it requeues shortly (`{ requeueAfterMs }`, not a failure), and the
 *   requeued reconcile converges it — nothing lost;
 * - two events of different objects (claim, attachment: different FIFO groups) for one volume: one reconciles,
 *   the other requeues.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import type { ReconcileRequest } from '../../lib/runtime/reconcile.ts';
import { SharedVolumeCache } from '../../lib/shared-volume/cache.ts';
import { DEFAULT_CONFIG, type SharedVolumeConfig } from '../../lib/shared-volume/config.ts';
import { createSharedVolumeController } from '../../lib/shared-volume/controller.ts';
import { SharedVolumeReconciler, type SharedVolumeApi } from '../../lib/shared-volume/reconciler.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import { claimRequest, NS, runtimeContext, startStandIns, type StandIns } from './support.ts';
import { coreV1 } from '../../lib/kube/core-v1.ts';

const config: SharedVolumeConfig = { ...DEFAULT_CONFIG, pollIntervalMs: 200, createPollIntervalMs: 20 };
const MOUNT_PUT = ['PUT', '/v2/namespaces/{namespaceID}/volumes/{id}/nfs/mount-endpoint'] as const;

describe('one invocation per volume: the poll and the event path exclude each other', () => {
  let s: StandIns;
  let cluster = 0;

  before(async () => {
    s = await startStandIns();
  });
  /** The holds of the running test, released after it whatever happened (so no invocation is left waiting). */
  const holds: Array<() => void> = [];
  afterEach(() => {
    for (const release of holds.splice(0)) release();
  });
  after(async () => {
    await s?.stop();
  });

  /**
   * The storage client of the invocation that holds the volume: its first mount-endpoint write waits until
   * `release()` (the volume's lease is taken by then). `entered` resolves when that write is waiting.
   */
  const holding = () => {
    let entered!: () => void;
    const hasEntered = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    holds.push(release);
    let first = true;
    const storage: SharedVolumeApi = {
      listSharedVolumes: (options) => s.storage.listSharedVolumes(options),
      getSharedVolume: (ref, options) => s.storage.getSharedVolume(ref, options),
      setExternalEndpoint: async (request, options) => {
        if (first) {
          first = false;
          entered();
          await released;
        }
        return s.storage.setExternalEndpoint(request, options);
      },
      reset: () => s.storage.reset(),
    };
    return { storage, entered: hasEntered, release };
  };
  /** The scheduled poll's reconciler as the poller builds it, for one cluster id. */
  const pollReconciler = async (clusterId: string, storage: SharedVolumeApi = s.storage) =>
    new SharedVolumeReconciler({
      storage,
      core: await coreV1(s.kubeClients, clusterId),
      recorder: new MemoryEventRecorder(),
      cache: new SharedVolumeCache({ doc: s.db.doc, table: s.db.tables.control, cluster: clusterId }),
      config,
      objects: new ObjectCache(s.db.doc, s.db.tables.cache, { indexer: indexAttributes }),
      leases: new LeaseStore({ doc: s.db.doc, table: s.db.tables.control }),
      cluster: clusterId,
    });
  const controller = (storage: SharedVolumeApi = s.storage) => createSharedVolumeController({ storage, config });
  const puts = () => s.storageApi.requests.get(...MOUNT_PUT);
  const mountEndpoint = async (id: string) => (await s.storage.getVolume({ namespace: NS, id })).labels['storageos.com/nfs/mount-endpoint'];
  const published = async (v: { id: string; pv: string }) => {
    const svc = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.equal(await mountEndpoint(v.id), `${svc.spec!.clusterIP}:2049`);
  };

  it('the poll skips (busy) a volume the event path is reconciling; nothing is written twice', async () => {
    const clusterId = `c${++cluster}`;
    const v = await s.sharedVolume();
    const hold = holding();
    const before = puts();
    const creates = s.kube.requests.count('create', 'services');
    const request = claimRequest(clusterId, v.claim);
    const event = controller(hold.storage).reconcile(request, runtimeContext(s, request, { timeoutMs: 30_000 }));
    await hold.entered;
    const pass = await (await pollReconciler(clusterId)).pollOnce();
    assert.equal(pass.outcomes?.get(v.id), 'busy');
    hold.release();
    assert.equal(await event, undefined, 'the event path succeeded');
    assert.equal(puts() - before, 1, 'one publish only');
    assert.equal(s.kube.requests.count('create', 'services') - creates, 1, 'one Service create only');
    await published(v);
    const next = await (await pollReconciler(clusterId)).pollOnce();
    assert.equal(next.outcomes?.get(v.id), 'cached', 'the event path cached it; the next pass has nothing to do');
  });

  it('the event path requeues shortly a volume the poll is reconciling, and the requeue converges it', async () => {
    const clusterId = `c${++cluster}`;
    const v = await s.sharedVolume();
    const hold = holding();
    const before = puts();
    const pass = (await pollReconciler(clusterId, hold.storage)).pollOnce({ only: (x) => x.id === v.id });
    await hold.entered;
    const request = claimRequest(clusterId, v.claim);
    // The poll cannot finish before release(): returning at all is returning without waiting for it.
    const result = await controller().reconcile(request, runtimeContext(s, request, { timeoutMs: 30_000 }));
    assert.deepEqual(result, { requeueAfterMs: 1000 }, 'requeued shortly, not failed');
    hold.release();
    assert.equal((await pass).outcomes?.get(v.id), 'published');
    assert.equal(puts() - before, 1, 'one publish only');
    const requeued = await controller().reconcile(request, runtimeContext(s, request, { timeoutMs: 30_000 }));
    assert.equal(requeued, undefined, 'the requeued event reconciles the volume');
    await published(v);
  });

  it('two events of different objects (claim, attachment) for one volume: one reconciles, the other requeues', async () => {
    const clusterId = `c${++cluster}`;
    const v = await s.sharedVolume();
    const hold = holding();
    const before = puts();
    const claimEvent = claimRequest(clusterId, v.claim);
    const attachment: ReconcileRequest = {
      cluster: clusterId,
      kind: 'VolumeAttachment',
      key: `csi-${v.pv}`,
      event: {
        ...claimEvent.event,
        kind: 'VolumeAttachment',
        type: 'ADDED',
        key: `csi-${v.pv}`,
        object: { metadata: { name: `csi-${v.pv}` }, spec: { source: { persistentVolumeName: v.pv } } },
      },
    };
    const first = controller(hold.storage).reconcile(claimEvent, runtimeContext(s, claimEvent, { timeoutMs: 30_000 }));
    await hold.entered;
    const second = await controller().reconcile(attachment, runtimeContext(s, attachment, { timeoutMs: 30_000 }));
    assert.deepEqual(second, { requeueAfterMs: 1000 });
    hold.release();
    assert.equal(await first, undefined);
    assert.equal(puts() - before, 1, 'one publish only');
    await published(v);
  });
});
