/**
 * One resync run (the EventBridge-scheduled function):
 * (a) parked backoff keys whose `dueAt` has passed go back to their controller's queue as REQUEUE messages,
 *     and are then taken off the due index (send first: a lost send must not lose the retry; a duplicate
 *     is collapsed by the FIFO dedup id, which carries the `dueAt`); a reminder with rearms left is parked
 *     again instead, `rearmEveryMs` later (lib/state/backoff.ts `rearm`), until its controller clears it or
 *     its rearms run out (it is then taken off the due index like any park, its record left to expire);
 * (b) every controller's level-triggered resync source (`sources`, wired by functions/resync.ts) is run
 *     per cluster and its keys are re-enqueued;
 * (c) the keys still parked are counted per controller and published as the `ParkedKeys` metric
 *     (parked.ts), which the stage's parked-keys alarm watches.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { MESSAGE_VERSION, type ClusterEvent, type WatchedKind } from '../runtime/message.ts';
import { BackoffStore } from '../state/backoff.ts';
import { ObjectCache } from '../state/cache.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import type { DocumentClient } from '../state/client.ts';
import type { TableNames } from '../state/schema.ts';
import { countParkedKeys, publishParkedKeys } from './parked.ts';
import type { ResyncSource } from './source.ts';
import { RequeueSender } from './sender.ts';

export interface ResyncOptions {
  doc: DocumentClient;
  tables: TableNames;
  sqs: SQSClient;
  /** Queue URL per controller name. */
  queueUrls: Record<string, string | undefined>;
  /** Cluster ids the level-triggered sources run for. */
  clusters: readonly string[];
  /** Each controller's resync source, by controller name (the name of its queue in `queueUrls`). */
  sources: ReadonlyMap<string, ResyncSource>;
  /** Most parked keys re-enqueued per run (default 5000). */
  maxDue?: number;
  now?: () => number;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Where `ParkedKeys` is published (default: EMF on stdout); `false`: not counted. */
  metrics?: Metrics | false;
}

export interface ResyncReport {
  /** Parked keys re-enqueued. */
  due: number;
  /** Keys re-enqueued by level-triggered sources, per controller. */
  resynced: Record<string, number>;
  /** Keys skipped (no queue configured for their controller, or a source failed). */
  skipped: number;
  errors: string[];
}

/** Runs one resync. Errors of one source do not stop the others; they are reported. */
export async function runResync(options: ResyncOptions): Promise<ResyncReport> {
  const now = options.now ?? Date.now;
  const started = now();
  const report: ResyncReport = { due: 0, resynced: {}, skipped: 0, errors: [] };
  const backoff = new BackoffStore({ doc: options.doc, table: options.tables.control, now });
  const sender = new RequeueSender(options.sqs, `resync-${started}`);
  const observedAt = new Date(started).toISOString();

  const due = await backoff.listDue(started, options.maxDue ?? 5000);
  for (const record of due) {
    const queueUrl = options.queueUrls[record.controller];
    if (!queueUrl) {
      report.skipped++;
      options.logger?.warn('no queue for a parked key’s controller', { controller: record.controller, pk: record.pk });
      continue;
    }
    const event: ClusterEvent = {
      v: MESSAGE_VERSION,
      cluster: record.cluster,
      kind: record.kind as WatchedKind,
      type: 'REQUEUE',
      key: record.key,
      uid: record.uid ?? '',
      resourceVersion: record.resourceVersion ?? '0',
      observedAt,
      controller: record.controller,
    };
    await sender.add(queueUrl, event, `due-${record.dueAt}`);
  }
  await sender.flush();
  for (const record of due) {
    if (!options.queueUrls[record.controller]) continue;
    // A reminder with rearms left stays parked, due again later; anything else leaves the due index.
    const taken = (record.rearms ?? 0) > 0 && (record.rearmEveryMs ?? 0) > 0 ? await backoff.rearm(record, started + record.rearmEveryMs!) : await backoff.unpark(record);
    if (taken) report.due++;
  }

  const cache = new ObjectCache(options.doc, options.tables.cache, { now, indexer: indexAttributes });
  for (const [controller, source] of options.sources) {
    const queueUrl = options.queueUrls[controller];
    if (!queueUrl) {
      report.errors.push(`${controller}: no queue URL`);
      continue;
    }
    let count = 0;
    for (const cluster of options.clusters) {
      try {
        for await (const item of source(cluster, cache, { doc: options.doc, tables: options.tables, flush: () => sender.flush() })) {
          await sender.add(queueUrl, {
            v: MESSAGE_VERSION,
            cluster,
            kind: item.kind,
            type: 'REQUEUE',
            key: item.key,
            uid: item.uid,
            resourceVersion: item.resourceVersion || '0',
            observedAt,
            controller,
          });
          count++;
        }
        await sender.flush();
      } catch (error) {
        report.errors.push(`${controller}/${cluster}: ${error instanceof Error ? error.message : String(error)}`);
        options.logger?.error('resync source failed', { controller, cluster, error: String(error) });
      }
    }
    report.resynced[controller] = count;
  }
  if (options.metrics !== false) {
    try {
      const parked = await countParkedKeys(options.doc, options.tables.control);
      publishParkedKeys(parked, Object.keys(options.queueUrls), options.metrics);
      options.logger?.info('parked keys', { parked });
    } catch (error) {
      options.logger?.warn('parked keys not counted', { error: String(error) });
    }
  }
  options.logger?.info('resync done', { ...report });
  return report;
}
