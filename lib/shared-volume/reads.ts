/**
 * The claim, Service and Endpoints of a shared volume, read as upstream reads them (from an informer cache):
 * from the DynamoDB object cache the forwarder fills, with a GET on a miss. The forwarder watches every
 * PersistentVolumeClaim and the Services/Endpoints labelled `storageos.com/volume-id` (lib/forwarder/kinds.ts),
 * and writes the cache before it publishes an event, so an event-path reconcile never reads older state than
 * its message. A tombstone, an absent entry or an unreadable cache (e.g. no IAM grant on the cache table) is a
 * miss: the API server answers — except where the caller creates on absence and handles AlreadyExists
 * (`trustAbsence`, the Service and Endpoints of ensure-service.ts): there an entry the cache answered is absent
 * is taken as absent, as upstream takes its informer's NotFound, and the create is what asks the API server.
 * After each of our own updates the object the API returned is written back (forward-only by
 * resourceVersion), as the binder does, so the next read is current even before the forwarder's echo arrives.
 * What our creates return is not: the forwarder caches every ADDED it sees (lib/forwarder/review.ts), so a
 * write-back of a creation only raced it, and one of the two puts was refused.
 *
 * A volume step reads all three entries in one BatchGetItem first ({@link ObjectReads.prefetch}); each read
 * then takes its answer from there once; an object it found is read again after the step writes or reads fresh
 * (a `fresh` read, after a 409, goes to the API server). An object whose create met AlreadyExists is read
 * with GETs from then on in the container: the cache may never hold it (its volume-id label taken off, so the
 * forwarder's watch saw it go).
 *
 * @example
 * const reads = new ObjectReads({ core, objects: new ObjectCache(doc, tables.cache, { indexer: indexAttributes }), cluster: 'prod' });
 * await reads.prefetch('default', 'data', 'pvc-1234');             // one BatchGetItem for the claim, Service and Endpoints
 * const service = await reads.service('default', 'pvc-1234');      // undefined when it does not exist
 * await reads.remember('Service', await core.replaceNamespacedService({ name, namespace, body })); // an update's answer
 * reads.created();                                                  // after a create: left to the forwarder
 */
import type { CoreV1Api, V1Endpoints, V1PersistentVolumeClaim, V1Service } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import { ObjectCache, type CacheableObject, type CachedObject } from '../state/cache.ts';
import { VOLUME_ID_LABEL } from './constants.ts';
import { kubeCallOptions } from './deadline.ts';

/** What the reads did (for metrics, tests and the benchmark). */
export interface ReadStats {
  /** Objects served by the object cache. */
  cacheHits: number;
  /** GETs sent to the API server (cache misses and fresh re-reads). */
  apiGets: number;
  /** Objects the cache answered are absent and a `trustAbsence` read took as absent (no GET). */
  cacheAbsent: number;
}

/** How a read treats an entry the cache answered is absent. */
export interface ReadOptions {
  /** Skip the cache (after a 409 Conflict or AlreadyExists). */
  fresh?: boolean;
  /**
   * Take an entry the cache answered is absent (or a tombstone) as absent, without a GET: for a caller that
   * then creates the object and handles AlreadyExists. An unreadable cache is still a miss (a GET).
   */
  trustAbsence?: boolean;
}

export interface ObjectReadsOptions {
  core: CoreV1Api;
  /** The object cache; without it every read is a GET (as before the cache was used). */
  objects?: ObjectCache;
  cluster: string;
  /** Aborts the GETs (the step's deadline). */
  signal?: AbortSignal;
  /** Called once per container when the cache cannot be read or written (the reads fall back to GETs). */
  onCacheError?: (error: unknown, operation: 'read' | 'write') => void;
}

type CachedKind = 'PersistentVolumeClaim' | 'Service' | 'Endpoints';

let cacheErrorReported = false;

/**
 * Objects (`cluster/kind/namespace/name`) whose create met AlreadyExists in this container: the cache will not
 * hold them (e.g. the volume-id label was taken off, so the forwarder's selector watch saw them go), so a
 * `trustAbsence` read of them is a GET again, not a create that fails each time. Bounded; cleared when full.
 */
const existsUncached = new Set<string>();
const EXISTS_UNCACHED_MAX = 10_000;
const uncachedKey = (cluster: string, kind: CachedKind, namespace: string, name: string): string => `${cluster}/${kind}/${namespace}/${name}`;

/** Reads through the object cache for one volume step. */
export class ObjectReads {
  readonly stats: ReadStats = { cacheHits: 0, apiGets: 0, cacheAbsent: 0 };
  readonly #o: ObjectReadsOptions;
  /** Prefetched answers by {@link ObjectCache.refId}, each taken once: the entry, or null for absent. */
  readonly #prefetched = new Map<string, CachedObject | null>();

  constructor(options: ObjectReadsOptions) {
    this.#o = options;
  }

