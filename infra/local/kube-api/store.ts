/**
 * The emulator's object store: one global revision counter across every kind (etcd's revision), the
 * registry pipeline of `registry/generic/registry/store.go` (create, update, delete with finalizers)
 * driven by each kind's {@link KindSpec}, admission, and the watch history.
 *
 * Objects are kept as parsed JSON in their storage form and never mutated after they are stored: every
 * write builds a new object (clone on write), so reads for serialisation need no copy. The public
 * {@link Store} methods hand out clones; the `peek`/`scan`/`watchRaw` methods used by the HTTP layer do not.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { StatusError } from './types.ts';
import type {
  AdmissionPlugin, DeleteOptions, FieldError, KindSpec, KubeObject, ObjectRef, Operation, Store, StoreEvent,
} from './types.ts';
import { alreadyExists, badRequest, conflict, invalid, notFound, RawValue } from './errors.ts';
import { RevisionLog } from './revision-log.ts';

/** Store subresources: `status` (kind strategies) and `finalize` (Namespace `spec.finalizers`, generic). */
export type Subresource = 'status' | 'finalize';

/** Options for a write. */
export interface WriteOptions {
  /** `dryRun=All`: run every step but do not persist. */
  dryRun?: boolean;
}

/** The outcome of a write, with what the HTTP layer needs besides the object. */
export interface WriteResult {
  object: KubeObject;
  warnings: string[];
  /** PUT created the object (create-on-update). */
  created?: boolean;
  /** The object is gone (immediate delete, or last finalizer removed). */
  deleted?: boolean;
}

export interface StoreOptions {
  kinds: KindSpec[];
  admission?: AdmissionPlugin[];
  /** Events retained for watch resumption (default 10,000). */
  watchHistory?: number;
  /** Starting revision and objects, e.g. from a data file; older revisions are compacted. */
  initial?: { revision: number; objects: Array<{ resource: string; object: KubeObject }> };
}

/** `${group}/${plural}`. */
export const resourceKey = (spec: Pick<KindSpec, 'group' | 'plural'>): string => `${spec.group}/${spec.plural}`;

/** `v1` or `storage.k8s.io/v1`. */
export const apiVersionOf = (spec: Pick<KindSpec, 'group' | 'version'>): string => (spec.group ? `${spec.group}/${spec.version}` : spec.version);

const objectKey = (namespace: string, name: string): string => (namespace ? `${namespace}/${name}` : name);

/** RFC 3339 with whole seconds, as `metav1.Time` marshals. */
export const rfc3339Seconds = (d: Date = new Date()): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATE_ATTEMPTS = 8;

/** `names.SimpleNameGenerator`: base truncated to 58 chars + 5 random characters. */
export function generateName(base: string): string {
  const bytes = randomBytes(5);
  let suffix = '';
  for (const b of bytes) suffix += GENERATE_ALPHABET[b % GENERATE_ALPHABET.length];
  return base.slice(0, 58) + suffix;
}

const clone = <T>(v: T): T => structuredClone(v);

/** JSON deep equality. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let n = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    n++;
    if (!jsonEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (bo[k] !== undefined) n--;
  return n === 0;
}

/** Equal except `metadata.resourceVersion`: the bytes etcd would store are the same. */
function sameContent(a: KubeObject, b: KubeObject): boolean {
  const { metadata: am, ...ar } = a;
  const { metadata: bm, ...br } = b;
  const { resourceVersion: _a, ...amr } = am ?? {};
  const { resourceVersion: _b, ...bmr } = bm ?? {};
  return jsonEqual(amr, bmr) && jsonEqual(ar, br);
}

/** Go's `omitempty` on metadata: empty lists and maps are not stored. */
function normalizeMeta(obj: KubeObject): void {
  const m = obj.metadata;
  for (const k of ['finalizers', 'ownerReferences'] as const) if (Array.isArray(m[k]) && m[k]!.length === 0) delete m[k];
  for (const k of ['labels', 'annotations'] as const) if (m[k] && typeof m[k] === 'object' && Object.keys(m[k]!).length === 0) delete m[k];
  for (const k of Object.keys(m)) if (m[k] === null || m[k] === undefined) delete m[k];
}

