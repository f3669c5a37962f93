/**
 * The EventBridge-scheduled resync function: re-enqueues parked retries that are due and each controller's
 * level-triggered resync keys (see lib/resync/run.ts). The controllers' sources are wired here, by name.
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { binderResync } from '../lib/binder/resync.ts';
import { provisionerOptionsFromEnv } from '../lib/provisioner/options.ts';
import { createProvisionerResync } from '../lib/provisioner/resync.ts';
import { runResync, type ResyncReport } from '../lib/resync/run.ts';
import type { ResyncSource } from '../lib/resync/source.ts';
import { claimflow, entryPoint, type ClaimflowContext } from '../lib/runtime/middleware.ts';
import { METRICS_NAMESPACE, metricsWarnings, serviceName } from '../lib/runtime/observability.ts';
import { ENV } from '../lib/runtime/reconcile.ts';
import { clusterIdsFromEnv } from '../lib/kube/client.ts';
import { createSqsClient } from '../lib/runtime/sqs.ts';
import { createDocumentClient } from '../lib/state/client.ts';
import { tableNames } from '../lib/state/schema.ts';

const logger = new Logger({ serviceName: serviceName(), persistentKeys: { function: 'resync' } });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: serviceName(), logger: metricsWarnings });

/** Queue URL per controller from the `*_QUEUE_URL` variables. */
export function queueUrls(env: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(ENV.queueUrl).map(([controller, name]) => [controller, env[name] || undefined]));
}

/** Each controller's level-triggered resync source, by the name of its queue. */
export function resyncSources(env: NodeJS.ProcessEnv = process.env): Map<string, ResyncSource> {
  const sources = new Map<string, ResyncSource>([['binder', binderResync]]);
  // Only where the provisioner queue is configured (serverless.yml sets it for every function): without it
  // there is nowhere to enqueue. Its options are read on every run, so a bad value fails that run only.
  if (env[ENV.queueUrl.provisioner]) sources.set('provisioner', createProvisionerResync(() => provisionerOptionsFromEnv(env)));
  return sources;
}

const clients = () => ({ doc: createDocumentClient(), sqs: createSqsClient(), sources: resyncSources() });

async function resync(_event: unknown, context: ClaimflowContext<ReturnType<typeof clients>>): Promise<ResyncReport> {
  const { doc, sqs, sources } = context.claimflow;
  return runResync({ doc, sqs, sources, tables: tableNames(), queueUrls: queueUrls(), clusters: clusterIdsFromEnv(), logger, metrics });
}

/** The Lambda entry point. */
export const handler = entryPoint(
  middy(resync)
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(claimflow(clients)),
);