  /**
   * Reads the entries of the claim, the Service and the Endpoints (the Service's name) in one strongly
   * consistent BatchGetItem, for the reads that follow. Without an object cache it does nothing; a failed or
   * partly unprocessed read leaves those entries to their own read.
   */
  async prefetch(namespace: string, claimName: string, serviceName: string): Promise<void> {
    const objects = this.#o.objects;
    if (!objects) return;
    const refs = [
      { kind: 'PersistentVolumeClaim', key: `${namespace}/${claimName}` },
      { kind: 'Service', key: `${namespace}/${serviceName}` },
      { kind: 'Endpoints', key: `${namespace}/${serviceName}` },
    ];
    try {
      const { entries, unread } = await objects.getMany(this.#o.cluster, refs);
      for (const ref of refs) {
        const id = ObjectCache.refId(ref.kind, ref.key);
        if (!unread.has(id)) this.#prefetched.set(id, entries.get(id) ?? null);
      }
    } catch (error) {
      this.#reportCacheError(error, 'read');
    }
  }

  /** The claim; `undefined` when it does not exist. */
  claim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
    return this.#read('PersistentVolumeClaim', namespace, name, {}, () =>
      this.#o.core.readNamespacedPersistentVolumeClaim({ name, namespace }, kubeCallOptions(this.#o.signal)),
    );
  }

  /** The Service; `undefined` when it does not exist (see {@link ReadOptions}). */
  service(namespace: string, name: string, options: ReadOptions = {}): Promise<V1Service | undefined> {
    return this.#read('Service', namespace, name, options, () =>
      this.#o.core.readNamespacedService({ name, namespace }, kubeCallOptions(this.#o.signal)),
    );
  }

  /** The Endpoints; `undefined` when they do not exist (see {@link ReadOptions}). */
  endpoints(namespace: string, name: string, options: ReadOptions = {}): Promise<V1Endpoints | undefined> {
    return this.#read('Endpoints', namespace, name, options, () =>
      this.#o.core.readNamespacedEndpoints({ name, namespace }, kubeCallOptions(this.#o.signal)),
    );
  }

  /**
   * Records that a create of this object met AlreadyExists although the cache answered it absent: from now on
   * (in this container) its `trustAbsence` reads are GETs.
   */
  noteExistsUncached(kind: 'Service' | 'Endpoints', namespace: string, name: string): void {
    if (existsUncached.size >= EXISTS_UNCACHED_MAX) existsUncached.clear();
    existsUncached.add(uncachedKey(this.#o.cluster, kind, namespace, name));
  }

  /**
   * Notes a create of ours. What the create returned is not written back: the forwarder's watch caches every
   * ADDED, and with both writing it one of the two conditional puts was refused (a request and a write unit
   * spent for nothing). Objects the step's batch read found are read again from now on.
   */
  created(): void {
    this.#dropPrefetchedObjects();
  }

  /**
   * Writes back an object the API returned after our update. Only objects carrying the volume-id label: those are
   * the ones the forwarder keeps current (an unlabelled entry would never be updated or tombstoned again).
   * A failed write-back only costs a GET or a 409 later; it is reported, never thrown.
   */
  async remember(kind: 'Service' | 'Endpoints', object: V1Service | V1Endpoints): Promise<void> {
    this.#dropPrefetchedObjects();
    const objects = this.#o.objects;
    if (!objects || object.metadata?.labels?.[VOLUME_ID_LABEL] === undefined || !object.metadata.resourceVersion) return;
    try {
      await objects.put(this.#o.cluster, kind, { apiVersion: 'v1', kind, ...object } as CacheableObject);
    } catch (error) {
      this.#reportCacheError(error, 'write');
    }
  }

  async #read<T>(kind: CachedKind, namespace: string, name: string, options: ReadOptions, get: () => Promise<T>): Promise<T | undefined> {
    const objects = this.#o.objects;
    if (options.fresh === true) this.#dropPrefetchedObjects();
    const trustAbsence = options.trustAbsence === true && !existsUncached.has(uncachedKey(this.#o.cluster, kind, namespace, name));
    if (objects && options.fresh !== true) {
      try {
        const key = `${namespace}/${name}`;
        const id = ObjectCache.refId(kind, key);
        const prefetched = this.#prefetched.get(id);
        this.#prefetched.delete(id);
        const hit = prefetched !== undefined ? prefetched : ((await objects.get(this.#o.cluster, kind, key)) ?? null);
        if (hit && !hit.deleted) {
          this.stats.cacheHits++;
          return hit.object as T;
        }
        if (trustAbsence) {
          this.stats.cacheAbsent++;
          return undefined;
        }
      } catch (error) {
        this.#reportCacheError(error, 'read');
      }
    }
    this.stats.apiGets++;
    try {
      return await get();
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * After a write (or a fresh read) a prefetched object may be behind it — a Service recreated while its
   * Endpoints are being deleted — and is read again. A prefetched absence is kept: acting on it is a create,
   * which the API refuses with AlreadyExists if it was wrong.
   */
  #dropPrefetchedObjects(): void {
    for (const [id, entry] of this.#prefetched) if (entry) this.#prefetched.delete(id);
  }

  #reportCacheError(error: unknown, operation: 'read' | 'write'): void {
    if (cacheErrorReported || !this.#o.onCacheError) return;
    cacheErrorReported = true;
    this.#o.onCacheError(error, operation);
  }
}
