/**
 * What the binder's sync functions decide (writes, events, enqueues) and the snapshots they decide from.
 * The object shapes are the one model in lib/kube/objects.ts (re-exported here for the binder's callers).
 */
import type { PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../kube/objects.ts';

export type {
  LabelSelector,
  LabelSelectorRequirement,
  ObjectMeta,
  ObjectReference,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
} from '../kube/objects.ts';

export type BinderKind = 'PersistentVolume' | 'PersistentVolumeClaim';

/**
 * One API write, in upstream's order. `object` is the full body to PUT; its
 * `metadata.resourceVersion` is the version it was computed from. A write that follows another write
 * to the same object in the same result is `chained`: it is computed from the object the previous
 * write returned, so the applier must substitute the resourceVersion that write returned.
 */
export type BinderWrite =
  | {
      action: 'write';
      verb: 'update' | 'updateStatus';
      kind: 'PersistentVolume';
      object: PersistentVolume;
      chained: boolean;
      /** Upstream's function that makes this write (`bindVolumeToClaim`, `updateVolumePhase`...). */
      purpose: string;
    }
  | {
      action: 'write';
      verb: 'update' | 'updateStatus';
      kind: 'PersistentVolumeClaim';
      object: PersistentVolumeClaim;
      chained: boolean;
      purpose: string;
    };

/** An event to record on a PV or a PVC (source component `persistentvolume-controller`). */
export interface BinderEvent {
  action: 'event';
  kind: BinderKind;
  /** The object the event is about, as it was when the event was decided. */
  object: PersistentVolume | PersistentVolumeClaim;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** A key to reconcile next (upstream's `claimQueue.Add`). */
export interface BinderEnqueue {
  action: 'enqueue';
  kind: BinderKind;
  key: string;
}

export type BinderAction = BinderWrite | BinderEvent | BinderEnqueue;

/**
 * What a sync decided: the ordered actions (apply in order; stop at the first failed write — events
 * after it are not recorded, exactly as upstream returns on the first error) and, optionally, the error
 * the sync itself returns after the actions (upstream's `return err`).
 */
export interface SyncResult {
  actions: BinderAction[];
  error?: Error;
}

/** What syncClaim needs: the claim and the objects related to it. */
export interface ClaimSnapshot {
  claim: PersistentVolumeClaim;
  /**
   * Candidate volumes: every volume that could match (the shell passes the Query results of the
   * match index plus volumes pre-bound to the claim) and the volume `spec.volumeName` names, if it exists.
   */
  volumes: readonly PersistentVolume[];
  /** Every StorageClass (a cluster has few). */
  classes: readonly StorageClass[];
  /** Pods that reference the claim (only read for WaitForFirstConsumer claims). */
  pods?: readonly Pod[];
}

/** What syncVolume needs: the volume and the claim its claimRef names (if that claim exists). */
export interface VolumeSnapshot {
  volume: PersistentVolume;
  /** The claim at `claimRef.namespace/name`, or undefined when it does not exist. */
  claim?: PersistentVolumeClaim;
}
