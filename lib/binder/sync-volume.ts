/**
 * `syncVolume` and reclaim (`pv_controller.go`) — upstream's "[Unit test set 4]".
 *
 * The shell resolves the claim the volume's claimRef names (cache, then a live GET while the volume is
 * neither Released nor Failed, and again when the uid differs); the core treats a claim with another
 * uid as gone.
 *
 * @example
 * const { actions } = syncVolume({ volume, claim });
 */
import {
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_MIGRATED_TO,
  FINALIZER_EXTERNAL_PROVISIONER,
  FINALIZER_PV_CONTROLLER,
  IN_TREE_PREFIX,
  Message,
  ReclaimPolicy,
  Reason,
  VolumePhase,
} from './constants.ts';
import { unbindVolume, updateVolumePhase, updateVolumePhaseWithEvent } from './bind.ts';
import { BinderSyncError } from './errors.ts';
import { checkVolumeModeMismatches, claimToClaimKey, clone, hasAnnotation } from './helpers.ts';
import { SyncPlan } from './plan.ts';
import type { PersistentVolume, PersistentVolumeClaim, SyncResult, VolumeSnapshot } from './types.ts';

/** Runs one sync of a volume against its snapshot and returns the writes and events to make. */
export function syncVolume(snapshot: VolumeSnapshot): SyncResult {
  const plan = new SyncPlan();
  try {
    syncVolumeInto(plan, snapshot);
    return plan.result();
  } catch (error) {
    if (error instanceof BinderSyncError) return plan.result(error);
    throw error;
  }
}

const releasedOrFailed = (volume: PersistentVolume): boolean =>
  volume.status?.phase === VolumePhase.Released || volume.status?.phase === VolumePhase.Failed;

function syncVolumeInto(plan: SyncPlan, snapshot: VolumeSnapshot): void {
  let volume = updateVolumeMigrationAnnotationsAndFinalizers(plan, snapshot.volume);
  const ref = volume.spec.claimRef;
  if (!ref || !ref.uid) {
    // Unused, or reserved for a claim that has not bound yet: the claim sync handles it.
    updateVolumePhase(plan, volume, VolumePhase.Available, '');
    return;
  }
  let claim: PersistentVolumeClaim | undefined = snapshot.claim;
  if (claim && claim.metadata.uid !== ref.uid) claim = undefined;

  if (!claim) {
    // The claim was deleted (possibly re-created with another uid). Keep a Failed phase visible.
    if (!releasedOrFailed(volume)) volume = updateVolumePhase(plan, volume, VolumePhase.Released, '');
    reclaimVolume(plan, volume, undefined);
    return;
  }
  const volumeName = claim.spec.volumeName ?? '';
  if (volumeName === '') {
    if (checkVolumeModeMismatches(claim, volume)) {
      plan.event('PersistentVolume', volume, 'Warning', Reason.VolumeMismatch, Message.volumeModeMismatchOnVolume(claim.metadata.name));
      plan.event('PersistentVolumeClaim', claim, 'Warning', Reason.VolumeMismatch, Message.volumeModeMismatchOnClaim(volume.metadata.name));
      return;
    }
    // Bound on the volume side only: the claim sync completes it.
    plan.enqueue('PersistentVolumeClaim', claimToClaimKey(claim));
    return;
  }
  if (volumeName === volume.metadata.name) {
    updateVolumePhase(plan, volume, VolumePhase.Bound, '');
    return;
  }
  // The claim is bound to another volume.
  if (hasAnnotation(volume.metadata, ANN_DYNAMICALLY_PROVISIONED) && volume.spec.persistentVolumeReclaimPolicy === ReclaimPolicy.Delete) {
    if (!releasedOrFailed(volume)) volume = updateVolumePhase(plan, volume, VolumePhase.Released, '');
    reclaimVolume(plan, volume, claim);
    return;
  }
  unbindVolume(plan, volume);
}

/**
 * `updateVolumeMigrationAnnotationsAndFinalizers`: no CSI migration in claimflow, so a provisioned
 * volume loses any `migrated-to`; `modifyDeletionFinalizers` for volumes provisioned by an in-tree
 * (`kubernetes.io/`) name. At most one PUT.
 */
