/**
 * Names the provisioner shares with Kubernetes and with upstream's ProvisionController
 * (`sig-storage-lib-external-provisioner/controller/controller.go`): annotations, the PV finalizer,
 * event reasons, metric names.
 */

export {
  AnnStorageProvisioner as annStorageProvisioner,
  AnnBetaStorageProvisioner as annBetaStorageProvisioner,
  AnnBetaStorageClass as annStorageClass,
  AnnSelectedNode as annSelectedNode,
  AnnAlphaSelectedNode as annAlphaSelectedNode,
  AnnDynamicallyProvisioned as annDynamicallyProvisioned,
  AnnMigratedTo as annMigratedTo,
  FinalizerExternalProvisioner as finalizerPV,
} from '../kube/annotations.ts';

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
