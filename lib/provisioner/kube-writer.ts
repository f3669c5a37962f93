/**
 * The provisioner's writes to the Kubernetes API: create the PV, patch its finalizers, delete it,
 * update the claim (Reschedule). Every write that depends on what was read carries the resourceVersion
 * it was computed from (a 409 goes back to the runtime as a retry), and every successful write is
 * written back to the object cache, as upstream's controller updates its informer store.
 *
 * @example
 * const writer = new KubeWriter(await kube.coreV1(cluster), new ObjectCache(doc, tables.cache), cluster);
 * await writer.createVolume(pv);
 */
import { PatchStrategy, setHeaderOptions, type CoreV1Api } from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound } from '../kube/errors.ts';
import type { CacheableObject, ObjectCache } from '../state/cache.ts';
import type { PersistentVolume, PersistentVolumeClaim } from './objects.ts';
import type { PersistentVolumeCreator } from './store.ts';
import { VolumeGoneError, type VolumeWriter } from './sync-volume.ts';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** An API object as plain JSON (client-node models carry `Date`s). */
export function toJson<T>(obj: unknown): T {
  return JSON.parse(JSON.stringify(obj)) as T;
}

export class KubeWriter implements PersistentVolumeCreator, VolumeWriter {
  #api: CoreV1Api;
  #cache: ObjectCache | undefined;
  #cluster: string;

  constructor(api: CoreV1Api, cache: ObjectCache | undefined, cluster: string) {
    this.#api = api;
    this.#cache = cache;
    this.#cluster = cluster;
  }

  async #remember(kind: string, obj: unknown): Promise<void> {
    await this.#cache?.put(this.#cluster, kind, toJson<CacheableObject>(obj)).catch(() => undefined);
  }

  /** POST the PV; AlreadyExists is success (`'exists'`). */
  async createVolume(pv: PersistentVolume): Promise<'created' | 'exists'> {
    try {
      const created = await this.#api.createPersistentVolume({ body: pv as never });
      await this.#remember('PersistentVolume', created);
      return 'created';
    } catch (err) {
      if (isAlreadyExists(err)) return 'exists';
      throw err;
    }
  }

  /** Merge-patch `metadata.finalizers` (the whole list), conditional on the PV's resourceVersion. */
  async patchFinalizers(pv: PersistentVolume, finalizers: string[] | null): Promise<PersistentVolume> {
    try {
      const patched = await this.#api.patchPersistentVolume({
        name: pv.metadata.name ?? '',
        body: { metadata: { finalizers, ...(pv.metadata.resourceVersion ? { resourceVersion: pv.metadata.resourceVersion } : {}) } },
      }, mergePatch);
      await this.#remember('PersistentVolume', patched);
      return toJson<PersistentVolume>(patched);
    } catch (err) {
      if (isNotFound(err)) throw new VolumeGoneError(pv.metadata.name ?? '');
      throw err;
    }
  }

  /** DELETE the PV (precondition: the same UID, so a re-created PV of the same name is never deleted). */
  async deleteVolume(pv: PersistentVolume): Promise<void> {
    try {
      await this.#api.deletePersistentVolume({ name: pv.metadata.name ?? '', body: pv.metadata.uid ? { preconditions: { uid: pv.metadata.uid } } : {} });
    } catch (err) {
      if (isNotFound(err)) throw new VolumeGoneError(pv.metadata.name ?? '');
      throw err;
    }
  }

  /** The PV as the API has it now; undefined when gone. */
  async getVolume(name: string): Promise<PersistentVolume | undefined> {
    try {
      return toJson<PersistentVolume>(await this.#api.readPersistentVolume({ name }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** PUT the claim (its resourceVersion makes it conditional). */
  async updateClaim(claim: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    const updated = await this.#api.replaceNamespacedPersistentVolumeClaim({
      name: claim.metadata.name ?? '', namespace: claim.metadata.namespace ?? '', body: claim as never,
    });
    await this.#remember('PersistentVolumeClaim', updated);
    return toJson<PersistentVolumeClaim>(updated);
  }
}
