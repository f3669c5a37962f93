/**
 * Forgets what the tables remember about one cluster. The emulator keeps its cluster in memory, so every
 * start is a new cluster whose resourceVersions begin again at 1; on tables that outlive the stack (an
 * `--aws-endpoint`), the previous run's cache entries, bookmarks, "initial list complete" marks, backoff
 * records and token bucket of the same cluster id would hide the new cluster's objects (cache writes only
 * move forward) and resume watches from versions this emulator never had. Only items keyed by that
 * cluster id are deleted (lib/state/schema.ts): other clusters', leases and idempotency records stay.
 */
import { BatchWriteCommand, ScanCommand, type BatchWriteCommandInput, type BatchWriteCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from '../../../lib/state/client.ts';

/** Control-table record kinds whose second `#`-field is the cluster id (`sync#<cluster>#<Kind>`, …). */
const CLUSTER_SECOND = new Set(['sync', 'bucket', 'sv', 'labelsync']);

/**
 * Whether an item's partition key belongs to `cluster`: a cache key `<cluster>#<Kind>`, or a control key
 * `sync#<cluster>#…`, `bucket#<cluster>`, `sv#<cluster>#…`, `labelsync#<cluster>#…`,
 * `backoff#<controller>#<cluster>#…`.
 *
 * @example
 * belongsToCluster('backoff#binder#local#PersistentVolumeClaim#default/a', 'local'); // true
 */
export function belongsToCluster(pk: string, cluster: string, table: 'cache' | 'control'): boolean {
  const parts = pk.split('#');
  if (table === 'cache') return parts[0] === cluster && parts.length > 1;
  if (CLUSTER_SECOND.has(parts[0])) return parts[1] === cluster;
  if (parts[0] === 'backoff') return parts[2] === cluster;
  return false;
}

/**
 * Deletes the cluster's items from the cache and control tables; returns how many went.
 *
 * @example
 * await forgetCluster(doc, { cache: 'claimflow-local-cache', control: 'claimflow-local-control' }, 'local');
 */
export async function forgetCluster(doc: DocumentClient, tables: { cache: string; control: string }, cluster: string): Promise<number> {
  let deleted = 0;
  for (const which of ['cache', 'control'] as const) {
    const table = tables[which];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(new ScanCommand({ TableName: table, ProjectionExpression: 'pk, sk', ExclusiveStartKey: start }));
      const keys = (page.Items ?? [])
        .filter((item) => belongsToCluster(String(item.pk), cluster, which))
        .map((item) => (item.sk === undefined ? { pk: item.pk } : { pk: item.pk, sk: item.sk }));
      for (let i = 0; i < keys.length; i += 25) {
        let requests: NonNullable<BatchWriteCommandInput['RequestItems']>[string] | undefined = keys
          .slice(i, i + 25)
          .map((Key) => ({ DeleteRequest: { Key } }));
        for (let attempt = 0; requests && requests.length > 0; attempt++) {
          if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
          const out: BatchWriteCommandOutput = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
          requests = out.UnprocessedItems?.[table];
        }
      }
      deleted += keys.length;
      start = page.LastEvaluatedKey;
    } while (start);
  }
  return deleted;
}
