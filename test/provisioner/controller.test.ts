/**
 * The provisioner shell against the real stand-ins: the Kubernetes API emulator over HTTP, dynalite
 * (object cache, per-claim records, leases), and the embedded storage control plane. The test plays the
 * forwarder (it writes what the API returns into the cache) and the binder (it marks PVs Released);
 * the controller is driven through its `reconcile` with a runtime context like the handler builds.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { CoreV1Api } from '@kubernetes/client-node';
import type { KubeApi } from '../../infra/local/kube-api/index.ts';
import type { StorageApiHandle } from '../../infra/local/storage-api/server.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import type { ObjectCache } from '../../lib/state/cache.ts';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseStore } from '../../lib/state/lease.ts';
import { leasePk } from '../../lib/state/schema.ts';
import type { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { BudgetTimeoutError } from '../../lib/state/bucket.ts';
import { CONTROLLER_NAME, DELETED_CLAIM_REARMS, DELETED_CLAIM_REMINDER_MS, reminderId, createProvisionerController, leaseBusyDelayMs, provisioningLeaseName, runtimeOptionsFor } from '../../lib/provisioner/controller.ts';
import { BackoffStore, backoffIdPk } from '../../lib/state/backoff.ts';
import { toJson } from '../support/json.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../lib/kube/objects.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { LocalProvisioner } from '../../lib/provisioner/provisioners/local.ts';
import { ClaimRecords, claimRecordPk } from '../../lib/provisioner/records.ts';
import type { MetricObservation, ProvisionContext, ProvisionOptions, ProvisionResult, Provisioner } from '../../lib/provisioner/types.ts';
import type { Dynalite } from '../support/dynalite.ts';
import { CLUSTER, startProvisionerStack, type ProvisionerStack } from './stack.ts';

const NAME = 'claimflow.io/local';

/** The local Provisioner, counting calls, optionally answering a fixed state instead. */
class CountingProvisioner implements Provisioner {
  inner: LocalProvisioner;
  provisions = 0;
  override?: ProvisionResult;
  constructor(inner: LocalProvisioner) { this.inner = inner; }
  async provision(ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult> {
    this.provisions++;
    return this.override ?? this.inner.provision(ctx, options);
  }
  delete(ctx: ProvisionContext, pv: PersistentVolume): Promise<void> { return this.inner.delete(ctx, pv); }
}

describe('provisioner controller against the emulator, dynalite and the storage control plane', () => {
  let stack: ProvisionerStack;
  let kube: KubeApi;
  let db: Dynalite;
  let storageApi: StorageApiHandle;
  let storage: StorageOSClient;
  let core: CoreV1Api;
  let cache: ObjectCache;
  let recorder: MemoryEventRecorder;
  let observed: MetricObservation[];
  let provisioner: CountingProvisioner;

  before(async () => {
    stack = await startProvisionerStack();
    ({ kube, db, storageApi, storage, core, cache } = stack);
    for (const [name, mode] of [['local', 'Immediate'], ['local-wait', 'WaitForFirstConsumer'], ['local-retain', 'Immediate']] as const) {
      await stack.createClass(name, NAME, { volumeBindingMode: mode, reclaimPolicy: name === 'local-retain' ? 'Retain' : 'Delete' });
    }
  });
  after(async () => stack.stop());
  beforeEach(() => {
    recorder = stack.recorder = new MemoryEventRecorder();
    observed = [];
    provisioner = new CountingProvisioner(new LocalProvisioner(storage));
  });

  const observe: ProvisionerStack['observe'] = (kind, key) => stack.observe(kind, key);

  function controllerWith(env: Record<string, string> = {}) {
    const options = provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local', ...(env.PROVISIONER_VOLUME_STORE === 'queue' ? {} : { PROVISIONER_CREATE_PV_INTERVAL_MS: '10' }), ...env });
    return createProvisionerController({ options, provisioner, onMetric: (m) => observed.push(m) });
  }

  const reconcile = (controller: ReturnType<typeof controllerWith>, kind: Parameters<ProvisionerStack['reconcile']>[1], key: string, uid = '', object?: object) =>
    stack.reconcile(controller, kind, key, uid, object);

  const createClaim = (name: string, cls: string, annotations: Record<string, string> = {}): Promise<PersistentVolumeClaim> =>
    stack.createClaim(name, cls, NAME, annotations);

  const backendVolumes = async (pvName: string) => (await storage.listVolumes('default').catch(() => [])).filter((v) => v.name === pvName);
  /** Releases a claim's provisioning lease whoever holds it: the lease lapsing, without the wait. */
  async function lapseLease(uid: string): Promise<void> {
    const leases = new LeaseStore({ doc: db.doc, table: db.tables.control });
    const name = provisioningLeaseName(CLUSTER, uid);
    const held = (await leases.get(name))!;
    assert.ok(await leases.release({ name, holder: held.holder!, token: held.token, expiresAt: held.expiresAt }), 'the lease was held');
  }
  const reasons = () => recorder.events.map((e) => `${e.type} ${e.reason}`);

  /** The binder's part: the claim is gone, the PV is Released. */
  async function release(pvName: string): Promise<void> {
    const pv = await core.readPersistentVolume({ name: pvName });
    pv.status = { phase: 'Released' };
    await core.replacePersistentVolumeStatus({ name: pvName, body: pv });
    await observe('PersistentVolume', pvName);
  }

  it('provisions a claim once: PV saved with claimRef and provisioned-by, one backend volume, events and metrics', async () => {
    const controller = controllerWith();
    const claim = await createClaim('data', 'local');
    const pvName = `pvc-${claim.metadata.uid}`;
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/data'), undefined);
    const pv = toJson<PersistentVolume>(await core.readPersistentVolume({ name: pvName }));
    assert.equal(pv.metadata.annotations!['pv.kubernetes.io/provisioned-by'], NAME);
    assert.deepEqual([pv.spec.claimRef!.name, pv.spec.claimRef!.uid], ['data', claim.metadata.uid]);
    assert.equal(pv.spec.storageClassName, 'local');
    assert.equal(pv.spec.persistentVolumeReclaimPolicy, 'Delete');
    assert.equal(pv.metadata.finalizers?.includes('external-provisioner.volume.kubernetes.io/finalizer') ?? false, false);
    assert.deepEqual(reasons(), ['Normal Provisioning', 'Normal ProvisioningSucceeded']);
    assert.deepEqual(observed.map((m) => `${m.op}:${m.outcome}:${m.class}`), ['provision:success:local']);
    // The created PV is left to the watch (the forwarder's part, not played here): uncached.
    assert.equal(await cache.get(CLUSTER, 'PersistentVolume', pvName), undefined);
    // Redelivery: the lease the save kept defers it before the Provisioner.
    const again = await reconcile(controller, 'PersistentVolumeClaim', 'default/data');
    assert.ok(again && 'requeueAfterMs' in again, 'deferred by the kept lease');
    assert.equal(provisioner.provisions, 1);
    // Once the lease is gone with the PV still uncached (a forwarder far behind), the sync adopts the backend
    // volume by name and meets its PV (AlreadyExists): success, still one backend volume and one PV.
    await lapseLease(claim.metadata.uid!);
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/data'), undefined);
    assert.equal(provisioner.provisions, 2, 'provisioned again: it could not know');
    assert.equal((await backendVolumes(pvName)).length, 1, 'the same backend volume, adopted');
    assert.equal((await core.readPersistentVolume({ name: pvName })).metadata!.uid, pv.metadata.uid, 'the same PV');
    assert.deepEqual(reasons().slice(-2), ['Normal Provisioning', 'Normal ProvisioningSucceeded']);
    // With the PV cached (the forwarder caught up), a redelivery stops before the Provisioner.
    await observe('PersistentVolume', pvName);
    await lapseLease(claim.metadata.uid!);
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/data'), undefined);
    assert.equal(provisioner.provisions, 2);
  });

  it('Delete policy: a Released PV loses its backend volume and its object; with AddFinalizer the finalizer goes too', async () => {
    const controller = controllerWith({ PROVISIONER_ADD_FINALIZER: 'true' });
    const claim = await createClaim('scratch', 'local');
    const pvName = `pvc-${claim.metadata.uid}`;
    await reconcile(controller, 'PersistentVolumeClaim', 'default/scratch');
    const saved = await core.readPersistentVolume({ name: pvName });
    assert.ok(saved.metadata!.finalizers!.includes('external-provisioner.volume.kubernetes.io/finalizer'));
    await release(pvName);
    await reconcile(controller, 'PersistentVolume', pvName);
    assert.equal((await backendVolumes(pvName)).length, 0);
    // Our finalizer is gone at once; kubernetes.io/pv-protection (the emulator's controller) may hold the
    // object a moment longer, as in a real cluster.
    const left = await core.readPersistentVolume({ name: pvName }).catch((e: any) => { assert.equal(e.code, 404); return undefined; });
    if (left) {
      assert.ok(left.metadata!.deletionTimestamp, 'the PV is being deleted');
      assert.ok(!left.metadata!.finalizers?.includes('external-provisioner.volume.kubernetes.io/finalizer'));
    }
    assert.deepEqual(observed.map((m) => `${m.op}:${m.outcome}`), ['provision:success', 'delete:success']);
  });

  it('Retain policy keeps both the PV and the backend volume', async () => {
    const controller = controllerWith();
    const claim = await createClaim('keep', 'local-retain');
    const pvName = `pvc-${claim.metadata.uid}`;
    await reconcile(controller, 'PersistentVolumeClaim', 'default/keep');
    await release(pvName);
    await reconcile(controller, 'PersistentVolume', pvName);
    assert.equal((await backendVolumes(pvName)).length, 1);
    assert.equal((await core.readPersistentVolume({ name: pvName })).spec!.persistentVolumeReclaimPolicy, 'Retain');
  });

  it('a held provisioning lease defers the claim without calling the Provisioner', async () => {
    const controller = controllerWith();
    const claim = await createClaim('busy', 'local');
    const leases = new LeaseStore({ doc: db.doc, table: db.tables.control });
    // Taken just now for the controller's own lease length: a running holder, polled every 5 s.
    const held = await leases.acquire(provisioningLeaseName(CLUSTER, claim.metadata.uid!), 'another-invocation', 5 * 60_000);
    const result = await reconcile(controller, 'PersistentVolumeClaim', 'default/busy');
    assert.deepEqual(result, { requeueAfterMs: 5_000 });
    assert.equal(provisioner.provisions, 0);
    await leases.release(held);
    await reconcile(controller, 'PersistentVolumeClaim', 'default/busy');
    assert.equal(provisioner.provisions, 1);
  });

  it('the lease of a provisioning that saved its PV is kept until it lapses; a failed one is released at once', async () => {
    const controller = controllerWith();
    const leases = new LeaseStore({ doc: db.doc, table: db.tables.control });
    const done = await createClaim('leased', 'local');
    await reconcile(controller, 'PersistentVolumeClaim', 'default/leased');
    assert.equal(provisioner.provisions, 1);
    assert.equal(await leases.tryAcquire(provisioningLeaseName(CLUSTER, done.metadata.uid!), 'another-invocation', 60_000), undefined, 'still held after the PV was saved');
    provisioner.override = { state: 'Finished', error: new Error('backend down') };
    const failing = await createClaim('unleased', 'local');
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/unleased'), /backend down/);
    provisioner.override = undefined;
    const again = await leases.tryAcquire(provisioningLeaseName(CLUSTER, failing.metadata.uid!), 'another-invocation', 60_000);
    assert.ok(again, 'released after the failed provisioning, for the retry');
    await leases.release(again);
  });

  it('claims that are not candidates (another provisioner) skip the lease entirely', async () => {
    const controller = controllerWith();
    await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: {
      metadata: { name: 'foreign', annotations: { 'volume.kubernetes.io/storage-provisioner': 'other.io/x' } },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'local' },
    } });
    const claim = await observe('PersistentVolumeClaim', 'default/foreign');
    const leases = new LeaseStore({ doc: db.doc, table: db.tables.control });
    const held = await leases.acquire(provisioningLeaseName(CLUSTER, claim.metadata.uid), 'another-invocation', 60_000);
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/foreign'), undefined, 'done, not deferred by the lease');
    assert.equal(provisioner.provisions, 0);
    await leases.release(held);
  });

  it('WaitForFirstConsumer: waits for a selected node; Reschedule removes an unusable one from the claim', async () => {
    const controller = controllerWith();
    await createClaim('wait', 'local-wait');
    await reconcile(controller, 'PersistentVolumeClaim', 'default/wait');
    assert.equal(provisioner.provisions, 0, 'no selected node yet');
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: 'wait', namespace: 'default' });
    claim.metadata!.annotations = { ...claim.metadata!.annotations, 'volume.kubernetes.io/selected-node': 'node-9' };
    await core.replaceNamespacedPersistentVolumeClaim({ name: 'wait', namespace: 'default', body: claim });
    await observe('PersistentVolumeClaim', 'default/wait');
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/wait'), undefined, 'a successful reschedule is not retried');
    const after = await core.readNamespacedPersistentVolumeClaim({ name: 'wait', namespace: 'default' });
    assert.equal(after.metadata!.annotations!['volume.kubernetes.io/selected-node'], undefined);
    assert.deepEqual(recorder.events.map((e) => e.message).at(-1), 'node "node-9" holds no local storage');
    // The scheduler picks a storage node: provisioned there.
    after.metadata!.annotations!['volume.kubernetes.io/selected-node'] = 'node-1';
    await core.replaceNamespacedPersistentVolumeClaim({ name: 'wait', namespace: 'default', body: after });
    await observe('PersistentVolumeClaim', 'default/wait');
    await reconcile(controller, 'PersistentVolumeClaim', 'default/wait');
    const pv = await core.readPersistentVolume({ name: `pvc-${after.metadata!.uid}` });
    assert.deepEqual(pv.spec!.nodeAffinity!.required!.nodeSelectorTerms[0].matchExpressions![0].values, ['node-1']);
  });

  it('a failing backend: ProvisioningFailed and a retry (thrown), then success once it recovers', async () => {
    const controller = controllerWith();
    await createClaim('flaky', 'local');
    storageApi.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', status: 503, times: Infinity });
    try {
      await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/flaky'));
    } finally {
      storageApi.faults.clear();
    }
    assert.deepEqual(reasons(), ['Normal Provisioning', 'Warning ProvisioningFailed']);
    await reconcile(controller, 'PersistentVolumeClaim', 'default/flaky');
    assert.deepEqual(reasons().slice(2), ['Normal Provisioning', 'Normal ProvisioningSucceeded']);
    assert.deepEqual(observed.map((m) => m.outcome), ['failed', 'success']);
  });

  it('InBackground is remembered by claim UID, so a claim deleted meanwhile is still provisioned', async () => {
    const controller = controllerWith();
    const claim = await createClaim('bg', 'local');
    provisioner.override = { state: 'InBackground', error: new Error('still creating') };
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/bg'), /still creating/);
    const records = new ClaimRecords(db.doc, db.tables.control);
    assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress?.metadata.name, 'bg');
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'bg', namespace: 'default' });
    await cache.remove(CLUSTER, 'PersistentVolumeClaim', claim, Number(claim.metadata.resourceVersion) + 1000);
    provisioner.override = undefined;
    await reconcile(controller, 'PersistentVolumeClaim', 'default/bg', claim.metadata.uid);
    const pv = await core.readPersistentVolume({ name: `pvc-${claim.metadata.uid}` });
    assert.equal(pv.spec!.claimRef!.uid, claim.metadata.uid);
    assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress, undefined, 'the record is cleared once finished');
  });

  it('a claim deleted and created again under its name: the earlier one is provisioned to the end under its own UID', async () => {
    const controller = controllerWith();
    const first = await createClaim('again', 'local');
    provisioner.override = { state: 'InBackground', error: new Error('still creating') };
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/again', first.metadata.uid), /still creating/);
    provisioner.override = undefined;
    // Deleted, and created again before the deletion's message had its turn: the cache holds the new one.
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'again', namespace: 'default' });
    const second = await createClaim('again', 'local');
    assert.notEqual(second.metadata.uid, first.metadata.uid);
    // Finishing it fails once: besides the runtime's retry of the key, a reminder under the earlier UID is
    // parked a minute out, which the new claim's success does not clear.
    const backoff = new BackoffStore({ doc: db.doc, table: db.tables.control });
    const reminderId = { controller: CONTROLLER_NAME, cluster: CLUSTER, kind: 'PersistentVolumeClaim', key: 'default/again', scope: first.metadata.uid! };
    provisioner.override = { state: 'InBackground', error: new Error('still creating') };
    const failedAt = Date.now();
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/again', first.metadata.uid), /still creating/);
    provisioner.override = undefined;
    const reminder = await backoff.get(reminderId);
    // Its own failure count and the runtime's wait for it (the retry interval), then a minute more.
    const retryMs = runtimeOptionsFor(provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local' })).limiter!.baseDelayMs;
    assert.equal(reminder?.failures, 1);
    assert.ok(reminder.dueAt !== undefined && reminder.dueAt - failedAt >= retryMs + 60_000 && reminder.dueAt <= Date.now() + retryMs + 60_000, 'due a minute after the runtime\'s retry');
    assert.equal(DELETED_CLAIM_REMINDER_MS, 60_000);
    // Sent again every minute for a day (as long as its record lives), whatever holds it back meanwhile.
    assert.deepEqual([reminder.uid, reminder.rearms, reminder.rearmEveryMs, DELETED_CLAIM_REARMS], [first.metadata.uid, 1440, 60_000, 1440], 'sent again a minute apart for a day');
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/again', first.metadata.uid), undefined);
    assert.equal(await backoff.get(reminderId), undefined, 'finished: the reminder is cleared');
    const pv = await core.readPersistentVolume({ name: `pvc-${first.metadata.uid}` });
    assert.equal(pv.spec!.claimRef!.uid, first.metadata.uid, 'the earlier claim\'s volume has its PV, which the binder releases');
    const records = new ClaimRecords(db.doc, db.tables.control);
    assert.equal((await records.get(CLUSTER, first.metadata.uid!)).inProgress, undefined, 'the record is cleared once finished');
    assert.equal(provisioner.provisions, 3, 'the new claim is not provisioned by the earlier one\'s messages');
    // The new claim's own message.
    await reconcile(controller, 'PersistentVolumeClaim', 'default/again', second.metadata.uid);
    assert.equal((await core.readPersistentVolume({ name: `pvc-${second.metadata.uid}` })).spec!.claimRef!.uid, second.metadata.uid);
  });

  /**
   * A claim whose provisioning failed once, then deleted and created again under its name before the
   * deletion's message had its turn; the controller gives up at the second failure (thresholds of 1,
   * runtimeOptionsFor). The failure stays armed (`provisioner.override`).
   */
  async function earlierClaimFailing(name: string) {
    const controller = controllerWith({ PROVISIONER_FAILED_PROVISION_THRESHOLD: '1', PROVISIONER_FAILED_DELETE_THRESHOLD: '1' });
    const first = await createClaim(name, 'local');
    provisioner.override = { state: 'InBackground', error: new Error('still creating') };
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', `default/${name}`, first.metadata.uid), /still creating/);
    await core.deleteNamespacedPersistentVolumeClaim({ name, namespace: 'default' });
    const second = await createClaim(name, 'local');
    const backoff = new BackoffStore({ doc: db.doc, table: db.tables.control });
    const reminderId = { controller: CONTROLLER_NAME, cluster: CLUSTER, kind: 'PersistentVolumeClaim', key: `default/${name}`, scope: first.metadata.uid! };
    return { controller, first, second, backoff, reminderId };
  }

  it('an earlier claim\'s reminder waits out the API budget without counting it a failure, as the runtime does', async () => {
    const { controller, first, backoff, reminderId } = await earlierClaimFailing('budget-wait');
    const finish = () => reconcile(controller, 'PersistentVolumeClaim', 'default/budget-wait', first.metadata.uid);
    const budgetWait = { state: 'InBackground' as const, error: new Error('provisioning failed', { cause: new BudgetTimeoutError(CLUSTER, 1500) }) };
    // One real failure of the earlier claim, then waits for budget (the cause of another error, too).
    await assert.rejects(finish(), /still creating/);
    for (const override of [{ state: 'InBackground' as const, error: new BudgetTimeoutError(CLUSTER, 1500) }, budgetWait]) {
      provisioner.override = override;
      const waitedAt = Date.now();
      await assert.rejects(finish());
      const reminder = await backoff.get(reminderId);
      assert.ok(reminder && !reminder.givenUp && reminder.failures === 1, 'the real failure counted once, the wait not at all');
      assert.ok(reminder.dueAt !== undefined && reminder.dueAt >= waitedAt + 1000 + DELETED_CLAIM_REMINDER_MS && reminder.dueAt <= Date.now() + 1000 + DELETED_CLAIM_REMINDER_MS, 'due a minute after the runtime\'s one-second wait');
    }
    // A second real failure gives up; a wait for budget after that leaves it given up and unparked.
    provisioner.override = { state: 'InBackground', error: new Error('still creating') };
    await assert.rejects(finish(), /still creating/);
    provisioner.override = budgetWait;
    await assert.rejects(finish());
    const givenUp = await backoff.get(reminderId);
    assert.deepEqual([givenUp?.failures, givenUp?.givenUp, givenUp?.dueAt], [2, true, undefined], 'given up stays given up');
    provisioner.override = undefined;
    assert.equal(await finish(), undefined);
    assert.equal(await backoff.get(reminderId), undefined, 'finished: the reminder is cleared');
    assert.equal((await core.readPersistentVolume({ name: `pvc-${first.metadata.uid}` })).spec!.claimRef!.uid, first.metadata.uid);
  });

  it('an earlier claim\'s reminder gives up at the failure threshold, as the runtime does, and a requeue that finds nothing left ends it', async () => {
    const { controller, first, second, backoff, reminderId } = await earlierClaimFailing('reminded');
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/reminded', first.metadata.uid), /still creating/);
    const once = await backoff.get(reminderId);
    assert.ok(once?.failures === 1 && once.dueAt !== undefined, 'parked after the first failure');
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/reminded', first.metadata.uid), /still creating/);
    const givenUp = await backoff.get(reminderId);
    assert.deepEqual([givenUp?.failures, givenUp?.givenUp, givenUp?.dueAt], [2, true, undefined], 'given up: kept with its count, not parked');
    provisioner.override = undefined;
    // A later message with the earlier UID still finishes it, and that ends the reminder.
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/reminded', first.metadata.uid), undefined);
    assert.equal((await core.readPersistentVolume({ name: `pvc-${first.metadata.uid}` })).spec!.claimRef!.uid, first.metadata.uid);
    assert.equal(await backoff.get(reminderId), undefined);
    // A reminder's requeue that finds nothing left of its claim (finished another way) ends it, and
    // reconciles the current claim as any message for the name does.
    await backoff.park(reminderId, Date.now(), { uid: first.metadata.uid! }, { rearms: 3, rearmEveryMs: 60_000 });
    assert.equal(await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/reminded', first.metadata.uid, undefined, 'REQUEUE'), undefined);
    assert.equal(await backoff.get(reminderId), undefined, 'cleared by its own message');
    assert.equal((await core.readPersistentVolume({ name: `pvc-${second.metadata.uid}` })).spec!.claimRef!.uid, second.metadata.uid);
    // Any message with that UID that ends without a wait ends its reminder, a plain one too.
    await backoff.park(reminderId, Date.now() + 60_000, { uid: first.metadata.uid! });
    await reconcile(controller, 'PersistentVolumeClaim', 'default/reminded', first.metadata.uid);
    assert.equal(await backoff.get(reminderId), undefined);
    // A message with another UID leaves it.
    await backoff.park(reminderId, Date.now() + 60_000, { uid: first.metadata.uid! });
    await reconcile(controller, 'PersistentVolumeClaim', 'default/reminded', second.metadata.uid);
    assert.ok((await backoff.get(reminderId))?.dueAt, 'left as it was');
    await backoff.clear(reminderId);
  });

  it('whether a reminder exists comes with the prefetch: a message that ends without a wait reads nothing more for it', async () => {
    const controller = controllerWith();
    const claim = await createClaim('prefetched', 'local');
    const request = { cluster: CLUSTER, kind: 'PersistentVolumeClaim' as const, key: 'default/prefetched', event: { v: 1 as const, cluster: CLUSTER, kind: 'PersistentVolumeClaim' as const, type: 'MODIFIED' as const, key: 'default/prefetched', uid: claim.metadata.uid!, resourceVersion: '0', observedAt: new Date().toISOString() } };
    const reminderPk = backoffIdPk(reminderId(CLUSTER, 'default/prefetched', claim.metadata.uid!));
    assert.equal(controller.prefetch!(request).control?.includes(reminderPk), false, 'a watch event of a live claim never ends one: not asked');
    for (const type of ['DELETED', 'REQUEUE'] as const) {
      assert.ok(controller.prefetch!({ ...request, event: { ...request.event, type } }).control?.includes(reminderPk), `asked with the claim's record for a ${type}`);
    }
    const reads: string[] = [];
    const send = db.doc.send.bind(db.doc);
    (db.doc as { send: unknown }).send = (command: { input?: { Key?: { pk?: string } } }, ...rest: unknown[]) => {
      if (command.input?.Key?.pk === reminderPk) reads.push(command.constructor.name);
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
    try {
      const prefetched = { cache: new Map(), control: new Map<string, Record<string, unknown> | null>([[claimRecordPk(CLUSTER, claim.metadata.uid!), null], [reminderPk, null]]) };
      await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/prefetched', claim.metadata.uid, undefined, 'REQUEUE', prefetched);
      assert.deepEqual(reads, [], 'prefetched as absent: no read, no delete');
      prefetched.control.delete(reminderPk);
      await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/prefetched', claim.metadata.uid, undefined, undefined, prefetched);
      assert.deepEqual(reads, [], 'not asked (a watch event): no read either');
      await stack.reconcile(controller, 'PersistentVolumeClaim', 'default/prefetched', claim.metadata.uid);
      assert.deepEqual(reads, ['GetCommand'], 'not prefetched (a direct call): read');
    } finally {
      (db.doc as { send: unknown }).send = send;
    }
  });

  it('a message about an earlier claim that left nothing to finish reconciles the current one (a stale requeue)', async () => {
    const controller = controllerWith();
    const first = await createClaim('stale-uid', 'local');
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'stale-uid', namespace: 'default' });
    const second = await createClaim('stale-uid', 'local');
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/stale-uid', first.metadata.uid), undefined);
    assert.equal((await core.readPersistentVolume({ name: `pvc-${second.metadata.uid}` })).spec!.claimRef!.uid, second.metadata.uid);
    assert.equal(provisioner.provisions, 1);
  });

  describe('a claim deleted after an invocation died mid-provision (no in-progress record)', () => {
    /** Lets the lease of a dead invocation lapse without releasing it, as its expiry would. */
    const lapse = (uid: string) => db.doc.send(new UpdateCommand({
      TableName: db.tables.control, Key: { pk: leasePk(provisioningLeaseName(CLUSTER, uid)) },
      UpdateExpression: 'SET leaseUntil = :zero', ExpressionAttributeValues: { ':zero': 0 },
    }));
    const deleteClaim = async (claim: PersistentVolumeClaim) => {
      await core.deleteNamespacedPersistentVolumeClaim({ name: claim.metadata.name!, namespace: 'default' });
      await cache.remove(CLUSTER, 'PersistentVolumeClaim', claim, Number(claim.metadata.resourceVersion) + 1000);
    };

    /** An invocation that creates the claim's backend volume and dies before it saves the PV or any record. */
    const dieAfterCreate = async (name: string) => {
      let created!: () => void;
      const volumeCreated = new Promise<void>((resolve) => { created = resolve; });
      const dying: Provisioner = {
        provision: async (ctx, options) => { await provisioner.inner.provision(ctx, options); created(); return new Promise<ProvisionResult>(() => {}); },
        delete: (ctx, pv) => provisioner.inner.delete(ctx, pv),
      };
      const dead = createProvisionerController({ options: provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local' }), provisioner: dying });
      void reconcile(dead, 'PersistentVolumeClaim', `default/${name}`).catch(() => undefined);
      await volumeCreated;
    };

    it('an earlier claim of the same name cut short: its DELETED message stores it in progress, so it is finished even after a wait', async () => {
      const controller = controllerWith();
      const first = await createClaim('cut-again', 'local');
      await dieAfterCreate('cut-again');
      await core.deleteNamespacedPersistentVolumeClaim({ name: 'cut-again', namespace: 'default' });
      const second = await createClaim('cut-again', 'local');
      // The DELETED message, while the dead invocation's lease lasts: it waits, its claim stored by UID.
      const waitStarted = Date.now();
      const busy = await reconcile(controller, 'PersistentVolumeClaim', 'default/cut-again', first.metadata.uid, first);
      assert.ok(busy && 'requeueAfterMs' in busy, 'waits for the lease');
      const records = new ClaimRecords(db.doc, db.tables.control);
      assert.equal((await records.get(CLUSTER, first.metadata.uid!)).inProgress?.metadata.uid, first.metadata.uid, 'stored in progress');
      // The wait is also parked under the earlier claim's own UID, after the runtime's own retry: the sweep
      // sends the key with that UID when it is due, whatever the new claim's success clears.
      const backoff = new BackoffStore({ doc: db.doc, table: db.tables.control });
      const reminderId = { controller: CONTROLLER_NAME, cluster: CLUSTER, kind: 'PersistentVolumeClaim', key: 'default/cut-again', scope: first.metadata.uid! };
      const reminder = await backoff.get(reminderId);
      assert.ok(reminder?.dueAt !== undefined && reminder.dueAt >= waitStarted + busy.requeueAfterMs + DELETED_CLAIM_REMINDER_MS && reminder.dueAt <= Date.now() + busy.requeueAfterMs + DELETED_CLAIM_REMINDER_MS, 'parked after the runtime\'s retry');
      assert.equal(await backoff.get({ ...reminderId, scope: undefined }), undefined, 'not the runtime\'s record of the key');
      const due = (await backoff.listDue(reminder.dueAt)).filter((r) => r.key === 'default/cut-again');
      assert.deepEqual(due.map((r) => [r.controller, r.cluster, r.kind, r.key, r.uid]), [[CONTROLLER_NAME, CLUSTER, 'PersistentVolumeClaim', 'default/cut-again', first.metadata.uid]], 'the sweep sends the key with the earlier UID');
      // The new claim's own message meanwhile (its success would clear the wait's park).
      await reconcile(controller, 'PersistentVolumeClaim', 'default/cut-again', second.metadata.uid);
      assert.ok(await backoff.get(reminderId), 'the new claim\'s success leaves the reminder');
      assert.equal(provisioner.provisions, 1, 'the current claim provisioned');
      await assert.rejects(core.readPersistentVolume({ name: `pvc-${first.metadata.uid}` }), 'not the earlier one yet');
      // Any later message with the earlier UID, even without the claim's copy, finishes it.
      await lapse(first.metadata.uid!);
      assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/cut-again', first.metadata.uid), undefined);
      const pv = await core.readPersistentVolume({ name: `pvc-${first.metadata.uid}` });
      assert.equal(pv.spec!.claimRef!.uid, first.metadata.uid, 'the earlier claim\'s volume has its PV');
      assert.equal((await backendVolumes(`pvc-${first.metadata.uid}`)).length, 1, 'adopted, not made twice');
      assert.equal(provisioner.provisions, 2);
      assert.equal((await records.get(CLUSTER, first.metadata.uid!)).inProgress, undefined, 'the record is cleared once finished');
      assert.equal(await backoff.get(reminderId), undefined, 'and its reminder');
      assert.equal((await core.readPersistentVolume({ name: `pvc-${second.metadata.uid}` })).spec!.claimRef!.uid, second.metadata.uid);
    });

    it('keeps the claim in progress when its class is gone from the cache, and finishes once it is back', async () => {
      const controller = controllerWith();
      await stack.createClass('local-doomed', NAME, { reclaimPolicy: 'Delete' });
      const claim = await createClaim('classless', 'local-doomed');
      await dieAfterCreate('classless');
      await deleteClaim(claim);
      await lapse(claim.metadata.uid!);
      const cls = await observe('StorageClass', 'local-doomed');
      await cache.remove(CLUSTER, 'StorageClass', cls, Number(cls.metadata.resourceVersion) + 1000);
      await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/classless', claim.metadata.uid), /local-doomed/);
      const records = new ClaimRecords(db.doc, db.tables.control);
      assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress?.metadata.uid, claim.metadata.uid, 'kept in progress');
      await cache.put(CLUSTER, 'StorageClass', { ...cls, metadata: { ...cls.metadata, resourceVersion: String(Number(cls.metadata.resourceVersion) + 2000) } });
      await reconcile(controller, 'PersistentVolumeClaim', 'default/classless', claim.metadata.uid);
      assert.equal((await core.readPersistentVolume({ name: `pvc-${claim.metadata.uid}` })).spec!.claimRef!.uid, claim.metadata.uid);
    });

    it('is provisioned to the end from its tombstone, so its backend volume gets a PV and is reclaimed', async () => {
      const controller = controllerWith();
      const claim = await createClaim('cut-short', 'local');
      const pvName = `pvc-${claim.metadata.uid}`;
      await dieAfterCreate('cut-short');
      assert.equal((await backendVolumes(pvName)).length, 1, 'the backend volume exists');
      await deleteClaim(claim);

      // While the dead invocation's lease lasts, the deleted claim waits for it: polled while it looks
      // renewed (a running holder), waited out in one step once it has missed two renewals.
      const polledAt = Date.now();
      const busy = await reconcile(controller, 'PersistentVolumeClaim', 'default/cut-short', claim.metadata.uid);
      assert.deepEqual(busy, { requeueAfterMs: 5_000 }, 'a lease taken just now: polled');
      // Its tombstone is stored as its in-progress record before the wait (a claim created again under the
      // name would overwrite the tombstone), and the wait is parked as a reminder under its UID too (such a
      // claim's success would clear the key's own wait).
      const records = new ClaimRecords(db.doc, db.tables.control);
      assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress?.metadata.uid, claim.metadata.uid, 'stored in progress before the wait');
      const backoff = new BackoffStore({ doc: db.doc, table: db.tables.control });
      const reminderId = { controller: CONTROLLER_NAME, cluster: CLUSTER, kind: 'PersistentVolumeClaim', key: 'default/cut-short', scope: claim.metadata.uid! };
      const reminder = await backoff.get(reminderId);
      assert.ok(reminder?.dueAt !== undefined && reminder.dueAt >= polledAt + 65_000 && reminder.dueAt <= Date.now() + 65_000 && reminder.uid === claim.metadata.uid, 'a reminder a minute after the poll');
      await db.doc.send(new UpdateCommand({
        TableName: db.tables.control, Key: { pk: leasePk(provisioningLeaseName(CLUSTER, claim.metadata.uid!)) },
        UpdateExpression: 'SET leaseUntil = :until', ExpressionAttributeValues: { ':until': Date.now() + 60_000 },
      }));
      const stale = await reconcile(controller, 'PersistentVolumeClaim', 'default/cut-short', claim.metadata.uid);
      assert.ok(stale && 'requeueAfterMs' in stale && stale.requeueAfterMs > 60_000 && stale.requeueAfterMs <= 65_000,
        `a lease not renewed for 4 min (renewals every 15 s): waited out until it lapses (${JSON.stringify(stale)})`);
      await lapse(claim.metadata.uid!);
      // The first attempt to finish it fails before the create (the storage nodes cannot be listed): the
      // lease is released, so the claim must stay in progress through its record.
      provisioner.override = { state: 'Finished', error: new Error('nodes: 503') };
      await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/cut-short', claim.metadata.uid), /nodes: 503/);
      assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress?.metadata.uid, claim.metadata.uid, 'kept in progress');
      assert.equal((await backoff.get(reminderId))?.failures, 1, 'the reminder counts the failure');
      provisioner.override = undefined;
      await reconcile(controller, 'PersistentVolumeClaim', 'default/cut-short', claim.metadata.uid);
      const pv = await core.readPersistentVolume({ name: pvName });
      assert.equal(pv.spec!.claimRef!.uid, claim.metadata.uid, 'the PV names the deleted claim: the binder releases it');
      assert.equal(pv.spec!.persistentVolumeReclaimPolicy, 'Delete');
      assert.equal((await backendVolumes(pvName)).length, 1, 'the volume was adopted, not made twice');
      assert.equal(provisioner.provisions, 2);
      assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress, undefined, 'the record is cleared once finished');
      assert.equal(await backoff.get(reminderId), undefined, 'and the reminder ended');
    });

    it('an in-progress record that cannot be written keeps the lease as the trace of the volume', async () => {
      const controller = controllerWith();
      const claim = await createClaim('record-lost', 'local');
      provisioner.override = { state: 'InBackground', error: new Error('still creating') };
      const recordPk = claimRecordPk(CLUSTER, claim.metadata.uid!);
      const send = db.doc.send.bind(db.doc);
      // DynamoDB refuses the record's write (an outage); everything else goes through.
      (db.doc as { send: unknown }).send = (command: { input?: { Key?: { pk?: string } } }, ...rest: unknown[]) =>
        command instanceof UpdateCommand && command.input?.Key?.pk === recordPk
          ? Promise.reject(Object.assign(new Error('service unavailable'), { name: 'InternalServerError' }))
          : (send as (...a: unknown[]) => unknown)(command, ...rest);
      try {
        await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/record-lost'), /service unavailable/);
      } finally {
        (db.doc as { send: unknown }).send = send;
      }
      const lease = await new LeaseStore({ doc: db.doc, table: db.tables.control }).get(provisioningLeaseName(CLUSTER, claim.metadata.uid!));
      assert.ok(lease?.holder, 'the lease is not released');
    });

    it('is left alone when its provisioning never started, ended (lease released), or saved its PV (lease kept)', async () => {
      const controller = controllerWith();
      const never = await createClaim('never-started', 'local');
      const ended = await createClaim('ended', 'local');
      const leases = new LeaseStore({ doc: db.doc, table: db.tables.control });
      const lease = await leases.acquire(provisioningLeaseName(CLUSTER, ended.metadata.uid!), 'someone', 60_000);
      await leases.release(lease);
      for (const claim of [never, ended]) {
        await deleteClaim(claim);
        assert.equal(await reconcile(controller, 'PersistentVolumeClaim', `default/${claim.metadata.name}`, claim.metadata.uid), undefined);
        assert.equal((await backendVolumes(`pvc-${claim.metadata.uid}`)).length, 0, `${claim.metadata.name}: no volume made for a deleted claim`);
      }
      assert.equal(provisioner.provisions, 0);
      // Provisioned, PV saved (its lease kept until it lapses), deleted before the binder bound it: with its
      // PV cached, and before the forwarder has cached it (the API is asked).
      for (const [name, cached] of [['saved', true], ['saved-uncached', false]] as const) {
        const saved = await createClaim(name, 'local');
        await reconcile(controller, 'PersistentVolumeClaim', `default/${name}`);
        if (cached) await observe('PersistentVolume', `pvc-${saved.metadata.uid}`);
        await deleteClaim(saved);
        assert.equal(await reconcile(controller, 'PersistentVolumeClaim', `default/${name}`, saved.metadata.uid), undefined, `${name}: no wait for the kept lease`);
        const record = await new ClaimRecords(db.doc, db.tables.control).get(CLUSTER, saved.metadata.uid!);
        assert.equal(record.inProgress, undefined, `${name}: not taken for a provisioning cut short`);
      }
      assert.equal(provisioner.provisions, 2, 'each provisioned once');
    });

    it('a claim deleted before its PV was cached, the API failing to answer for the PV: taken as cut short, and finished without a second volume', async () => {
      const controller = controllerWith();
      const claim = await createClaim('unanswered', 'local');
      const pvName = `pvc-${claim.metadata.uid}`;
      await reconcile(controller, 'PersistentVolumeClaim', 'default/unanswered');
      await deleteClaim(claim);
      kube.faults.inject({ verb: 'get', resource: 'persistentvolumes', count: 20, status: 500, message: 'etcd is sad' });
      const deferred = await reconcile(controller, 'PersistentVolumeClaim', 'default/unanswered', claim.metadata.uid);
      kube.faults.clear();
      assert.ok(deferred && 'requeueAfterMs' in deferred, 'waits for the kept lease, as a provisioning cut short');
      const records = new ClaimRecords(db.doc, db.tables.control);
      assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress?.metadata.uid, claim.metadata.uid, 'kept in progress: nothing lost');
      // The lease lapses: the sync adopts the backend volume and meets its PV.
      await lapseLease(claim.metadata.uid!);
      assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/unanswered', claim.metadata.uid), undefined);
      assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).inProgress, undefined, 'finished');
      assert.equal((await backendVolumes(pvName)).length, 1, 'one backend volume');
      assert.equal((await core.readPersistentVolume({ name: pvName })).spec!.claimRef!.uid, claim.metadata.uid);
    });
  });

  it('backoff store: when the PV cannot be saved, the backend volume is deleted and the claim retried', async () => {
    const controller = controllerWith({ PROVISIONER_CREATE_PV_RETRY_COUNT: '3' });
    const claim = await createClaim('unsaved', 'local');
    kube.faults.inject({ verb: 'create', resource: 'persistentvolumes', count: 3, status: 500, message: 'etcd is sad' });
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/unsaved'), /etcd is sad/);
    assert.equal((await backendVolumes(`pvc-${claim.metadata.uid}`)).length, 0, 'the asset was cleaned up');
    assert.equal(recorder.events.at(-1)!.message,
      'Error creating provisioned PV object for claim default/unsaved: etcd is sad. Deleting the volume.');
    assert.deepEqual(observed.map((m) => m.outcome), ['failed']);
    await reconcile(controller, 'PersistentVolumeClaim', 'default/unsaved');
    assert.equal((await core.readPersistentVolume({ name: `pvc-${claim.metadata.uid}` })).spec!.claimRef!.name, 'unsaved');
  });

  it('queue store: an unsaved PV is parked in DynamoDB (success), then saved by the next reconcile; the asset is kept', async () => {
    const controller = controllerWith({ PROVISIONER_VOLUME_STORE: 'queue' });
    const claim = await createClaim('parked', 'local');
    const pvName = `pvc-${claim.metadata.uid}`;
    kube.faults.inject({ verb: 'create', resource: 'persistentvolumes', count: 2, status: 503 });
    const first = await reconcile(controller, 'PersistentVolumeClaim', 'default/parked');
    assert.ok(first && 'requeueAfterMs' in first, 'a parked PV asks for a retry');
    assert.deepEqual(observed.map((m) => m.outcome), ['success'], 'queued counts as provisioned, as upstream');
    const records = new ClaimRecords(db.doc, db.tables.control);
    assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).pendingVolume?.metadata.name, pvName);
    await assert.rejects(reconcile(controller, 'PersistentVolumeClaim', 'default/parked'));
    assert.equal((await backendVolumes(pvName)).length, 1, 'the asset is never deleted');
    await reconcile(controller, 'PersistentVolumeClaim', 'default/parked');
    assert.equal((await core.readPersistentVolume({ name: pvName })).metadata!.name, pvName);
    assert.equal((await records.get(CLUSTER, claim.metadata.uid!)).pendingVolume, undefined);
    assert.equal(recorder.events.at(-1)!.reason, 'ProvisioningSucceeded');
    // Saved without the provisioning lease: written back, so the next message finds it at once.
    assert.equal((await cache.get(CLUSTER, 'PersistentVolume', pvName))?.writer, 'provisioner');
    const succeeded = recorder.events.length;
    assert.equal(await reconcile(controller, 'PersistentVolumeClaim', 'default/parked'), undefined);
    assert.equal(provisioner.provisions, 1, 'Provision ran once');
    assert.equal(recorder.events.length, succeeded, 'no second ProvisioningSucceeded');
  });

  it('runtime options carry upstream retry semantics', () => {
    assert.deepEqual(runtimeOptionsFor(provisionerOptionsFromEnv({})), { limiter: { baseDelayMs: 15_000, maxDelayMs: 1_000_000 }, maxFailures: 16 });
    assert.deepEqual(runtimeOptionsFor(provisionerOptionsFromEnv({ PROVISIONER_FAILED_DELETE_THRESHOLD: '0' })).maxFailures, 0);
  });
});

