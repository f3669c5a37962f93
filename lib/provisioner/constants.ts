/**
 * Names the provisioner shares with Kubernetes and with upstream's ProvisionController
 * (`sig-storage-lib-external-provisioner/controller/controller.go`): annotations, the PV finalizer,
 * event reasons, metric names.
 */

/** GA storage-provisioner annotation the PV controller (KCM) sets on a claim; read first. */
export const annStorageProvisioner = 'volume.kubernetes.io/storage-provisioner';
/** Beta storage-provisioner annotation; read only when the GA key is absent. */
export const annBetaStorageProvisioner = 'volume.beta.kubernetes.io/storage-provisioner';
/** Beta storage-class annotation on a claim; wins over `spec.storageClassName`. */
export const annStorageClass = 'volume.beta.kubernetes.io/storage-class';
/** The node the scheduler picked for a WaitForFirstConsumer claim. */
export const annSelectedNode = 'volume.kubernetes.io/selected-node';
/** Alpha selected-node key: only a fallback for `SelectedNodeName`. */
export const annAlphaSelectedNode = 'volume.alpha.kubernetes.io/selected-node';
/** Set on every PV we provision: the StorageClass's provisioner. */
export const annDynamicallyProvisioned = 'pv.kubernetes.io/provisioned-by';
/** CSI migration: the CSI driver an in-tree PV was migrated to. */
export const annMigratedTo = 'pv.kubernetes.io/migrated-to';

/** The PV finalizer added when `AddFinalizer` is on (HonorPVReclaimPolicy). */
export const finalizerPV = 'external-provisioner.volume.kubernetes.io/finalizer';

/** Default PV name prefix: `pvc-<claim uid>`. */
export const pvNamePrefix = 'pvc-';

/** Event reasons, exactly as upstream records them. */
export const EventReason = {
  Provisioning: 'Provisioning',
  ProvisioningSucceeded: 'ProvisioningSucceeded',
  ProvisioningFailed: 'ProvisioningFailed',
  ProvisioningCleanupFailed: 'ProvisioningCleanupFailed',
  VolumeFailedDelete: 'VolumeFailedDelete',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

/** Metric names (subsystem `controller`), as `controller/metrics/metrics.go` registers them. */
export const MetricName = {
  provisionTotal: 'controller_persistentvolumeclaim_provision_total',
  provisionFailedTotal: 'controller_persistentvolumeclaim_provision_failed_total',
  provisionDuration: 'controller_persistentvolumeclaim_provision_duration_seconds',
  deleteTotal: 'controller_persistentvolume_delete_total',
  deleteFailedTotal: 'controller_persistentvolume_delete_failed_total',
  deleteDuration: 'controller_persistentvolume_delete_duration_seconds',
} as const;
