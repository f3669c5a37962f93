/**
 * The claim half of the ProvisionController as pure functions of a snapshot
 * (`syncClaim` → `shouldProvision` → `provisionClaimOperation` → `provisionVolumeErrorHandling` in
 * upstream's `controller.go`). Each returns data: the `provision` call to make, or the outcome (events,
 * metrics, the PV to save, the claim update, what to do with the in-progress record, whether to retry).
 * {@link ./sync-claim.ts} strings the phases together around the Provisioner and the volume store.
 *
 * @example
 * const plan = planClaimSync(config, provisioner, ctx, { claim, storageClass, now: Date.now() });
 * if (plan.action === 'provision') {
 *   const result = await provisioner.provision(ctx, plan.options);
 *   const outcome = afterProvision(config, plan, result, Date.now());
 * }
 */
import {
  annAlphaSelectedNode, annBetaStorageProvisioner, annDynamicallyProvisioned, annSelectedNode,
  annStorageProvisioner, EventReason, finalizerPV, pvNamePrefix,
} from './constants.ts';
import { DelayRetryError, IgnoredError, InfeasibleError, StopProvisionError, StorageClassNotFoundError } from './errors.ts';
import { deepCopy, getPersistentVolumeClaimClass, type ObjectReference, type PersistentVolume, type PersistentVolumeClaim, type StorageClass } from '../kube/objects.ts';
import {
  isBlockProvisioner, isQualifier, type MetricObservation, type ProvisionContext, type ProvisionerEvent,
  type Provisioner, type ProvisionOptions, type ProvisionResult, type VolumeNameHook,
} from './types.ts';

/** The part of the controller's configuration the decisions depend on. */
export interface CoreConfig {
  /** The controller's primary name, e.g. `csi.storageos.com`. */
  provisionerName: string;
  /** Extra names treated as ours everywhere [`AdditionalProvisionerNames`]. */
  additionalProvisionerNames: readonly string[];
  /** Add and honour `external-provisioner.volume.kubernetes.io/finalizer` [`AddFinalizer`]. */
  addFinalizer: boolean;
  /** PV name for a claim [`VolumeName`]; default `pvc-<uid>`. */
  volumeNameHook?: VolumeNameHook;
}

/** A claim in its slow-retry window after an infeasible error (upstream's `slowSet` entry). */
export interface SlowRetry {
  /** UID of the StorageClass the infeasible attempt used: a re-created class ends the window. */
  classUid: string;
  /** Epoch ms when the window ends. */
  until: number;
}

/** Everything one claim sync reads. */
export interface ClaimSnapshot {
  /** The claim: from the cache, or the in-progress record when it was deleted meanwhile. */
  claim: PersistentVolumeClaim;
  /** The StorageClass {@link getClaimClass} names, when it is in the cache. */
  storageClass?: StorageClass;
  /** The PV named {@link volumeName}, when it is already in the cache. */
  existingVolume?: PersistentVolume;
  slowRetry?: SlowRetry;
  /** Epoch ms. */
  now: number;
}

/** What to do with the claim's in-progress record (upstream's `claimsInProgress` map). */
export type InProgressAction = 'store' | 'delete' | 'keep';

/**
 * The end of one claim sync.
 * - `done`: success or nothing to do: forget the key's backoff.
 * - `stop`: upstream's `errStopProvision`: no retry, but it counts as a failed provision.
 * - `requeue`: `error` goes back to the runtime, which retries with backoff (up to the threshold).
 */
export interface ClaimOutcome {
  result: 'done' | 'stop' | 'requeue';
  error?: Error;
  events: ProvisionerEvent[];
  metrics: MetricObservation[];
  inProgress: InProgressAction;
  /** The PV to save through the volume store (success path only). */
  saveVolume?: PersistentVolume;
  /**
   * The claim with `volume.kubernetes.io/selected-node` removed (Reschedule). Apply it with its
   * resourceVersion; if that write fails the outcome becomes `requeue` with {@link rescheduleError}.
   */
  updateClaim?: PersistentVolumeClaim;
  /** The original provisioning error, to requeue with if {@link updateClaim} fails. */
  rescheduleError?: Error;
  /** Add the claim to (or drop it from) the slow-retry set. */
  slowRetry?: { add: SlowRetry } | 'drop';
}

/** Either call `provision` with these options (after recording `events`), or stop here. */
export type ClaimPlan =
  | { action: 'provision'; options: ProvisionOptions; claimRef: ObjectReference; events: ProvisionerEvent[]; dropSlowRetry: boolean }
  | { action: 'finish'; outcome: ClaimOutcome };

/**
 * The claim a sync works on [`syncClaimHandler`]: the cached one, else the in-progress record (a claim
 * deleted while its volume was provisioned in the background is still provisioned), else none.
 */
