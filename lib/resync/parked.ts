/**
 * The parked-keys gauge: each resync run counts the keys parked in the {@link DUE_INDEX} (due or not) per
 * controller and publishes `ParkedKeys` as an EMF metric (namespace `claimflow`, dimensions `service` and
 * `controller`, as every function's metrics), one datapoint per controller per run — zero included, so the
 * stage's `ParkedKeysAlarm` and dashboard always have data. A provisioner's reminder to finish a deleted
 * claim of a name counts as one more parked key, beside the key's own.
 *
 * @example
 * const counts = await countParkedKeys(doc, 'claimflow-prod-control'); // { binder: 3 }
 * publishParkedKeys(counts, ['binder', 'provisioner']);
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { METRICS_NAMESPACE, metricsWarnings, serviceName } from '../runtime/observability.ts';
import { DUE_SHARDS } from '../state/backoff.ts';
import type { DocumentClient } from '../state/client.ts';
import { DUE_INDEX } from '../state/schema.ts';

/** The metric name (the alarm and the dashboard in serverless.yml use it). */
export const PARKED_KEYS_METRIC = 'ParkedKeys';

/** Parked keys per controller: every record in the due index, whatever its `dueAt`. */
export async function countParkedKeys(doc: DocumentClient, table: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let shard = 0; shard < DUE_SHARDS; shard++) {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(
        new QueryCommand({
          TableName: table,
          IndexName: DUE_INDEX,
          KeyConditionExpression: 'dueShard = :shard',
          ExpressionAttributeValues: { ':shard': `due#${shard}` },
          ProjectionExpression: '#controller',
          ExpressionAttributeNames: { '#controller': 'controller' },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        const controller = typeof item.controller === 'string' ? item.controller : 'unknown';
        counts[controller] = (counts[controller] ?? 0) + 1;
      }
      start = page.LastEvaluatedKey;
    } while (start);
  }
  return counts;
}

let defaultMetrics: Metrics | undefined;

/** Publishes one `ParkedKeys` datapoint per controller (the listed ones at 0 when none is parked). */
export function publishParkedKeys(counts: Record<string, number>, controllers: readonly string[], metrics?: Metrics): void {
  const sink = metrics ?? (defaultMetrics ??= new Metrics({ namespace: METRICS_NAMESPACE, serviceName: serviceName(), logger: metricsWarnings }));
  for (const controller of new Set([...controllers, ...Object.keys(counts)])) {
    const single = sink.singleMetric();
    single.addDimension('controller', controller);
    single.addMetric(PARKED_KEYS_METRIC, MetricUnit.Count, counts[controller] ?? 0);
  }
}
