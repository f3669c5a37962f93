/**
 * The secondary indexes of the object cache: their key attributes and the contract of what each holds. The
 * attribute values are computed from the object by the cache's {@link CacheIndexer}, which whoever creates
 * the cache passes in (`lib/kube/cache-index.ts` implements this table; lib/state parses no Kubernetes
 * quantity and reads no storage class itself).
 *
 * The cache table (see `schema.ts`) has four sparse global secondary indexes. An attribute is present on an
 * item only while the object qualifies, so each index holds exactly the objects a controller queries for:
 *
 * | index | hash key | range key | holds |
 * |---|---|---|---|
 * | {@link VOLUME_MATCH_INDEX} | `matchPk` = `<cluster>#<class>#<sorted, de-duplicated access modes joined by ','>` | `matchSk` = `<capacity bytes, zero-padded to 24 digits>#<PV name>` | PersistentVolumes with no `spec.claimRef`, no `metadata.deletionTimestamp`, and `status.phase` Available, Pending or unset; `<class>` is the `volume.beta.kubernetes.io/storage-class` annotation when present, else `spec.storageClassName`, else '' (upstream's `GetPersistentVolumeClass`) |
 * | {@link CLAIM_REF_INDEX} | `claimRefPk` = `<cluster>#<claimRef.namespace>/<claimRef.name>` | `sk` (the PV name) | PersistentVolumes with a `spec.claimRef` (bound or pre-bound), deleting or not |
 * | {@link PENDING_CLAIM_INDEX} | `pendingPk` = `<cluster>#<class>` | `pendingSk` = `<request bytes, zero-padded to 24 digits>#<namespace>/<name>` | PersistentVolumeClaims with an empty `spec.volumeName` and no `metadata.deletionTimestamp`; `<class>` is the `volume.beta.kubernetes.io/storage-class` annotation when present (even empty), else `spec.storageClassName`, else '' (upstream's `GetPersistentVolumeClaimClass`) |
 * | {@link RESYNC_INDEX} | `resyncPk` = `<cluster>#<Kind>` | `sk` (the key) | PersistentVolumeClaims whose `status.phase` is Pending or unset, PersistentVolumes whose `status.phase` is Released or Failed, Pending/unset with a `spec.claimRef`, Available with a `spec.claimRef.uid`, or Bound without a `spec.claimRef`: what the binder's resync revisits, so its cost follows them, not the number of bound objects |
 *
 * Sort-key order is numeric order of the size, so the binder finds the smallest Available volume of at
 * least `n` bytes with `Query matchPk = :pk AND matchSk >= padBytes(n)`, `Limit` small, ascending. A
 * capacity or request that cannot be parsed counts as 0 bytes. Tombstones carry no index attribute.
 * Every index projects all attributes.
 *
 * @example
 * // indexAttributes is lib/kube/cache-index.ts's indexer; the cache's creator imports it
 * const cache = new ObjectCache(doc, tables.cache, { indexer: indexAttributes });
 * indexAttributes('c1', 'PersistentVolume', pv);
 * // { matchPk: 'c1#gold#ReadWriteOnce', matchSk: '000000000000001073741824#pv-1' }
 */
import { CLAIM_REF_INDEX, PENDING_CLAIM_INDEX, RESYNC_INDEX, VOLUME_MATCH_INDEX } from './schema.ts';

/** Key attribute names of each cache index (what the table definition and every Query use). */
export const CACHE_INDEX_KEYS = {
  [VOLUME_MATCH_INDEX]: { hashKey: 'matchPk', rangeKey: 'matchSk' },
  [CLAIM_REF_INDEX]: { hashKey: 'claimRefPk', rangeKey: 'sk' },
  [PENDING_CLAIM_INDEX]: { hashKey: 'pendingPk', rangeKey: 'pendingSk' },
  [RESYNC_INDEX]: { hashKey: 'resyncPk', rangeKey: 'sk' },
} as const;

export type CacheIndexName = keyof typeof CACHE_INDEX_KEYS;

/**
 * Indexes whose partitions are registered: before an entry is written with such an index's hash key, the
 * cache records that partition in the cluster's partition list (`<cluster>#partitions`, see `schema.ts`),
 * and a completed LIST of `kind` marks the list complete. A reader with a complete list skips Queries of
 * partitions that never held an entry: the binder's empty match Queries, eight per provisioned claim (one
 * per access-mode set containing the claim's), become none.
 */
export const REGISTERED_INDEXES: ReadonlyArray<{ index: CacheIndexName; kind: string }> = [{ index: VOLUME_MATCH_INDEX, kind: 'PersistentVolume' }];

/**
 * Filter attributes: computed by the indexer like the index keys, but held by no index. A consistent Query
 * of a kind's partition filters on one ({@link ObjectCache.listWhere}), so only the matching items travel:
 *
 * | attribute | on | value |
 * |---|---|---|
 * | {@link ATTACHMENT_SOURCE} | VolumeAttachments | `spec.source.persistentVolumeName`; {@link NO_ATTACHMENT_SOURCE} when the attachment names no PV (an inline volume's) |
 *
 * An item cached before its filter attribute existed lacks it; such items always match (see `listWhere`).
 */
export const ATTACHMENT_SOURCE = 'vaSource';
/** {@link ATTACHMENT_SOURCE} of an attachment that names no PV ('#' is never part of a PV's name). */
export const NO_ATTACHMENT_SOURCE = '#none';

/**
 * The kind whose entries also keep a source entry per PV they name (schema.ts `sourceEntriesPk`): the cache
 * writes it from {@link ATTACHMENT_SOURCE} before the entry and removes it after the entry's tombstone.
 */
export const SOURCE_INDEXED_KIND = 'VolumeAttachment';

/** The filter attributes: the only names {@link ObjectCache.listWhere} takes (a misspelt one would filter nothing). */
export type FilterAttribute = typeof ATTACHMENT_SOURCE;

/** The index and filter attribute names, all of them: removed from an item when the object stops qualifying. */
export const INDEX_ATTRIBUTES = ['matchPk', 'matchSk', 'claimRefPk', 'pendingPk', 'pendingSk', 'resyncPk', ATTACHMENT_SOURCE] as const;

export type IndexAttributes = Partial<Record<(typeof INDEX_ATTRIBUTES)[number], string>>;

/** An object as the indexer sees it: JSON, every field optional (the cache holds whatever the API returned). */
export type IndexedObject = { metadata?: Record<string, any>; spec?: Record<string, any>; status?: Record<string, any>; [field: string]: any };

/**
 * Computes the index attributes an object of `kind` carries in the cache (the table above); `{}` when it is
 * in no index. Pure: the same object always yields the same attributes.
 */
export type CacheIndexer = (cluster: string, kind: string, object: IndexedObject) => IndexAttributes;
