/**
 * DynamoDB layout: two tables, one per concern.
 *
 * ## Object cache (`CACHE_TABLE`) — stands in for the informer cache
 * | attribute | meaning |
 * |---|---|
 * | `pk` (S, hash) | `<cluster>#<Kind>` |
 * | `sk` (S, range) | object key: `namespace/name` or `name` |
 * | `rv` (N) | resourceVersion as an integer; writes only move forward (condition `attribute_not_exists(pk) OR rv < :rv`) |
 * | `uid` (S) | object uid |
 * | `obj` (S) | the object as JSON (managedFields stripped) |
 * | `deleted` (BOOL) | tombstone: the object was deleted at `rv`; kept so a late event cannot resurrect it |
 * | `expiresAt` (N) | epoch seconds; TTL attribute, set on tombstones and lease records (readers must check expiry themselves) |
 * | `matchPk`, `matchSk` (S) | set only on unbound, non-deleting PVs: index {@link VOLUME_MATCH_INDEX} |
 * | `claimRefPk` (S) | set only on PVs with a claimRef: index {@link CLAIM_REF_INDEX} |
 * | `pendingPk`, `pendingSk` (S) | set only on unbound claims: index {@link PENDING_CLAIM_INDEX} |
 * | `resyncPk` (S) | set only on Pending claims and Released/Failed volumes: index {@link RESYNC_INDEX} |
 * | `vaSource` (S) | VolumeAttachments only: the PV they name (`#none` for an inline volume's); no index, a Query filter (indexes.ts) |
 *
 * One more item per VolumeAttachment that names a PV (its *source entry*, indexes.ts `SOURCE_INDEXED_KIND`):
 * pk `<cluster>#VolumeAttachment#bySource`, sk `<PV name>#<attachment name>`, `rv` (N) the attachment version
 * that wrote it. Written before the attachment's own entry, removed after its tombstone, so a consistent
 * Query of `begins_with(sk, '<PV name>#')` finds every cached attachment of one PV without reading the
 * others (the provisioner's delete guard). Trusted only while the VolumeAttachment sync record says every
 * cached attachment has one (control table, `sourcesRvN`, see sync.ts).
 *
 * One more item per cluster and registered index (indexes.ts `REGISTERED_INDEXES`): pk `<cluster>#partitions`,
 * sk the index name; `pks` (SS) every hash key an entry was ever written with (added before the entry is
 * written, never removed), `complete` (BOOL) set by the forwarder once a LIST of the index's kind put every
 * listed object's partition in `pks`. Only a complete list tells that a partition missing from it is empty.
 *
 * ## Control (`CONTROL_TABLE`) — runtime state
 * | `pk` (S, hash) | kind of record |
 * |---|---|
 * | `backoff#<controller>#<cluster>#<Kind>#<key>` | failures, nextAttemptAt (epoch ms), lastError, expiresAt; `dueShard`/`dueAt` while a retry is due. `…#<key>#<scope>`: a second stream of the key its controller keeps (the provisioner's reminder to finish a deleted claim of the name, scope = that claim's UID), with `rearms`/`rearmEveryMs` while the sweep parks it again after sending it (backoff.ts) |
 * | `lease#<name>` | holder, leaseUntil (epoch ms, the lease's expiry), fencing token; expiresAt (TTL, epoch s) a day after expiry or release |
 * | `sync#<cluster>#<Kind>` | forwarder bookmark `rv` (S) and `rvN` (N, the same value for the forward-only condition), `listComplete` (BOOL), listCompletedAt; VolumeAttachments: `sourcesRvN` (N), equal to `rvN` while the record vouches for the source entries (see sync.ts) |
 * | `bucket#<cluster>` | API token bucket (bucket.ts): `tat` (epoch ms where the last reserved slot ends), `pausedUntil`, `granted` (tokens granted, a counter) |
 * | `event#<cluster>#<sha256(spamKey)>` | event recorder (lib/kube/recorder.ts), one item per (source, involvedObject): spam bucket `tokens`/`updatedAt` (epoch ms); `aggregates` (aggregate-key hash → `messages`: hashes seen, at most 10; `lastTimestamp` epoch ms); `events` (event-key hash → Event `name`, `count`, `firstTimestamp`, `validUntil` epoch ms); `version` (condition of the single PutItem); expiresAt (TTL, epoch s) once all of it has lapsed. Earlier versions' `eventspam#…`, `eventagg#…` and per-event-key `event#…` records are no longer written and expire by expiresAt |
 * | `sv#<cluster>#<volumeId>` | shared-volume per-volume cache with expiry |
 * | `labelsync#<cluster>#<node>` | label-sync: the node state last handled (`storageos` BOOL, `labels` JSON), for the trigger predicate |
 * | `idem#...` | Powertools idempotency records |
 */

