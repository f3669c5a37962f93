/**
 * The volume half of the ProvisionController as pure functions (`isProvisionerForVolume`,
 * `handleProtectionFinalizer`, `shouldDelete`, `addFinalizer`/`removeFinalizer` in upstream's
 * `controller.go`). {@link ./sync-volume.ts} applies them around `Provisioner.delete` and the API.
 *
 * @example
 * const plan = planVolumeSync(config, provisioner, ctx, pv);
 * if (plan.ours && plan.finalizers !== undefined) await patch(pv, plan.finalizers);
 * if (plan.ours && plan.delete) await provisioner.delete(ctx, pv);
 */
import { annDynamicallyProvisioned, annMigratedTo, finalizerPV } from './constants.ts';
import type { CoreConfig } from './claim.ts';
import { knownProvisioner } from './claim.ts';
import type { PersistentVolume } from '../kube/objects.ts';
import { isDeletionGuard, type ProvisionContext, type Provisioner } from './types.ts';

/**
 * Is this PV ours? With `provisioned-by`: that value or `migrated-to` is a known name; else a CSI PV
 * whose driver is known (static CSI PVs count); else `migrated-to` is known.
 */
export function isProvisionerForVolume(config: CoreConfig, pv: PersistentVolume): boolean {
  const annotations = pv.metadata.annotations ?? {};
  const migratedTo = annotations[annMigratedTo];
  const known = (name: string | undefined): boolean => name !== undefined && knownProvisioner(config, name);
  if (Object.hasOwn(annotations, annDynamicallyProvisioned)) {
    return known(annotations[annDynamicallyProvisioned]) || known(migratedTo);
  }
  if (pv.spec.csi) return known(pv.spec.csi.driver);
  return known(migratedTo);
}

/** Appends `finalizer` when missing; returns a new list and whether it changed (the input is never mutated). */
export function addFinalizer(finalizers: readonly string[] | undefined, finalizer: string): { finalizers: string[]; modified: boolean } {
  if (finalizers?.includes(finalizer)) return { finalizers: [...finalizers], modified: false };
  return { finalizers: [...(finalizers ?? []), finalizer], modified: true };
}

/**
 * Removes `finalizer`; returns a new list (`undefined` when empty, as upstream returns nil) and whether
 * it changed. The input is never mutated (upstream #173: mutating it left PVs stuck Terminating).
 */
export function removeFinalizer(finalizers: readonly string[] | undefined, finalizer: string): { finalizers: string[] | undefined; modified: boolean } {
  const kept = (finalizers ?? []).filter((f) => f !== finalizer);
  const modified = kept.length !== (finalizers ?? []).length;
  return { finalizers: kept.length > 0 ? kept : undefined, modified };
}

/**
 * The finalizer list `handleProtectionFinalizer` wants, or `undefined` for no change: add ours on a
 * Bound, Delete-policy, not-deleting PV when `addFinalizer` is on; remove it when `addFinalizer` is off
 * or the policy is Retain/Recycle.
 */
export function protectionFinalizerChange(config: CoreConfig, pv: PersistentVolume): string[] | null | undefined {
  const policy = pv.spec.persistentVolumeReclaimPolicy;
  let finalizers = pv.metadata.finalizers;
  let modified = false;
  if (config.addFinalizer && policy === 'Delete' && !pv.metadata.deletionTimestamp && pv.status?.phase === 'Bound') {
    const added = addFinalizer(finalizers, finalizerPV);
    finalizers = added.finalizers;
    modified = added.modified;
  }
  if (!config.addFinalizer || policy === 'Retain' || policy === 'Recycle') {
    const removed = removeFinalizer(finalizers, finalizerPV);
    if (removed.modified) {
      finalizers = removed.finalizers;
      modified = true;
    }
  }
  if (!modified) return undefined;
  return finalizers ?? null;
}

/**
 * Should the storage asset behind this PV be deleted? DeletionGuard → deletionTimestamp (with
 * `addFinalizer`, only while our finalizer still holds the PV) → phase Released → policy Delete.
 * Ownership is not re-checked here (upstream's order).
 */
export function shouldDelete(config: CoreConfig, provisioner: Provisioner, ctx: ProvisionContext, pv: PersistentVolume): boolean {
  if (isDeletionGuard(provisioner) && !provisioner.shouldDelete(ctx, pv)) return false;
  const deleting = Boolean(pv.metadata.deletionTimestamp);
  if (config.addFinalizer) {
    if (!(pv.metadata.finalizers ?? []).includes(finalizerPV) && deleting) return false;
  } else if (deleting) {
    return false;
  }
  if (pv.status?.phase !== 'Released') return false;
  if (pv.spec.persistentVolumeReclaimPolicy !== 'Delete') return false;
  return true;
}

/** What one volume sync will do. */
export interface VolumePlan {
  ours: boolean;
  /** New `metadata.finalizers` to PATCH (`null` = remove the field), or undefined for none. */
  finalizers?: string[] | null;
  /** Call `Provisioner.delete` and delete the PV object. */
  delete: boolean;
}

/** `syncVolume` decided from the PV alone (the finalizer patch is applied to a copy before `shouldDelete`). */
export function planVolumeSync(config: CoreConfig, provisioner: Provisioner, ctx: ProvisionContext, pv: PersistentVolume): VolumePlan {
  if (!isProvisionerForVolume(config, pv)) return { ours: false, delete: false };
  const finalizers = protectionFinalizerChange(config, pv);
  const patched: PersistentVolume = finalizers === undefined ? pv : { ...pv, metadata: { ...pv.metadata, finalizers: finalizers ?? undefined } };
  return { ours: true, finalizers, delete: shouldDelete(config, provisioner, ctx, patched) };
}

/** The claim-less metric label of a volume: its class. */
export function volumeMetricClass(pv: PersistentVolume): string {
  return pv.spec.storageClassName ?? '';
}
