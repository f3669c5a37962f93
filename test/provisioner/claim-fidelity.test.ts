/**
 * Issue #17, the provisioner's claim path, against the real stand-ins: the Kubernetes API emulator over
 * HTTP, dynalite (cache, per-claim records, leases, event correlation) and the embedded storage control
 * plane. The test plays the forwarder (it writes what the API returns into the cache) and, where a claim
 * gets bound elsewhere, the binder; the controller is driven through its `reconcile` as the runtime
 * calls it. Fakes only where the stand-ins cannot produce the situation: a Provisioner answering
 * InBackground or hanging in the backend call, and the Lambda's remaining time.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { KubeEventRecorder, MemoryEventRecorder, type EventRecorder } from '../../lib/kube/recorder.ts';
import type { RuntimeContext } from '../../lib/runtime/handler.ts';
import { createMetrics } from '../../lib/runtime/observability.ts';
import type { ReconcileResult } from '../../lib/runtime/reconcile.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import { BatchGetReader } from '../../lib/state/batch-get.ts';
import { createProvisionerController } from '../../lib/provisioner/controller.ts';
import { toJson } from '../support/json.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../lib/kube/objects.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { LocalProvisioner } from '../../lib/provisioner/provisioners/local.ts';
import { STORAGEOS_DRIVER, StorageOSProvisioner } from '../../lib/provisioner/provisioners/storageos.ts';
import { ClaimRecords } from '../../lib/provisioner/records.ts';
import type { MetricObservation, ProvisionContext, ProvisionOptions, ProvisionResult, Provisioner } from '../../lib/provisioner/types.ts';
import { CLUSTER, startProvisionerStack, type ProvisionerStack } from './stack.ts';

const LOCAL = 'claimflow.io/local';
const SELECTOR_REFUSED = 'claim Selector is not supported';

/** A real Provisioner, counting calls; it can be told to answer a fixed result or to hang in the call. */
class Wrapped implements Provisioner {
  inner: Provisioner;
  provisions = 0;
  override?: ProvisionResult;
  hang = false;
  onCall?: () => void;
  constructor(inner: Provisioner) { this.inner = inner; }
  async provision(ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult> {
    this.provisions++;
    this.onCall?.();
    if (this.hang) return new Promise<ProvisionResult>(() => {});
    return this.override ?? this.inner.provision(ctx, options);
  }
  delete(ctx: ProvisionContext, pv: PersistentVolume): Promise<void> { return this.inner.delete(ctx, pv); }
}

describe('provisioner claim path fidelity against the emulator, dynalite and the storage control plane', () => {
  let stack: ProvisionerStack;
  let observed: MetricObservation[];
  let records: ClaimRecords;
  const logger = new Logger({ serviceName: 'claimflow-test', logLevel: 'SILENT' });
  const metrics = createMetrics('provisioner');

  before(async () => {
    stack = await startProvisionerStack();
    records = new ClaimRecords(stack.db.doc, stack.db.tables.control);
    await stack.createClass('local', LOCAL, { volumeBindingMode: 'Immediate', reclaimPolicy: 'Delete' });
    await stack.createClass('local-retain', LOCAL, { volumeBindingMode: 'Immediate', reclaimPolicy: 'Retain' });
    await stack.createClass('storageos', STORAGEOS_DRIVER, { volumeBindingMode: 'Immediate', reclaimPolicy: 'Delete' });
  });
  after(async () => stack.stop());
  beforeEach(() => {
    stack.recorder = new MemoryEventRecorder();
    observed = [];
  });

  function controllerFor(provisioner: Provisioner, env: Record<string, string> = {}) {
    const options = provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local', PROVISIONER_CREATE_PV_INTERVAL_MS: '10', ...env });
    return createProvisionerController({ options, provisioner, onMetric: (m) => observed.push(m), timeMarginMs: 5_000 });
  }
  const local = () => new Wrapped(new LocalProvisioner(stack.storage));

  /** One reconcile as the runtime makes it inside a Lambda with `remainingMs` left. */
  async function reconcileWithin(controller: ReturnType<typeof controllerFor>, key: string, remainingMs: number, uid = '', recorder: EventRecorder = stack.recorder): Promise<ReconcileResult> {
    const event = { v: 1 as const, cluster: CLUSTER, kind: 'PersistentVolumeClaim' as const, type: 'MODIFIED' as const, key, uid, resourceVersion: '0', observedAt: new Date().toISOString() };
    const request = { cluster: CLUSTER, kind: 'PersistentVolumeClaim' as const, key, event };
    const started = Date.now();
    const lambdaContext = { getRemainingTimeInMillis: () => remainingMs - (Date.now() - started) } as unknown as Context;
    const ctx: RuntimeContext = {
      request, logger, metrics, doc: stack.db.doc, tables: stack.db.tables, kube: stack.clients, recorder,
      leases: new LeaseStore({ doc: stack.db.doc, table: stack.db.tables.control }), reader: new BatchGetReader(stack.db.doc), lambdaContext,
    };
    return controller.reconcile(request, ctx);
  }

  const events = () => stack.recorder.events.map((e) => `${e.type} ${e.reason} ${e.message}`);
  const backendVolumes = async (pvName: string) => (await stack.storage.listVolumes('default').catch(() => [])).filter((v) => v.name === pvName);
  const pvOf = (name: string) => stack.core.readPersistentVolume({ name }).then((pv) => toJson<PersistentVolume>(pv), (e: { code?: number }) => {
    if (e.code === 404) return undefined;
    throw e;
  });

  async function createClaim(name: string, cls: string, provisioner: string, spec: Record<string, unknown> = {}): Promise<PersistentVolumeClaim> {
    await stack.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: {
      metadata: { name, annotations: { 'volume.kubernetes.io/storage-provisioner': provisioner } },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: cls, ...spec },
    } });
    return (await stack.observe('PersistentVolumeClaim', `default/${name}`)) as PersistentVolumeClaim;
  }

  /** Deletes the claim in the API and leaves its tombstone (carrying `lastState`) in the cache, as the forwarder does. */
  async function deleteClaim(claim: PersistentVolumeClaim, lastState: PersistentVolumeClaim = claim): Promise<void> {
    await stack.core.deleteNamespacedPersistentVolumeClaim({ name: claim.metadata.name!, namespace: 'default' });
    await stack.cache.remove(CLUSTER, 'PersistentVolumeClaim', lastState, Number(lastState.metadata.resourceVersion) + 1000);
  }

  describe('a claim with spec.selector on a dynamic class (csi-provisioner: "claim Selector is not supported")', () => {
    const rows: Array<{ name: string; cls: string; provisionerName: string; make: () => Wrapped; env: Record<string, string>; selector: object }> = [
      { name: 'local', cls: 'local', provisionerName: LOCAL, make: () => local(), env: {}, selector: { matchLabels: { tier: 'gold' } } },
      { name: 'storageos', cls: 'storageos', provisionerName: STORAGEOS_DRIVER, make: () => new Wrapped(new StorageOSProvisioner(stack.storage)), env: { PROVISIONER_BACKEND: 'storageos' }, selector: {} },
    ];
    for (const row of rows) {
      it(`${row.name}: ProvisioningFailed, no volume, no PV, no in-progress record; retried with backoff`, async () => {
        const provisioner = row.make();
        const controller = controllerFor(provisioner, row.env);
        const claim = await createClaim(`selector-${row.name}`, row.cls, row.provisionerName, { selector: row.selector });
        const key = `default/selector-${row.name}`;
        const pvName = `pvc-${claim.metadata.uid}`;
        await assert.rejects(stack.reconcile(controller, 'PersistentVolumeClaim', key), (e: Error) => e.message === SELECTOR_REFUSED, 'an error: the runtime retries it');
        assert.deepEqual(events(), [
          `Normal Provisioning External provisioner is provisioning volume for claim "${key}"`,
          `Warning ProvisioningFailed ${SELECTOR_REFUSED}`,
        ]);
        assert.deepEqual(observed.map((m) => `${m.op}:${m.outcome}:${m.class}`), [`provision:failed:${row.cls}`]);
        assert.equal(await pvOf(pvName), undefined, 'no PV');
        assert.equal((await backendVolumes(pvName)).length, 0, 'no backend volume');
        assert.deepEqual(await records.get(CLUSTER, claim.metadata.uid!), {}, 'Finished: nothing in progress, no slow retry');
        // The retry refuses again, the same way.
        await assert.rejects(stack.reconcile(controller, 'PersistentVolumeClaim', key), /claim Selector is not supported/);
        assert.equal(provisioner.provisions, 2);
        assert.equal((await backendVolumes(pvName)).length, 0);
      });
    }
  });

  describe('the in-progress record is dropped whenever a sync ends without error', () => {
    it('InBackground, then bound elsewhere, then deleted (Retain class): nothing provisioned, no PV, no record left', async () => {
      const provisioner = local();
      const controller = controllerFor(provisioner);
      const claim = await createClaim('bg-bound', 'local-retain', LOCAL);
      const uid = claim.metadata.uid!;
      provisioner.override = { state: 'InBackground', error: new Error('still creating') };
      await assert.rejects(stack.reconcile(controller, 'PersistentVolumeClaim', 'default/bg-bound'), /still creating/);
      assert.equal((await records.get(CLUSTER, uid)).inProgress?.metadata.name, 'bg-bound');
      provisioner.override = undefined;

      // Bound elsewhere: a static PV took it (the binder's write).
      const current = await stack.core.readNamespacedPersistentVolumeClaim({ name: 'bg-bound', namespace: 'default' });
      current.spec!.volumeName = 'static-pv';
      await stack.core.replaceNamespacedPersistentVolumeClaim({ name: 'bg-bound', namespace: 'default', body: current });
      const bound = (await stack.observe('PersistentVolumeClaim', 'default/bg-bound')) as PersistentVolumeClaim;
      assert.equal(bound.spec.volumeName, 'static-pv');
      assert.equal(await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/bg-bound'), undefined);
      assert.equal((await records.get(CLUSTER, uid)).inProgress, undefined, 'dropped when the claim is bound');

      await deleteClaim(bound);
      assert.equal(await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/bg-bound', uid), undefined);
      assert.equal(provisioner.provisions, 1, 'only the background attempt');
      assert.equal(await pvOf(`pvc-${uid}`), undefined, 'no PV');
      assert.equal((await backendVolumes(`pvc-${uid}`)).length, 0, 'no backend volume');
      assert.deepEqual(await records.get(CLUSTER, uid), {}, 'no record left behind');
    });

    it('bound and deleted before the provisioner saw the update: the tombstone\'s last state drops the record too', async () => {
      const provisioner = local();
      const controller = controllerFor(provisioner);
      const claim = await createClaim('bg-race', 'local-retain', LOCAL);
      const uid = claim.metadata.uid!;
      provisioner.override = { state: 'InBackground', error: new Error('still creating') };
      await assert.rejects(stack.reconcile(controller, 'PersistentVolumeClaim', 'default/bg-race'), /still creating/);
      provisioner.override = undefined;
      const current = await stack.core.readNamespacedPersistentVolumeClaim({ name: 'bg-race', namespace: 'default' });
      current.spec!.volumeName = 'static-pv';
      const bound = toJson<PersistentVolumeClaim>(await stack.core.replaceNamespacedPersistentVolumeClaim({ name: 'bg-race', namespace: 'default', body: current }));
      // The update and the deletion reach the provisioner together: only the tombstone shows the binding.
      await deleteClaim(claim, bound);
      assert.equal(await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/bg-race', uid), undefined);
      assert.equal(provisioner.provisions, 1);
      assert.equal(await pvOf(`pvc-${uid}`), undefined);
      assert.equal((await backendVolumes(`pvc-${uid}`)).length, 0);
      assert.deepEqual(await records.get(CLUSTER, uid), {});
    });

    it('a claim deleted while in the background, never bound, is still provisioned from its record (unchanged)', async () => {
      const provisioner = local();
      const controller = controllerFor(provisioner);
      const claim = await createClaim('bg-deleted', 'local', LOCAL);
      const uid = claim.metadata.uid!;
      provisioner.override = { state: 'InBackground', error: new Error('still creating') };
      await assert.rejects(stack.reconcile(controller, 'PersistentVolumeClaim', 'default/bg-deleted'), /still creating/);
      provisioner.override = undefined;
      await deleteClaim(claim);
      await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/bg-deleted', uid);
      assert.equal((await pvOf(`pvc-${uid}`))?.spec.claimRef?.uid, uid);
      assert.deepEqual(await records.get(CLUSTER, uid), {});
    });
  });

  it('Provisioning is in the API before the backend call returns (a function dying in the call has recorded it)', async () => {
    const recorder = new KubeEventRecorder({ api: stack.json, component: 'claimflow.io/local', cluster: CLUSTER, doc: stack.db.doc, table: stack.db.tables.control });
    const provisioner = local();
    provisioner.hang = true;
    const inCall = new Promise<void>((resolve) => { provisioner.onCall = resolve; });
    const controller = controllerFor(provisioner);
    await createClaim('dies-in-call', 'local', LOCAL);
    // The reconcile never returns: the backend call hangs until the function is killed.
    void reconcileWithin(controller, 'default/dies-in-call', 60_000, '', recorder);
    await inCall;
    const recorded = (await stack.core.listNamespacedEvent({ namespace: 'default' })).items
      .filter((e) => e.involvedObject.name === 'dies-in-call')
      .map((e) => `${e.type} ${e.reason} ${e.message}`);
    assert.deepEqual(recorded, ['Normal Provisioning External provisioner is provisioning volume for claim "default/dies-in-call"']);
  });

  describe('PV save retries bounded by the remaining Lambda time (backoff store)', () => {
    // 3 s between save attempts; 12 s left with a 5 s margin: two margins leave 2 s, too little for a wait.
    const env = { PROVISIONER_CREATE_PV_INTERVAL_MS: '3000' };
    const failPvCreates = () => stack.kube.faults.inject({ verb: 'create', resource: 'persistentvolumes', count: 5, status: 500, message: 'etcd is sad' });

    async function provisionOutOfTime(name: string): Promise<{ claim: PersistentVolumeClaim; pvName: string; provisioner: Wrapped; controller: ReturnType<typeof controllerFor> }> {
      const provisioner = local();
      const controller = controllerFor(provisioner, env);
      const claim = await createClaim(name, 'local', LOCAL);
      const pvName = `pvc-${claim.metadata.uid}`;
      failPvCreates();
      const started = Date.now();
      let result: ReconcileResult;
      try {
        result = await reconcileWithin(controller, `default/${name}`, 12_000);
      } finally {
        stack.kube.faults.clear();
      }
      assert.ok(Date.now() - started < 2_500, `no wait past the time left (${Date.now() - started} ms)`);
      assert.deepEqual(result, { requeueAfterMs: 15_000 }, 'the claim comes back for its PV');
      assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).pendingVolume?.metadata.name, pvName, 'the unsaved PV is in the claim record');
      assert.equal((await backendVolumes(pvName)).length, 1, 'the backend volume is kept');
      assert.equal(await pvOf(pvName), undefined, 'no PV yet');
      assert.deepEqual(events(), [`Normal Provisioning External provisioner is provisioning volume for claim "default/${name}"`], 'no "Deleting the volume"');
      assert.deepEqual(observed.map((m) => `${m.op}:${m.outcome}`), ['provision:success'], 'handed over counts as provisioned, as the queue store');
      return { claim, pvName, provisioner, controller };
    }

    it('out of time: the PV goes to the claim record instead of a wait; the next reconcile saves it first', async () => {
      const { claim, pvName, provisioner, controller } = await provisionOutOfTime('short-time');
      assert.equal(await reconcileWithin(controller, 'default/short-time', 120_000), undefined);
      const pv = await pvOf(pvName);
      assert.equal(pv?.spec.claimRef?.uid, claim.metadata.uid);
      assert.deepEqual(await records.get(CLUSTER, claim.metadata.uid!), {}, 'the record is cleared');
      assert.equal(events().at(-1), `Normal ProvisioningSucceeded Successfully provisioned volume ${pvName}`);
      assert.equal(provisioner.provisions, 1, 'Provision ran once');
      assert.equal((await backendVolumes(pvName)).length, 1);
    });

    it('the claim deleted before the next reconcile: the PV is saved anyway, so the volume is released and deleted, not leaked', async () => {
      const { claim, pvName, controller } = await provisionOutOfTime('short-time-deleted');
      await deleteClaim(claim);
      assert.equal(await reconcileWithin(controller, 'default/short-time-deleted', 120_000, claim.metadata.uid), undefined);
      const pv = await pvOf(pvName);
      assert.equal(pv?.spec.claimRef?.uid, claim.metadata.uid, 'the PV names the deleted claim');
      assert.deepEqual(await records.get(CLUSTER, claim.metadata.uid!), {});
      assert.ok(!events().some((e) => e.includes('ProvisioningSucceeded')), 'no success event on a claim that is gone');
      // The binder's part: a PV whose claim is gone is Released; the provisioner reclaims it (Delete).
      const saved = await stack.core.readPersistentVolume({ name: pvName });
      saved.status = { phase: 'Released' };
      await stack.core.replacePersistentVolumeStatus({ name: pvName, body: saved });
      await stack.observe('PersistentVolume', pvName);
      await stack.reconcile(controller, 'PersistentVolume', pvName);
      assert.equal((await backendVolumes(pvName)).length, 0, 'the backend volume is reclaimed');
    });
  });
});
