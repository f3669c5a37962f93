/**
 * The garbage collector (`pkg/controller/garbagecollector`): deletes dependents whose owners are all gone
 * (owner identity is the uid), orphans dependents of an owner deleted with the `orphan` finalizer, and
 * finishes Foreground deletion once no `blockOwnerDeletion` dependent is left.
 *
 * Owner resolution follows upstream: a namespaced dependent's namespaced owner is looked up in the
 * dependent's own namespace (elsewhere it cannot be), a cluster-scoped dependent with a namespaced owner
 * is never collected, and a reference to a kind the server does not serve is left alone.
 */
import type { ClusterController, KubeObject, ObjectRef, OwnerReference, Store, StoreEvent } from '../types.ts';
import { subscribeShared } from './hub.ts';
import { ignoreNotFound, WorkQueue } from './queue.ts';

export const ORPHAN_FINALIZER = 'orphan';
export const FOREGROUND_FINALIZER = 'foregroundDeletion';

type OwnerState = 'solid' | 'absent' | 'waiting' | 'unresolvable';

const keyOf = (ref: ObjectRef): string => `${ref.resource}|${ref.namespace}|${ref.name}`;
function refOf(key: string): ObjectRef {
  const [resource, namespace, name] = key.split('|');
  return { resource, namespace, name };
}
const objectKey = (resource: string, obj: KubeObject): string => keyOf({ resource, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name! });

/** Splits `apiVersion` into group and version. */
function groupVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

/** The garbage collector over one store. */
class GarbageCollector {
  readonly #store: Store;
  /** owner uid → dependent keys. */
  readonly #dependents = new Map<string, Set<string>>();
  readonly #queue: WorkQueue;

