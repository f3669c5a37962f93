/**
 * @deprecated The object model is lib/kube/objects.ts; this re-export stays only for the tests that still
 * import the shapes from here (test/unit/provisioner/*, test/provisioner/*). Delete when they move.
 */
export type {
  CSIPersistentVolumeSource,
  NodeSelectorRequirement,
  ObjectMeta,
  ObjectReference,
  PersistentVolume,
  PersistentVolumeClaim,
  PersistentVolumeClaimSpec,
  PersistentVolumeMode,
  PersistentVolumeReclaimPolicy,
  PersistentVolumeSpec,
  StorageClass,
  VolumeBindingMode,
  VolumeNodeAffinity,
} from '../kube/objects.ts';
export { deepCopy } from '../kube/objects.ts';