export const VOLUME_MATCH_INDEX = 'byVolumeMatch';
export const CLAIM_REF_INDEX = 'byClaimRef';
export const PENDING_CLAIM_INDEX = 'byPendingClaim';
export const RESYNC_INDEX = 'byResync';
export const DUE_INDEX = 'byDue';

export interface TableNames {
  cache: string;
  control: string;
}

/** Table names from the environment the function or the local stack sets (see serverless.yml). */
export function tableNames(env: NodeJS.ProcessEnv = process.env): TableNames {
  const cache = env.CACHE_TABLE;
  const control = env.CONTROL_TABLE;
  if (!cache || !control) throw new Error('CACHE_TABLE and CONTROL_TABLE must be set');
  return { cache, control };
}

export const cachePk = (cluster: string, kind: string): string => `${cluster}#${kind}`;
/**
 * Partition of the source entries of a cluster's VolumeAttachments (see the table above). Kinds hold no '#',
 * so no kind's partition shares it.
 */
export const sourceEntriesPk = (cluster: string): string => `${cluster}#VolumeAttachment#bySource`;
/** Sort key of a source entry: the PV, then the attachment ('#' is in no object name). */
export const sourceEntrySk = (volumeName: string, attachment: string): string => `${volumeName}#${attachment}`;
/** Key of a cluster's partition list of one registered index (cache table). */
export const partitionsKey = (cluster: string, index: string): { pk: string; sk: string } => ({ pk: `${cluster}#partitions`, sk: index });

/** Capacity in bytes as a fixed-width decimal string so that string order is numeric order. */
export const padBytes = (bytes: bigint): string => bytes.toString().padStart(24, '0');

/** Access modes in canonical order, joined: the volume-match index is partitioned by them. */
export function accessModesKey(modes: readonly string[] | undefined): string {
  return [...new Set(modes ?? [])].sort().join(',');
}

export const volumeMatchPk = (cluster: string, storageClass: string, accessModes: readonly string[] | undefined): string =>
  `${cluster}#${storageClass}#${accessModesKey(accessModes)}`;
export const volumeMatchSk = (capacityBytes: bigint, name: string): string => `${padBytes(capacityBytes)}#${name}`;
export const claimRefPk = (cluster: string, namespace: string, name: string): string => `${cluster}#${namespace}/${name}`;
export const pendingClaimPk = (cluster: string, storageClass: string): string => `${cluster}#${storageClass}`;
/** Partition of the resync index: the objects of one kind of a cluster that the binder's resync revisits. */
export const resyncPk = (cluster: string, kind: string): string => `${cluster}#${kind}`;

export const backoffPk = (controller: string, cluster: string, kind: string, key: string): string =>
  `backoff#${controller}#${cluster}#${kind}#${key}`;
export const leasePk = (name: string): string => `lease#${name}`;
export const syncPk = (cluster: string, kind: string): string => `sync#${cluster}#${kind}`;
export const bucketPk = (cluster: string): string => `bucket#${cluster}`;
