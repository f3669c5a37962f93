/**
 * One kind's list + watch loop (client-go's `Reflector`), feeding the object cache and the publisher.
 *
 * Start: if the kind's sync record holds a bookmark and a completed list, resume the watch from the
 * bookmark; otherwise LIST. A LIST is compared with the cache: objects whose resourceVersion differs from
 * the cached one are written and published as SYNC, cached objects missing from the list are tombstoned
 * and published as DELETED (at the list's resourceVersion), and the rest is left alone — a restart does
 * not flood the queues. Then WATCH from the list's resourceVersion with bookmarks.
 *
 * Each watch event is written to the cache first, then queued for publishing. An event older than the
 * cache (`stale`: a replay) is not published. `unchanged` (same resourceVersion already cached) is still
 * published: a watch only yields changes after its resourceVersion, so the cache can only have it because
 * a controller wrote the object back after its own write, and other controllers need the event. The event
 * then names that controller in `writer`, and the writer's own subscription filters it out.
 *
 * With `deferWrites`, an event a controller may have written back itself (a volume's or claim's MODIFIED:
 * review.ts `mayBeWrittenBack`) is queued unwritten instead: its controller's write-back
 * and the watch race, the publisher's last look (after the own-write hold, when needed) finds most such
 * versions written back, and nothing is written twice; what the look does not find, the publisher writes
 * before sending it (publisher.ts). The cache then holds each version by the time its message goes out,
 * as before, unless its object is gone by then (deleted, or deleted and created again).
 *
 * Cache writes of different objects overlap (a window of `writeConcurrency`), enqueues keep watch order,
 * and the resume point only passes enqueued events. After a failed write the watch restarts from the first
 * event not enqueued; versions of other objects written ahead in the window are then older than the
 * cache and skipped, so intermediate versions may be coalesced (never the latest one) — as after an
 * informer's relist.
 *
 * 410 Gone (HTTP or ERROR event) or a 504 "resourceVersion too large" → relist. A clean end of the watch
 * → re-watch from the last resourceVersion at once. Silence or another error → re-watch after a
 * jittered exponential backoff.
 *
 * @example
 * const reflector = new Reflector({ cluster: 'c1', resource: watchedResources()[2], kube, cache, sync,
 *   publisher, metrics, logger });
 * reflector.start();
 * // reflector.hasSynced → true once the Node cache is complete
 * await reflector.stop();
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { SOURCE_INDEXED_KIND } from '../state/indexes.ts';
import { ObjectTooLargeError, cacheKey, parseResourceVersion, type CacheWriteResult, type ObjectCache } from '../state/cache.ts';
import type { SyncMarkers } from '../state/sync.ts';
import { mayBeWrittenBack } from './review.ts';
import { MESSAGE_VERSION, type ClusterEvent, type ClusterEventType } from '../runtime/message.ts';
import { KubeApiError, ResourceExpiredError, WatchSilenceError } from './errors.ts';
import type { KubeObjectJson, KubeTransport } from './kube-transport.ts';
import type { WatchedResource } from './kinds.ts';
import type { ForwarderMetrics } from './metrics.ts';
import type { EventPublisher, PublishItem } from './publisher.ts';

export interface ReflectorOptions {
  cluster: string;
  resource: WatchedResource;
  kube: KubeTransport;
  cache: ObjectCache;
  sync: SyncMarkers;
  publisher: EventPublisher;
  metrics: ForwarderMetrics;
  logger: Logger;
  /** Restart a watch that delivered nothing (not even a bookmark) for this long. Default 300000. */
  silenceMs?: number;
  /** Server-side watch timeout range, seconds; a random value in it per watch. Default [300, 600]. */
  watchTimeoutSeconds?: [number, number];
  /** Backoff after a failed list/watch, ms. Default 1000 doubling to 30000. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Cache writes of different objects in flight at once. Default 16. */
  writeConcurrency?: number;
  /**
   * Queue the events a controller may have written back itself unwritten, for the publisher to look up
   * and write (see the module comment). The publisher needs its `write` then.
   */
  deferWrites?: boolean;
}

