/**
 * Contracts inside the Kubernetes API emulator.
 *
 * The emulator is split in two halves that meet only here:
 * - the generic machinery (HTTP server, revision log, store, list/watch, selectors, patch, errors,
 *   discovery, tables, OpenAPI) drives every request through a {@link KindSpec};
 * - the per-kind semantics (decoding and canonical quantities, defaults, registry strategies,
 *   validation, admission plugins and the cluster-side controllers) fill those specs in.
 *
 * Names mirror upstream (`PrepareForCreate`, `ValidateUpdate`, `AllowUnconditionalUpdate`,
 * `ReturnDeletedObject`) so a reader can hold this code next to `pkg/registry/core/<kind>/strategy.go`.
 */

/** Any Kubernetes object as JSON. */
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: any;
};

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  [field: string]: any;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** One field-level validation failure; becomes a `details.causes[]` entry of a 422 Invalid. */
export interface FieldError {
  type: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueNotSupported'
    | 'FieldValueDuplicate' | 'FieldValueTooLong' | 'FieldValueTooMany';
  /** JSON path as upstream prints it: `spec.accessModes`, `metadata.labels`, `spec.ports[0].name`. */
  field: string;
  /** The offending value, printed as upstream does (`Invalid value: "x": ...`); omit for Required/Forbidden. */
  value?: unknown;
  /** The detail text after the value. */
  detail: string;
}

/** What a write is doing, for strategies and admission. */
export type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

export interface ColumnDefinition {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format: string;
  description: string;
  priority: number;
}

/**
 * The registry strategy of one kind (upstream `rest.RESTCreateStrategy` + `RESTUpdateStrategy`).
 * Every hook mutates in place or returns errors; none performs I/O.
 */
export interface KindStrategy {
  /**
   * Decode-time normalisation, run on every body the server accepts (create, update, patch result):
   * canonical quantities, type checks. Throws a {@link StatusError} 400 BadRequest when the body cannot
   * be "handled as a <Kind>" (bad quantity, wrong JSON type).
   */
  decode(obj: KubeObject): void;
  /** Defaulting (`pkg/apis/core/v1/defaults.go`), applied on decode and before every response. */
  defaults(obj: KubeObject): void;
  /** `PrepareForCreate`: status reset or kept, kind-specific fields. */
  prepareForCreate(obj: KubeObject): void;
  /**
   * `PrepareForUpdate` for the main resource (`subresource` undefined: status copied from old) or the
   * status subresource (`'status'`: spec copied from old). What a status write does with metadata is the
   * kind's, as upstream's status strategies differ: VolumeAttachment keeps all that
   * `metav1.ResetObjectMetaForStatus` keeps (`resetObjectMetaForStatus`), Pod its ownerReferences, Deployment its
   * labels; the others apply the body's labels, annotations, finalizers and ownerReferences.
   */
  prepareForUpdate(obj: KubeObject, old: KubeObject, subresource?: 'status'): void;
  validate(obj: KubeObject): FieldError[];
  validateUpdate(obj: KubeObject, old: KubeObject, subresource?: 'status'): FieldError[];
  /** `Warning:` header texts for a write (e.g. Recycle deprecated, v1 Endpoints deprecated). */
  warnings?(obj: KubeObject, old?: KubeObject): string[];
}

/** Everything the generic machinery needs to serve one resource. */
export interface KindSpec {
  group: '' | 'storage.k8s.io' | 'coordination.k8s.io' | 'events.k8s.io' | 'apps' | 'rbac.authorization.k8s.io';
  version: 'v1';
  kind: string;
  /** Resource name in paths and discovery: `persistentvolumeclaims`. */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories?: string[];
  /** Subresources served besides the object itself. */
  subresources: Array<'status'>;
  verbs: string[];
  /** Immediate DELETE answers with the object (true) or a Success Status (false). */
  returnDeletedObject: boolean;
  /** PUT without metadata.resourceVersion allowed (false only for Lease). */
  allowUnconditionalUpdate: boolean;
  /** PUT of a missing object creates it (Lease). */
  allowCreateOnUpdate: boolean;
  /** Field-selector set (`pkg/apis/core/v1/conversion.go`); keys not returned are unsupported → 400. */
  selectableFields(obj: KubeObject): Record<string, string>;
  /** Server-side Table printing; absent ⇒ default Name/Age columns (`DefaultTableConvertor`). */
  table?: {
    columns: ColumnDefinition[];
    row(obj: KubeObject, now: Date): unknown[];
  };
  /**
   * Another resource stored in the same place and seen through conversion (events.k8s.io/v1 Event
   * over core/v1 Event). Objects are stored in the storage form; `toView`/`fromView` convert.
   */
  /**
   * Protobuf is spoken for this kind when `protobuf/schema.ts` has its message (built-in kinds); `false`
   * makes it JSON-only, as a CustomResourceDefinition's kinds are (415 for a protobuf body; an Accept
   * asking for protobuf falls through to the next range or 406).
   */
  protobuf?: boolean;
  storedAs?: { kind: string; group: string; toView(stored: KubeObject): KubeObject; fromView(view: KubeObject): KubeObject };
  strategy: KindStrategy;
}