export function resolveClaim(cached: PersistentVolumeClaim | undefined, inProgress: PersistentVolumeClaim | undefined): PersistentVolumeClaim | undefined {
  return cached ?? inProgress;
}

/**
 * Whether the in-progress copy of a deleted claim is stale: the claim's last state before deletion (the
 * cache tombstone, same UID) was bound or no longer asked for us. Upstream's worker processes every update
 * of a claim, so it saw that state and dropped the claim from claimsInProgress before the deletion; here
 * the update and the deletion may reach the reconcile together, so the tombstone stands in for the update.
 */
export function inProgressSuperseded(config: CoreConfig, lastState: PersistentVolumeClaim | undefined, inProgress: PersistentVolumeClaim | undefined): boolean {
  if (!lastState || !inProgress || lastState.metadata.uid !== inProgress.metadata.uid) return false;
  return !isProvisioningCandidate(config, lastState);
}

/** The names this controller answers to. */
export function knownProvisioner(config: CoreConfig, name: string): boolean {
  return name === config.provisionerName || config.additionalProvisionerNames.includes(name);
}

function annotation(obj: { metadata: { annotations?: Record<string, string> } }, key: string): string | undefined {
  const annotations = obj.metadata.annotations;
  return annotations && Object.hasOwn(annotations, key) ? annotations[key] : undefined;
}

/** The provisioner a claim asks for: the GA annotation when present (even if unknown), else the beta one. */
export function getStorageProvisioner(claim: PersistentVolumeClaim): string | undefined {
  return annotation(claim, annStorageProvisioner) ?? annotation(claim, annBetaStorageProvisioner);
}

/** The claim's class: upstream's `GetPersistentVolumeClaimClass` (lib/kube/objects.ts). */
export const getClaimClass = getPersistentVolumeClaimClass;

/** The PV name for a claim: the hook's, or `pvc-<uid>`. */
export function volumeName(config: CoreConfig, claim: PersistentVolumeClaim): string {
  return config.volumeNameHook ? config.volumeNameHook(claim) : `${pvNamePrefix}${claim.metadata.uid ?? ''}`;
}

/** `spec.claimRef` for the PV: a full reference to the claim, resourceVersion included. */
export function claimReference(claim: PersistentVolumeClaim): ObjectReference {
  return {
    kind: 'PersistentVolumeClaim',
    namespace: claim.metadata.namespace,
    name: claim.metadata.name,
    uid: claim.metadata.uid,
    apiVersion: 'v1',
    resourceVersion: claim.metadata.resourceVersion,
  };
}

/** `SelectedNodeName`: the GA selected-node annotation, else the alpha one, else `''`. */
export function selectedNodeName(claim: PersistentVolumeClaim): string {
  return annotation(claim, annSelectedNode) ?? annotation(claim, annAlphaSelectedNode) ?? '';
}

/** Metric labels of a claim: `class` from `spec.storageClassName` only, `source` from the data source kind. */
export function claimMetricLabels(claim: PersistentVolumeClaim): { class: string; source: string } {
  return { class: claim.spec.storageClassName ?? '', source: claim.spec.dataSource?.kind ?? '' };
}

/**
 * Whether this controller should provision the claim, in upstream's exact order: already bound →
 * Qualifier → storage-provisioner annotation (GA shadows beta) → known name → class in cache
 * (error if not: retried) → WaitForFirstConsumer needs a non-empty selected node.
 */
export function shouldProvision(
  config: CoreConfig,
  provisioner: Provisioner,
  ctx: ProvisionContext,
  claim: PersistentVolumeClaim,
  storageClass: StorageClass | undefined,
): { should: boolean; error?: Error } {
  if (claim.spec.volumeName) return { should: false };
  if (isQualifier(provisioner) && !provisioner.shouldProvision(ctx, claim)) return { should: false };
  const requested = getStorageProvisioner(claim);
  if (requested === undefined) return { should: false };
  if (!knownProvisioner(config, requested)) return { should: false };
  const className = getClaimClass(claim);
  if (!storageClass) return { should: false, error: new StorageClassNotFoundError(className) };
  if (storageClass.volumeBindingMode === 'WaitForFirstConsumer') {
    const node = annotation(claim, annSelectedNode);
    return { should: node !== undefined && node !== '' };
  }
  return { should: true };
}

/**
 * The first, cheap steps of {@link shouldProvision} (not bound, asks for one of our names): a claim that
 * fails them is never provisioned whatever the rest says, so the shell skips the lease and the reads.
 */
export function isProvisioningCandidate(config: CoreConfig, claim: PersistentVolumeClaim): boolean {
  if (claim.spec.volumeName) return false;
  const requested = getStorageProvisioner(claim);
  return requested !== undefined && knownProvisioner(config, requested);
}

