/**
 * The Kubernetes objects the controllers read and write, as JSON: the shape the API server returns, the
 * DynamoDB cache stores and the watch forwarder carries (timestamps are RFC 3339 strings). Only the fields a
 * controller or a Provisioner touches are typed; every object keeps the rest (`[field: string]: unknown`)
 * untouched. One model for every controller (it follows `core/v1` and `storage/v1`; `@kubernetes/client-node`'s
 * `V1PersistentVolume…` classes carry `Date` objects and drop unknown fields, so they do not fit a JSON cache).
 *
 * @example
 * const className = getPersistentVolumeClaimClass(claim); // annotation, else spec.storageClassName, else ''
 */
import { AnnBetaStorageClass } from './annotations.ts';

/** `metadata` of any object. */
export interface ObjectMeta {
  name: string;
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

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** Any other string too: the API server may hold values newer than this model (and tables build them from strings). */
type Open<T extends string> = T | (string & {});

export type PersistentVolumeReclaimPolicy = 'Delete' | 'Retain' | 'Recycle';
export type PersistentVolumeMode = 'Filesystem' | 'Block';
export type VolumeBindingMode = 'Immediate' | 'WaitForFirstConsumer';
export type PersistentVolumePhase = 'Pending' | 'Available' | 'Bound' | 'Released' | 'Failed';
export type PersistentVolumeClaimPhase = 'Pending' | 'Bound' | 'Lost';

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
  claimRef?: ObjectReference | null;
  persistentVolumeReclaimPolicy?: Open<PersistentVolumeReclaimPolicy>;
  storageClassName?: string;
  mountOptions?: string[];
  volumeMode?: Open<PersistentVolumeMode>;
  volumeAttributesClassName?: string;
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
  status?: { phase?: Open<PersistentVolumePhase>; message?: string; reason?: string; [field: string]: unknown };
}

export interface PersistentVolumeClaimSpec {
  accessModes?: string[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  selector?: LabelSelector | null;
  storageClassName?: string | null;
  volumeName?: string;
  volumeMode?: Open<PersistentVolumeMode>;
  volumeAttributesClassName?: string;
  dataSource?: { apiGroup?: string; kind: string; name: string };
  dataSourceRef?: { apiGroup?: string; kind: string; name: string; namespace?: string };
  [field: string]: unknown;
}

export interface PersistentVolumeClaim {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PersistentVolumeClaimSpec;
  status?: {
    phase?: Open<PersistentVolumeClaimPhase>;
    accessModes?: string[];
    capacity?: Record<string, string>;
    currentVolumeAttributesClassName?: string;
    [field: string]: unknown;
  };
}

export interface StorageClass {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  provisioner: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: Open<PersistentVolumeReclaimPolicy>;
  mountOptions?: string[];
  allowVolumeExpansion?: boolean;
  volumeBindingMode?: Open<VolumeBindingMode>;
  allowedTopologies?: unknown[];
  [field: string]: unknown;
}

/** The pod fields the binder's `findNonScheduledPodsByPVC` reads. */
export interface Pod {
  metadata: ObjectMeta;
  spec?: { nodeName?: string; volumes?: Array<{ persistentVolumeClaim?: { claimName: string } }> };
  status?: { phase?: string };
}

/**
 * Upstream's `GetPersistentVolumeClaimClass` (component-helpers/storage/volume): the beta annotation wins
 * when present (even empty), then `spec.storageClassName`, else `""`. The one implementation of the rule:
 * the controllers and the cache's pending-claim index (lib/kube/cache-index.ts) all call it, so it accepts
 * cached JSON missing `metadata` or `spec`.
 */
export function getPersistentVolumeClaimClass(claim: {
  metadata?: { annotations?: Record<string, string> };
  spec?: { storageClassName?: string | null };
}): string {
  const annotations = claim.metadata?.annotations;
  if (annotations && Object.hasOwn(annotations, AnnBetaStorageClass)) return annotations[AnnBetaStorageClass];
  return claim.spec?.storageClassName ?? '';
}

/**
 * A deep copy: objects from the cache and the API server are plain JSON, copied here key by key, about five
 * times faster than `structuredClone` (which serializes to a buffer and back; a bind copies its objects
 * several times while it plans its writes). A key named `__proto__` (JSON allows it, and a CSI volume's
 * attributes are not validated) stays a key of the copy, as it was of the original; a value that is not
 * plain JSON (a Date, a Map) goes through `structuredClone`.
 */
export function deepCopy<T>(obj: T): T {
  return copyJson(obj) as T;
}

function copyJson(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyJson(value[i]);
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const copy = copyJson((value as Record<string, unknown>)[key]);
    if (key === '__proto__') Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
    else out[key] = copy;
  }
  return out;
}
