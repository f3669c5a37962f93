/**
 * Binding and phase changes (`pv_controller.go`): `bind` is four separate writes in a fixed order —
 * PV spec, PV status, PVC spec, PVC status — each skipped when already clean, no rollback; the next
 * sync finishes whatever a crash or a conflict left half-done.
 */
import { compareQuantities, quantityValue } from '../kube/quantity.ts';
import {
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_PRE_RESIZE_CAPACITY,
  ClaimPhase,
  VolumePhase,
} from './constants.ts';
import { VolumeWithoutCapacityError } from './errors.ts';
import { clone, hasAnnotation, isVolumeBoundToClaim } from './helpers.ts';
import type { SyncPlan } from './plan.ts';
import type { PersistentVolume, PersistentVolumeClaim } from './types.ts';

const setAnnotation = (meta: { annotations?: Record<string, string> }, key: string, value: string): void => {
  meta.annotations = { ...(meta.annotations ?? {}), [key]: value };
};

/**
 * `GetBindVolumeToClaim`: the volume with its claimRef pointing at the claim, plus
 * `bound-by-controller` when the volume was not already (pre-)bound to it. `dirty` is false when
 * nothing changed.
 */
export function getBindVolumeToClaim(
  volume: PersistentVolume,
  claim: PersistentVolumeClaim,
): { volume: PersistentVolume; dirty: boolean } {
  const shouldSetBoundByController = !isVolumeBoundToClaim(volume, claim);
  const next = clone(volume);
  let dirty = false;
  const ref = volume.spec.claimRef;
  if (
    !ref ||
    ref.name !== claim.metadata.name ||
    (ref.namespace ?? '') !== (claim.metadata.namespace ?? '') ||
    (ref.uid ?? '') !== (claim.metadata.uid ?? '')
  ) {
    next.spec.claimRef = {
      kind: 'PersistentVolumeClaim',
      namespace: claim.metadata.namespace,
      name: claim.metadata.name,
      uid: claim.metadata.uid,
      apiVersion: 'v1',
      resourceVersion: claim.metadata.resourceVersion,
    };
    dirty = true;
  }
  if (shouldSetBoundByController && !hasAnnotation(next.metadata, ANN_BOUND_BY_CONTROLLER)) {
    setAnnotation(next.metadata, ANN_BOUND_BY_CONTROLLER, 'yes');
    dirty = true;
  }
  return { volume: next, dirty };
}

/** `bindVolumeToClaim`: PUT the volume's claimRef (skipped when clean). */
export function bindVolumeToClaim(plan: SyncPlan, volume: PersistentVolume, claim: PersistentVolumeClaim): PersistentVolume {
  const { volume: next, dirty } = getBindVolumeToClaim(volume, claim);
  return dirty ? plan.updateVolume(next, 'bindVolumeToClaim') : volume;
}

/** `updateVolumePhase`: PUT status with the phase and message; nothing when the phase is already right. */
export function updateVolumePhase(plan: SyncPlan, volume: PersistentVolume, phase: string, message: string): PersistentVolume {
  if (volume.status?.phase === phase) return volume;
  const next = clone(volume);
  next.status = { ...(next.status ?? {}), phase, message };
  if (message === '') delete next.status.message;
  return plan.updateVolumeStatus(next, 'updateVolumePhase');
}

/** `updateVolumePhaseWithEvent`: the phase change and, only when it happens, the event. */
export function updateVolumePhaseWithEvent(
  plan: SyncPlan,
  volume: PersistentVolume,
  phase: string,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): PersistentVolume {
  if (volume.status?.phase === phase) return volume;
  const next = updateVolumePhase(plan, volume, phase, message);
  plan.event('PersistentVolume', volume, type, reason, message);
  return next;
}

/** `bindClaimToVolume`: PUT the claim's volumeName and binding annotations (skipped when clean). */
export function bindClaimToVolume(plan: SyncPlan, claim: PersistentVolumeClaim, volume: PersistentVolume): PersistentVolumeClaim {
  const next = clone(claim);
  let dirty = false;
  if (claim.spec.volumeName !== volume.metadata.name) {
    next.spec.volumeName = volume.metadata.name;
    if (!hasAnnotation(next.metadata, ANN_BOUND_BY_CONTROLLER)) setAnnotation(next.metadata, ANN_BOUND_BY_CONTROLLER, 'yes');
    dirty = true;
  }
  if (!hasAnnotation(next.metadata, ANN_BIND_COMPLETED)) {
    setAnnotation(next.metadata, ANN_BIND_COMPLETED, 'yes');
    dirty = true;
  }
  return dirty ? plan.updateClaim(next, 'bindClaimToVolume') : claim;
}

