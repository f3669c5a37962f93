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
  /** Volumes skipped because another invocation held their lease (the poll skips, the event path requeues). */
  busy: 'SharedVolumeBusy',
  /** Volumes left for the next pass because the invocation's stop time was near. */
  deferred: 'SharedVolumeDeferred',
  /** Scheduled invocations that did not poll because another invocation owned the cluster's poll. */
  pollNotOwner: 'SharedVolumePollNotOwner',
  /** Time a scheduled invocation waited for the previous poll owner's handover. */
  handoverWait: 'SharedVolumeHandoverWait',
} as const;

/** The lease (control table `lease#…`) of the one invocation polling a cluster. */
export const pollLeaseName = (cluster: string): string => `sv-poll#${cluster}`;

/** The lease of the one invocation reconciling a volume (the poll or the event path). */
export const volumeLeaseName = (cluster: string, volumeId: string): string => `sv-volume#${cluster}#${volumeId}`;

/**
 * No pass or volume is started with less than this before the stop time (the volume waits for the next pass);
 * a poll interval shorter than this (tests) is used instead: {@link startReserveMs}.
 */
export const VOLUME_START_RESERVE_MS = 1000;

/** The start reserve for a poll interval: {@link VOLUME_START_RESERVE_MS}, or the interval when it is shorter. */
export const startReserveMs = (pollIntervalMs: number): number => Math.max(1, Math.min(VOLUME_START_RESERVE_MS, pollIntervalMs));

/**
 * A volume's step (claim, Service, Endpoints, publish) is aborted after the create wait plus this, and its lease
 * lasts as long: a slow API never holds a volume for longer.
 */
export const VOLUME_STEP_SLACK_MS = 10_000;

/** A per-volume lease outlives its step's deadline by this (the release after an abort). */
export const VOLUME_LEASE_SLACK_MS = 1000;

/** How soon the event path retries a volume another invocation held. */
export const BUSY_REQUEUE_MS = 1000;

/** How often an invocation waiting for the poll handover looks at the lease. */
export const HANDOVER_CHECK_MS = 250;

/**
 * A last pass is squeezed in before the stop time (closer than the poll interval) only when at least this long
 * after the previous one; it keeps the gap to the next invocation's first pass short.
 */
export const FINAL_PASS_MIN_GAP_MS = 1000;
