/**
 * The binder's Kubernetes calls: the four PUTs a sync makes (object and status subresource of PVs and
 * PVCs, each carrying the resourceVersion it was computed from), the live claim GET upstream's
 * syncVolume falls back to, and the pod list delayed binding reads. Objects cross as the server's own JSON
 * (lib/kube/json-api.ts: no walk through client-node's models).
 *
 * @example
 * const api = new BinderApi(await kube.api(cluster, KubeJsonApi));
 * const pv = await api.write({ action: 'write', verb: 'update', kind: 'PersistentVolume', object, chained: false, purpose: 'bindVolumeToClaim' });
 */
import { isNotFound } from '../kube/errors.ts';
import { claimPath, volumePath, type KubeJsonApi } from '../kube/json-api.ts';
import { untrimmedForWrite } from '../state/cache.ts';
import type { BinderWrite, PersistentVolume, PersistentVolumeClaim, Pod } from './types.ts';

/** Pods with no node that have not finished: `spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed`. */
export const UNSCHEDULED_LIVE_PODS = 'spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed';

export class BinderApi {
  readonly #json: KubeJsonApi;
  /** Writes made through this client (API writes per bind). */
  writes = 0;

  constructor(json: KubeJsonApi) {
    this.#json = json;
  }

  /**
   * PUT the object or its status; returns what the API server returned. Errors are the client's `ApiException`.
   * An object the cache trimmed gets its last-applied annotation back from a live read first (untrimmedForWrite).
   */
  async write(w: BinderWrite): Promise<PersistentVolume | PersistentVolumeClaim> {
    this.writes++;
    const { namespace = '', name } = w.object.metadata;
    const object = await untrimmedForWrite(w.object, () => (w.kind === 'PersistentVolume' ? this.readVolume(name) : this.readClaim(namespace, name)));
    const path = w.kind === 'PersistentVolume' ? volumePath(name) : claimPath(namespace, name);
    const body = { apiVersion: 'v1', kind: w.kind, ...object };
    return this.#json.put<PersistentVolume | PersistentVolumeClaim>(w.verb === 'update' ? path : `${path}/status`, body);
  }

  /** Live GET of a claim; undefined when it does not exist. */
  async readClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    try {
      return await this.#json.get<PersistentVolumeClaim>(claimPath(namespace, name));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Live GET of a volume; undefined when it does not exist. */
  async readVolume(name: string): Promise<PersistentVolume | undefined> {
    try {
      return await this.#json.get<PersistentVolume>(volumePath(name));
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
    const list = await this.#json.get<{ items?: Pod[] }>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, { fieldSelector: UNSCHEDULED_LIVE_PODS });
    return list.items ?? [];
  }
}
