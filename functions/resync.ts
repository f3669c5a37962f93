/**
 * The EventBridge-scheduled resync function: re-enqueues parked retries that are due and every
 * registered controller's level-triggered resync keys (see lib/resync/run.ts).
 */
import type { Context, ScheduledEvent } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSClient } from '@aws-sdk/client-sqs';
import '../lib/resync/registrations.ts';
import { ENV } from '../lib/runtime/reconcile.ts';
import { createSqsClient } from '../lib/runtime/sqs.ts';
import { runResync, type ResyncReport } from '../lib/resync/run.ts';
import { createDocumentClient } from '../lib/state/client.ts';
import { tableNames } from '../lib/state/schema.ts';

const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'claimflow', persistentKeys: { function: 'resync' } });
let clients: { doc: ReturnType<typeof createDocumentClient>; sqs: SQSClient } | undefined;

/** Cluster ids: the keys of `CLUSTERS`, else `CLUSTER_ID` (default `local`). */
export function clusterIds(env: NodeJS.ProcessEnv = process.env): string[] {
  if (env[ENV.clusters]) return Object.keys(JSON.parse(env[ENV.clusters] as string) as Record<string, unknown>);
  return [env[ENV.clusterId] || 'local'];
}

/** Queue URL per controller from the `*_QUEUE_URL` variables. */
export function queueUrls(env: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(ENV.queueUrl).map(([controller, name]) => [controller, env[name] || undefined]));
}

/** The Lambda entry point. */
export async function handler(_event: ScheduledEvent | Record<string, unknown>, context?: Context): Promise<ResyncReport> {
  if (context) logger.addContext(context);
  clients ??= { doc: createDocumentClient(), sqs: createSqsClient() };
  return runResync({
    doc: clients.doc,
    sqs: clients.sqs,
    tables: tableNames(),
    queueUrls: queueUrls(),
    clusters: clusterIds(),
    logger,
  });
}
