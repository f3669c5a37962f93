/**
 * The secondary-index attributes of an object-cache item, computed from the object itself.
 *
 * The cache table (see `schema.ts`) has three sparse global secondary indexes. An attribute is present on an
 * item only while the object qualifies, so each index holds exactly the objects a controller queries for:
 *
 * | index | hash key | range key | holds |
 * |---|---|---|---|
 * | {@link VOLUME_MATCH_INDEX} | `matchPk` = `<cluster>#<storageClassName or ''>#<sorted, de-duplicated access modes joined by ','>` | `matchSk` = `<capacity bytes, zero-padded to 24 digits>#<PV name>` | PersistentVolumes with no `spec.claimRef`, no `metadata.deletionTimestamp`, and `status.phase` Available, Pending or unset |
 * | {@link CLAIM_REF_INDEX} | `claimRefPk` = `<cluster>#<claimRef.namespace>/<claimRef.name>` | `sk` (the PV name) | PersistentVolumes with a `spec.claimRef` (bound or pre-bound), deleting or not |
 * | {@link PENDING_CLAIM_INDEX} | `pendingPk` = `<cluster>#<class>` | `pendingSk` = `<request bytes, zero-padded to 24 digits>#<namespace>/<name>` | PersistentVolumeClaims with an empty `spec.volumeName` and no `metadata.deletionTimestamp`; `<class>` is `spec.storageClassName`, else the `volume.beta.kubernetes.io/storage-class` annotation, else '' |
 * | {@link RESYNC_INDEX} | `resyncPk` = `<cluster>#<Kind>` | `sk` (the key) | PersistentVolumeClaims whose `status.phase` is Pending or unset, PersistentVolumes whose `status.phase` is Released or Failed, or Pending/unset with a `spec.claimRef`: what the binder's resync revisits, so its cost follows them, not the number of bound objects |
 *
 * Sort-key order is numeric order of the size, so the binder finds the smallest Available volume of at
 * least `n` bytes with `Query matchPk = :pk AND matchSk >= padBytes(n)`, `Limit` small, ascending. A
 * capacity or request that cannot be parsed counts as 0 bytes. Tombstones carry no index attribute.
 * Every index projects all attributes.
 *
 * @example
 * const attrs = indexAttributes('c1', 'PersistentVolume', pv);
 * // { matchPk: 'c1#gold#ReadWriteOnce', matchSk: '000000000000001073741824#pv-1' }
 */
import { quantityBytes } from '../kube/quantity.ts';
import {
  CLAIM_REF_INDEX,
  PENDING_CLAIM_INDEX,
  RESYNC_INDEX,
  VOLUME_MATCH_INDEX,
  claimRefPk,
  padBytes,
  pendingClaimPk,
  resyncPk,
  volumeMatchPk,
  volumeMatchSk,
} from './schema.ts';

/** The beta annotation older claims use instead of `spec.storageClassName`. */
export const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

/** Key attribute names of each cache index (what the table definition and every Query use). */
export const CACHE_INDEX_KEYS = {
  [VOLUME_MATCH_INDEX]: { hashKey: 'matchPk', rangeKey: 'matchSk' },
  [CLAIM_REF_INDEX]: { hashKey: 'claimRefPk', rangeKey: 'sk' },
  [PENDING_CLAIM_INDEX]: { hashKey: 'pendingPk', rangeKey: 'pendingSk' },
  [RESYNC_INDEX]: { hashKey: 'resyncPk', rangeKey: 'sk' },
} as const;

export type CacheIndexName = keyof typeof CACHE_INDEX_KEYS;

/** The index attribute names, all of them: removed from an item when the object stops qualifying. */
export const INDEX_ATTRIBUTES = ['matchPk', 'matchSk', 'claimRefPk', 'pendingPk', 'pendingSk', 'resyncPk'] as const;

export type IndexAttributes = Partial<Record<(typeof INDEX_ATTRIBUTES)[number], string>>;

