/**
 * The object cache: the last state of every watched object per cluster and kind, in DynamoDB. It stands in
 * for a client-go informer's indexer. The forwarder fills it before it publishes an event; controllers read
 * it and write back the objects the API server returned after their own writes.
 *
 * Writes only move forward: an item is replaced only when the new resourceVersion is larger as an integer
 * (upstream's cache compares them the same way), so a late or replayed event never overwrites newer state.
 * A deletion leaves a tombstone carrying the deletion resourceVersion and an `expiresAt`; until it expires,
 * a late event for the deleted object is rejected as stale. An expired tombstone counts as absent (the
 * condition checks `expiresAt` itself, since DynamoDB TTL deletion is lazy and dynalite never deletes).
 *
 * Index attributes (see `indexes.ts`) come from the {@link CacheIndexer} its creator passes: Kubernetes
 * semantics (quantities, storage classes) live in `lib/kube/cache-index.ts`, not here. A cache built without
 * an indexer reads, lists, queries and writes tombstones, but refuses {@link ObjectCache.put}: an object
 * written without its index attributes would silently drop out of every index.
 *
 * @example
 * const cache = new ObjectCache(createDocumentClient(), 'claimflow-cache', { indexer: indexAttributes }); // lib/kube/cache-index.ts
 * await cache.put('c1', 'PersistentVolume', pv);           // 'written'
 * await cache.put('c1', 'PersistentVolume', pv);           // 'unchanged'
 * const hit = await cache.get('c1', 'PersistentVolume', 'pv-1'); // { object, rv, uid, deleted: false }
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { batchGetItems, type DocumentClient } from './client.ts';
import { ATTACHMENT_SOURCE, CACHE_INDEX_KEYS, NO_ATTACHMENT_SOURCE, REGISTERED_INDEXES, SOURCE_INDEXED_KIND, type CacheIndexName, type CacheIndexer, type FilterAttribute } from './indexes.ts';
import { cachePk, partitionsKey, sourceEntriesPk, sourceEntrySk } from './schema.ts';

/** A Kubernetes object as JSON. */
export type CacheableObject = {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; [field: string]: any };
  [field: string]: any;
};

/** One cache entry. */
export interface CachedObject {
  /** The object as last seen (for a tombstone: its last state before deletion). managedFields stripped. */
  object: CacheableObject;
  /** resourceVersion as an integer (for a tombstone: the deletion's resourceVersion). */
  rv: number;
  uid: string;
  /** True for a tombstone. */
  deleted: boolean;
  /** Tombstones only: epoch seconds after which the tombstone counts as absent. */
  expiresAt?: number;
  /** The controller whose write-back tagged this version as its own write (see {@link CachePutOptions.writer}). */
  writer?: string;
  /**
   * Earlier versions the same writer wrote in the same sync and wrote back only with this one (see
   * {@link CachePutOptions.earlier}); its own writes too.
   */
  writerRvs?: number[];
}

/**
 * The controller that wrote version `rv` of an entry, as far as the entry tells: its `writer` when `rv` is
 * the entry's own version or one of the earlier versions written back with it (`writerRvs`). Takes a
 * {@link CachedObject} or a raw item (the same attribute names).
 */
export function writerOfVersion(entry: { rv?: unknown; writer?: unknown; writerRvs?: unknown } | undefined, rv: number): string | undefined {
  if (!entry || typeof entry.writer !== 'string' || !entry.writer || !Number.isFinite(rv)) return undefined;
  if (Number(entry.rv) === rv) return entry.writer;
  return Array.isArray(entry.writerRvs) && entry.writerRvs.some((earlier) => Number(earlier) === rv) ? entry.writer : undefined;
}

/** `written`: the item moved forward. `stale`: the cache holds a newer rv. `unchanged`: same rv already held. */
export type CacheWriteResult = 'written' | 'stale' | 'unchanged';

export interface CachePutOptions {
  /**
   * The controller writing back an object its own API write returned (`binder`, `provisioner`, …). Kept on
   * the entry, so the forwarder, when the watch brings that same version, can tag its event with the
   * writer and the writer's own subscription can leave it out (the writer already acted on it).
   */
  writer?: string;
  /**
   * With `writer`: versions of the object the writer wrote before this one in the same sync, whose
   * write-backs it skipped (a bind's `update` and then `updateStatus` of the same claim: one write-back
   * instead of two). Kept on the entry as `writerRvs`, so the forwarder tags their watch events too
   * ({@link writerOfVersion}); a watch event older than the entry is otherwise dropped as stale anyway.
   */
  earlier?: ReadonlyArray<string | number>;
  /** Default true: read the entry after a refused write to tell `unchanged` from `stale`. */
  classify?: boolean;
}

