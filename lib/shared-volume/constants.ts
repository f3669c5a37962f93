/**
 * Names and numbers of the shared volume controller (api-manager `internal/controllers/sharedvolume`;
 * reference storageos.md §1).
 */

/** The event recorder's `source.component` (api-manager `EventSourceName`). */
export const COMPONENT = 'storageos-api-manager';

/** The controller name: backoff and metrics dimension. */
export const CONTROLLER_NAME = 'shared-volume';

/** Label on the Service and Endpoints naming the StorageOS volume (a debugging aid; never compared). */
export const VOLUME_ID_LABEL = 'storageos.com/volume-id';

/** The Service port clients mount: `<ClusterIP>:2049`. */
export const NFS_PORT = 2049;

/** The name of the single Service / Endpoints port. */
export const NFS_PORT_NAME = 'nfs';

/** Event reasons and message formats (§1.11), recorded on the Service. */
export const EVENTS = {
  created: { type: 'Normal', reason: 'Created', format: 'Created service for shared volume %s/%s' },
  updated: { type: 'Warning', reason: 'Updated', format: 'Shared volume service target changed %s/%s' },
} as const;

/** Metric names (EMF, namespace `claimflow`, dimension `controller`). */
export const SV_METRIC = {
  /** Listed shared volumes whose claim does not exist (the third qualification rule). */
  claimMissing: 'SharedVolumeClaimMissing',
  /** Volumes reconciled (cache miss or stale entry). */
  reconciled: 'SharedVolumeReconciled',
  /** Volumes skipped because their cache entry was fresh and equal. */
  cacheHits: 'SharedVolumeCacheHit',
  /** Volumes whose reconcile failed (retried next poll). */
  failed: 'SharedVolumeFailed',
  /** Mount endpoints written to the control plane. */
  published: 'SharedVolumePublished',
  /** A list of shared volumes failed. */
  listFailed: 'SharedVolumeListFailed',
  /** Duration of one poll iteration (`storageos_shared_volume_reconcile_duration_seconds`). */
  pollDuration: 'SharedVolumePollDuration',
} as const;
