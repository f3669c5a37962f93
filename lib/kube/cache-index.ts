/**
 * The Kubernetes side of the object cache's indexes: the {@link CacheIndexer} every writer of the cache
 * passes to `ObjectCache` (`new ObjectCache(doc, table, { indexer: indexAttributes })`). It implements the
 * table in lib/state/indexes.ts: which PersistentVolumes and PersistentVolumeClaims each sparse index holds,
 * with sizes parsed as Kubernetes quantities here, so lib/state stores bytes without knowing quantities.
 *
 * @example
 * indexAttributes('c1', 'PersistentVolume', pv);
 * // { matchPk: 'c1#gold#ReadWriteOnce', matchSk: '000000000000001073741824#pv-1' }
 */
import { ATTACHMENT_SOURCE, NO_ATTACHMENT_SOURCE, type CacheIndexer, type IndexAttributes, type IndexedObject } from '../state/indexes.ts';
import { claimRefPk, padBytes, pendingClaimPk, resyncPk, volumeMatchPk, volumeMatchSk } from '../state/schema.ts';
import { AnnBetaStorageClass } from './annotations.ts';
import { getPersistentVolumeClaimClass } from './objects.ts';
import { quantityBytes } from './quantity.ts';

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

/** The storage class of a volume (upstream's `GetPersistentVolumeClass`): the beta annotation first. */
function volumeClass(volume: IndexedObject): string {
  const annotated = volume.metadata?.annotations?.[AnnBetaStorageClass];
  if (typeof annotated === 'string') return annotated;
  const named = volume.spec?.storageClassName;
  return typeof named === 'string' ? named : '';
}

/** Index attributes of a PersistentVolume (see the table in lib/state/indexes.ts). */
export function volumeIndexAttributes(cluster: string, volume: IndexedObject): IndexAttributes {
  const phase = volume.status?.phase;
  const resync: IndexAttributes = phase === 'Released' || phase === 'Failed' ? { resyncPk: resyncPk(cluster, 'PersistentVolume') } : {};
  const claimRef = volume.spec?.claimRef;
  if (claimRef && typeof claimRef === 'object') {
    // Claimed but not yet Bound (phase Pending or unset), or Available while naming a claim's uid (a bind
    // whose status write failed leaves it so): a claim deleted or bound elsewhere meanwhile leaves it so, and
    // upstream's resync of every PV would find it; the binder's resync reads this index instead. A volume
    // pre-bound by name only (a user's, waiting for its claim) stays out.
    const waiting = phase === undefined || phase === '' || phase === 'Pending' || (phase === 'Available' && Boolean(claimRef.uid));
    const pending = waiting ? { resyncPk: resyncPk(cluster, 'PersistentVolume') } : {};
    return { claimRefPk: claimRefPk(cluster, claimRef.namespace ?? '', claimRef.name ?? ''), ...resync, ...pending };
  }
  if (Object.keys(resync).length) return resync;
  // Bound with no claimRef: an unbind whose status write failed; only a sync sets its phase right again.
  if (phase === 'Bound') return { resyncPk: resyncPk(cluster, 'PersistentVolume') };
  if (volume.metadata?.deletionTimestamp) return {};
  if (phase !== undefined && phase !== '' && phase !== 'Available' && phase !== 'Pending') return {};
  const name = String(volume.metadata?.name ?? '');
  return {
    matchPk: volumeMatchPk(cluster, volumeClass(volume), volume.spec?.accessModes),
    matchSk: volumeMatchSk(bytesOf(volume.spec?.capacity?.storage), name),
  };
}

/** Index attributes of a PersistentVolumeClaim (see the table in lib/state/indexes.ts). */
export function claimIndexAttributes(cluster: string, claim: IndexedObject): IndexAttributes {
  const phase = claim.status?.phase;
  const resync: IndexAttributes = phase === undefined || phase === '' || phase === 'Pending' ? { resyncPk: resyncPk(cluster, 'PersistentVolumeClaim') } : {};
  if (claim.spec?.volumeName) return resync;
  if (claim.metadata?.deletionTimestamp) return resync;
  const namespace = String(claim.metadata?.namespace ?? '');
  const name = String(claim.metadata?.name ?? '');
  return {
    ...resync,
    pendingPk: pendingClaimPk(cluster, getPersistentVolumeClaimClass(claim)),
    pendingSk: `${padBytes(bytesOf(claim.spec?.resources?.requests?.storage))}#${namespace}/${name}`,
  };
}

/**
 * The filter attribute of a VolumeAttachment (lib/state/indexes.ts): the PV it names, so the provisioner's
 * delete guard reads only the attachments of the volume it deletes. Its spec is immutable: set once.
 */
export function attachmentFilterAttributes(attachment: IndexedObject): IndexAttributes {
  const name = attachment.spec?.source?.persistentVolumeName;
  return { [ATTACHMENT_SOURCE]: typeof name === 'string' && name !== '' ? name : NO_ATTACHMENT_SOURCE };
}

/** The index attributes an object of `kind` carries in the cache; `{}` for kinds no index holds. */
export const indexAttributes: CacheIndexer = (cluster, kind, object) => {
  if (kind === 'PersistentVolume') return volumeIndexAttributes(cluster, object);
  if (kind === 'PersistentVolumeClaim') return claimIndexAttributes(cluster, object);
  if (kind === 'VolumeAttachment') return attachmentFilterAttributes(object);
  return {};
};
