/**
 * The Kubernetes objects the provisioner reads and writes, as JSON (the shape the API server, the
 * DynamoDB cache and the watch forwarder all carry). Only the fields the controller or a Provisioner
 * touches are typed; every object keeps the rest (`[field: string]: unknown`) untouched.
 */

/** `metadata` of any object. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [field: string]: unknown;
}

/** `core/v1` ObjectReference, as `spec.claimRef` carries it. */
export interface ObjectReference {
  kind?: string;
  apiVersion?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
}

export type PersistentVolumeReclaimPolicy = 'Delete' | 'Retain' | 'Recycle';
export type PersistentVolumeMode = 'Filesystem' | 'Block';
export type VolumeBindingMode = 'Immediate' | 'WaitForFirstConsumer';

export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

export interface VolumeNodeAffinity {
  required?: { nodeSelectorTerms: Array<{ matchExpressions?: NodeSelectorRequirement[]; matchFields?: NodeSelectorRequirement[] }> };
}

export interface CSIPersistentVolumeSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  [field: string]: unknown;
}

export interface PersistentVolumeSpec {
  capacity?: Record<string, string>;
  accessModes?: string[];
  claimRef?: ObjectReference;
  persistentVolumeReclaimPolicy?: PersistentVolumeReclaimPolicy;
  storageClassName?: string;
  mountOptions?: string[];
  volumeMode?: PersistentVolumeMode;
  nodeAffinity?: VolumeNodeAffinity;
  csi?: CSIPersistentVolumeSource;
  hostPath?: { path: string; type?: string };
  local?: { path: string; fsType?: string };
  [field: string]: unknown;
}

export interface PersistentVolume {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PersistentVolumeSpec;
  status?: { phase?: 'Pending' | 'Available' | 'Bound' | 'Released' | 'Failed'; message?: string; reason?: string };
}

export interface PersistentVolumeClaimSpec {
  accessModes?: string[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeName?: string;
  storageClassName?: string;
  volumeMode?: PersistentVolumeMode;
  selector?: unknown;
  dataSource?: { apiGroup?: string; kind: string; name: string };
  dataSourceRef?: { apiGroup?: string; kind: string; name: string; namespace?: string };
  [field: string]: unknown;
}

export interface PersistentVolumeClaim {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PersistentVolumeClaimSpec;
  status?: { phase?: 'Pending' | 'Bound' | 'Lost'; [field: string]: unknown };
}

export interface StorageClass {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  provisioner: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: PersistentVolumeReclaimPolicy;
  mountOptions?: string[];
  allowVolumeExpansion?: boolean;
  volumeBindingMode?: VolumeBindingMode;
  allowedTopologies?: unknown[];
}

/** A deep copy through JSON: objects from the cache are plain JSON, so this is exact. */
export function deepCopy<T>(obj: T): T {
  return structuredClone(obj);
}