/** A ref to a stored object. `namespace` is '' for cluster-scoped kinds. */
export interface ObjectRef {
  /** `${group}/${plural}`, e.g. `/persistentvolumes`, `storage.k8s.io/storageclasses`. */
  resource: string;
  namespace: string;
  name: string;
}

/** A change to the store, in revision order; what watches and controllers see. */
export interface StoreEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: string;
  /** The object after the change (for DELETED: the last state with the deletion revision as RV). */
  object: KubeObject;
  /** The object before the change (MODIFIED, DELETED). */
  previous?: KubeObject;
  revision: number;
}

export interface DeleteOptions {
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: string[];
}

/**
 * The emulator's object store as the per-kind half (admission, controllers) uses it: the same code paths
 * as HTTP requests (validation, admission, finalizers, revisions, watch events), without HTTP.
 * Every method throws {@link StatusError} exactly as the HTTP handler would answer.
 */
export interface Store {
  /** The specs of every served resource, keyed by `ObjectRef.resource`. */
  readonly kinds: ReadonlyMap<string, KindSpec>;
  readonly revision: number;
  get(ref: ObjectRef): KubeObject | undefined;
  /** {@link get} without the copy, for a caller that only reads: it must neither change the object nor keep it. */
  peek(resource: string, namespace: string, name: string): KubeObject | undefined;
  list(resource: string, namespace?: string): KubeObject[];
  create(resource: string, obj: KubeObject): KubeObject;
  /**
   * A PUT: optimistic concurrency on metadata.resourceVersion when present. `finalize` is the Namespace
   * subresource that alone may change `spec.finalizers` (used by the namespace controller).
   */
  update(resource: string, obj: KubeObject, subresource?: 'status' | 'finalize'): KubeObject;
  delete(ref: ObjectRef, options?: DeleteOptions): { object: KubeObject; deleted: boolean };
  /** Subscribe to every change after the current revision; returns the unsubscribe function. */
  subscribe(listener: (event: StoreEvent) => void): () => void;
  /** {@link subscribe} without the copies: the listener must neither change the event nor keep its objects, nor throw. */
  watchRaw(listener: (event: StoreEvent) => void): () => void;
}

/** Context given to admission plugins. */
export interface AdmissionRequest {
  operation: Operation;
  resource: string;
  subresource?: 'status';
  object: KubeObject;
  old?: KubeObject;
  store: Store;
}

/**
 * An admission plugin (mutating then validating, as upstream orders them). Mutates `request.object` in
 * place; throws a StatusError (403 Forbidden, 404 NotFound, 422) to reject.
 */
export interface AdmissionPlugin {
  name: string;
  admit(request: AdmissionRequest): void;
}

/**
 * A cluster-side controller (garbage collector, pvc-protection, pv-protection, endpoints, namespace).
 * Started with the store; reacts to StoreEvents asynchronously (never inside the write that caused them)
 * and writes through the Store. Each can be switched off by name so a test can drive it by hand.
 */
export interface ClusterController {
  name: string;
  start(store: Store): void;
  stop(): void;
}

/** A Kubernetes API error that becomes a metav1.Status body. */
export class StatusError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details?: Record<string, unknown>;
  /** Extra response headers (Retry-After). */
  readonly headers?: Record<string, string>;
  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message);
    this.name = 'StatusError';
    this.code = code;
    this.reason = reason;
    this.details = details;
    this.headers = headers;
  }

  /** The metav1.Status body. */
  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}
