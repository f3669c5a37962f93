/**
 * Constructors in the style of upstream's controller_test.go (`newStorageClass`, `newClaim`,
 * `newVolume`, `newCSIVolume`, `newProvisionedVolume`) and its test provisioners, plus a tiny in-memory
 * API "world" (what upstream's fake clientset is to its tables) that applies the core's outcomes.
 */
import { annBetaStorageProvisioner, annDynamicallyProvisioned, finalizerPV } from '../../../lib/provisioner/constants.ts';
import { claimReference, resolveClaim, getClaimClass, volumeName, type CoreConfig } from '../../../lib/provisioner/claim.ts';
import { IgnoredError } from '../../../lib/provisioner/errors.ts';
import type {
  PersistentVolume, PersistentVolumeClaim, PersistentVolumeMode, PersistentVolumeReclaimPolicy, StorageClass, VolumeBindingMode,
} from '../../../lib/kube/objects.ts';
import { BackoffStore, QueueStore, type PendingVolumes, type PersistentVolumeCreator } from '../../../lib/provisioner/store.ts';
import { syncClaim } from '../../../lib/provisioner/sync-claim.ts';
import { syncVolume, VolumeGoneError, type VolumeWriter } from '../../../lib/provisioner/sync-volume.ts';
import type {
  MetricObservation, ProvisionContext, ProvisionerEvent, Provisioner, ProvisionOptions, ProvisionResult, ProvisioningState,
} from '../../../lib/provisioner/types.ts';

export const timestamp = '2026-11-21T20:00:00Z';

export function newStorageClass(name: string, provisioner: string, extra: Partial<StorageClass> = {}): StorageClass {
  return { metadata: { name, uid: `uid-${name}` }, provisioner, reclaimPolicy: 'Delete', ...extra };
}

export const newStorageClassWithReclaimPolicy = (name: string, provisioner: string, reclaimPolicy: PersistentVolumeReclaimPolicy): StorageClass =>
  newStorageClass(name, provisioner, { reclaimPolicy });

export const newStorageClassWithVolumeBindingMode = (name: string, provisioner: string, volumeBindingMode: VolumeBindingMode): StorageClass =>
  newStorageClass(name, provisioner, { volumeBindingMode });

export function newClaim(name: string, uid: string, cls: string, provisioner: string, volumeName: string, annotations: Record<string, string> | null): PersistentVolumeClaim {
  const claim: PersistentVolumeClaim = {
    metadata: { name, namespace: 'default', uid, resourceVersion: '0', annotations: {} },
    spec: {
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      resources: { requests: { storage: '1Mi' } },
      volumeName,
      storageClassName: cls,
    },
    status: { phase: 'Pending' },
  };
  if (provisioner !== '') claim.metadata.annotations![annBetaStorageProvisioner] = provisioner;
  Object.assign(claim.metadata.annotations!, annotations ?? {});
  return claim;
}

export function newClaimWithVolumeMode(name: string, uid: string, cls: string, provisioner: string, volumeName: string, annotations: Record<string, string> | null, mode: PersistentVolumeMode): PersistentVolumeClaim {
  const claim = newClaim(name, uid, cls, provisioner, volumeName, annotations);
  claim.spec.volumeMode = mode;
  return claim;
}

type Phase = NonNullable<PersistentVolume['status']>['phase'];

export function newVolume(name: string, phase: Phase, policy: PersistentVolumeReclaimPolicy, annotations: Record<string, string> | null, finalizers: string[] | null, deletionTimestamp: string | null): PersistentVolume {
  const pv: PersistentVolume = {
    metadata: { name },
    spec: {
      persistentVolumeReclaimPolicy: policy,
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      capacity: { storage: '1Mi' },
      nfs: { server: 'foo', path: 'bar', readOnly: false },
    },
    status: { phase },
  };
  if (annotations) pv.metadata.annotations = annotations;
  if (finalizers) pv.metadata.finalizers = finalizers;
  if (deletionTimestamp) pv.metadata.deletionTimestamp = deletionTimestamp;
  return pv;
}

