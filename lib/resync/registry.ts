/**
 * What each controller's periodic, level-triggered resync needs re-enqueued (upstream: the informer
 * resync period plus the controller's own periodic sweeps, e.g. the PV binder's `resync()` of every claim
 * and volume). A controller registers a source once at module load; the resync function runs them all.
 *
 * @example
 * registerResync('binder', async function* (cluster, cache) {
 *   for await (const claim of pendingClaims(cache, cluster)) yield { kind: 'PersistentVolumeClaim', key, uid, resourceVersion };
 * });
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

const sources = new Map<string, ResyncSource>();

/** Registers (or replaces) `controller`'s resync source. */
export function registerResync(controller: string, source: ResyncSource): void {
  sources.set(controller, source);
}

/** Removes a registration (tests). */
export function unregisterResync(controller: string): boolean {
  return sources.delete(controller);
}

/** The registered sources by controller name. */
export function registeredResyncs(): ReadonlyMap<string, ResyncSource> {
  return sources;
}
