/**
 * Loading the pure core's snapshots from the DynamoDB object cache, never by listing every volume:
 *
 * - a claim's candidate volumes come from Queries on `byVolumeMatch` — one partition per access-mode
 *   set that contains the claim's modes (`<cluster>#<class>#<modes>`), read from the request's padded
 *   byte size upwards, smallest first, a few items at a time — plus `byClaimRef` for volumes pre-bound
 *   to the claim, with the first page of the first set beside it (one round trip for both). Sets are read
 *   in the core's order (fewest modes first) and reading stops at the first set holding a match, so the
 *   core's decision over the candidates is its decision over all volumes.
 *   Given the cluster's complete list of partitions that ever held a volume (`matchPartitions`, see
 *   lib/state/cache.ts `IndexPartitions`), a set not in it is known empty and not queried;
 * - a volume's claim comes from the cache (or the runtime's read of it with the volume's entry), with
 *   upstream's live GET fallback.
 *
 * @example
 * const snapshot = await loadClaimSnapshot({ cluster, cache, api }, claim);
 * const result = syncClaim(snapshot);
 */
import { quantityBytes } from '../kube/quantity.ts';
import type { CachedObject, ObjectCache } from '../state/cache.ts';
import { prefetchKey } from '../state/key-state.ts';
import { CLAIM_REF_INDEX, VOLUME_MATCH_INDEX, claimRefPk, padBytes, volumeMatchPk } from '../state/schema.ts';
import type { BinderApi } from './api.ts';
import { ACCESS_MODE_ORDER, ANN_BIND_COMPLETED, VolumePhase } from './constants.ts';
import { accessModesIndexKey, claimRequest, getPersistentVolumeClaimClass, hasAnnotation } from './helpers.ts';
import { findMatchingVolume } from './match.ts';
import { isDelayBindingMode } from './provision.ts';
import type { ClaimSnapshot, PersistentVolume, PersistentVolumeClaim, StorageClass, VolumeSnapshot } from './types.ts';

export interface SnapshotSources {
  cluster: string;
  cache: ObjectCache;
  api: BinderApi;
  /** Items read per match-index partition on the first try (then ×8, then all). Default 16. */
  matchPageSize?: number;
  /**
   * Every `byVolumeMatch` partition that ever held a volume, from a complete list: the others are empty and
   * not queried. Absent: every access-mode set containing the claim's is queried.
   */
  matchPartitions?: ReadonlySet<string>;
  /**
   * Cache entries the runtime read with the message's own (one consistent BatchGetItem, just before), by
   * `prefetchKey`; null: read and absent. A key not in it is read now.
   */
  prefetched?: ReadonlyMap<string, CachedObject | null>;
}

/** The cache entry of `kind`/`key`: as prefetched with the message's own when it was, else read now. */
export async function prefetchedOrRead(
  sources: Pick<SnapshotSources, 'cluster' | 'cache' | 'prefetched'>,
  kind: string,
  key: string,
): Promise<CachedObject | undefined> {
  const read = sources.prefetched?.get(prefetchKey(kind, key));
  return read !== undefined ? (read ?? undefined) : sources.cache.get(sources.cluster, kind, key);
}

/** Reads that one snapshot needed (for the bench: cost per bind). */
export interface SnapshotStats {
  queries: number;
  itemsRead: number;
}

/** Every access-mode set containing `requested`, in the core's order: fewest modes first, then index key. */
export function supersetsOf(requested: readonly string[] | undefined): string[][] {
  const want = [...new Set(requested ?? [])];
  const others = (ACCESS_MODE_ORDER as readonly string[]).filter((m) => !want.includes(m));
  const sets: string[][] = [];
  for (let mask = 0; mask < 1 << others.length; mask++) {
    sets.push([...want, ...others.filter((_, i) => mask & (1 << i))]);
  }
  return sets.sort((a, b) => a.length - b.length || (accessModesIndexKey(a) < accessModesIndexKey(b) ? -1 : 1));
}

async function collect(iterable: AsyncIterable<{ object: unknown }>, stats: Pick<SnapshotStats, 'itemsRead'>): Promise<PersistentVolume[]> {
  const out: PersistentVolume[] = [];
  for await (const entry of iterable) out.push(entry.object as PersistentVolume);
  stats.itemsRead += out.length;
  return out;
}

/** Every StorageClass of the cluster (a handful; read from the cache). */
export async function loadClasses(cache: ObjectCache, cluster: string): Promise<StorageClass[]> {
  const out: StorageClass[] = [];
  for await (const entry of cache.list(cluster, 'StorageClass')) out.push(entry.object as unknown as StorageClass);
  return out;
}

async function liveVolume(sources: SnapshotSources, name: string): Promise<PersistentVolume | undefined> {
  const hit = await prefetchedOrRead(sources, 'PersistentVolume', name);
  return hit && !hit.deleted ? (hit.object as unknown as PersistentVolume) : undefined;
}