export function newCSIVolume(name: string, phase: Phase, policy: PersistentVolumeReclaimPolicy, annotations: Record<string, string> | null, finalizers: string[] | null, deletionTimestamp: string | null, driver: string): PersistentVolume {
  const pv = newVolume(name, phase, policy, annotations, finalizers, deletionTimestamp);
  delete pv.spec.nfs;
  pv.spec.csi = { driver, volumeHandle: 'test-volume-id-1', readOnly: false, fsType: 'ext4' };
  return pv;
}

/** What the test provisioner returns for a claim: an NFS PV of the claim's size and modes. */
export function testProvisionerVolume(options: ProvisionOptions): PersistentVolume {
  return {
    metadata: { name: options.pvName },
    spec: {
      persistentVolumeReclaimPolicy: options.storageClass.reclaimPolicy,
      accessModes: options.pvc.spec.accessModes,
      capacity: { storage: options.pvc.spec.resources?.requests?.storage ?? '' },
      nfs: { server: 'foo', path: 'bar', readOnly: false },
    },
  };
}

/** The PV the controller should save for `claim` of `cls` (upstream `newProvisionedVolume`). */
export function newProvisionedVolume(cls: StorageClass, claim: PersistentVolumeClaim, finalizers: string[] | null): PersistentVolume {
  const pv = testProvisionerVolume({ storageClass: cls, pvName: `pvc-${claim.metadata.uid}`, pvc: claim, selectedNodeName: '' });
  pv.spec.claimRef = claimReference(claim);
  pv.metadata.annotations = { [annDynamicallyProvisioned]: cls.provisioner };
  pv.spec.storageClassName = cls.metadata.name;
  if (finalizers) pv.metadata.finalizers = finalizers;
  return pv;
}