const sameList = (a: readonly string[] | undefined, b: readonly string[] | undefined): boolean =>
  JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * `updateClaimStatus`: the phase; with a volume, its access modes always and its capacity (or the
 * pre-resize capacity) only on the phase transition; without one, access modes and capacity cleared.
 * Throws {@link VolumeWithoutCapacityError} when binding to a volume without storage capacity.
 */
export function updateClaimStatus(
  plan: SyncPlan,
  claim: PersistentVolumeClaim,
  phase: string,
  volume: PersistentVolume | undefined,
): PersistentVolumeClaim {
  const next = clone(claim);
  const status = (next.status ??= {});
  const current = claim.status ?? {};
  let dirty = false;
  if (current.phase !== phase) {
    status.phase = phase;
    dirty = true;
  }
  if (!volume) {
    if (current.accessModes !== undefined) {
      delete status.accessModes;
      dirty = true;
    }
    if (current.capacity !== undefined) {
      delete status.capacity;
      dirty = true;
    }
    if (current.currentVolumeAttributesClassName !== undefined) {
      delete status.currentVolumeAttributesClassName;
      dirty = true;
    }
  } else {
    if (!sameList(current.accessModes, volume.spec.accessModes)) {
      if (volume.spec.accessModes === undefined) delete status.accessModes;
      else status.accessModes = [...volume.spec.accessModes];
      dirty = true;
    }
    if (current.phase !== phase) {
      const volumeCap = volume.spec.capacity?.storage;
      if (volumeCap === undefined) throw new VolumeWithoutCapacityError(volume.metadata.name);
      let capacity: Record<string, string> = { ...volume.spec.capacity };
      let effective = volumeCap;
      const preResize = volume.metadata.annotations?.[ANN_PRE_RESIZE_CAPACITY];
      if (preResize !== undefined && parses(preResize)) {
        capacity = { storage: preResize };
        effective = preResize;
      }
      const claimCap = current.capacity?.storage;
      if (claimCap === undefined || !parses(claimCap) || compareQuantities(effective, claimCap) !== 0) {
        status.capacity = capacity;
        dirty = true;
      }
      if ((current.phase ?? ClaimPhase.Pending) === ClaimPhase.Pending && phase === ClaimPhase.Bound) {
        const vac = volume.spec.volumeAttributesClassName;
        if (vac !== current.currentVolumeAttributesClassName) {
          if (vac === undefined) delete status.currentVolumeAttributesClassName;
          else status.currentVolumeAttributesClassName = vac;
          dirty = true;
        }
      }
    }
  }
  return dirty ? plan.updateClaimStatus(next, 'updateClaimStatus') : claim;
}

function parses(q: string): boolean {
  try {
    quantityValue(q);
    return true;
  } catch {
    return false;
  }
}

/** `updateClaimStatusWithEvent`: the status change and, only when the phase changes, the event. */
export function updateClaimStatusWithEvent(
  plan: SyncPlan,
  claim: PersistentVolumeClaim,
  phase: string,
  volume: PersistentVolume | undefined,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): PersistentVolumeClaim {
  if (claim.status?.phase === phase) return claim;
  const next = updateClaimStatus(plan, claim, phase, volume);
  plan.event('PersistentVolumeClaim', claim, type, reason, message);
  return next;
}

/**
 * `bind`: PV claimRef, PV phase Bound, PVC volumeName + annotations, PVC status Bound — each write
 * skipped when clean. Returns the bound pair as the API would return it.
 */
export function bind(
  plan: SyncPlan,
  volume: PersistentVolume,
  claim: PersistentVolumeClaim,
): { volume: PersistentVolume; claim: PersistentVolumeClaim } {
  let v = bindVolumeToClaim(plan, volume, claim);
  v = updateVolumePhase(plan, v, VolumePhase.Bound, '');
  let c = bindClaimToVolume(plan, claim, v);
  c = updateClaimStatus(plan, c, ClaimPhase.Bound, v);
  return { volume: v, claim: c };
}

/**
 * `unbindVolume`: a controller-bound volume loses its claimRef and `bound-by-controller`; a user
 * pre-bound one only its claimRef.uid. Then phase Available (a separate status write).
 */
export function unbindVolume(plan: SyncPlan, volume: PersistentVolume): PersistentVolume {
  const next = clone(volume);
  if (hasAnnotation(volume.metadata, ANN_BOUND_BY_CONTROLLER)) {
    delete next.spec.claimRef;
    delete next.metadata.annotations![ANN_BOUND_BY_CONTROLLER];
    if (Object.keys(next.metadata.annotations!).length === 0) delete next.metadata.annotations;
  } else if (next.spec.claimRef) {
    delete next.spec.claimRef.uid;
  }
  const updated = plan.updateVolume(next, 'unbindVolume');
  return updateVolumePhase(plan, updated, VolumePhase.Available, '');
}