type Obj = { metadata?: Record<string, any>; spec?: Record<string, any>; status?: Record<string, any> };

/** Bytes of a quantity, 0 when absent or unparseable (such an object still lands in the index, first). */
function bytesOf(quantity: unknown): bigint {
  if (typeof quantity !== 'string' && typeof quantity !== 'number') return 0n;
  try {
    const bytes = quantityBytes(quantity);
    return bytes < 0n ? 0n : bytes;
  } catch {
    return 0n;
  }
}

/** The storage class of a claim as the binder reads it (`storagehelpers.GetPersistentVolumeClaimClass`). */
export function claimClass(claim: Obj): string {
  const annotated = claim.metadata?.annotations?.[BETA_STORAGE_CLASS_ANNOTATION];
  if (typeof annotated === 'string') return annotated;
  const named = claim.spec?.storageClassName;
  return typeof named === 'string' ? named : '';
}

/** The storage class of a volume (`storagehelpers.GetPersistentVolumeClass`): annotation first, as upstream. */
export function volumeClass(volume: Obj): string {
  const annotated = volume.metadata?.annotations?.[BETA_STORAGE_CLASS_ANNOTATION];
  if (typeof annotated === 'string') return annotated;
  const named = volume.spec?.storageClassName;
  return typeof named === 'string' ? named : '';
}

/** Index attributes of a PersistentVolume (see the module table). */
export function volumeIndexAttributes(cluster: string, volume: Obj): IndexAttributes {
  const phase = volume.status?.phase;
  const resync: IndexAttributes = phase === 'Released' || phase === 'Failed' ? { resyncPk: resyncPk(cluster, 'PersistentVolume') } : {};
  const claimRef = volume.spec?.claimRef;
  if (claimRef && typeof claimRef === 'object') {
    // Claimed but not yet Bound (phase Pending or unset): a claim deleted meanwhile leaves it so, and
    // upstream's resync of every PV would find it; the binder's resync reads this index instead.
    const pending = phase === undefined || phase === '' || phase === 'Pending' ? { resyncPk: resyncPk(cluster, 'PersistentVolume') } : {};
    return { claimRefPk: claimRefPk(cluster, claimRef.namespace ?? '', claimRef.name ?? ''), ...resync, ...pending };
  }
  if (Object.keys(resync).length) return resync;
  if (volume.metadata?.deletionTimestamp) return {};
  if (phase !== undefined && phase !== '' && phase !== 'Available' && phase !== 'Pending') return {};
  const name = String(volume.metadata?.name ?? '');
  return {
    matchPk: volumeMatchPk(cluster, volumeClass(volume), volume.spec?.accessModes),
    matchSk: volumeMatchSk(bytesOf(volume.spec?.capacity?.storage), name),
  };
}

/** Index attributes of a PersistentVolumeClaim (see the module table). */
export function claimIndexAttributes(cluster: string, claim: Obj): IndexAttributes {
  const phase = claim.status?.phase;
  const resync: IndexAttributes = phase === undefined || phase === '' || phase === 'Pending' ? { resyncPk: resyncPk(cluster, 'PersistentVolumeClaim') } : {};
  if (claim.spec?.volumeName) return resync;
  if (claim.metadata?.deletionTimestamp) return resync;
  const namespace = String(claim.metadata?.namespace ?? '');
  const name = String(claim.metadata?.name ?? '');
  return {
    ...resync,
    pendingPk: pendingClaimPk(cluster, claimClass(claim)),
    pendingSk: `${padBytes(bytesOf(claim.spec?.resources?.requests?.storage))}#${namespace}/${name}`,
  };
}

/** The index attributes an object of `kind` carries in the cache; `{}` for kinds no index holds. */
export function indexAttributes(cluster: string, kind: string, object: Obj): IndexAttributes {
  if (kind === 'PersistentVolume') return volumeIndexAttributes(cluster, object);
  if (kind === 'PersistentVolumeClaim') return claimIndexAttributes(cluster, object);
  return {};
}