/**
 * A cache write; an object too large to cache must not wedge a watch, a relist or the publisher: it is
 * answered `written` (so the change is published — the message omits oversized objects — and controllers
 * read the API), and logged.
 */
export async function writeUnlessTooLarge<T>(write: () => Promise<T>, written: T, logger: Logger, kind: string, key: string): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (!(err instanceof ObjectTooLargeError)) throw err;
    logger.error('object too large to cache; published without caching', { kind, key, bytes: err.bytes });
    return written;
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });

/** See the module comment. */
export class Reflector {
  readonly kind: string;
  #o: ReflectorOptions;
  #abort = new AbortController();
  #loop: Promise<void> | undefined;
  #synced = false;
  #lastRv = '';

  constructor(options: ReflectorOptions) {
    this.#o = options;
    this.kind = options.resource.kind;
  }

  /** True once the kind's cache is complete (a LIST finished, or the watch resumed from a complete one). */
  get hasSynced(): boolean {
    return this.#synced;
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  get lastSyncResourceVersion(): string {
    return this.#lastRv;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Stops promptly in every state: the list or watch request is aborted, waits for publisher space or a
   * flush end, and backoff sleeps end at once; only cache writes already in flight are awaited.
   */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { cluster, resource, metrics, logger } = this.#o;
    const signal = this.#abort.signal;
    const initialBackoff = this.#o.backoffInitialMs ?? 1000;
    let backoff = initialBackoff;
    let rv = '';
    while (!signal.aborted) {
      try {
        if (!rv) {
          // Publish what is queued first, so the bookmark read below is as fresh as it can be and the
          // relist republishes as little as possible.
          await this.#o.publisher.flush(signal);
          const state = await this.#o.sync.getSync(cluster, resource.kind);
          const bookmark = state?.rv ? parseResourceVersion(state.rv) : 0;
          // A cache whose partition lists were never completed (written before they existed) is
          // relisted once, so that readers can trust them; so are attachments whose source entries the
          // record does not vouch for (written before them, or by an older forwarder since: sync.ts).
          const sourced = resource.kind !== SOURCE_INDEXED_KIND || state?.sourcesIndexed === true;
          if (state?.listComplete && state.rv && sourced && !this.#synced && (await this.#o.cache.partitionsComplete(cluster, resource.kind))) {
            rv = state.rv;
            this.#synced = true;
            logger.info('resuming watch from bookmark', { kind: resource.kind, resourceVersion: rv });
          } else {
            rv = await this.#relist(bookmark, signal, state?.sourcesIndexed === true);
          }
        }
        const [low, high] = this.#o.watchTimeoutSeconds ?? [300, 600];
        // Cache writes of different objects overlap (up to `writeConcurrency`); writes of one object, and
        // the enqueues of all events, keep watch order. `rv` advances only past enqueued events, so a
        // failure re-watches from the first event not yet handed to the publisher.
        const window = this.#o.writeConcurrency ?? 16;
        const lastWrite = new Map<string, Promise<void>>();
        let tail: Promise<void> = Promise.resolve();
        let inFlight = 0;
        let failure: { err: unknown } | undefined;
        let wake: (() => void) | undefined;
        try {
          for await (const event of this.#o.kube.watch(resource.path, {
            resourceVersion: rv,
            labelSelector: resource.labelSelector,
            timeoutSeconds: Math.round(low + Math.random() * (high - low)),
            silenceMs: this.#o.silenceMs ?? 300_000,
            signal,
          })) {
            if (failure || signal.aborted) break;
            backoff = initialBackoff;
            const eventRv = String(event.object?.metadata?.resourceVersion ?? '');
            metrics.eventsSeen.inc({ kind: resource.kind, type: event.type });
            let prepared: Promise<PublishItem | undefined>;
            if (event.type === 'BOOKMARK') {
              prepared = Promise.resolve(eventRv ? { progress: { kind: resource.kind, rv: eventRv } } : undefined);
            } else {
              const key = cacheKey(event.object);
              const previous = lastWrite.get(key) ?? Promise.resolve();
              prepared = previous.then(() => this.#prepare(event.type as 'ADDED' | 'MODIFIED' | 'DELETED', event.object));
              const settled = prepared.then(
                () => undefined,
                () => undefined,
              );
              lastWrite.set(key, settled);
              void settled.then(() => {
                if (lastWrite.get(key) === settled) lastWrite.delete(key);
              });
            }
            // Keep a rejection from surfacing as unhandled before its turn in the tail comes.
            prepared.catch(() => undefined);
            inFlight++;
            tail = tail
              .then(async () => {
                if (failure || signal.aborted) return;
                const item = await prepared;
                if (item) await this.#o.publisher.enqueue(item, signal);
                // A stop may have ended the enqueue without queueing: the resume point stays behind it.
                if (eventRv && !signal.aborted) rv = this.#lastRv = eventRv;
              })
              .catch((err) => {
                failure ??= { err };
              })
              .finally(() => {
                inFlight--;
                wake?.();
              });
            while (inFlight >= window && !failure) await new Promise<void>((resolve) => (wake = resolve));
          }
        } finally {
          await tail;
        }
        if (failure) throw failure.err;
        if (!signal.aborted) metrics.watchRestarts.inc({ kind: resource.kind, reason: 'closed' });
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof ResourceExpiredError || (err instanceof KubeApiError && err.code === 504)) {
          metrics.watchRestarts.inc({ kind: resource.kind, reason: 'expired' });
          logger.info('resourceVersion expired; relisting', { kind: resource.kind, resourceVersion: rv, error: (err as Error).message });
          rv = '';
          continue;
        }
        const reason = err instanceof WatchSilenceError ? 'silence' : 'error';
        metrics.watchRestarts.inc({ kind: resource.kind, reason });
        logger.warn('list/watch failed; retrying', { kind: resource.kind, reason, error: (err as Error).message, backoffMs: backoff });
        await sleep(backoff / 2 + Math.random() * (backoff / 2), signal);
        backoff = Math.min(backoff * 2, this.#o.backoffMaxMs ?? 30_000);
      }
    }
  }

