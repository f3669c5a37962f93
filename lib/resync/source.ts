/**
 * What a controller's periodic, level-triggered resync yields (upstream: the informer resync period plus
 * the controller's own periodic sweeps, e.g. the PV binder's `resync()` of every claim and volume). Each
 * controller exports its source; functions/resync.ts wires them by controller name and runResync runs them.
 *
 * @example
 * export const binderResync: ResyncSource = async function* (cluster, cache) {
 *   for await (const entry of cache.queryIndex(RESYNC_INDEX, resyncPk(cluster, 'PersistentVolumeClaim')))
 *     yield { kind: 'PersistentVolumeClaim', key, uid: entry.uid, resourceVersion: String(entry.rv) };
 * };
 */
import type { WatchedKind } from '../runtime/message.ts';
import type { DocumentClient } from '../state/client.ts';
import type { ObjectCache } from '../state/cache.ts';
import type { TableNames } from '../state/schema.ts';

/** One key to re-enqueue. */
export interface ResyncItem {
  kind: WatchedKind;
  key: string;
  uid: string;
  resourceVersion: string;
}

/** Extra handles a source may use for index queries the cache class does not wrap. */
export interface ResyncServices {
  doc: DocumentClient;
  tables: TableNames;
  /**
   * Sends every key yielded so far (the runner batches them). A source that records a run as done
   * calls it first, so a send that fails leaves the run undone. Absent when the caller sends nothing
   * (it only collects the keys).
   */
  flush?(): Promise<void>;
}

/** Lists the keys a controller wants reconciled again in `cluster`. */
export type ResyncSource = (cluster: string, cache: ObjectCache, services: ResyncServices) => AsyncIterable<ResyncItem>;
