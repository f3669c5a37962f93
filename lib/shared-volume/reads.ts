/**
 * The claim, Service and Endpoints of a shared volume, read as upstream reads them (from an informer cache):
 * from the DynamoDB object cache the forwarder fills, with a GET on a miss. The forwarder watches every
 * PersistentVolumeClaim and the Services/Endpoints labelled `storageos.com/volume-id` (lib/forwarder/kinds.ts),
 * and writes the cache before it publishes an event, so an event-path reconcile never reads older state than
 * its message. A tombstone, an absent entry or an unreadable cache (e.g. no IAM grant on the cache table) is a
 * miss: the API server answers. After each of our own writes the object the API returned is written back
 * (forward-only by resourceVersion), as the other controllers do, so the next read is current even before
 * the forwarder's echo arrives.
 *
 * @example
 * const reads = new ObjectReads({ core, objects: new ObjectCache(doc, tables.cache, { indexer: indexAttributes }), cluster: 'prod' });
 * const service = await reads.service('default', 'pvc-1234');      // undefined when it does not exist
 * await reads.remember('Service', await core.replaceNamespacedService({ name, namespace, body }));
 */
import type { CoreV1Api, V1Endpoints, V1PersistentVolumeClaim, V1Service } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import type { CacheableObject, ObjectCache } from '../state/cache.ts';
import { VOLUME_ID_LABEL } from './constants.ts';
import { kubeCallOptions } from './deadline.ts';

/** What the reads did (for metrics, tests and the benchmark). */
export interface ReadStats {
  /** Objects served by the object cache. */
  cacheHits: number;
  /** GETs sent to the API server (cache misses and fresh re-reads). */
  apiGets: number;
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

/** Reads through the object cache for one volume step. */
export class ObjectReads {
  readonly stats: ReadStats = { cacheHits: 0, apiGets: 0 };
  readonly #o: ObjectReadsOptions;

  constructor(options: ObjectReadsOptions) {
    this.#o = options;
  }

  /** The claim; `undefined` when it does not exist. */
  claim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
    return this.#read('PersistentVolumeClaim', namespace, name, false, () =>
      this.#o.core.readNamespacedPersistentVolumeClaim({ name, namespace }, kubeCallOptions(this.#o.signal)),
    );
  }

  /** The Service; `undefined` when it does not exist. `fresh` skips the cache (after a 409 Conflict). */
  service(namespace: string, name: string, options: { fresh?: boolean } = {}): Promise<V1Service | undefined> {
    return this.#read('Service', namespace, name, options.fresh === true, () =>
      this.#o.core.readNamespacedService({ name, namespace }, kubeCallOptions(this.#o.signal)),
    );
  }

  /** The Endpoints; `undefined` when they do not exist. `fresh` skips the cache (after a 409 Conflict). */
  endpoints(namespace: string, name: string, options: { fresh?: boolean } = {}): Promise<V1Endpoints | undefined> {
    return this.#read('Endpoints', namespace, name, options.fresh === true, () =>
      this.#o.core.readNamespacedEndpoints({ name, namespace }, kubeCallOptions(this.#o.signal)),
    );
  }

  /**
   * Writes back an object the API returned after our write. Only objects carrying the volume-id label: those are
   * the ones the forwarder keeps current (an unlabelled entry would never be updated or tombstoned again).
   * A failed write-back only costs a GET or a 409 later; it is reported, never thrown.
   */
  async remember(kind: 'Service' | 'Endpoints', object: V1Service | V1Endpoints): Promise<void> {
    const objects = this.#o.objects;
    if (!objects || object.metadata?.labels?.[VOLUME_ID_LABEL] === undefined || !object.metadata.resourceVersion) return;
    try {
      await objects.put(this.#o.cluster, kind, { apiVersion: 'v1', kind, ...object } as CacheableObject);
    } catch (error) {
      this.#reportCacheError(error, 'write');
    }
  }

  async #read<T>(kind: CachedKind, namespace: string, name: string, fresh: boolean, get: () => Promise<T>): Promise<T | undefined> {
    const objects = this.#o.objects;
    if (objects && !fresh) {
      try {
        const hit = await objects.get(this.#o.cluster, kind, `${namespace}/${name}`);
        if (hit && !hit.deleted) {
          this.stats.cacheHits++;
          return hit.object as T;
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

  #reportCacheError(error: unknown, operation: 'read' | 'write'): void {
    if (cacheErrorReported || !this.#o.onCacheError) return;
    cacheErrorReported = true;
    this.#o.onCacheError(error, operation);
  }
}