/** Block claims need a BlockProvisioner that says yes [`canProvision`]. */
export function canProvision(config: CoreConfig, provisioner: Provisioner, ctx: ProvisionContext, claim: PersistentVolumeClaim): Error | undefined {
  if (claim.spec.volumeMode !== 'Block') return undefined;
  if (isBlockProvisioner(provisioner) && provisioner.supportsBlock(ctx)) return undefined;
  return new Error(`${config.provisionerName} does not support block volume provisioning`);
}

function failed(claim: PersistentVolumeClaim): MetricObservation {
  return { op: 'provision', outcome: 'failed', ...claimMetricLabels(claim) };
}

const event = (type: 'Normal' | 'Warning', reason: string, message: string): ProvisionerEvent => ({ on: 'claim', type, reason, message });

function finish(outcome: Partial<ClaimOutcome> & Pick<ClaimOutcome, 'result'>): ClaimPlan {
  return { action: 'finish', outcome: { events: [], metrics: [], inProgress: 'delete', ...outcome } };
}

/**
 * Phase 1 of a claim sync: the slow-retry gate, `shouldProvision`, and `provisionClaimOperation` up to
 * the `provision` call.
 */
export function planClaimSync(config: CoreConfig, provisioner: Provisioner, ctx: ProvisionContext, snapshot: ClaimSnapshot): ClaimPlan {
  const { claim, storageClass, now } = snapshot;
  let dropSlowRetry = false;
  // Upstream `delayProvisioningIfRecentlyInfeasible`: skipped when the class cannot be read.
  if (snapshot.slowRetry && storageClass) {
    const classChanged = storageClass.metadata.uid !== snapshot.slowRetry.classUid;
    if (classChanged || snapshot.slowRetry.until <= now) {
      dropSlowRetry = true;
    } else {
      // No event, no metric; the error still counts toward the failure threshold.
      return finish({ result: 'requeue', error: new DelayRetryError(claim.metadata.uid ?? ''), inProgress: 'keep' });
    }
  }
  const slow = dropSlowRetry ? { slowRetry: 'drop' as const } : {};

  const should = shouldProvision(config, provisioner, ctx, claim, storageClass);
  if (should.error) return finish({ result: 'requeue', error: should.error, metrics: [failed(claim)], inProgress: 'keep', ...slow });
  // Not ours, bound, or not yet: `syncClaim` returns nil, and every nil return drops the claim from
  // claimsInProgress (`processNextClaimWorkItem`), so a claim bound elsewhere is never resumed from it.
  if (!should.should) return finish({ result: 'done', inProgress: 'delete', ...slow });

  // provisionClaimOperation
  const pvName = volumeName(config, claim);
  if (snapshot.existingVolume) {
    return finish({ result: 'stop', error: new StopProvisionError(`persistentvolume "${pvName}" already exists`), metrics: [failed(claim)], ...slow });
  }
  const claimRef = claimReference(claim);
  const blockError = canProvision(config, provisioner, ctx, claim);
  if (blockError) {
    return finish({
      result: 'stop', error: new StopProvisionError(blockError.message), metrics: [failed(claim)],
      events: [event('Warning', EventReason.ProvisioningFailed, blockError.message)], ...slow,
    });
  }
  // shouldProvision has already proved the class is in the cache.
  const cls = storageClass as StorageClass;
  if (!knownProvisioner(config, cls.provisioner)) {
    return finish({
      result: 'stop', error: new StopProvisionError(`unknown provisioner "${cls.provisioner}" requested in claim's StorageClass`),
      metrics: [failed(claim)], ...slow,
    });
  }
  const options: ProvisionOptions = { storageClass: cls, pvName, pvc: claim, selectedNodeName: selectedNodeName(claim) };
  const message = `External provisioner is provisioning volume for claim "${claim.metadata.namespace}/${claim.metadata.name}"`;
  return { action: 'provision', options, claimRef, events: [event('Normal', EventReason.Provisioning, message)], dropSlowRetry };
}

/**
 * The PV to save: the provisioner's, with claimRef, the finalizer (when `addFinalizer`), the
 * provisioned-by annotation (the class's provisioner) and the claim's class name set by the controller.
 */
export function finalizeProvisionedVolume(config: CoreConfig, pv: PersistentVolume, claim: PersistentVolumeClaim, claimRef: ObjectReference, storageClass: StorageClass): PersistentVolume {
  const out = deepCopy(pv);
  out.spec.claimRef = { ...claimRef };
  if (config.addFinalizer) {
    const finalizers = out.metadata.finalizers ?? [];
    if (!finalizers.includes(finalizerPV)) out.metadata.finalizers = [...finalizers, finalizerPV];
  }
  out.metadata.annotations = { ...out.metadata.annotations, [annDynamicallyProvisioned]: storageClass.provisioner };
  out.spec.storageClassName = getClaimClass(claim);
  return out;
}