function updateVolumeMigrationAnnotationsAndFinalizers(plan: SyncPlan, volume: PersistentVolume): PersistentVolume {
  const provisioner = volume.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED];
  if (provisioner === undefined) return volume;
  const next = clone(volume);
  let dirty = false;
  if (next.metadata.annotations?.[ANN_MIGRATED_TO]) {
    delete next.metadata.annotations[ANN_MIGRATED_TO];
    dirty = true;
  }
  if (provisioner.startsWith(IN_TREE_PREFIX)) {
    const finalizers = [...(next.metadata.finalizers ?? [])];
    const policy = next.spec.persistentVolumeReclaimPolicy;
    const has = finalizers.includes(FINALIZER_PV_CONTROLLER);
    let changed = false;
    let out = finalizers;
    if (policy === ReclaimPolicy.Delete && !has) {
      out = [...out, FINALIZER_PV_CONTROLLER];
      changed = true;
    } else if ((policy === ReclaimPolicy.Retain || policy === ReclaimPolicy.Recycle) && has) {
      out = out.filter((f) => f !== FINALIZER_PV_CONTROLLER);
      changed = true;
    }
    if (out.includes(FINALIZER_EXTERNAL_PROVISIONER)) {
      out = out.filter((f) => f !== FINALIZER_EXTERNAL_PROVISIONER);
      changed = true;
    }
    if (changed) {
      if (out.length === 0) delete next.metadata.finalizers;
      else next.metadata.finalizers = out;
      dirty = true;
    }
  }
  return dirty ? plan.updateVolume(next, 'updateVolumeMigrationAnnotationsAndFinalizers') : volume;
}

/**
 * `isVolumeReleased`: the claimRef has a uid and the claim is gone, or bound to another volume.
 */
export function isVolumeReleased(volume: PersistentVolume, claim: PersistentVolumeClaim | undefined): boolean {
  const ref = volume.spec.claimRef;
  if (!ref || !ref.uid) return false;
  if (claim && claim.metadata.uid === ref.uid) {
    const name = claim.spec.volumeName ?? '';
    return name !== '' && name !== volume.metadata.name;
  }
  return true;
}

/**
 * `reclaimVolume`: Retain ⇒ nothing; Delete ⇒ the delete operation; Recycle ⇒ the recycle operation;
 * anything else ⇒ Failed with VolumeUnknownReclaimPolicy. `migrated-to` ⇒ stand down.
 */
export function reclaimVolume(plan: SyncPlan, volume: PersistentVolume, claim: PersistentVolumeClaim | undefined): void {
  if (volume.metadata.annotations?.[ANN_MIGRATED_TO]) return;
  switch (volume.spec.persistentVolumeReclaimPolicy) {
    case ReclaimPolicy.Retain:
      return;
    case ReclaimPolicy.Recycle:
      recycleVolumeOperation(plan, volume, claim);
      return;
    case ReclaimPolicy.Delete:
      deleteVolumeOperation(plan, volume, claim);
      return;
    default:
      updateVolumePhaseWithEvent(plan, volume, VolumePhase.Failed, 'Warning', Reason.VolumeUnknownReclaimPolicy, Message.unknownReclaimPolicy);
  }
}

/**
 * `findDeletablePlugin`, for a controller with no in-tree plugins: `'external'` when an external
 * provisioner owns the volume (non-`kubernetes.io/` provisioned-by, `migrated-to`, or a CSI source),
 * otherwise the error upstream reports for a missing plugin.
 */
export function findDeletablePlugin(volume: PersistentVolume): 'external' | Error {
  const provisioner = volume.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED];
  if (provisioner) {
    return provisioner.startsWith(IN_TREE_PREFIX) ? new Error(Message.noVolumePluginByName(provisioner)) : 'external';
  }
  if (hasAnnotation(volume.metadata, ANN_MIGRATED_TO)) return 'external';
  if (volume.spec.csi) return 'external';
  return new Error(Message.noDeleter(volume.metadata.name));
}

/**
 * `deleteVolumeOperation`: an external deleter ⇒ leave the volume Released for it (no event); no
 * deleter ⇒ Failed + VolumeFailedDelete with the error text (only on the phase change).
 */
function deleteVolumeOperation(plan: SyncPlan, volume: PersistentVolume, claim: PersistentVolumeClaim | undefined): void {
  if (!isVolumeReleased(volume, claim)) return;
  const plugin = findDeletablePlugin(volume);
  if (plugin === 'external') return;
  updateVolumePhaseWithEvent(plan, volume, VolumePhase.Failed, 'Warning', Reason.VolumeFailedDelete, plugin.message);
}

/** `recycleVolumeOperation`: claimflow has no recycler ⇒ Failed + VolumeFailedRecycle. */
function recycleVolumeOperation(plan: SyncPlan, volume: PersistentVolume, claim: PersistentVolumeClaim | undefined): void {
  if (!isVolumeReleased(volume, claim)) return;
  updateVolumePhaseWithEvent(plan, volume, VolumePhase.Failed, 'Warning', Reason.VolumeFailedRecycle, Message.noRecycler);
}
