/**
 * A pass stops before the deadline, through the stand-ins (API emulator, dynalite, storage control plane) with
 * their latency faults: scheduled invocations run as Lambda runs them (a context whose remaining time is the
 * timeout, failing with FunctionTimeoutError when it passes), the event path with the context the runtime gives.
 *
 * - a storage list slower than the time left: the list is aborted at the stop, the invocation ends in time;
 * - volumes whose steps are slow: the pass does what fits, defers the rest (no publish starts after the stop),
 *   and the next invocation finishes them (nothing lost);
 * - a Kubernetes create slower than the time left: aborted at the stop, converged by the next invocation;
 * - the event path under a slow API: it requeues shortly before the runtime's margin instead of overrunning it.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { invokeWithTimeout } from '../../infra/local/stack/event-source.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { DEFAULT_CONFIG, type SharedVolumeConfig } from '../../lib/shared-volume/config.ts';
import { createScheduledPoller, createSharedVolumeController, type ScheduledPollSummary } from '../../lib/shared-volume/controller.ts';
import type { SharedVolumeApi } from '../../lib/shared-volume/reconciler.ts';
import { claimRequest, NS, recordingStorage, runtimeContext, startStandIns, type StandIns } from './support.ts';

const TIMEOUT_MS = 3000;
const config: SharedVolumeConfig = { ...DEFAULT_CONFIG, pollIntervalMs: 200, createPollIntervalMs: 20, scheduleIntervalMs: 60_000, scheduleMarginMs: 500 };
const STOP_MS = TIMEOUT_MS - config.scheduleMarginMs;

describe('a pass stops before the deadline', () => {
  let s: StandIns;
  let cluster = 0;

  before(async () => {
    s = await startStandIns();
  });
  afterEach(() => {
    s.storageApi.faults.clear();
    s.kube.faults.clear();
  });
  after(async () => {
    await s?.stop();
  });

  /** One scheduled invocation of a fresh container on its own cluster id (so every volume is uncached). */
  const invoke = (storage: SharedVolumeApi, clusterId: string) => {
    const poll = createScheduledPoller({
      storage,
      config,
      env: { CLUSTER_ID: clusterId },
      doc: s.db.doc,
      tables: s.db.tables,
      kube: s.kubeClients,
      recorderFor: () => new MemoryEventRecorder(),
    });
    return invokeWithTimeout(poll, { action: 'poll' }, { functionName: 'sharedVolume', region: 'us-east-1', timeoutMs: TIMEOUT_MS }) as Promise<ScheduledPollSummary>;
  };
  /**
   * The invocations after a cut-short one, until one defers nothing (at most 3): normally the first does it all,
   * but on a loaded machine the work may not fit in one stop, and a volume deferred again is not a lost one. What
   * must hold is that the deferred volumes are taken up (the callers check each one converged).
   */
  const converge = async (storage: SharedVolumeApi, clusterId: string): Promise<ScheduledPollSummary> => {
    for (let i = 1; ; i++) {
      const summary = await invoke(storage, clusterId);
      if (summary.deferred === 0 || i === 3) return summary;
    }
  };
  const mountEndpoint = async (id: string) => (await s.storage.getVolume({ namespace: NS, id })).labels['storageos.com/nfs/mount-endpoint'];

  it('a storage list slower than the time left is aborted at the stop; the invocation ends before its timeout', async () => {
    await s.sharedVolume();
    s.storageApi.faults.add({ method: 'GET', path: '/v2/namespaces/*/volumes', latencyMs: 8000, times: Infinity });
    const started = Date.now();
    // invokeWithTimeout rejects with FunctionTimeoutError at the timeout: resolving is ending before it.
    const summary = await invoke(s.storage, `slow-list-${++cluster}`);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= STOP_MS - 50, `polled until the stop (${elapsed} ms)`);
    assert.equal(summary.listFailures, 0, 'a list cut short by the deadline is not a failure (no apiReset)');
    assert.ok(summary.deferred >= 1);
  });

  it('slow volume steps: the pass does what fits, starts nothing after the stop, and the next invocation finishes', async () => {
    const volumes = await Promise.all(Array.from({ length: 6 }, () => s.sharedVolume()));
    // Every publish reads the volume first (ensureExternalEndpoint): 700 ms each.
    s.storageApi.faults.add({ method: 'GET', path: '/v2/namespaces/*/volumes/*', latencyMs: 700, times: Infinity });
    const storage = recordingStorage(s.storage);
    const publishes: number[] = [];
    const timed: SharedVolumeApi = {
      ...storage,
      getSharedVolume: (ref, options) => {
        publishes.push(Date.now());
        return storage.getSharedVolume(ref, options);
      },
    };
    const id = `slow-steps-${++cluster}`;
    const started = Date.now();
    const summary = await invoke(timed, id); // resolves only before its timeout (else FunctionTimeoutError)
    assert.ok(summary.deferred >= 1, `volumes deferred: ${summary.deferred}`);
    for (const at of publishes) assert.ok(at - started <= STOP_MS, `no publish started after the stop (${at - started} ms)`);
    const published = (await Promise.all(volumes.map((v) => mountEndpoint(v.id)))).filter((e) => e !== undefined).length;
    assert.ok(published < volumes.length, `only what fitted was published (${published})`);

    s.storageApi.faults.clear();
    const next = await converge(s.storage, id);
    assert.equal(next.deferred, 0);
    for (const v of volumes) {
      const svc = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
      assert.equal(await mountEndpoint(v.id), `${svc.spec!.clusterIP}:2049`, `${v.pv} published by the next invocation`);
    }
  });

  it('a Kubernetes create slower than the time left is aborted at the stop; the next invocation converges', async () => {
    const v = await s.sharedVolume();
    s.kube.faults.inject({ verb: 'create', resource: 'services', count: 1, latencyMs: 6000 });
    const id = `slow-kube-${++cluster}`;
    const summary = await invoke(s.storage, id); // resolves only before its timeout (else FunctionTimeoutError)
    assert.ok(summary.deferred >= 1);
    assert.equal(await mountEndpoint(v.id), undefined, 'nothing published by the aborted step');
    // Whether the aborted create landed or not, the next invocation converges.
    await converge(s.storage, id);
    const svc = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.equal(await mountEndpoint(v.id), `${svc.spec!.clusterIP}:2049`);
    const ep = await s.core.readNamespacedEndpoints({ name: v.pv, namespace: NS });
    assert.equal(ep.subsets?.[0]?.ports?.[0]?.port, Number(v.endpoint.split(':')[1]));
  });

  it('the event path under a slow API requeues shortly, before the runtime margin, instead of overrunning it', async () => {
    const v = await s.sharedVolume();
    s.storageApi.faults.add({ method: 'PUT', path: '/v2/namespaces/*/volumes/*/nfs/mount-endpoint', latencyMs: 8000, times: 1 });
    const controller = createSharedVolumeController({ storage: s.storage, config, timeMarginMs: 500 });
    const request = claimRequest(`event-${++cluster}`, v.claim);
    const started = Date.now();
    const result = await controller.reconcile(request, runtimeContext(s, request, { timeoutMs: TIMEOUT_MS }));
    const elapsed = Date.now() - started;
    // The step is aborted at the margin (TIMEOUT_MS - 500); what follows (unwinding, the lease release) only has
    // to end before the timeout.
    assert.ok(elapsed < TIMEOUT_MS, `returned in ${elapsed} ms, before the timeout`);
    assert.ok(elapsed >= TIMEOUT_MS - 550, `waited until the margin (${elapsed} ms)`);
    assert.deepEqual(result, { requeueAfterMs: 1000 }, 'requeued shortly, not failed');
    const again = await controller.reconcile(request, runtimeContext(s, request, { timeoutMs: 30_000 }));
    assert.equal(again, undefined);
    const svc = await s.core.readNamespacedService({ name: v.pv, namespace: NS });
    assert.equal(await mountEndpoint(v.id), `${svc.spec!.clusterIP}:2049`);
  });
});