/** The snapshot syncClaim needs; `classes` are passed in (one read per reconcile). */
export async function loadClaimSnapshot(
  sources: SnapshotSources,
  claim: PersistentVolumeClaim,
  classes: StorageClass[],
  stats: SnapshotStats = { queries: 0, itemsRead: 0 },
): Promise<ClaimSnapshot> {
  const { cluster, cache } = sources;
  const volumeName = claim.spec.volumeName ?? '';
  if (hasAnnotation(claim.metadata, ANN_BIND_COMPLETED) || volumeName !== '') {
    stats.queries++;
    let volume = volumeName ? await liveVolume(sources, volumeName) : undefined;
    if (!volume && volumeName && hasAnnotation(claim.metadata, ANN_BIND_COMPLETED)) {
      // Lost is terminal and alarming: confirm a cache miss with the API server before declaring it.
      volume = await sources.api.readVolume(volumeName);
    }
    return { claim, volumes: volume ? [volume] : [], classes };
  }

  let delayBinding: boolean | undefined;
  try {
    delayBinding = isDelayBindingMode(claim, classes);
  } catch {
    delayBinding = undefined; // the core reports the class error
  }
  let from: string;
  try {
    from = padBytes(quantityBytes(claimRequest(claim)));
  } catch {
    from = padBytes(0n);
  }
  const className = getPersistentVolumeClaimClass(claim);
  const pageSize = sources.matchPageSize ?? 16;
  const readPage = (partition: string, limit: number | undefined, counted: Pick<SnapshotStats, 'itemsRead'> = stats): Promise<PersistentVolume[]> => {
    stats.queries++;
    return collect(cache.queryIndex(VOLUME_MATCH_INDEX, partition, { from, ...(limit ? { limit } : {}) }), counted);
  };
  // Only pre-bound volumes can bind a claim whose binding waits for its first consumer (or whose class is in
  // error); otherwise the first page of the first set that may hold a free volume is read beside the
  // pre-bound Query, one round trip instead of two. It goes unused, a Query spent, only when a volume
  // pre-bound to the claim in that set or an earlier one settles it; its items count as read only if used.
  const sets = delayBinding === false ? supersetsOf(claim.spec.accessModes) : [];
  const firstPartition = sets.map((set) => volumeMatchPk(cluster, className, set)).find((pk) => !sources.matchPartitions || sources.matchPartitions.has(pk));
  const firstPage = firstPartition === undefined ? undefined : readPage(firstPartition, pageSize, { itemsRead: 0 });
  firstPage?.catch(() => {}); // awaited below when used; its failure then fails the snapshot

  stats.queries++;
  const prebound = await collect(
    cache.queryIndex(CLAIM_REF_INDEX, claimRefPk(cluster, claim.metadata.namespace ?? '', claim.metadata.name)),
    stats,
  );
  if (delayBinding !== false) return { claim, volumes: prebound, classes };

  const candidates = [...prebound];
  for (const set of sets) {
    const partition = volumeMatchPk(cluster, className, set);
    const key = accessModesIndexKey(set);
    const preboundHere = prebound.filter((v) => accessModesIndexKey(v.spec.accessModes) === key);
    // Within a set a volume pre-bound to the claim wins over every free one (upstream returns it as soon
    // as it meets it): its set's free volumes cannot change the decision.
    if (preboundHere.length > 0 && findMatchingVolume(claim, preboundHere, false)) break;
    // No free volume was ever in this set.
    if (sources.matchPartitions && !sources.matchPartitions.has(partition)) continue;
    let found = false;
    for (const limit of [pageSize, pageSize * 8, undefined]) {
      let page: PersistentVolume[];
      if (partition === firstPartition && limit === pageSize && firstPage) {
        page = await firstPage;
        stats.itemsRead += page.length;
      } else {
        page = await readPage(partition, limit);
      }
      const free = page.filter((v) => !v.spec.claimRef);
      if (findMatchingVolume(claim, [...preboundHere, ...free], false)) {
        candidates.push(...free);
        found = true;
        break;
      }
      if (limit === undefined || page.length < limit) break;
    }
    if (found) break;
  }
  return { claim, volumes: candidates, classes };
}

/**
 * The snapshot syncVolume needs. The claim comes from the cache; when it is missing there and the
 * volume is neither Released nor Failed, or its uid differs from the claimRef's, from a live GET
 * (upstream: informer, then API server), so a volume is never released on a stale cache. A tombstone of
 * the very claim the volume names (the claimRef's uid) needs no GET: the cache saw that claim deleted,
 * which is more than upstream's informer miss (a claim not synced yet), and a uid never comes back.
 */
export async function loadVolumeSnapshot(sources: SnapshotSources, volume: PersistentVolume): Promise<VolumeSnapshot> {
  const ref = volume.spec.claimRef;
  if (!ref || !ref.uid) return { volume };
  const namespace = ref.namespace ?? '';
  const name = ref.name ?? '';
  // The runtime may have read it with the volume's own entry (one consistent BatchGetItem, just before).
  const hit = await prefetchedOrRead(sources, 'PersistentVolumeClaim', `${namespace}/${name}`);
  let claim = hit && !hit.deleted ? (hit.object as unknown as PersistentVolumeClaim) : undefined;
  const phase = volume.status?.phase;
  const seenDeleted = hit?.deleted === true && hit.uid === ref.uid;
  if (!claim && !seenDeleted && phase !== VolumePhase.Released && phase !== VolumePhase.Failed) {
    claim = await sources.api.readClaim(namespace, name);
  } else if (claim && claim.metadata.uid !== ref.uid) {
    claim = await sources.api.readClaim(namespace, name);
  }
  return claim ? { volume, claim } : { volume };
}