/** How a served resource maps to what is stored (identity unless the kind declares `storedAs`). */
export interface Binding {
  spec: KindSpec;
  /** Where objects live. */
  storage: string;
  toStorage(view: KubeObject): KubeObject;
  toView(stored: KubeObject): KubeObject;
  identity: boolean;
}

type Listener = (event: StoreEvent) => void;

/** The in-memory store; see the module comment. */
export class MemoryStore implements Store {
  readonly #kinds = new Map<string, KindSpec>();
  readonly #bindings = new Map<string, Binding>();
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #sortedKeys = new Map<string, string[]>();
  readonly #admission: AdmissionPlugin[];
  readonly #log: RevisionLog;
  readonly #raw = new Set<Listener>();
  readonly #subscribers = new Set<Listener>();
  readonly #queue: StoreEvent[] = [];
  #dispatching = false;
  #revision: number;

  constructor(options: StoreOptions) {
    for (const spec of options.kinds) this.#kinds.set(resourceKey(spec), spec);
    for (const spec of options.kinds) {
      const key = resourceKey(spec);
      const storedAs = spec.storedAs;
      if (storedAs) {
        const target = options.kinds.find((k) => k.kind === storedAs.kind && k.group === storedAs.group);
        if (!target) throw new Error(`kube-api: ${key} is stored as ${storedAs.group}/${storedAs.kind}, which is not served`);
        this.#bindings.set(key, { spec, storage: resourceKey(target), toStorage: storedAs.fromView, toView: storedAs.toView, identity: false });
      } else {
        this.#bindings.set(key, { spec, storage: key, toStorage: (o) => o, toView: (o) => o, identity: true });
        this.#objects.set(key, new Map());
      }
    }
    this.#admission = options.admission ?? [];
    this.#revision = options.initial?.revision ?? 0;
    this.#log = new RevisionLog(options.watchHistory ?? 10_000, this.#revision);
    for (const { resource, object } of options.initial?.objects ?? []) {
      const map = this.#objects.get(resource);
      if (map) map.set(objectKey(object.metadata.namespace ?? '', object.metadata.name!), object);
    }
  }

  get kinds(): ReadonlyMap<string, KindSpec> {
    return this.#kinds;
  }

  get revision(): number {
    return this.#revision;
  }

  /** Resuming a watch needs a revision ≥ this. */
  get compactedRevision(): number {
    return this.#log.compacted;
  }

  /** The binding of a served resource; 404 when not served. */
  binding(resource: string): Binding {
    const b = this.#bindings.get(resource);
    if (!b) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource', {});
    return b;
  }

  // ---- reads -------------------------------------------------------------------------------------

  /** The stored object (view form) without a copy; callers must not mutate it. */
  peek(resource: string, namespace: string, name: string): KubeObject | undefined {
    const b = this.binding(resource);
    const obj = this.#objects.get(b.storage)!.get(objectKey(b.spec.namespaced ? namespace : '', name));
    return obj && b.toView(obj);
  }