describe('leaseBusyDelayMs: how long a claim waits for a lease someone else holds', () => {
  const now = 1_000_000;
  const table: Array<{ name: string; leaseMs: number; left: number | undefined; want: number }> = [
    { name: 'just taken: the holder runs, poll', leaseMs: 300_000, left: 300_000, want: 5_000 },
    { name: 'renewed a renewal (15 s) ago, with a poll of slack: poll', leaseMs: 300_000, left: 280_000, want: 5_000 },
    { name: 'missed one renewal (slow, failed, skewed): still polled', leaseMs: 300_000, left: 266_000, want: 5_000 },
    { name: 'missed two renewals: wait until it lapses, plus a poll', leaseMs: 300_000, left: 264_000, want: 269_000 },
    { name: 'about to lapse', leaseMs: 300_000, left: 1, want: 5_001 },
    { name: 'lapsed meanwhile (taken by another since): poll', leaseMs: 300_000, left: 0, want: 5_000 },
    { name: 'expiry unknown (the record vanished): poll', leaseMs: 300_000, left: undefined, want: 5_000 },
    { name: 'a lease shorter than a poll and a renewal: always poll, at most its length', leaseMs: 3_000, left: 500, want: 3_000 },
    { name: 'a 60 s lease not renewed for 40 s', leaseMs: 60_000, left: 20_000, want: 25_000 },
    { name: 'a 60 s lease renewed 15 s ago', leaseMs: 60_000, left: 45_000, want: 5_000 },
    { name: 'a 30 s lease (renewed every 10 s) not renewed for 16 s: polled', leaseMs: 30_000, left: 14_000, want: 5_000 },
    { name: 'a 30 s lease not renewed for 26 s', leaseMs: 30_000, left: 4_000, want: 9_000 },
  ];
  for (const t of table) {
    it(t.name, () => {
      assert.equal(leaseBusyDelayMs(t.leaseMs, t.left === undefined ? undefined : now + t.left, now), t.want);
    });
  }
});
