/**
 * One consistent Scan of the control table, sorted into what the CLI reports: backoff records, the
 * forwarder's sync records and heartbeats, and the API token buckets — per cluster. A Scan reads the whole
 * table (its cost follows the table's size: event aggregation and per-volume records included); the CLI
 * makes one per command.
 *
 * @example
 * const snapshot = await readControlTable(doc, 'claimflow-prod-control');
 * snapshot.backoff.filter((r) => r.givenUp);
 * snapshot.clusters; // ['prod']
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { BackoffRecord } from '../state/backoff.ts';
import type { BucketRecord } from '../state/bucket.ts';
import type { DocumentClient } from '../state/client.ts';
import { HEARTBEAT_RECORD_KIND, type HeartbeatRecord } from '../forwarder/heartbeat.ts';

/** A kind's `sync#<cluster>#<Kind>` record. */
export interface SyncRecord {
  cluster: string;
  kind: string;
  rv: string;
  listComplete: boolean;
  listCompletedAt?: string;
}

export interface ControlSnapshot {
  backoff: BackoffRecord[];
  sync: SyncRecord[];
  heartbeats: Map<string, HeartbeatRecord>;
  buckets: Map<string, BucketRecord>;
  /** Every cluster any of those records names, sorted. */
  clusters: string[];
  /** Clusters with sync records: a forwarder ran there. */
  forwardedClusters: string[];
}

/** Reads the records the CLI reports (`backoff#`, `sync#`, `bucket#`). */
export async function readControlTable(doc: DocumentClient, table: string): Promise<ControlSnapshot> {
  const snapshot: ControlSnapshot = { backoff: [], sync: [], heartbeats: new Map(), buckets: new Map(), clusters: [], forwardedClusters: [] };
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({
        TableName: table,
        ConsistentRead: true,
        FilterExpression: 'begins_with(pk, :backoff) OR begins_with(pk, :sync) OR begins_with(pk, :bucket)',
        ExpressionAttributeValues: { ':backoff': 'backoff#', ':sync': 'sync#', ':bucket': 'bucket#' },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) sort(snapshot, item);
    start = page.LastEvaluatedKey;
  } while (start);
  const clusters = new Set<string>([...snapshot.backoff.map((r) => r.cluster), ...snapshot.sync.map((s) => s.cluster), ...snapshot.heartbeats.keys(), ...snapshot.buckets.keys()]);
  snapshot.clusters = [...clusters].filter(Boolean).sort();
  snapshot.forwardedClusters = [...new Set(snapshot.sync.map((s) => s.cluster))].sort();
  snapshot.sync.sort((a, b) => a.cluster.localeCompare(b.cluster) || a.kind.localeCompare(b.kind));
  return snapshot;
}

function sort(snapshot: ControlSnapshot, item: Record<string, unknown>): void {
  const pk = String(item.pk);
  const parts = pk.split('#');
  if (parts[0] === 'backoff') {
    snapshot.backoff.push(item as unknown as BackoffRecord);
  } else if (parts[0] === 'bucket' && parts.length === 2) {
    snapshot.buckets.set(parts[1], item as unknown as BucketRecord);
  } else if (parts[0] === 'sync' && parts.length === 3) {
    const [, cluster, kind] = parts;
    if (kind === HEARTBEAT_RECORD_KIND) {
      snapshot.heartbeats.set(cluster, item as unknown as HeartbeatRecord);
      return;
    }
    snapshot.sync.push({
      cluster,
      kind,
      rv: typeof item.rv === 'string' ? item.rv : '',
      listComplete: item.listComplete === true,
      ...(typeof item.listCompletedAt === 'string' ? { listCompletedAt: item.listCompletedAt } : {}),
    });
  }
}
