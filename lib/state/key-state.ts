/**
 * One read for what the runtime and the controller both need before a reconcile: the key's backoff record
 * (control table), its cache entry (cache table) and whatever else the controller declared it reads
 * (`Controller.prefetch`), in a single consistent `BatchGetItem` across the two tables instead of a
 * `GetItem` each. With the runtime's reader (`sources.reader`), the records of a batch that run side by
 * side share that request (batch-get.ts).
 *
 * @example
 * const { backoff, cached } = await readKeyState({ doc, tables, backoffStore, cache }, id);
 */
import type { BackoffId, BackoffRecord, BackoffStore } from './backoff.ts';
import { ObjectCache, type CachedObject, type IndexPartitions } from './cache.ts';
import { BatchGetReader, itemId, type ItemKey } from './batch-get.ts';
import type { DocumentClient } from './client.ts';
import { backoffPk, type TableNames } from './schema.ts';

export interface KeyState {
  backoff: BackoffRecord | undefined;
  /** The cache entry as {@link ObjectCache.get} returns it (undefined: none). */
  cached: CachedObject | undefined;
  /** What {@link KeyStateExtra} asked for: cache entries by `<Kind>/<key>`, control items by `pk` (null: absent). */
  extra: PrefetchedItems;
}

/** Further items a controller reads anyway, fetched in the same request. */
export interface KeyStateExtra {
  cache?: ReadonlyArray<{ kind: string; key: string }>;
  /** Control-table items by `pk`. */
  control?: readonly string[];
  /** The cluster's partition lists of these registered indexes (see cache.ts {@link IndexPartitions}). */
  partitions?: readonly string[];
}

export interface PrefetchedItems {
  cache: Map<string, CachedObject | null>;
  control: Map<string, Record<string, unknown> | null>;
  /** Partition lists by index (null: none stored). */
  partitions?: Map<string, IndexPartitions | null>;
}

export interface KeyStateSources {
  doc: DocumentClient;
  tables: TableNames;
  backoff: BackoffStore;
  cache: ObjectCache;
  /**
   * Gathers the reads of records that run side by side into one request (batch-get.ts); the runtime keeps
   * one per container. Absent: this read is a request of its own.
   */
  reader?: BatchGetReader;
}

/** The map key of a prefetched cache entry. */
export const prefetchKey = (kind: string, key: string): string => `${kind}/${key}`;

/** Extras kept per table (a controller names a few); the reader splits a request past BatchGetItem's 100 keys. */
const MAX_EXTRA = 50;

/**
 * Reads the backoff record, the cache entry and `extra` in one request (consistent); whatever DynamoDB
 * leaves unprocessed is read again (at most three rounds, then on its own).
 */
export async function readKeyState(sources: KeyStateSources, id: BackoffId, extra: KeyStateExtra = {}): Promise<KeyState> {
  const { doc, tables } = sources;
  const backoffKey = { pk: backoffPk(id.controller, id.cluster, id.kind, id.key) };
  const cacheKey = ObjectCache.itemKey(id.cluster, id.kind, id.key);
  // An extra with an empty kind or key names nothing; a key longer than DynamoDB allows the reader reads as absent.
  const extraCache = (extra.cache ?? []).filter((e) => e.kind && e.key).slice(0, MAX_EXTRA).map((e) => ({ name: prefetchKey(e.kind, e.key), key: ObjectCache.itemKey(id.cluster, e.kind, e.key) }));
  const extraControl = [...new Set(extra.control ?? [])].filter(Boolean).slice(0, MAX_EXTRA);
  const controlKeys = [backoffKey, ...extraControl.map((pk) => ({ pk }))];
  const extraPartitions = [...new Set(extra.partitions ?? [])].map((index) => ({ index, key: ObjectCache.partitionsKey(id.cluster, index) }));
  const cacheKeys = [cacheKey, ...extraCache.map((e) => e.key), ...extraPartitions.map((e) => e.key)];
  const reader = sources.reader ?? new BatchGetReader(doc);
  const found = new Map<string, Record<string, any>>();
  // The reader reads a key asked for twice once.
  let wanted: ItemKey[] = [...controlKeys.map((key) => ({ table: tables.control, key })), ...cacheKeys.map((key) => ({ table: tables.cache, key }))];
  for (let round = 0; round < 3 && wanted.length > 0; round++) {
    const out = await reader.read(wanted);
    for (const [key, item] of out.items) found.set(key, item);
    wanted = out.unprocessed;
  }
  if (wanted.length > 0) {
    // Still unprocessed after three rounds (throttling): the key's own items one by one; the extras are
    // left for the controller to read itself.
    const backoff = await sources.backoff.get(id);
    const cached = await sources.cache.get(id.cluster, id.kind, id.key);
    return { backoff, cached, extra: { cache: new Map(), control: new Map() } };
  }
  const prefetched: PrefetchedItems = { cache: new Map(), control: new Map() };
  for (const e of extraCache) prefetched.cache.set(e.name, sources.cache.entryOf(found.get(itemId(tables.cache, e.key))) ?? null);
  for (const pk of extraControl) prefetched.control.set(pk, found.get(itemId(tables.control, { pk })) ?? null);
  if (extraPartitions.length > 0) {
    prefetched.partitions = new Map();
    for (const e of extraPartitions) prefetched.partitions.set(e.index, ObjectCache.partitionsOf(found.get(itemId(tables.cache, e.key))) ?? null);
  }
  return {
    backoff: found.get(itemId(tables.control, backoffKey)) as BackoffRecord | undefined,
    cached: sources.cache.entryOf(found.get(itemId(tables.cache, cacheKey))),
    extra: prefetched,
  };
}
