/**
 * The vocabulary of the PersistentVolume controller: annotation keys, finalizers, phases, event
 * reasons and message texts, exactly as upstream writes them
 * (`component-helpers/storage/volume`, `pkg/controller/volume/events`).
 */

/** Source component of every event the binder records. */
export const COMPONENT = 'persistentvolume-controller';

export {
  AnnBindCompleted as ANN_BIND_COMPLETED,
  AnnBoundByController as ANN_BOUND_BY_CONTROLLER,
  AnnDynamicallyProvisioned as ANN_DYNAMICALLY_PROVISIONED,
  AnnStorageProvisioner as ANN_STORAGE_PROVISIONER,
  AnnBetaStorageProvisioner as ANN_BETA_STORAGE_PROVISIONER,
  AnnSelectedNode as ANN_SELECTED_NODE,
  AnnMigratedTo as ANN_MIGRATED_TO,
  AnnBetaStorageClass as ANN_BETA_STORAGE_CLASS,
  AnnPreResizeCapacity as ANN_PRE_RESIZE_CAPACITY,
  AnnIsDefaultClass as ANN_IS_DEFAULT_CLASS,
  AnnBetaIsDefaultClass as ANN_BETA_IS_DEFAULT_CLASS,
  FinalizerPVController as FINALIZER_PV_CONTROLLER,
  FinalizerExternalProvisioner as FINALIZER_EXTERNAL_PROVISIONER,
} from '../kube/annotations.ts';

/** Prefix of in-tree plugin names; claimflow ships no in-tree plugin. */
export const IN_TREE_PREFIX = 'kubernetes.io/';

export const VolumePhase = {
  Pending: 'Pending',
  Available: 'Available',
  Bound: 'Bound',
  Released: 'Released',
  Failed: 'Failed',
} as const;
export type VolumePhase = (typeof VolumePhase)[keyof typeof VolumePhase];

export const ClaimPhase = {
  Pending: 'Pending',
  Bound: 'Bound',
  Lost: 'Lost',
} as const;
export type ClaimPhase = (typeof ClaimPhase)[keyof typeof ClaimPhase];

export const ReclaimPolicy = {
  Retain: 'Retain',
  Delete: 'Delete',
  Recycle: 'Recycle',
} as const;

export const BindingMode = {
  Immediate: 'Immediate',
  WaitForFirstConsumer: 'WaitForFirstConsumer',
} as const;

/** Event reasons (`pkg/controller/volume/events`). */
export const Reason = {
  FailedBinding: 'FailedBinding',
  VolumeMismatch: 'VolumeMismatch',
  WaitForFirstConsumer: 'WaitForFirstConsumer',
  WaitForPodScheduled: 'WaitForPodScheduled',
  ClaimLost: 'ClaimLost',
  ClaimMisbound: 'ClaimMisbound',
  ExternalProvisioning: 'ExternalProvisioning',
  ProvisioningFailed: 'ProvisioningFailed',
  VolumeFailedDelete: 'VolumeFailedDelete',
  VolumeFailedRecycle: 'VolumeFailedRecycle',
  VolumeUnknownReclaimPolicy: 'VolumeUnknownReclaimPolicy',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/** Message texts, verbatim from upstream. */
export const Message = {
  noVolumesNoClass: 'no persistent volumes available for this claim and no storage class is set',
  alreadyBound: (pv: string) => `volume "${pv}" already bound to a different claim.`,
  cannotBindRequested: (pv: string, reason: string) => `Cannot bind to requested volume "${pv}": ${reason}`,
  volumeModeMismatchOnVolume: (claim: string) =>
    `Cannot bind PersistentVolume to requested PersistentVolumeClaim "${claim}" due to incompatible volumeMode.`,
  volumeModeMismatchOnClaim: (pv: string) =>
    `Cannot bind PersistentVolume "${pv}" to requested PersistentVolumeClaim due to incompatible volumeMode.`,
  waitForFirstConsumer: 'waiting for first consumer to be created before binding',
  waitForPods: (pods: readonly string[]) =>
    pods.length > 1 ? `waiting for pods ${pods.join(',')} to be scheduled` : `waiting for pod ${pods[0]} to be scheduled`,
  lostReference: 'Bound claim has lost reference to PersistentVolume. Data on the volume is lost!',
  lostVolume: 'Bound claim has lost its PersistentVolume. Data on the volume is lost!',
  misbound: 'Two claims are bound to the same volume, this one is bound incorrectly',
  externalProvisioning: (name: string) =>
    `Waiting for a volume to be created either by the external provisioner '${name}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`,
  unknownReclaimPolicy: 'Volume has unrecognized PersistentVolumeReclaimPolicy',
  noRecycler: 'No recycler plugin found for the volume!',
  noDeleter: (pv: string) => `error getting deleter volume plugin for volume "${pv}": no volume plugin matched`,
  classNotFound: (sc: string) => `storageclass.storage.k8s.io "${sc}" not found`,
  /** The volume plugin manager's lookup error (claimflow has no in-tree plugins, so every lookup fails). */
  noVolumePlugin: 'no volume plugin matched',
  noVolumePluginByName: (name: string) => `no volume plugin matched name: ${name}`,
  volumeBindingModeNotSet: (sc: string) => `VolumeBindingMode not set for StorageClass "${sc}"`,
} as const;

/** checkVolumeSatisfyClaim's reasons, in the order they are checked. */
export const Mismatch = {
  deleting: (pv: string) => `the volume is marked for deletion "${pv}"`,
  tooSmall: 'requested PV is too small',
  className: 'storageClassName does not match',
  volumeAttributesClass: 'volumeAttributesClassName does not match',
  volumeMode: 'incompatible volumeMode',
  accessMode: 'incompatible accessMode',
} as const;

/** Canonical access-mode order of upstream's index (`RWO,ROX,RWX,RWOP`). */
export const ACCESS_MODE_ORDER = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] as const;
