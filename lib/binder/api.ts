/**
 * The binder's Kubernetes calls: the four PUTs a sync makes (object and status subresource of PVs and
 * PVCs, each carrying the resourceVersion it was computed from), the live claim GET upstream's
 * syncVolume falls back to, and the pod list delayed binding reads. Objects cross as plain JSON.
 *
 * @example
 * const api = new BinderApi(await kube.coreV1(cluster));
 * const pv = await api.write({ action: 'write', verb: 'update', kind: 'PersistentVolume', object, chained: false, purpose: 'bindVolumeToClaim' });
 */
import type { CoreV1Api, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import { untrimmedForWrite } from '../state/cache.ts';
import type { BinderWrite, PersistentVolume, PersistentVolumeClaim, Pod } from './types.ts';

/** Pods with no node that have not finished: `spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed`. */
export const UNSCHEDULED_LIVE_PODS = 'spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed';
/** Typed client objects (Date fields) back to the JSON the API server sent. */
const toJson = <T>(object: unknown): T => JSON.parse(JSON.stringify(object)) as T;

export class BinderApi {
  readonly #core: CoreV1Api;
  /** Writes made through this client (API writes per bind). */
  writes = 0;

  constructor(core: CoreV1Api) {
    this.#core = core;
  }

  /**
   * PUT the object or its status; returns what the API server returned. Errors are the client's `ApiException`.
   * An object the cache trimmed gets its last-applied annotation back from a live read first (untrimmedForWrite).
   */
  async write(w: BinderWrite): Promise<PersistentVolume | PersistentVolumeClaim> {
    this.writes++;
    const { namespace: ns = '', name: objectName } = w.object.metadata;
    const object = await untrimmedForWrite(w.object, () => (w.kind === 'PersistentVolume' ? this.readVolume(objectName) : this.readClaim(ns, objectName)));
    if (w.kind === 'PersistentVolume') {
      const body = { apiVersion: 'v1', kind: 'PersistentVolume', ...object } as unknown as V1PersistentVolume;
      const name = w.object.metadata.name;
      const out =
        w.verb === 'update'
          ? await this.#core.replacePersistentVolume({ name, body })
          : await this.#core.replacePersistentVolumeStatus({ name, body });
      return toJson<PersistentVolume>(out);
    }
    const body = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...object } as unknown as V1PersistentVolumeClaim;
    const { name, namespace = '' } = w.object.metadata;
    const out =
      w.verb === 'update'
        ? await this.#core.replaceNamespacedPersistentVolumeClaim({ name, namespace, body })
        : await this.#core.replaceNamespacedPersistentVolumeClaimStatus({ name, namespace, body });
    return toJson<PersistentVolumeClaim>(out);
  }

  /** Live GET of a claim; undefined when it does not exist. */
  async readClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    try {
      return toJson<PersistentVolumeClaim>(await this.#core.readNamespacedPersistentVolumeClaim({ name, namespace }));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Live GET of a volume; undefined when it does not exist. */
  async readVolume(name: string): Promise<PersistentVolume | undefined> {
    try {
      return toJson<PersistentVolume>(await this.#core.readPersistentVolume({ name }));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * The namespace's pods that are not scheduled and not terminated — the only ones
   * `findNonScheduledPodsByPVC` can name (upstream reads its pod informer, indexed by claim). The field
   * selector keeps the answer to the pending pods instead of every pod of the namespace.
   */
  async listPods(namespace: string): Promise<Pod[]> {
    const list = await this.#core.listNamespacedPod({ namespace, fieldSelector: UNSCHEDULED_LIVE_PODS });
    return toJson<Pod[]>(list.items);
  }
}
