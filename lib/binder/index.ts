/**
 * The binder's pure decision core: the upstream PersistentVolume controller's sync functions as
 * functions of a snapshot that return the ordered writes, events and requeues to make.
 */
export * from './constants.ts';
export * from './errors.ts';
export type * from './types.ts';
export { syncClaim, syncUnboundClaim, syncBoundClaim } from './sync-claim.ts';
export { syncVolume, reclaimVolume, isVolumeReleased, findDeletablePlugin } from './sync-volume.ts';
export { findBestMatchForClaim, findMatchingVolume, checkVolumeSatisfyClaim, allPossibleMatchingAccessModes } from './match.ts';
export { bind, bindVolumeToClaim, bindClaimToVolume, updateClaimStatus, updateVolumePhase, unbindVolume, getBindVolumeToClaim } from './bind.ts';
export { getDefaultClass, isDelayBindingMode, provisionClaim } from './provision.ts';
export { SyncPlan } from './plan.ts';
export { applyActions, type ActionSink, type ApplyOutcome } from './apply.ts';
export * from './helpers.ts';
