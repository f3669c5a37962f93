/**
 * The `Provisioner` contract, mirroring `sig-storage-lib-external-provisioner/controller/volume.go`:
 * a storage backend plugs in by implementing {@link Provisioner}; the optional interfaces
 * ({@link Qualifier}, {@link BlockProvisioner}, {@link DeletionGuard}) are detected at use time, exactly
 * as upstream type-asserts them.
 *
 * Both `provision` and `delete` are called again on every retry, after a crash and on every resync:
 * they must be idempotent (return the same volume for the same `pvName`; succeed when it is gone).
 *
 * @example
 * const hostPath: Provisioner = {
 *   async provision(_ctx, { pvName, pvc, storageClass }) {
 *     return { state: 'Finished', pv: { metadata: { name: pvName }, spec: {
 *       capacity: { storage: pvc.spec.resources?.requests?.storage ?? '1Gi' },
 *       accessModes: pvc.spec.accessModes, persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
 *       hostPath: { path: `/tmp/${pvName}` } } } };
 *   },
 *   async delete() {},
 * };
 */
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../kube/objects.ts';

/**
 * What a failed or unfinished `provision` means for the claim [`controller.ProvisioningState`]:
 * - `Finished`: the operation is over (failed for good this time); a retry starts afresh.
 * - `InBackground`: the backend is still working; the claim is remembered (claimsInProgress), so it is
 *   provisioned even if it is deleted meanwhile.
 * - `NoChange`: nothing changed; the in-progress record stays as it was.
 * - `Reschedule`: the selected node cannot hold the volume; the `volume.kubernetes.io/selected-node`
 *   annotation is removed so the scheduler picks again.
 */
export type ProvisioningState = 'Finished' | 'InBackground' | 'NoChange' | 'Reschedule';

export const ProvisioningFinished: ProvisioningState = 'Finished';
export const ProvisioningInBackground: ProvisioningState = 'InBackground';
export const ProvisioningNoChange: ProvisioningState = 'NoChange';
export const ProvisioningReschedule: ProvisioningState = 'Reschedule';

/** What the controller passes to `provision` [`controller.ProvisionOptions`, v13]. */
export interface ProvisionOptions {
  /** The claim's StorageClass. Copy `reclaimPolicy` and `mountOptions` onto the PV (the lib does not). */
  storageClass: StorageClass;
  /** The name the PV must have (`pvc-<claim uid>` by default). */
  pvName: string;
  /** The claim being provisioned. */
  pvc: PersistentVolumeClaim;
  /** `volume.kubernetes.io/selected-node` (else the alpha key), or `''` when the claim has none. */
  selectedNodeName: string;
}

/** The context of one call: cancelled when the provision/deletion timeout expires. */
export interface ProvisionContext {
  signal: AbortSignal;
}

/**
 * The outcome of `provision`: a volume and `Finished`, or an error with the state it leaves the
 * operation in (upstream's `(pv, state, err)`). A provisioner may also simply throw: that is read as
 * `{ state: 'Finished', error }`.
 */
export type ProvisionResult =
  | { pv: PersistentVolume; state: 'Finished'; error?: undefined }
  | { pv?: undefined; state: ProvisioningState; error: Error };

/** A storage backend [`controller.Provisioner`]. */
export interface Provisioner {
  /**
   * Create the storage asset for the claim and return the PV to save. The PV should carry
   * `options.pvName`, capacity, access modes, volumeMode, reclaim policy and mount options from the
   * class; the controller sets claimRef, storageClassName, the provisioned-by annotation and the finalizer.
   */
  provision(ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult>;
  /** Delete the storage asset behind the PV. Throw {@link import('./errors.ts').IgnoredError} if not ours. */
  delete(ctx: ProvisionContext, pv: PersistentVolume): Promise<void>;
}

/** Optional: decide whether a claim is this provisioner's [`controller.Qualifier`]. */
export interface Qualifier {
  shouldProvision(ctx: ProvisionContext, claim: PersistentVolumeClaim): boolean;
}

/** Optional: block volumes are refused unless this says true [`controller.BlockProvisioner`]. */
export interface BlockProvisioner {
  supportsBlock(ctx: ProvisionContext): boolean;
}

/** Optional: a PV this says false for is never deleted [`controller.DeletionGuard`]. */
export interface DeletionGuard {
  shouldDelete(ctx: ProvisionContext, pv: PersistentVolume): boolean;
}

export function isQualifier(p: Provisioner): p is Provisioner & Qualifier {
  return typeof (p as Partial<Qualifier>).shouldProvision === 'function';
}

export function isBlockProvisioner(p: Provisioner): p is Provisioner & BlockProvisioner {
  return typeof (p as Partial<BlockProvisioner>).supportsBlock === 'function';
}

export function isDeletionGuard(p: Provisioner): p is Provisioner & DeletionGuard {
  return typeof (p as Partial<DeletionGuard>).shouldDelete === 'function';
}

/** Names a PV after its claim [`VolumeNameHook`]; default `pvc-<uid>`. */
export type VolumeNameHook = (claim: PersistentVolumeClaim) => string;

/** An event to record on the claim or the volume. */
export interface ProvisionerEvent {
  /** Which object it is about: the claim being provisioned or the volume being deleted. */
  on: 'claim' | 'volume';
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** One metric observation (names in `constants.ts`, labels as upstream). */
export type MetricObservation =
  | { op: 'provision'; outcome: 'success' | 'failed'; class: string; source: string; durationSeconds?: number }
  | { op: 'delete'; outcome: 'success' | 'failed'; class: string; durationSeconds?: number };
