/**
 * Annotation keys and finalizer names of Kubernetes storage, written once for every controller
 * (`k8s.io/component-helpers/storage/volume`, `pkg/controller/volume/persistentvolume/util`,
 * `sig-storage-lib-external-provisioner/controller`). Names mirror upstream's Go constants.
 */

/** Set on a claim by the binder when the binding is complete. */
export const AnnBindCompleted = 'pv.kubernetes.io/bind-completed';
/** Set on a volume or claim whose binding the controller (not the user) made. */
export const AnnBoundByController = 'pv.kubernetes.io/bound-by-controller';
/** Set on every dynamically provisioned PV: the provisioner that made it. */
export const AnnDynamicallyProvisioned = 'pv.kubernetes.io/provisioned-by';
/** Set on a claim by the binder: the provisioner expected to provision it (GA key, read first). */
export const AnnStorageProvisioner = 'volume.kubernetes.io/storage-provisioner';
/** Beta storage-provisioner key, still written and read for compatibility. */
export const AnnBetaStorageProvisioner = 'volume.beta.kubernetes.io/storage-provisioner';
/** The node the scheduler picked for a WaitForFirstConsumer claim. */
export const AnnSelectedNode = 'volume.kubernetes.io/selected-node';
/** Alpha selected-node key: only a fallback when the GA key is absent. */
export const AnnAlphaSelectedNode = 'volume.alpha.kubernetes.io/selected-node';
/** CSI migration: the CSI driver an in-tree PV was migrated to. */
export const AnnMigratedTo = 'pv.kubernetes.io/migrated-to';
/** Beta storage-class annotation; wins over `spec.storageClassName` where present. */
export const AnnBetaStorageClass = 'volume.beta.kubernetes.io/storage-class';
/** Capacity before a resize (volume expansion recovery). */
export const AnnPreResizeCapacity = 'volume.alpha.kubernetes.io/pre-resize-capacity';
/** Marks the default StorageClass (GA and beta keys). */
export const AnnIsDefaultClass = 'storageclass.kubernetes.io/is-default-class';
export const AnnBetaIsDefaultClass = 'storageclass.beta.kubernetes.io/is-default-class';

/** The PV controller's finalizer on dynamically provisioned volumes (HonorPVReclaimPolicy). */
export const FinalizerPVController = 'kubernetes.io/pv-controller';
/** The external provisioner's PV finalizer (AddFinalizer / HonorPVReclaimPolicy). */
export const FinalizerExternalProvisioner = 'external-provisioner.volume.kubernetes.io/finalizer';