/**
 * A cluster's partition list of one registered index (indexes.ts `REGISTERED_INDEXES`): the hash keys an
 * entry was ever written with. `complete`: a LIST of the index's kind is in it, so a partition missing from
 * `pks` never held an entry.
 */
export interface IndexPartitions {
  complete: boolean;
  pks: ReadonlySet<string>;
}

/**
 * Partitions registered through each document client, by `<table>\0<hash key>` (the registration in
 * flight, then settled). A container keeps one client, so a partition is registered once per container,
 * not per write; a new client (a new local stack on fresh tables of the same names) starts over.
 */
const registeredPartitions = new WeakMap<DocumentClient, Map<string, Promise<void>>>();

function registeredThrough(doc: DocumentClient): Map<string, Promise<void>> {
  let registered = registeredPartitions.get(doc);
  if (!registered) registeredPartitions.set(doc, (registered = new Map()));
  return registered;
}

/** What a put did; `writer` names who wrote the version found already cached (`unchanged` only). */
export interface CachePutOutcome {
  result: CacheWriteResult;
  writer?: string;
  /**
   * `stale` because the object of this version is gone: its tombstone is newer, or a newer object of the
   * same name (another uid) is cached. Classified writes only.
   */
  gone?: true;
}

export interface ObjectCacheOptions {
  /** How long a tombstone blocks resurrection, seconds. Default 3600. */
  tombstoneTtlSeconds?: number;
  /** Clock for tombstone expiry, epoch milliseconds. */
  now?: () => number;
  /**
   * Computes an object's index attributes on every {@link ObjectCache.put} (`indexAttributes` from
   * lib/kube/cache-index.ts in production). Without one the cache is read-only for objects: `put` throws
   * {@link MissingIndexerError} instead of writing an item missing from the indexes.
   */
  indexer?: CacheIndexer;
}

/** {@link ObjectCache.put} on a cache built without an indexer: nothing was written. */
export class MissingIndexerError extends Error {
  constructor(table: string) {
    super(`ObjectCache(${table}) has no indexer: pass { indexer } to write objects (lib/kube/cache-index.ts)`);
    this.name = 'MissingIndexerError';
  }
}

/** The resourceVersion is not a decimal integer that a JS number holds exactly. */
export class InvalidResourceVersionError extends Error {
  constructor(rv: unknown) {
    super(`resourceVersion ${JSON.stringify(rv)} is not a non-negative safe integer`);
    this.name = 'InvalidResourceVersionError';
  }
}

/** The object does not fit in a DynamoDB item (400 KB) even after trimming; nothing was written. */
export class ObjectTooLargeError extends Error {
  readonly bytes: number;
  constructor(key: string, bytes: number) {
    super(`object ${key} is ${bytes} bytes as JSON, too large for the cache`);
    this.name = 'ObjectTooLargeError';
    this.bytes = bytes;
  }
}

/** JSON bytes above which an object is trimmed before caching (DynamoDB items are capped at 400 KB). */
export const MAX_CACHED_OBJECT_BYTES = 350_000;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/**
 * Marks a cached copy that {@link cachedJson} took kubectl's last-applied annotation from. A controller
 * that PUTs an object it read from the cache hands it to {@link untrimmedForWrite} first, so the PUT does
 * not delete the annotation on the API server.
 */
export const TRIMMED_ANNOTATION = 'claimflow.io/cache-trimmed';

/**
 * The JSON to cache: the object as is, or — when over {@link MAX_CACHED_OBJECT_BYTES} — without the
 * fields no controller reads that make objects large (kubectl's last-applied annotation, marked with
 * {@link TRIMMED_ANNOTATION}; a Node's image list). Throws {@link ObjectTooLargeError} when even that does
 * not fit.
 */
