/**
 * `syncClaim` (`pv_controller.go`): the claim path is chosen by the presence of
 * `pv.kubernetes.io/bind-completed` — never by phase or volumeName.
 *
 * @example
 * const { actions, error } = syncClaim({ claim, volumes, classes, pods });
 */
import {
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_MIGRATED_TO,
  ANN_STORAGE_PROVISIONER,
  ClaimPhase,
  Message,
  Reason,
} from './constants.ts';
import { bind, updateClaimStatus, updateClaimStatusWithEvent } from './bind.ts';
import { BinderSyncError, InvalidBindingError } from './errors.ts';
import { claimToClaimKey, claimrefToClaimKey, clone, getPersistentVolumeClaimClass, hasAnnotation, isVolumeBoundToClaim } from './helpers.ts';
import { checkVolumeSatisfyClaim, findBestMatchForClaim } from './match.ts';
import { SyncPlan } from './plan.ts';
import {
  assignDefaultStorageClass,
  emitEventForUnboundDelayBindingClaim,
  isDelayBindingMode,
  isDelayBindingProvisioning,
  provisionClaim,
} from './provision.ts';
import type { ClaimSnapshot, PersistentVolumeClaim, SyncResult } from './types.ts';

/** Runs one sync of a claim against its snapshot and returns the writes and events to make. */
export function syncClaim(snapshot: ClaimSnapshot): SyncResult {
  const plan = new SyncPlan();
  try {
    const claim = updateClaimMigrationAnnotations(plan, snapshot.claim);
    if (!hasAnnotation(claim.metadata, ANN_BIND_COMPLETED)) syncUnboundClaim(plan, claim, snapshot);
    else syncBoundClaim(plan, claim, snapshot);
    return plan.result();
  } catch (error) {
    if (error instanceof BinderSyncError) return plan.result(error);
    throw error;
  }
}

/**
 * `updateClaimMigrationAnnotations`: claimflow migrates no in-tree plugin, so a claim with a
 * storage-provisioner annotation loses any `pv.kubernetes.io/migrated-to` (one PUT when it had one).
 */
function updateClaimMigrationAnnotations(plan: SyncPlan, claim: PersistentVolumeClaim): PersistentVolumeClaim {
  const ann = claim.metadata.annotations;
  if (!ann) return claim;
  if (!Object.hasOwn(ann, ANN_STORAGE_PROVISIONER) && !Object.hasOwn(ann, ANN_BETA_STORAGE_PROVISIONER)) return claim;
  if (!ann[ANN_MIGRATED_TO]) return claim;
  const next = clone(claim);
  delete next.metadata.annotations![ANN_MIGRATED_TO];
  return plan.updateClaim(next, 'updateClaimMigrationAnnotations');
}

/** `syncUnboundClaim` — upstream's "[Unit test set 1/2]". */
export function syncUnboundClaim(plan: SyncPlan, claim: PersistentVolumeClaim, snapshot: ClaimSnapshot): void {
  const volumeName = claim.spec.volumeName ?? '';
  if (volumeName === '') {
    const delayBinding = isDelayBindingMode(claim, snapshot.classes);
    let volume;
    try {
      volume = findBestMatchForClaim(claim, snapshot.volumes, delayBinding);
    } catch (error) {
      throw new BinderSyncError(`error finding PV for claim "${claimToClaimKey(claim)}": ${(error as Error).message}`, { cause: error });
    }
    if (!volume) {
      if (assignDefaultStorageClass(plan, claim, snapshot.classes)) return;
      if (delayBinding && !isDelayBindingProvisioning(claim)) {
        emitEventForUnboundDelayBindingClaim(plan, claim, snapshot.pods ?? []);
      } else if (getPersistentVolumeClaimClass(claim) !== '') {
        provisionClaim(plan, claim, snapshot.classes);
        return;
      } else {
        plan.event('PersistentVolumeClaim', claim, 'Normal', Reason.FailedBinding, Message.noVolumesNoClass);
      }
      updateClaimStatus(plan, claim, ClaimPhase.Pending, undefined);
      return;
    }
    bind(plan, volume, claim);
    return;
  }

  // The user asked for a specific volume.
  const volume = snapshot.volumes.find((v) => v.metadata.name === volumeName);
  if (!volume) {
    updateClaimStatus(plan, claim, ClaimPhase.Pending, undefined);
    return;
  }
  if (!volume.spec.claimRef) {
    const reason = checkVolumeSatisfyClaim(volume, claim);
    if (reason !== undefined) {
      plan.event('PersistentVolumeClaim', claim, 'Warning', Reason.VolumeMismatch, Message.cannotBindRequested(volumeName, reason));
      updateClaimStatus(plan, claim, ClaimPhase.Pending, undefined);
      return;
    }
    bind(plan, volume, claim);
    return;
  }
  if (isVolumeBoundToClaim(volume, claim)) {
    bind(plan, volume, claim);
    return;
  }
  // The volume is bound to another claim.
  if (!hasAnnotation(claim.metadata, ANN_BOUND_BY_CONTROLLER)) {
    plan.event('PersistentVolumeClaim', claim, 'Warning', Reason.FailedBinding, Message.alreadyBound(volumeName));
    updateClaimStatus(plan, claim, ClaimPhase.Pending, undefined);
    return;
  }
  plan.event('PersistentVolumeClaim', claim, 'Warning', Reason.FailedBinding, Message.alreadyBound(volumeName));
  throw new InvalidBindingError(
    `invalid binding of claim "${claimToClaimKey(claim)}" to volume "${volumeName}": volume already claimed by "${claimrefToClaimKey(volume)}"`,
  );
}

/** `syncBoundClaim` — upstream's "[Unit test set 3]". */
export function syncBoundClaim(plan: SyncPlan, claim: PersistentVolumeClaim, snapshot: ClaimSnapshot): void {
  const volumeName = claim.spec.volumeName ?? '';
  if (volumeName === '') {
    updateClaimStatusWithEvent(plan, claim, ClaimPhase.Lost, undefined, 'Warning', Reason.ClaimLost, Message.lostReference);
    return;
  }
  const volume = snapshot.volumes.find((v) => v.metadata.name === volumeName);
  if (!volume) {
    updateClaimStatusWithEvent(plan, claim, ClaimPhase.Lost, undefined, 'Warning', Reason.ClaimLost, Message.lostVolume);
    return;
  }
  if (!volume.spec.claimRef || (volume.spec.claimRef.uid ?? '') === (claim.metadata.uid ?? '')) {
    bind(plan, volume, claim);
    return;
  }
  updateClaimStatusWithEvent(plan, claim, ClaimPhase.Lost, undefined, 'Warning', Reason.ClaimMisbound, Message.misbound);
}