  /** LIST, compare with the cache, publish the differences; returns the list's resourceVersion. */
  /** `sourcesVouched`: the sync record vouches for the kind's source entries (none is missing). */
  async #relist(bookmark: number, signal: AbortSignal, sourcesVouched: boolean): Promise<string> {
    const { cluster, resource, cache, publisher, metrics } = this.#o;
    metrics.relists.inc({ kind: resource.kind });
    const list = await this.#o.kube.list(resource.path, {
      labelSelector: resource.labelSelector,
      apiVersion: resource.apiVersion,
      kind: resource.kind,
      signal,
    });
    const cached = new Map<string, { rv: number; object: KubeObjectJson }>();
    // Tombstones newer than the bookmark: the deletion may not have been published before a restart.
    const unpublishedDeletions: Array<{ rv: number; object: KubeObjectJson }> = [];
    for await (const entry of cache.list(cluster, resource.kind, { includeDeleted: true })) {
      if (!entry.deleted) cached.set(cacheKey(entry.object), { rv: entry.rv, object: entry.object as KubeObjectJson });
      else if (entry.rv > bookmark) unpublishedDeletions.push({ rv: entry.rv, object: entry.object as KubeObjectJson });
    }
    const listed = new Set(list.items.map((object) => cacheKey(object)));
    for (const stone of unpublishedDeletions) {
      if (listed.has(cacheKey(stone.object))) continue;
      await publisher.enqueue({ event: this.#event('DELETED', stone.object, String(stone.rv)), seenAt: Date.now() }, signal);
    }
    for (const object of list.items) {
      if (signal.aborted) return list.resourceVersion;
      const key = cacheKey(object);
      const rv = parseResourceVersion(object.metadata?.resourceVersion);
      const before = cached.get(key);
      cached.delete(key);
      metrics.eventsSeen.inc({ kind: resource.kind, type: 'SYNC' });
      // Same resourceVersion as cached: not written again (an attachment's source entry is, unless the record
      // vouches for them: the entry may predate them), and skipped unless it is newer than the bookmark (it may have been cached but not yet
      // published when a previous forwarder stopped).
      if (before?.rv === rv && !sourcesVouched) await cache.putSourceEntry(cluster, resource.kind, object);
      if (before?.rv === rv && rv <= bookmark) continue;
      const result = before?.rv === rv ? 'unchanged' : await this.#write(() => cache.put(cluster, resource.kind, object), object);
      if (result === 'stale') continue;
      await publisher.enqueue({ event: this.#event('SYNC', object, object.metadata.resourceVersion), seenAt: Date.now() }, signal);
    }
    for (const [, gone] of cached) {
      if (signal.aborted) return list.resourceVersion;
      metrics.eventsSeen.inc({ kind: resource.kind, type: 'DELETED' });
      if ((await cache.remove(cluster, resource.kind, gone.object, list.resourceVersion)) !== 'written') continue;
      await publisher.enqueue({ event: this.#event('DELETED', gone.object, list.resourceVersion), seenAt: Date.now() }, signal);
    }
    if (signal.aborted) return list.resourceVersion;
    // Every listed object's index partitions are now in the cluster's partition lists (cache.ts).
    await cache.completePartitions(cluster, resource.kind, list.items);
    await publisher.enqueue({ progress: { kind: resource.kind, rv: list.resourceVersion, listComplete: true } }, signal);
    if (signal.aborted) return list.resourceVersion;
    this.#synced = true;
    this.#lastRv = list.resourceVersion;
    return list.resourceVersion;
  }

  /** Writes a watch event to the cache; returns what to queue (a progress marker alone when stale). */
  async #prepare(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObjectJson): Promise<PublishItem> {
    const { cluster, resource, cache } = this.#o;
    const rv = String(object.metadata?.resourceVersion ?? '');
    const progress = { kind: resource.kind, rv };
    if (this.#o.deferWrites && mayBeWrittenBack(type, resource.kind)) {
      return { event: this.#event(type, object, rv), progress, seenAt: Date.now(), unwritten: true };
    }
    let writer: string | undefined;
    const result = await this.#write(async () => {
      if (type === 'DELETED') return cache.remove(cluster, resource.kind, object, rv);
      const outcome = await cache.putDetailed(cluster, resource.kind, object);
      writer = outcome.writer;
      return outcome.result;
    }, object);
    if (result === 'stale') return { progress };
    // `unchanged` with a writer: a controller wrote this version and wrote it back; its own subscription
    // leaves the event out, the others still get it.
    const event = this.#event(type, object, rv);
    return { event: writer ? { ...event, writer } : event, progress, seenAt: Date.now() };
  }

  /** A cache write of `object` ({@link writeUnlessTooLarge}). */
  #write(write: () => Promise<CacheWriteResult>, object: KubeObjectJson): Promise<CacheWriteResult> {
    return writeUnlessTooLarge(write, 'written', this.#o.logger, this.kind, cacheKey(object));
  }

  #event(type: ClusterEventType, object: KubeObjectJson, rv: string): ClusterEvent {
    const { managedFields: _dropped, ...metadata } = object.metadata ?? {};
    return {
      v: MESSAGE_VERSION,
      cluster: this.#o.cluster,
      kind: this.#o.resource.kind,
      type,
      key: cacheKey(object),
      uid: String(object.metadata?.uid ?? ''),
      resourceVersion: rv,
      object: { ...object, metadata },
      observedAt: new Date().toISOString(),
    };
  }
}
