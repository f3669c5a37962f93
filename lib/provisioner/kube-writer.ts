/**
 * The provisioner's writes to the Kubernetes API: create the PV, patch its finalizers, delete it,
 * update the claim (Reschedule). Every write that depends on what was read carries the resourceVersion
 * it was computed from (a 409 goes back to the runtime as a retry), and every successful update is
 * written back to the object cache, as upstream's controller updates its informer store. A created PV is
 * not: since v11 upstream leaves it to the watch, and so do we (the forwarder caches it when it sees it),
 * saving one DynamoDB write per claim. Its tag kept nothing from the provisioner's queue at the defaults: a
 * volume that is not Released reaches no subscription of the provisioner's. (With `provisionerAddFinalizer`
 * that filter is off, and the new volume's ADDED costs the provisioner a reconcile that finds it already
 * carries its finalizer; before, as often as the forwarder saw the volume before the write-back landed.) A
 * duplicate message for the claim waits for the provisioning lease the sync keeps (controller.ts); a claim
 * deleted meanwhile asks the API whether the PV exists before it takes the kept lease for a dead one; a
 * retry that still misses it adopts its backend volume by name and gets AlreadyExists for the PV. Only a
 * parked PV, saved later without the lease, is written back (`writeBack`): the one created, tagged, or
 * the one its create met (read after AlreadyExists), untagged, since the provisioner did not write that
 * version.
 *
 * Objects cross as the API server's JSON (lib/kube/json-api.ts): no model walk each way, and a claim's
 * fields client-node's models do not know are sent back as read instead of dropped by the PUT.
 *
 * @example
 * const writer = new KubeWriter(await kube.api(cluster, KubeJsonApi), new ObjectCache(doc, tables.cache, { indexer: indexAttributes }), cluster);
 * await writer.createVolume(pv);
 */
import { isAlreadyExists, isNotFound, statusBody, statusCode } from '../kube/errors.ts';
import { claimPath, volumePath, type KubeJsonApi } from '../kube/json-api.ts';
import { untrimmedForWrite, type CacheableObject, type ObjectCache } from '../state/cache.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../kube/objects.ts';
import type { PersistentVolumeCreator } from './store.ts';
import { VolumeGoneError, type VolumeWriter } from './sync-volume.ts';

const MERGE_PATCH = 'application/merge-patch+json';

/**
 * A failed API call, with client-go's error text: the Status `message` (client-node's own message
 * carries the whole HTTP exchange). `code`, `body` and `headers` are kept, so the `lib/kube/errors.ts`
 * helpers (conflict, retry-after) still classify it.
 */
export class KubeApiError extends Error {
  readonly code: number;
  readonly body: unknown;
  readonly headers: unknown;
  constructor(cause: unknown) {
    const status = statusBody(cause);
    super(status?.message || (cause as Error).message, { cause });
    this.name = 'KubeApiError';
    this.code = statusCode(cause) ?? 0;
    this.body = (cause as { body?: unknown }).body;
    this.headers = (cause as { headers?: unknown }).headers;
  }
}

/** Wraps a client-node API failure as a {@link KubeApiError}; anything else passes through. */
export function apiError(err: unknown): unknown {
  return statusCode(err) !== undefined && !(err instanceof KubeApiError) ? new KubeApiError(err) : err;
}

/** The provisioner controller's name, as its queue's filter policy and its cache write-backs know it. */
export const PROVISIONER_WRITER = 'provisioner';

export class KubeWriter implements PersistentVolumeCreator, VolumeWriter {
  #api: KubeJsonApi;
  #cache: ObjectCache | undefined;
  #cluster: string;

  constructor(api: KubeJsonApi, cache: ObjectCache | undefined, cluster: string) {
    this.#api = api;
    this.#cache = cache;
    this.#cluster = cluster;
  }

