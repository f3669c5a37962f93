/**
 * Metric names mirroring upstream's PersistentVolume controller (`persistentvolume/metrics`), published
 * as EMF through the runtime's Powertools Metrics, plus the counts the serverless shell adds.
 */
export const BinderMetric = {
  /** Claims given the default StorageClass retroactively. */
  retroactiveStorageClassTotal: 'retroactive_storageclass_total',
  /** Failed retroactive assignments (upstream counts these in both counters). */
  retroactiveStorageClassErrorsTotal: 'retroactive_storageclass_errors_total',
  /** End-to-end seconds, dimension operation_name: `provision` (hand-off until bound), `bind` (claim creation until bound). */
  volumeOperationTotalSeconds: 'volume_operation_total_seconds',
  /** Failed operations, dimension operation_name. */
  volumeOperationTotalErrors: 'volume_operation_total_errors',
  /** API writes made by one reconcile. */
  apiWrites: 'binder_api_writes',
  /** Pending claims enqueued because a volume became Available. */
  pendingClaimsEnqueued: 'binder_pending_claims_enqueued',
  /** Claims a volume's reconcile bound itself instead of requeueing them (a provisioned volume's claim). */
  inlineBinds: 'binder_inline_binds',
  /** Deleted claims whose volume the deletion's reconcile synced itself instead of requeueing it. */
  inlineReleases: 'binder_inline_releases',
} as const;