  constructor(store: Store) {
    this.#store = store;
    this.#queue = new WorkQueue('garbage-collector', (key) => {
      if (key.startsWith('D:')) this.#attemptToDelete(key.slice(2));
      else this.#processOwner(key.slice(2));
    });
  }

  start(): () => void {
    const unsubscribe = subscribeShared(this.#store, (e) => this.#onEvent(e));
    for (const resource of this.#resources()) {
      for (const obj of this.#store.list(resource)) {
        this.#index(resource, undefined, obj);
        if (obj.metadata.ownerReferences?.length) this.#queue.add(`D:${objectKey(resource, obj)}`);
        if (this.#hasGCFinalizer(obj)) this.#queue.add(`O:${objectKey(resource, obj)}`);
      }
    }
    return () => {
      unsubscribe();
      this.#queue.stop();
    };
  }

  #resources(): string[] {
    return [...this.#store.kinds].filter(([, s]) => !s.storedAs).map(([r]) => r);
  }

  #hasGCFinalizer(obj: KubeObject): boolean {
    const f = obj.metadata.finalizers ?? [];
    return Boolean(obj.metadata.deletionTimestamp) && (f.includes(ORPHAN_FINALIZER) || f.includes(FOREGROUND_FINALIZER));
  }

  #index(resource: string, previous: KubeObject | undefined, current: KubeObject | undefined): void {
    for (const r of previous?.metadata.ownerReferences ?? []) this.#dependents.get(r.uid)?.delete(objectKey(resource, previous!));
    for (const r of current?.metadata.ownerReferences ?? []) {
      let set = this.#dependents.get(r.uid);
      if (!set) this.#dependents.set(r.uid, (set = new Set()));
      set.add(objectKey(resource, current!));
    }
    if (previous?.metadata.ownerReferences) {
      for (const r of previous.metadata.ownerReferences) if (this.#dependents.get(r.uid)?.size === 0) this.#dependents.delete(r.uid);
    }
  }

  #onEvent(e: StoreEvent): void {
    const spec = this.#store.kinds.get(e.resource);
    if (!spec || spec.storedAs) return;
    const obj = e.object;
    this.#index(e.resource, e.previous, e.type === 'DELETED' ? undefined : obj);
    const key = objectKey(e.resource, obj);
    if (e.type === 'DELETED') {
      for (const dep of this.#dependents.get(obj.metadata.uid ?? '') ?? []) this.#queue.add(`D:${dep}`);
      for (const r of obj.metadata.ownerReferences ?? []) this.#enqueueOwner(obj, r);
      return;
    }
    if (obj.metadata.ownerReferences?.length) this.#queue.add(`D:${key}`);
    if (this.#hasGCFinalizer(obj)) this.#queue.add(`O:${key}`);
    const nowUids = new Set((obj.metadata.ownerReferences ?? []).map((r) => r.uid));
    for (const r of e.previous?.metadata.ownerReferences ?? []) if (!nowUids.has(r.uid)) this.#enqueueOwner(obj, r);
  }

  #enqueueOwner(dependent: KubeObject, ref: OwnerReference): void {
    const resolved = this.#resolve(dependent, ref);
    if (resolved) this.#queue.add(`O:${keyOf(resolved)}`);
  }

  /** Where `ref` of `dependent` points, or undefined when it cannot be resolved. */
  #resolve(dependent: KubeObject, ref: OwnerReference): ObjectRef | undefined {
    const { group, version } = groupVersion(ref.apiVersion ?? '');
    for (const [resource, spec] of this.#store.kinds) {
      if (spec.storedAs || spec.kind !== ref.kind || spec.group !== group || spec.version !== version) continue;
      if (spec.namespaced && !dependent.metadata.namespace) return undefined;
      return { resource, namespace: spec.namespaced ? dependent.metadata.namespace! : '', name: ref.name };
    }
    return undefined;
  }

  #state(dependent: KubeObject, ref: OwnerReference): OwnerState {
    const where = this.#resolve(dependent, ref);
    if (!where) return 'unresolvable';
    const owner = this.#store.get(where);
    if (!owner || owner.metadata.uid !== ref.uid) return 'absent';
    if (owner.metadata.deletionTimestamp && owner.metadata.finalizers?.includes(FOREGROUND_FINALIZER)) return 'waiting';
    return 'solid';
  }

  /** `attemptToDeleteItem`. */
  #attemptToDelete(key: string): void {
    const ref = refOf(key);
    const dep = this.#store.get(ref);
    if (!dep || dep.metadata.deletionTimestamp) return;
    const refs = dep.metadata.ownerReferences ?? [];
    if (refs.length === 0) return;
    const states = refs.map((r) => this.#state(dep, r));
    if (states.some((s) => s === 'solid' || s === 'unresolvable')) {
      if (states.some((s) => s === 'absent' || s === 'waiting')) {
        const next = structuredClone(dep);
        next.metadata.ownerReferences = refs.filter((_, i) => states[i] === 'solid' || states[i] === 'unresolvable');
        ignoreNotFound(() => this.#store.update(ref.resource, next));
      }
      return;
    }
    const fins = dep.metadata.finalizers ?? [];
    let policy: 'Orphan' | 'Foreground' | 'Background' = 'Background';
    if (fins.includes(ORPHAN_FINALIZER)) policy = 'Orphan';
    else if (fins.includes(FOREGROUND_FINALIZER)) policy = 'Foreground';
    else if (states.includes('waiting') && (this.#dependents.get(dep.metadata.uid ?? '')?.size ?? 0) > 0) policy = 'Foreground';
    ignoreNotFound(() => this.#store.delete(ref, { propagationPolicy: policy, preconditions: { uid: dep.metadata.uid! } }));
  }

  /** The live dependents of `owner` (those still referencing its uid). */
  #liveDependents(owner: KubeObject): Array<{ resource: string; obj: KubeObject }> {
    const out: Array<{ resource: string; obj: KubeObject }> = [];
    for (const key of this.#dependents.get(owner.metadata.uid ?? '') ?? []) {
      const ref = refOf(key);
      const obj = this.#store.get(ref);
      if (obj?.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid)) out.push({ resource: ref.resource, obj });
    }
    return out;
  }

  #removeFinalizer(resource: string, owner: KubeObject, finalizer: string): void {
    const next = structuredClone(owner);
    next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    ignoreNotFound(() => this.#store.update(resource, next));
  }

  /** `processDeletingDependentsItem` and `orphanDependents`. */
  #processOwner(key: string): void {
    const ref = refOf(key);
    const owner = this.#store.get(ref);
    if (!owner || !this.#hasGCFinalizer(owner)) return;
    const uid = owner.metadata.uid;
    const fins = owner.metadata.finalizers ?? [];
    const dependents = this.#liveDependents(owner);
    if (fins.includes(ORPHAN_FINALIZER)) {
      for (const { resource, obj } of dependents) {
        const next = structuredClone(obj);
        next.metadata.ownerReferences = (next.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
        ignoreNotFound(() => this.#store.update(resource, next));
      }
      this.#removeFinalizer(ref.resource, owner, ORPHAN_FINALIZER);
      return;
    }
    for (const { resource, obj } of dependents) {
      if (!obj.metadata.deletionTimestamp) this.#queue.add(`D:${objectKey(resource, obj)}`);
    }
    const blocking = dependents.some(({ obj }) => obj.metadata.ownerReferences?.some((r) => r.uid === uid && r.blockOwnerDeletion === true));
    if (!blocking) this.#removeFinalizer(ref.resource, owner, FOREGROUND_FINALIZER);
  }
}

/** Creates the garbage-collector controller. */
export function garbageCollectorController(): ClusterController {
  let stop: (() => void) | undefined;
  return {
    name: 'garbage-collector',
    start(store: Store): void {
      stop = new GarbageCollector(store).start();
    },
    stop(): void {
      stop?.();
      stop = undefined;
    },
  };
}
