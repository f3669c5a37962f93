/**
 * The binder's level-triggered resync (upstream: `resync()` every `--pvclaimbinder-sync-period`): the
 * resync function re-enqueues every pending claim and every Released or Failed volume of a cluster on
 * its schedule, so a claim no event wakes (e.g. waiting for a volume that an admin frees by hand) and a
 * volume whose reclaim failed are looked at again; so are volumes a bind or an unbind left half written
 * (claimed but not Bound, Bound with no claim: see lib/kube/cache-index.ts).
 *
 * Both come from the cache's sparse {@link RESYNC_INDEX}, which holds exactly those objects: a run reads
 * what needs looking at, however many bound claims and volumes the cluster has (upstream walks its whole
 * informer cache; a DynamoDB read of every cached object each minute would grow with the cluster).
 */
import type { ResyncSource } from '../resync/source.ts';
import { RESYNC_INDEX, resyncPk } from '../state/schema.ts';

/** The binder's resync source (functions/resync.ts wires it as `binder`). */
export const binderResync: ResyncSource = async function* binderResync(cluster, cache) {
  for (const kind of ['PersistentVolumeClaim', 'PersistentVolume'] as const) {
    for await (const entry of cache.queryIndex(RESYNC_INDEX, resyncPk(cluster, kind))) {
      const meta = entry.object.metadata ?? {};
      const key = kind === 'PersistentVolumeClaim' ? `${meta.namespace ?? ''}/${meta.name}` : String(meta.name);
      yield { kind, key, uid: entry.uid, resourceVersion: String(entry.rv) };
    }
  }
};