  /** Stored objects (view form) ordered by key (namespace, name); callers must not mutate them. */
  scan(resource: string, namespace?: string): KubeObject[] {
    const b = this.binding(resource);
    const map = this.#objects.get(b.storage)!;
    let keys = this.#sortedKeys.get(b.storage);
    if (!keys) {
      keys = [...map.keys()].sort();
      this.#sortedKeys.set(b.storage, keys);
    }
    const out: KubeObject[] = [];
    if (namespace && b.spec.namespaced) {
      const prefix = `${namespace}/`;
      let lo = 0;
      let hi = keys.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (keys[mid] < prefix) lo = mid + 1; else hi = mid;
      }
      for (let i = lo; i < keys.length && keys[i].startsWith(prefix); i++) out.push(b.toView(map.get(keys[i])!));
    } else {
      for (const k of keys) out.push(b.toView(map.get(k)!));
    }
    return out;
  }

  /** Number of stored objects of a resource. */
  count(resource: string): number {
    return this.#objects.get(this.binding(resource).storage)!.size;
  }

  get(ref: ObjectRef): KubeObject | undefined {
    const obj = this.peek(ref.resource, ref.namespace, ref.name);
    return obj && clone(obj);
  }

  list(resource: string, namespace?: string): KubeObject[] {
    return this.scan(resource, namespace).map(clone);
  }

  /** Events after `revision` (storage resources), oldest first; check {@link compactedRevision} first. */
  history(revision: number): StoreEvent[] {
    return this.#log.since(revision);
  }

  /** Every object, for persistence. */
  dump(): Array<{ resource: string; object: KubeObject }> {
    const out: Array<{ resource: string; object: KubeObject }> = [];
    for (const [resource, map] of this.#objects) for (const object of map.values()) out.push({ resource, object });
    return out;
  }

  // ---- writes (Store interface) ------------------------------------------------------------------

  create(resource: string, obj: KubeObject): KubeObject {
    return clone(this.createObject(resource, obj).object);
  }

  update(resource: string, obj: KubeObject, subresource?: Subresource): KubeObject {
    return clone(this.updateObject(resource, obj, subresource).object);
  }

  delete(ref: ObjectRef, options?: DeleteOptions): { object: KubeObject; deleted: boolean } {
    const r = this.deleteObject(ref, options);
    return { object: clone(r.object), deleted: r.deleted ?? false };
  }

  /** Every change after the current revision, in order, never inside the write's own call stack frame order. */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    const wrapped: Listener = (e) => listener({ ...e, object: clone(e.object), ...(e.previous ? { previous: clone(e.previous) } : {}) });
    this.#subscribers.add(wrapped);
    return () => this.#subscribers.delete(wrapped);
  }

  /** Like {@link subscribe} without copies (HTTP watches, persistence); the listener must not mutate or throw. */
  watchRaw(listener: Listener): () => void {
    this.#raw.add(listener);
    return () => this.#raw.delete(listener);
  }

  // ---- the pipeline ------------------------------------------------------------------------------

  #prepareBody(b: Binding, input: KubeObject, owned: boolean): KubeObject {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) {
      throw badRequest(`${b.spec.kind} in version "${b.spec.version}" cannot be handled as a ${b.spec.kind}: the body must be a JSON object`);
    }
    const { apiVersion: _v, kind: _k, ...body } = owned ? input : clone(input);
    const obj: KubeObject = { apiVersion: apiVersionOf(b.spec), kind: b.spec.kind, ...body } as KubeObject;
    if (obj.metadata === null || obj.metadata === undefined) obj.metadata = {};
    if (typeof obj.metadata !== 'object' || Array.isArray(obj.metadata)) {
      throw badRequest(`${b.spec.kind} in version "${b.spec.version}" cannot be handled as a ${b.spec.kind}: json: cannot unmarshal ${Array.isArray(obj.metadata) ? 'array' : typeof obj.metadata} into Go struct field ${b.spec.kind}.metadata of type v1.ObjectMeta`);
    }
    b.spec.strategy.decode(obj);
    b.spec.strategy.defaults(obj);
    if (b.spec.namespaced) {
      if (!obj.metadata.namespace) throw badRequest('the namespace of the provided object is required');
    } else {
      delete obj.metadata.namespace;
    }
    return obj;
  }

  #admit(operation: Operation, resource: string, object: KubeObject, old?: KubeObject, subresource?: Subresource): void {
    for (const plugin of this.#admission) {
      plugin.admit({ operation, resource, ...(subresource === 'status' ? { subresource } : {}), object, ...(old ? { old } : {}), store: this });
    }
  }

  #invalid(spec: KindSpec, name: string, errors: FieldError[]): StatusError {
    return invalid(spec.kind, spec.group, name, errors);
  }

  /** POST: decode → defaults → admission → system metadata → PrepareForCreate → Validate → persist. */
  createObject(resource: string, input: KubeObject, options: WriteOptions & { owned?: boolean } = {}): WriteResult {
    const b = this.binding(resource);
    const spec = b.spec;
    const obj = this.#prepareBody(b, input, options.owned ?? false);
    this.#admit('CREATE', resource, obj);
    const m = obj.metadata;
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    delete m.resourceVersion;
    delete m.selfLink;
    m.uid = randomUUID();
    m.creationTimestamp = rfc3339Seconds();
    const map = this.#objects.get(b.storage)!;
    const ns = spec.namespaced ? m.namespace! : '';
    if (!m.name && m.generateName) {
      let attempt = 0;
      let candidate = generateName(m.generateName);
      while (map.has(objectKey(ns, candidate)) && ++attempt < MAX_GENERATE_ATTEMPTS) candidate = generateName(m.generateName);
      if (map.has(objectKey(ns, candidate))) {
        throw new StatusError(409, 'AlreadyExists', 'the server was not able to generate a unique name for the object',
          { kind: spec.plural, ...(spec.group ? { group: spec.group } : {}), retryAfterSeconds: 1 }, { 'Retry-After': '1' });
      }
      m.name = candidate;
    }
    spec.strategy.prepareForCreate(obj);
    // defaulting runs again on every read upstream (decode from etcd): fields PrepareForCreate reset get their defaults
    spec.strategy.defaults(obj);
    normalizeMeta(obj);
    const errors = spec.strategy.validate(obj);
    if (errors.length) throw this.#invalid(spec, m.name ?? '', errors);
    if (map.has(objectKey(ns, m.name!))) throw alreadyExists(spec, m.name!);
    const warnings = spec.strategy.warnings?.(obj) ?? [];
    if (options.dryRun) return { object: obj, warnings };
    const stored = this.#persist(b, 'ADDED', obj);
    return { object: b.identity ? stored : obj, warnings };
  }

  /**
   * PUT (and the tail of PATCH): 404 unless AllowCreateOnUpdate; resourceVersion precondition;
   * PrepareForUpdate → admission → ValidateUpdate → delete when the last finalizer is gone → no-op check → persist.
   */
  updateObject(resource: string, input: KubeObject, subresource?: Subresource, options: WriteOptions & { owned?: boolean } = {}): WriteResult {
    const b = this.binding(resource);
    const spec = b.spec;
    let obj = this.#prepareBody(b, input, options.owned ?? false);
    const name = obj.metadata.name;
    if (!name) throw badRequest('name is required for an update');
    const ns = spec.namespaced ? obj.metadata.namespace! : '';
    const map = this.#objects.get(b.storage)!;
    const storedOld = map.get(objectKey(ns, name));
    if (!storedOld) {
      if (spec.allowCreateOnUpdate && !subresource) {
        return { ...this.createObject(resource, obj, { ...options, owned: true }), created: true };
      }
      throw notFound(spec, name);
    }
    const old = b.toView(storedOld);
    const om = old.metadata;
    const rv = obj.metadata.resourceVersion;
    if (!rv) {
      if (!spec.allowUnconditionalUpdate) {
        throw this.#invalid(spec, name, [{ type: 'FieldValueInvalid', field: 'metadata.resourceVersion', value: new RawValue('0x0'), detail: 'must be specified for an update' }]);
      }
      obj.metadata.resourceVersion = om.resourceVersion;
    } else if (rv !== om.resourceVersion) {
      throw conflict(spec, name);
    }
    if (obj.metadata.uid && obj.metadata.uid !== om.uid) {
      throw conflict(spec, name, `Precondition failed: UID in precondition: ${obj.metadata.uid}, UID in object meta: ${om.uid}`);
    }
    if (subresource === 'finalize') {
      const finalizers = obj.spec?.finalizers;
      obj = clone(old);
      obj.spec = { ...(obj.spec ?? {}) };
      if (Array.isArray(finalizers) && finalizers.length) obj.spec.finalizers = finalizers; else delete obj.spec.finalizers;
    }
    // rest.BeforeUpdate: system fields cannot be changed by an update
    const m = obj.metadata;
    if (om.generation !== undefined) m.generation = om.generation; else delete m.generation;
    if (!m.uid) m.uid = om.uid;
    m.creationTimestamp = om.creationTimestamp;
    if (om.deletionTimestamp !== undefined) {
      m.deletionTimestamp = om.deletionTimestamp;
      if (m.deletionGracePeriodSeconds === undefined && om.deletionGracePeriodSeconds !== undefined) m.deletionGracePeriodSeconds = om.deletionGracePeriodSeconds;
    } else {
      delete m.deletionTimestamp;
      delete m.deletionGracePeriodSeconds;
    }
    if (subresource !== 'finalize') spec.strategy.prepareForUpdate(obj, old, subresource);
    spec.strategy.defaults(obj);
    normalizeMeta(obj);
    this.#admit('UPDATE', resource, obj, old, subresource);
    const errors: FieldError[] = [];
    if (om.deletionTimestamp !== undefined) {
      const added = (m.finalizers ?? []).filter((f) => !(om.finalizers ?? []).includes(f));
      if (added.length) {
        errors.push({ type: 'FieldValueForbidden', field: 'metadata.finalizers',
          detail: `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}` });
      }
    }
    if (subresource !== 'finalize') errors.push(...spec.strategy.validateUpdate(obj, old, subresource === 'status' ? 'status' : undefined));
    if (errors.length) throw this.#invalid(spec, name, errors);
    const warnings = spec.strategy.warnings?.(obj, old) ?? [];
    if (om.deletionTimestamp !== undefined && !this.#pendingFinalizers(b, obj)) {
      if (options.dryRun) return { object: obj, warnings, deleted: true };
      return { object: this.#remove(b, obj, storedOld), warnings, deleted: true };
    }
    if (sameContent(obj, old)) return { object: old, warnings };
    if (options.dryRun) return { object: obj, warnings };
    const stored = this.#persist(b, 'MODIFIED', obj, storedOld);
    return { object: b.identity ? stored : obj, warnings };
  }

  /** True while the object must stay: metadata.finalizers, and for Namespaces also spec.finalizers. */
  #pendingFinalizers(b: Binding, obj: KubeObject): boolean {
    if ((obj.metadata.finalizers ?? []).length > 0) return true;
    return b.spec.kind === 'Namespace' && b.spec.group === '' && Array.isArray(obj.spec?.finalizers) && obj.spec.finalizers.length > 0;
  }

  /**
   * DELETE: preconditions, admission, propagation finalizers; with finalizers the object gets a
   * deletionTimestamp (MODIFIED), otherwise it is removed (DELETED).
   */
  deleteObject(ref: ObjectRef, options: DeleteOptions = {}, writeOptions: WriteOptions = {}): WriteResult {
    const b = this.binding(ref.resource);
    const spec = b.spec;
    const ns = spec.namespaced ? ref.namespace : '';
    const storedOld = this.#objects.get(b.storage)!.get(objectKey(ns, ref.name));
    if (!storedOld) throw notFound(spec, ref.name);
    const old = b.toView(storedOld);
    const om = old.metadata;
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== om.uid) {
      throw new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${spec.kind} "${ref.name}": the UID in the precondition (${pre.uid}) does not match the UID in record (${om.uid}). The object might have been deleted and then recreated`,
        { name: ref.name, ...(spec.group ? { group: spec.group } : {}), kind: spec.kind });
    }
    if (pre?.resourceVersion && pre.resourceVersion !== om.resourceVersion) {
      throw new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${spec.kind} "${ref.name}": the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${om.resourceVersion}). The object might have been modified`,
        { name: ref.name, ...(spec.group ? { group: spec.group } : {}), kind: spec.kind });
    }
    if (options.propagationPolicy && !['Orphan', 'Background', 'Foreground'].includes(options.propagationPolicy)) {
      throw invalid('DeleteOptions', 'meta.k8s.io', '', [{ type: 'FieldValueNotSupported', field: 'propagationPolicy', value: options.propagationPolicy, detail: 'supported values: "Foreground", "Background", "Orphan", "nil"' }]);
    }
    this.#admit('DELETE', ref.resource, old, old);
    if (om.deletionTimestamp !== undefined) return { object: old, warnings: [] };
    const policy = options.propagationPolicy
      ?? (options.orphanDependents === true ? 'Orphan' : options.orphanDependents === false ? 'Background' : undefined);
    let finalizers = [...(om.finalizers ?? [])];
    if (policy === 'Orphan') finalizers = [...finalizers.filter((f) => f !== 'foregroundDeletion' && f !== 'orphan'), 'orphan'];
    else if (policy === 'Foreground') finalizers = [...finalizers.filter((f) => f !== 'foregroundDeletion' && f !== 'orphan'), 'foregroundDeletion'];
    else if (policy === 'Background') finalizers = finalizers.filter((f) => f !== 'foregroundDeletion' && f !== 'orphan');
    const next = clone(old);
    if (finalizers.length) next.metadata.finalizers = finalizers; else delete next.metadata.finalizers;
    if (this.#pendingFinalizers(b, next)) {
      next.metadata.deletionTimestamp = rfc3339Seconds();
      next.metadata.deletionGracePeriodSeconds = 0;
      if ((next.metadata.generation ?? 0) > 0) next.metadata.generation! += 1;
      if (spec.kind === 'Namespace' && spec.group === '') next.status = { ...(next.status ?? {}), phase: 'Terminating' };
      if (writeOptions.dryRun) return { object: next, warnings: [] };
      const stored = this.#persist(b, 'MODIFIED', next, storedOld);
      return { object: b.identity ? stored : next, warnings: [] };
    }
    if (writeOptions.dryRun) return { object: old, warnings: [], deleted: true };
    const gone = this.#remove(b, old, storedOld);
    return { object: gone, warnings: [], deleted: true };
  }

  #persist(b: Binding, type: 'ADDED' | 'MODIFIED', view: KubeObject, previous?: KubeObject): KubeObject {
    const revision = ++this.#revision;
    view.metadata.resourceVersion = String(revision);
    const stored = b.identity ? view : b.toStorage(view);
    stored.metadata.resourceVersion = String(revision);
    const map = this.#objects.get(b.storage)!;
    const key = objectKey(stored.metadata.namespace ?? '', stored.metadata.name!);
    if (type === 'ADDED') this.#sortedKeys.delete(b.storage);
    map.set(key, stored);
    this.#emit({ type, resource: b.storage, object: stored, ...(previous ? { previous } : {}), revision });
    return stored;
  }

  /** Removes an object; returns its last state carrying the deletion revision. */
  #remove(b: Binding, view: KubeObject, storedOld: KubeObject): KubeObject {
    const revision = ++this.#revision;
    const last = b.identity ? { ...view, metadata: { ...view.metadata, resourceVersion: String(revision) } } : b.toStorage(clone(view));
    last.metadata.resourceVersion = String(revision);
    if (!b.identity) view.metadata.resourceVersion = String(revision);
    const map = this.#objects.get(b.storage)!;
    map.delete(objectKey(storedOld.metadata.namespace ?? '', storedOld.metadata.name!));
    this.#sortedKeys.delete(b.storage);
    this.#emit({ type: 'DELETED', resource: b.storage, object: last, previous: storedOld, revision });
    return b.identity ? last : view;
  }

  #emit(event: StoreEvent): void {
    this.#log.append(event);
    this.#queue.push(event);
    if (this.#dispatching) return;
    this.#dispatching = true;
    try {
      while (this.#queue.length) {
        const e = this.#queue.shift()!;
        for (const l of this.#raw) {
          try {
            l(e);
          } catch (err) {
            process.emitWarning(`kube-api watcher failed: ${(err as Error).message}`);
          }
        }
        for (const l of this.#subscribers) {
          try {
            l(e);
          } catch (err) {
            process.emitWarning(`kube-api store subscriber failed: ${(err as Error).message}`);
          }
        }
      }
    } finally {
      this.#dispatching = false;
    }
  }
}