/** Upstream `testProvisioner`: records calls, succeeds (or returns `returnError` as Finished). */
export class TestProvisioner implements Provisioner {
  calls: ProvisionOptions[] = [];
  deletes: string[] = [];
  returnError?: Error;
  async provision(_ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult> {
    this.calls.push(options);
    if (this.returnError) return { state: 'Finished', error: this.returnError };
    return { pv: testProvisionerVolume(options), state: 'Finished' };
  }
  async delete(_ctx: ProvisionContext, pv: PersistentVolume): Promise<void> {
    this.deletes.push(pv.metadata.name ?? '');
  }
}

export class TestQualifiedProvisioner extends TestProvisioner {
  #answer: boolean;
  constructor(answer: boolean) { super(); this.#answer = answer; }
  shouldProvision(): boolean { return this.#answer; }
}

export class TestBlockProvisioner extends TestProvisioner {
  #answer: boolean;
  constructor(answer: boolean) { super(); this.#answer = answer; }
  supportsBlock(): boolean { return this.#answer; }
}

export class TestGuardedProvisioner extends TestProvisioner {
  #answer: boolean;
  constructor(answer: boolean) { super(); this.#answer = answer; }
  shouldDelete(): boolean { return this.#answer; }
}

/** Upstream `badTestProvisioner` and its state-returning cousins (temporary, reschedule, noChange). */
export class StateProvisioner implements Provisioner {
  #state: ProvisioningState;
  #message: string;
  constructor(state: ProvisioningState, message: string) { this.#state = state; this.#message = message; }
  async provision(): Promise<ProvisionResult> { return { state: this.#state, error: new Error(this.#message) }; }
  async delete(): Promise<void> { throw new Error('fake error'); }
}
export const newBadTestProvisioner = (): Provisioner => new StateProvisioner('Finished', 'fake final error');
export const newTemporaryTestProvisioner = (): Provisioner => new StateProvisioner('InBackground', 'fake error, in progress');
export const newRescheduleTestProvisioner = (): Provisioner => new StateProvisioner('Reschedule', 'fake error, reschedule');
export const newNoChangeTestProvisioner = (): Provisioner => new StateProvisioner('NoChange', 'fake error, no change');

/** Upstream `ignoredProvisioner`: ignores claim-2, provisions the rest. */
export class IgnoredProvisioner extends TestProvisioner {
  override async provision(ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult> {
    if (options.pvc.metadata.name === 'claim-2') return { state: 'Finished', error: new IgnoredError('Ignored') };
    return super.provision(ctx, options);
  }
}

/** Upstream `provisioner`: checks the PV name, then returns the given state and error. */
export class ExtProvisioner implements Provisioner {
  #pvName: string;
  #state: ProvisioningState;
  #error?: Error;
  wrongNames: string[] = [];
  constructor(pvName: string, state: ProvisioningState, error?: Error) { this.#pvName = pvName; this.#state = state; this.#error = error; }
  async provision(_ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult> {
    if (options.pvName !== this.#pvName) {
      this.wrongNames.push(options.pvName);
      return { state: 'Finished', error: new Error(`Invalid provision call, expected name "${this.#pvName}", got "${options.pvName}"`) };
    }
    if (!this.#error) return { pv: testProvisionerVolume(options), state: 'Finished' };
    return { state: this.#state, error: this.#error };
  }
  async delete(): Promise<void> { throw new Error('Not implemented'); }
}

export type Counts = Record<string, { success?: number; failed?: number }>;
export interface TestMetrics { provisioned?: Counts; deleted?: Counts }

/** Folds metric observations into upstream's `testMetrics` shape. */
export function countMetrics(observations: MetricObservation[]): TestMetrics {
  const out: TestMetrics = {};
  for (const m of observations) {
    const key = m.op === 'provision' ? 'provisioned' : 'deleted';
    const counts = (out[key] ??= {});
    const c = (counts[m.class] ??= {});
    c[m.outcome] = (c[m.outcome] ?? 0) + 1;
  }
  return out;
}

/** A failure injected into the world's PV writes (upstream's `PrependReactor`). */
export type Reaction = { verb: 'create' | 'delete'; fail: (call: number) => boolean };

/**
 * The objects of one table row and the API semantics the controller relies on: create answers
 * AlreadyExists, delete of a PV with finalizers only marks it Terminating, removing the last finalizer
 * of a Terminating PV removes it.
 */
export class World implements VolumeWriter, PersistentVolumeCreator, PendingVolumes {
  classes = new Map<string, StorageClass>();
  claims = new Map<string, PersistentVolumeClaim>();
  volumes = new Map<string, PersistentVolume>();
  inProgress = new Map<string, PersistentVolumeClaim>();
  pending = new Map<string, PersistentVolume>();
  events: ProvisionerEvent[] = [];
  metrics: MetricObservation[] = [];
  reactions: Reaction[] = [];
  #calls = { create: 0, delete: 0 };

  constructor(objs: Array<StorageClass | PersistentVolumeClaim | PersistentVolume>) {
    for (const o of objs) {
      if ('provisioner' in o) this.classes.set(o.metadata.name!, structuredClone(o));
      else if ('resources' in o.spec) this.claims.set(o.metadata.uid!, structuredClone(o as PersistentVolumeClaim));
      else this.volumes.set(o.metadata.name!, structuredClone(o as PersistentVolume));
    }
  }

  #react(verb: 'create' | 'delete'): void {
    const call = ++this.#calls[verb];
    if (this.reactions.some((r) => r.verb === verb && r.fail(call))) throw new Error('fake error');
  }

  async createVolume(pv: PersistentVolume): Promise<'created' | 'exists'> {
    this.#react('create');
    if (this.volumes.has(pv.metadata.name!)) return 'exists';
    this.volumes.set(pv.metadata.name!, structuredClone(pv));
    return 'created';
  }
  async deleteVolume(pv: PersistentVolume): Promise<void> {
    this.#react('delete');
    const current = this.volumes.get(pv.metadata.name!);
    if (!current) throw new VolumeGoneError(pv.metadata.name!);
    if (current.metadata.finalizers?.length) current.metadata.deletionTimestamp ??= timestamp;
    else this.volumes.delete(pv.metadata.name!);
  }
  async patchFinalizers(pv: PersistentVolume, finalizers: string[] | null): Promise<PersistentVolume> {
    const current = this.volumes.get(pv.metadata.name!);
    if (!current) throw new VolumeGoneError(pv.metadata.name!);
    if (finalizers === null) delete current.metadata.finalizers;
    else current.metadata.finalizers = [...finalizers];
    if (current.metadata.deletionTimestamp && !current.metadata.finalizers?.length) this.volumes.delete(pv.metadata.name!);
    return structuredClone(current);
  }
  async getVolume(name: string): Promise<PersistentVolume | undefined> {
    const v = this.volumes.get(name);
    return v && structuredClone(v);
  }
  async put(pv: PersistentVolume): Promise<void> { this.pending.set(pv.metadata.name!, structuredClone(pv)); }
  async get(name: string): Promise<PersistentVolume | undefined> { return this.pending.get(name); }
  async delete(name: string): Promise<void> { this.pending.delete(name); }
}

export interface RunOptions {
  config: CoreConfig;
  provisioner: Provisioner;
  queueStore?: boolean;
  /** Claims deleted from the cache but remembered as in progress are synced too. */
  enqueueClaim?: PersistentVolumeClaim;
  now?: number;
}

/** One pass of the controller over the world: every claim (by UID), then every volume. */
export async function runOnce(world: World, options: RunOptions): Promise<void> {
  const { config, provisioner } = options;
  const noSleep = async (): Promise<void> => {};
  const queue = new QueueStore(world, world);
  const store = options.queueStore ? queue : new BackoffStore({ creator: world, provisioner, backoff: { durationMs: 10, factor: 1, steps: 5 }, sleep: noSleep });
  const uids = new Set([...world.claims.keys(), ...(options.enqueueClaim ? [options.enqueueClaim.metadata.uid!] : [])]);
  for (const uid of uids) {
    const claim = resolveClaim(world.claims.get(uid), world.inProgress.get(uid));
    if (!claim) continue;
    const outcome = await syncClaim({ config, provisioner, store, slowRetryPeriodMs: 300_000, clock: () => options.now ?? 0 }, {
      claim,
      storageClass: world.classes.get(getClaimClass(claim)),
      existingVolume: world.volumes.get(volumeName(config, claim)),
      now: options.now ?? 0,
    });
    world.events.push(...outcome.events);
    world.metrics.push(...outcome.metrics);
    if (outcome.updateClaim) world.claims.set(uid, outcome.updateClaim);
    if (outcome.inProgress === 'store') world.inProgress.set(uid, claim);
    if (outcome.inProgress === 'delete') world.inProgress.delete(uid);
  }
  for (const pv of [...world.volumes.values()]) {
    // No VolumeAttachments in these tables (attached-delete.test.ts has the rows with them).
    const outcome = await syncVolume({ config, provisioner, writer: world, attachments: { list: async () => [] } }, structuredClone(pv));
    world.events.push(...outcome.events);
    world.metrics.push(...outcome.metrics);
  }
  if (options.queueStore) {
    // The shell's retries of parked PVs (upstream's `unsavedpvs` workers).
    for (let attempt = 0; attempt < 3 && world.pending.size > 0; attempt++) {
      for (const name of [...world.pending.keys()]) {
        const retried = await queue.retryPending(name).catch(() => undefined);
        if (retried?.status === 'saved') world.events.push(...retried.result.events);
      }
    }
  }
}

export const config = (provisionerName: string, extra: Partial<CoreConfig> = {}): CoreConfig =>
  ({ provisionerName, additionalProvisionerNames: [], addFinalizer: false, ...extra });

export { finalizerPV };