export function cachedJson(object: CacheableObject): string {
  const json = JSON.stringify(object);
  if (Buffer.byteLength(json) <= MAX_CACHED_OBJECT_BYTES) return json;
  const { [LAST_APPLIED]: applied, ...kept } = object.metadata?.annotations ?? {};
  const annotations = applied === undefined ? kept : { ...kept, [TRIMMED_ANNOTATION]: LAST_APPLIED };
  const trimmed: CacheableObject = { ...object, metadata: { ...object.metadata, annotations } };
  if (trimmed.status && typeof trimmed.status === 'object' && 'images' in trimmed.status) {
    const { images: _images, ...status } = trimmed.status;
    trimmed.status = status;
  }
  const smaller = JSON.stringify(trimmed);
  const bytes = Buffer.byteLength(smaller);
  if (bytes > MAX_CACHED_OBJECT_BYTES) throw new ObjectTooLargeError(cacheKey(object), bytes);
  return smaller;
}

/**
 * `object` as it may be PUT: without {@link TRIMMED_ANNOTATION}, and — when the cache trimmed it — with the
 * last-applied annotation of the live object read by `readLive` (only at the same resourceVersion: at any
 * other the PUT is refused with a 409 anyway). Objects the cache did not trim are returned as they are,
 * with no read.
 */
export async function untrimmedForWrite<T extends CacheableObject>(object: T, readLive: () => Promise<CacheableObject | undefined>): Promise<T> {
  const annotations = object.metadata?.annotations;
  if (!annotations || !(TRIMMED_ANNOTATION in annotations)) return object;
  const { [TRIMMED_ANNOTATION]: _marker, ...rest } = annotations;
  const live = await readLive();
  const applied = live?.metadata?.resourceVersion === object.metadata?.resourceVersion ? live?.metadata?.annotations?.[LAST_APPLIED] : undefined;
  return { ...object, metadata: { ...object.metadata, annotations: applied === undefined ? rest : { ...rest, [LAST_APPLIED]: applied } } };
}

/** Parses a resourceVersion for integer comparison; throws {@link InvalidResourceVersionError}. */
export function parseResourceVersion(rv: unknown): number {
  const text = typeof rv === 'number' ? String(rv) : rv;
  if (typeof text !== 'string' || !/^[0-9]{1,16}$/.test(text)) throw new InvalidResourceVersionError(rv);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new InvalidResourceVersionError(rv);
  return value;
}

/** The object key: `namespace/name` or `name`. */
export function cacheKey(object: CacheableObject): string {
  const meta = object.metadata ?? {};
  return meta.namespace ? `${meta.namespace}/${meta.name}` : `${meta.name}`;
}

/** A copy of the object without `metadata.managedFields` (what the cache and the messages carry). */
export function stripManagedFields<T extends CacheableObject>(object: T): T {
  if (!object.metadata || !('managedFields' in object.metadata)) return object;
  const { managedFields: _dropped, ...metadata } = object.metadata;
  return { ...object, metadata };
}

const FORWARD_ONLY =
  'attribute_not_exists(pk) OR #rv < :rv OR (#deleted = :true AND #expiresAt < :nowSeconds)';

function isConditionFailure(err: unknown): boolean {
  return (err as { name?: string })?.name === 'ConditionalCheckFailedException';
}

/** The DynamoDB-backed object cache; see the module comment. */
export class ObjectCache {
  readonly table: string;
  #doc: DocumentClient;
  #ttl: number;
  #now: () => number;
  #indexer: CacheIndexer | undefined;

  constructor(doc: DocumentClient, table: string, options: ObjectCacheOptions = {}) {
    this.table = table;
    this.#doc = doc;
    this.#ttl = options.tombstoneTtlSeconds ?? 3600;
    this.#now = options.now ?? Date.now;
    this.#indexer = options.indexer;
  }