  /**
   * Writes back what the API returned, tagged with the writer: the forwarder's event for that version then
   * skips the provisioner's queue (the provisioner acted on it when it wrote it); other controllers get it.
   */
  async #remember(kind: string, obj: CacheableObject): Promise<void> {
    await this.#cache?.put(this.#cluster, kind, obj, { writer: PROVISIONER_WRITER, classify: false }).catch(() => undefined);
  }

  /**
   * POST the PV; AlreadyExists is success (`'exists'`). Not written back (see the module comment) unless
   * `writeBack`: a caller that saves a PV without holding the claim's provisioning lease (a parked PV) has
   * nothing else to keep the claim's next sync from provisioning again before the forwarder caches it. Then
   * a PV that already exists (an earlier save's POST went through, its record was not cleared) is read and
   * cached too, untagged (whoever wrote that version, it was not this write); a failed read only leaves it
   * to the watch.
   */
  async createVolume(pv: PersistentVolume, options: { writeBack?: boolean } = {}): Promise<'created' | 'exists'> {
    let created: CacheableObject;
    try {
      created = await this.#api.post<CacheableObject>('/api/v1/persistentvolumes', pv);
    } catch (err) {
      if (!isAlreadyExists(err)) throw apiError(err);
      if (options.writeBack) {
        // Cached untagged: this version is what the API holds now, which the provisioner did not write
        // (an earlier create, then perhaps the binder's or a user's changes); a tag would keep its event,
        // a Released one say, from the provisioner's own subscription.
        const existing = await this.getVolume(pv.metadata.name ?? '').catch(() => undefined);
        if (existing) await this.#cache?.put(this.#cluster, 'PersistentVolume', existing as CacheableObject, { classify: false }).catch(() => undefined);
      }
      return 'exists';
    }
    if (options.writeBack) await this.#remember('PersistentVolume', created);
    return 'created';
  }

  /** Merge-patch `metadata.finalizers` (the whole list), conditional on the PV's resourceVersion. */
  async patchFinalizers(pv: PersistentVolume, finalizers: string[] | null): Promise<PersistentVolume> {
    try {
      const patched = await this.#api.patch<PersistentVolume>(
        volumePath(pv.metadata.name ?? ''),
        { metadata: { finalizers, ...(pv.metadata.resourceVersion ? { resourceVersion: pv.metadata.resourceVersion } : {}) } },
        MERGE_PATCH,
      );
      await this.#remember('PersistentVolume', patched as CacheableObject);
      return patched;
    } catch (err) {
      if (isNotFound(err)) throw new VolumeGoneError(pv.metadata.name ?? '');
      throw apiError(err);
    }
  }

  /** DELETE the PV (precondition: the same UID, so a re-created PV of the same name is never deleted). */
  async deleteVolume(pv: PersistentVolume): Promise<void> {
    try {
      await this.#api.delete(volumePath(pv.metadata.name ?? ''), pv.metadata.uid ? { preconditions: { uid: pv.metadata.uid } } : {});
    } catch (err) {
      if (isNotFound(err)) throw new VolumeGoneError(pv.metadata.name ?? '');
      throw apiError(err);
    }
  }

  /** The PV as the API has it now; undefined when gone. */
  async getVolume(name: string): Promise<PersistentVolume | undefined> {
    try {
      return await this.#api.get<PersistentVolume>(volumePath(name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw apiError(err);
    }
  }

  /** PUT the claim (its resourceVersion makes it conditional). */
  async updateClaim(claim: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    const name = claim.metadata.name ?? '';
    const namespace = claim.metadata.namespace ?? '';
    // A claim the cache trimmed gets its last-applied annotation back from a live read (untrimmedForWrite).
    const body = await untrimmedForWrite(claim as CacheableObject, async () => {
      try {
        return await this.#api.get<CacheableObject>(claimPath(namespace, name));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw apiError(err);
      }
    });
    const updated = await this.#api.put<PersistentVolumeClaim>(claimPath(namespace, name), body)
      .catch((err: unknown) => { throw apiError(err); });
    await this.#remember('PersistentVolumeClaim', updated as CacheableObject);
    return updated;
  }
}