/** The claim without `volume.kubernetes.io/selected-node` (the reschedule update), or undefined if it has none. */
export function withoutSelectedNode(claim: PersistentVolumeClaim): PersistentVolumeClaim | undefined {
  if (annotation(claim, annSelectedNode) === undefined) return undefined;
  const out = deepCopy(claim);
  delete out.metadata.annotations![annSelectedNode];
  return out;
}

/**
 * Phase 2: what the `provision` result means (upstream's `provisionClaimOperation` tail and
 * `provisionVolumeErrorHandling`). A success returns `saveVolume`; {@link afterSave} finishes it.
 */
export function afterProvision(
  config: CoreConfig,
  plan: Extract<ClaimPlan, { action: 'provision' }>,
  result: ProvisionResult,
  now: number,
  slowRetryPeriodMs: number,
): ClaimOutcome {
  const claim = plan.options.pvc;
  const slow = plan.dropSlowRetry ? { slowRetry: 'drop' as const } : {};
  if (!result.error) {
    const pv = finalizeProvisionedVolume(config, result.pv, claim, plan.claimRef, plan.options.storageClass);
    return { result: 'done', events: [], metrics: [], inProgress: 'delete', saveVolume: pv, ...slow };
  }
  const err = result.error;
  if (err instanceof IgnoredError) {
    return { result: 'stop', error: new StopProvisionError(err.message), events: [], metrics: [failed(claim)], inProgress: 'delete', ...slow };
  }
  if (err instanceof InfeasibleError) {
    return {
      result: 'requeue', error: err, metrics: [failed(claim)], inProgress: 'delete',
      events: [event('Warning', EventReason.ProvisioningFailed, `Volume provisioning failed with infeasible error. Retries will be delayed. ${err.message}`)],
      slowRetry: { add: { classUid: plan.options.storageClass.metadata.uid ?? '', until: now + slowRetryPeriodMs } },
    };
  }
  const base = { error: err, metrics: [failed(claim)], events: [event('Warning', EventReason.ProvisioningFailed, err.message)], ...slow };
  switch (result.state) {
    case 'Reschedule': {
      const updated = withoutSelectedNode(claim);
      if (updated) return { ...base, result: 'stop', inProgress: 'delete', updateClaim: updated, rescheduleError: err };
      return { ...base, result: 'requeue', inProgress: 'delete' };
    }
    case 'InBackground':
      return { ...base, result: 'requeue', inProgress: 'store' };
    case 'NoChange':
      return { ...base, result: 'requeue', inProgress: 'keep' };
    default:
      return { ...base, result: 'requeue', inProgress: 'delete' };
  }
}

/** What the volume store reports after trying to save a provisioned PV. */
export interface StoreResult {
  /** The PV is saved, or queued for saving (the queue store; the backoff store at the time limit): success. */
  saved: boolean;
  /** The PV is not saved yet but parked in the claim's durable record; the next reconcile saves it first. */
  queued?: boolean;
  /** The last save error when not saved. */
  error?: Error;
  /** Events the store recorded on the claim (success, "Deleting the volume", cleanup failure). */
  events: ProvisionerEvent[];
}

/** Phase 3: the outcome once the volume store has run. */
export function afterSave(claim: PersistentVolumeClaim, previous: ClaimOutcome, store: StoreResult, durationSeconds: number): ClaimOutcome {
  const labels = claimMetricLabels(claim);
  if (store.saved) {
    return { ...previous, saveVolume: undefined, events: [...previous.events, ...store.events], metrics: [{ op: 'provision', outcome: 'success', ...labels, durationSeconds }] };
  }
  return {
    ...previous, saveVolume: undefined, result: 'requeue', error: store.error,
    events: [...previous.events, ...store.events], metrics: [failed(claim)], inProgress: 'delete',
  };
}

/** Store messages, exactly as upstream's volume stores record them. */
export const storeMessages = {
  succeeded: (pvName: string): string => `Successfully provisioned volume ${pvName}`,
  deleting: (claim: PersistentVolumeClaim, err: Error): string =>
    `Error creating provisioned PV object for claim ${claim.metadata.namespace}/${claim.metadata.name}: ${err.message}. Deleting the volume.`,
  cleanupFailed: (claim: PersistentVolumeClaim, err: Error): string =>
    `Error cleaning provisioned volume for claim ${claim.metadata.namespace}/${claim.metadata.name}: ${err.message}. Please delete manually.`,
};