  /**
   * The entry for `key`, tombstones included (`deleted: true`); undefined when absent or when a tombstone
   * has expired. Strongly consistent.
   */
  async get(cluster: string, kind: string, key: string): Promise<CachedObject | undefined> {
    const out = await this.#doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: cachePk(cluster, kind), sk: key }, ConsistentRead: true }),
    );
    return out.Item ? this.#live(out.Item) : undefined;
  }

  /**
   * The entries of several keys of one cluster in one strongly consistent BatchGetItem (at most 100), as
   * {@link get} answers each: `entries` by `kind` and key ({@link ObjectCache.refId}), absent where the cache
   * holds nothing (or an expired tombstone); `unread` the refs DynamoDB left unprocessed after the retries
   * (throttling), whose answer is unknown — not absent.
   */
  async getMany(cluster: string, refs: ReadonlyArray<{ kind: string; key: string }>): Promise<{ entries: Map<string, CachedObject>; unread: Set<string> }> {
    const keys = new Map(refs.map((r) => [ObjectCache.refId(r.kind, r.key), ObjectCache.itemKey(cluster, r.kind, r.key)]));
    const { items, unprocessed } = await batchGetItems(this.#doc, this.table, [...keys.values()], { consistentRead: true });
    const idOf = new Map([...keys].map(([id, k]) => [`${k.pk}\u0000${k.sk}`, id]));
    const entries = new Map<string, CachedObject>();
    for (const item of items) {
      const id = idOf.get(`${String(item.pk)}\u0000${String(item.sk)}`);
      const entry = this.#live(item as Record<string, any>);
      if (id !== undefined && entry) entries.set(id, entry);
    }
    const unread = new Set(unprocessed.map((k) => idOf.get(`${String(k.pk)}\u0000${String(k.sk)}`)).filter((id): id is string => id !== undefined));
    return { entries, unread };
  }

  /** How {@link getMany} names an entry: `kind` and key. */
  static refId(kind: string, key: string): string {
    return `${kind}\u0000${key}`;
  }

  /** The table key of an entry (for reads batched with other tables, see lib/state/key-state.ts). */
  static itemKey(cluster: string, kind: string, key: string): { pk: string; sk: string } {
    return { pk: cachePk(cluster, kind), sk: key };
  }

  /** The table key of a cluster's partition list of `index` (for reads batched with others). */
  static partitionsKey(cluster: string, index: string): { pk: string; sk: string } {
    return partitionsKey(cluster, index);
  }

  /** A partition-list item read elsewhere; undefined when there is none. */
  static partitionsOf(item: Record<string, any> | undefined): IndexPartitions | undefined {
    if (!item) return undefined;
    const pks = item.pks instanceof Set ? (item.pks as Set<string>) : new Set<string>();
    return { complete: item.complete === true, pks };
  }

  /** The cluster's partition list of `index` (strongly consistent); undefined when there is none. */
  async partitions(cluster: string, index: string): Promise<IndexPartitions | undefined> {
    const out = await this.#doc.send(new GetCommand({ TableName: this.table, Key: partitionsKey(cluster, index), ConsistentRead: true }));
    return ObjectCache.partitionsOf(out.Item);
  }

  /**
   * After a complete LIST of `kind`: adds every listed object's partition of each registered index of that
   * kind to the list and marks it complete (one UpdateItem per such index; none for other kinds).
   */
  async completePartitions(cluster: string, kind: string, objects: readonly CacheableObject[]): Promise<void> {
    for (const { index } of REGISTERED_INDEXES.filter((r) => r.kind === kind)) {
      if (!this.#indexer) throw new MissingIndexerError(this.table);
      const hashKey = CACHE_INDEX_KEYS[index].hashKey;
      const pks = new Set<string>();
      for (const object of objects) {
        const pk = (this.#indexer(cluster, kind, stripManagedFields(object)) as Record<string, unknown>)[hashKey];
        if (typeof pk === 'string' && pk) pks.add(pk);
      }
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: partitionsKey(cluster, index),
          UpdateExpression: pks.size > 0 ? 'SET complete = :true ADD pks :pks' : 'SET complete = :true',
          ExpressionAttributeValues: pks.size > 0 ? { ':true': true, ':pks': pks } : { ':true': true },
        }),
      );
      const registered = registeredThrough(this.#doc);
      for (const pk of pks) registered.set(`${this.table}\u0000${pk}`, Promise.resolve());
    }
  }

  /** True unless a registered index of `kind` has no complete partition list (then a LIST should run). */
  async partitionsComplete(cluster: string, kind: string): Promise<boolean> {
    for (const { index } of REGISTERED_INDEXES.filter((r) => r.kind === kind)) {
      if (!(await this.partitions(cluster, index))?.complete) return false;
    }
    return true;
  }

  /** An item read elsewhere as {@link get} would return it (expired tombstones are absent). */
  entryOf(item: Record<string, any> | undefined): CachedObject | undefined {
    return item ? this.#live(item) : undefined;
  }

  /**
   * Writes the object if its resourceVersion is newer than what the cache holds (or the key is absent, or
   * holds an expired tombstone). Index attributes are recomputed from the object by the cache's indexer
   * ({@link MissingIndexerError} without one). An object too large for an item is trimmed
   * ({@link cachedJson}) or rejected with {@link ObjectTooLargeError}.
   */
  async put(cluster: string, kind: string, object: CacheableObject, options: CachePutOptions = {}): Promise<CacheWriteResult> {
    return (await this.putDetailed(cluster, kind, object, options)).result;
  }

  /**
   * {@link put}, also saying who wrote the version that was already cached when the result is
   * `unchanged` (a controller's write-back, see {@link CachePutOptions.writer}). With `classify: false` a
   * refused write is reported `stale` without the read that tells `stale` from `unchanged` (a write-back
   * does not care which).
   */
  async putDetailed(cluster: string, kind: string, object: CacheableObject, options: CachePutOptions = {}): Promise<CachePutOutcome> {
    if (!this.#indexer) throw new MissingIndexerError(this.table);
    const rv = parseResourceVersion(object.metadata?.resourceVersion);
    const stored = stripManagedFields(object);
    const indexed = this.#indexer(cluster, kind, stored);
    // Before the entry: a live entry without its source entry would be missed by the delete guard.
    await this.#putSourceEntry(cluster, kind, cacheKey(object), rv, indexed);
    return this.#write(cluster, kind, cacheKey(object), rv, {
      uid: String(object.metadata?.uid ?? ''),
      obj: cachedJson(stored),
      deleted: false,
      ...(options.writer ? { writer: options.writer } : {}),
      ...(options.writer && options.earlier?.length ? { writerRvs: options.earlier.map(parseResourceVersion) } : {}),
      ...indexed,
    }, options.classify ?? true, Boolean(options.writer));
  }

  /**
   * Writes the source entry of an object of {@link SOURCE_INDEXED_KIND} that names a PV (schema.ts), as
   * {@link put} does before the entry itself; nothing for other objects. For a LIST whose object is cached
   * at the same version already (the forwarder skips its put), so that after the LIST every cached
   * attachment has its source entry.
   */
  async putSourceEntry(cluster: string, kind: string, object: CacheableObject): Promise<void> {
    if (kind !== SOURCE_INDEXED_KIND) return;
    if (!this.#indexer) throw new MissingIndexerError(this.table);
    await this.#putSourceEntry(cluster, kind, cacheKey(object), parseResourceVersion(object.metadata?.resourceVersion), this.#indexer(cluster, kind, stripManagedFields(object)));
  }

  /**
   * The names of the cached attachments that name PV `volumeName`, from their source entries (one strongly
   * consistent Query of that PV's range, paginated). A name may belong to an attachment deleted since
   * (a source entry outlives its tombstone when its removal failed): read the entries themselves. Complete
   * only while the sync record says so (sync.ts `sourcesIndexed`).
   */
  async attachmentsNaming(cluster: string, volumeName: string): Promise<string[]> {
    const names: string[] = [];
    for await (const item of this.#query({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': sourceEntriesPk(cluster), ':prefix': sourceEntrySk(volumeName, '') },
      ProjectionExpression: 'sk',
      ConsistentRead: true,
    })) {
      names.push(String(item.sk).slice(volumeName.length + 1));
    }
    return names;
  }

  async #putSourceEntry(cluster: string, kind: string, key: string, rv: number, indexed: Record<string, unknown>): Promise<void> {
    const source = indexed[ATTACHMENT_SOURCE];
    if (kind !== SOURCE_INDEXED_KIND || typeof source !== 'string' || !source || source === NO_ATTACHMENT_SOURCE) return;
    try {
      await this.#doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: sourceEntriesPk(cluster), sk: sourceEntrySk(source, key), rv },
          // Forward only, as the entries: an older version's write finds it in place and changes nothing.
          ConditionExpression: 'attribute_not_exists(pk) OR rv < :rv',
          ExpressionAttributeValues: { ':rv': rv },
        }),
      );
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }

  /**
   * Replaces the entry with a tombstone at `deletedRv` (the deletion's resourceVersion, or a list
   * resourceVersion when a relist found the object gone), keeping `object` as its last state.
   */
  async remove(cluster: string, kind: string, object: CacheableObject, deletedRv: string | number): Promise<CacheWriteResult> {
    const rv = parseResourceVersion(deletedRv);
    const stored = stripManagedFields(object);
    const outcome = await this.#write(cluster, kind, cacheKey(object), rv, {
      uid: String(object.metadata?.uid ?? ''),
      obj: cachedJson(stored),
      deleted: true,
      expiresAt: Math.floor(this.#now() / 1000) + this.#ttl,
    }, true);
    // After the tombstone, and again when a retried removal finds it in place. Left alone when the entry
    // moved past this deletion (stale), and when a newer version wrote the source entry since.
    if (outcome.result !== 'stale' && kind === SOURCE_INDEXED_KIND) await this.#removeSourceEntry(cluster, cacheKey(object), rv, stored);
    return outcome.result;
  }

  async #removeSourceEntry(cluster: string, key: string, rv: number, object: CacheableObject): Promise<void> {
    const source = this.#indexer ? this.#indexer(cluster, SOURCE_INDEXED_KIND, object)[ATTACHMENT_SOURCE] : undefined;
    if (typeof source !== 'string' || !source || source === NO_ATTACHMENT_SOURCE) return;
    try {
      await this.#doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: { pk: sourceEntriesPk(cluster), sk: sourceEntrySk(source, key) },
          ConditionExpression: 'rv <= :rv',
          ExpressionAttributeValues: { ':rv': rv },
        }),
      );
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }

  /** Every live object of a kind in key order (tombstones skipped unless asked for), paginated Query. */
  async *list(cluster: string, kind: string, options: { includeDeleted?: boolean } = {}): AsyncIterable<CachedObject> {
    for await (const item of this.#query({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': cachePk(cluster, kind) },
      ConsistentRead: true,
    })) {
      const entry = this.#live(item);
      if (entry && (options.includeDeleted || !entry.deleted)) yield entry;
    }
  }

  /**
   * The live objects of a kind whose filter `attribute` (lib/state/indexes.ts) equals `value`, and those
   * cached before the attribute existed (they lack it: the caller matches them itself), in key order.
   * Strongly consistent, as {@link list}; DynamoDB still reads, and charges for, the whole partition, but
   * only the matches travel and are parsed.
   */
  async *listWhere(cluster: string, kind: string, attribute: FilterAttribute, value: string): AsyncIterable<CachedObject> {
    for await (const item of this.#query({
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: '(#a = :v OR attribute_not_exists(#a)) AND (attribute_not_exists(#deleted) OR #deleted <> :true)',
      ExpressionAttributeNames: { '#a': attribute, '#deleted': 'deleted' },
      ExpressionAttributeValues: { ':pk': cachePk(cluster, kind), ':v': value, ':true': true },
      ConsistentRead: true,
    })) {
      const entry = this.#live(item);
      if (entry && !entry.deleted) yield entry;
    }
  }

  /**
   * Objects in one of the cache's sparse indexes (see `indexes.ts` for what each holds), ascending by the
   * index's range key. `from` is an inclusive lower bound on the range key; `limit` caps the number of
   * objects yielded. Eventually consistent, as every GSI read.
   */
  async *queryIndex(index: CacheIndexName, pk: string, options: { from?: string; limit?: number } = {}): AsyncIterable<CachedObject> {
    const keys = CACHE_INDEX_KEYS[index];
    const input: QueryCommandInput = {
      TableName: this.table,
      IndexName: index,
      KeyConditionExpression: options.from === undefined ? '#h = :h' : '#h = :h AND #r >= :from',
      ExpressionAttributeNames: options.from === undefined ? { '#h': keys.hashKey } : { '#h': keys.hashKey, '#r': keys.rangeKey },
      ExpressionAttributeValues: options.from === undefined ? { ':h': pk } : { ':h': pk, ':from': options.from },
      ...(options.limit ? { Limit: options.limit } : {}),
    };
    let yielded = 0;
    for await (const item of this.#query(input)) {
      const entry = this.#live(item);
      if (!entry || entry.deleted) continue;
      yield entry;
      if (options.limit && ++yielded >= options.limit) return;
    }
  }

  /**
   * `claim`: a controller's write-back also tags the same version when the forwarder cached it first
   * (identical content; the forwarder reads the writer again before it publishes, see
   * lib/forwarder/review.ts).
   */
  async #write(cluster: string, kind: string, key: string, rv: number, attributes: Record<string, unknown>, classify: boolean, claim = false): Promise<CachePutOutcome> {
    const pk = cachePk(cluster, kind);
    await this.#registerPartitions(cluster, attributes);
    try {
      await this.#doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk, sk: key, rv, ...attributes },
          ConditionExpression: claim ? `${FORWARD_ONLY} OR (#rv = :rv AND attribute_not_exists(#writer) AND #deleted <> :true)` : FORWARD_ONLY,
          ExpressionAttributeNames: { '#rv': 'rv', '#deleted': 'deleted', '#expiresAt': 'expiresAt', ...(claim ? { '#writer': 'writer' } : {}) },
          ExpressionAttributeValues: { ':rv': rv, ':true': true, ':nowSeconds': Math.floor(this.#now() / 1000) },
          ...(classify ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
        }),
      );
      return { result: 'written' };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      if (!classify) return { result: 'stale' };
      // DynamoDB hands back the entry that won (in wire form: the document client does not convert errors).
      const won = (err as { Item?: Record<string, { N?: string; S?: string; BOOL?: boolean }> }).Item;
      if (won?.rv?.N !== undefined) return classified(Number(won.rv.N), won.writer?.S, won.deleted?.BOOL === true || isOther(won.uid?.S));
    }
    // No entry with the refusal (an endpoint without ReturnValuesOnConditionCheckFailure): read what won.
    const current = await this.#doc.send(new GetCommand({ TableName: this.table, Key: { pk, sk: key }, ConsistentRead: true }));
    return classified(Number(current.Item?.rv), current.Item?.writer, current.Item?.deleted === true || isOther(current.Item?.uid));

    /** The entry that won is another object of the same name (both uids known). */
    function isOther(wonUid: unknown): boolean {
      const uid = attributes.uid;
      return typeof wonUid === 'string' && wonUid !== '' && typeof uid === 'string' && uid !== '' && wonUid !== uid;
    }
    function classified(wonRv: number, writer: unknown, gone: boolean): CachePutOutcome {
      if (wonRv !== rv) return gone ? { result: 'stale', gone: true } : { result: 'stale' };
      return typeof writer === 'string' && writer ? { result: 'unchanged', writer } : { result: 'unchanged' };
    }
  }

  /** Puts the entry's partitions of registered indexes in their lists, before the entry can be seen there. */
  async #registerPartitions(cluster: string, attributes: Record<string, unknown>): Promise<void> {
    for (const { index } of REGISTERED_INDEXES) {
      const pk = attributes[CACHE_INDEX_KEYS[index].hashKey];
      if (typeof pk !== 'string' || !pk) continue;
      const memo = `${this.table}\u0000${pk}`;
      const partitions = registeredThrough(this.#doc);
      let registered = partitions.get(memo);
      if (!registered) {
        registered = this.#doc
          .send(
            new UpdateCommand({
              TableName: this.table,
              Key: partitionsKey(cluster, index),
              UpdateExpression: 'ADD pks :pks',
              ExpressionAttributeValues: { ':pks': new Set([pk]) },
            }),
          )
          .then(() => undefined);
        partitions.set(memo, registered);
        registered.catch(() => partitions.delete(memo));
      }
      await registered;
    }
  }

  async *#query(input: QueryCommandInput): AsyncIterable<Record<string, any>> {
    let start: Record<string, any> | undefined;
    do {
      const page = await this.#doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
      yield* page.Items ?? [];
      start = page.LastEvaluatedKey;
    } while (start);
  }

  #live(item: Record<string, any>): CachedObject | undefined {
    const deleted = item.deleted === true;
    const expiresAt = typeof item.expiresAt === 'number' ? item.expiresAt : undefined;
    if (deleted && expiresAt !== undefined && expiresAt < Math.floor(this.#now() / 1000)) return undefined;
    return {
      object: JSON.parse(item.obj),
      rv: Number(item.rv),
      uid: String(item.uid ?? ''),
      deleted,
      ...(deleted && expiresAt !== undefined ? { expiresAt } : {}),
      ...(typeof item.writer === 'string' && item.writer ? { writer: item.writer } : {}),
      ...(Array.isArray(item.writerRvs) && item.writerRvs.length > 0 ? { writerRvs: item.writerRvs.map(Number) } : {}),
    };
  }
}
