/**
 * Lambda entry point of the StorageOS node label sync (see lib/label-sync/): Node events from the
 * LabelSyncQueue through the reconcile runtime, and the scheduled resync (EventBridge, a tick every minute) of
 * every cluster whose `NODE_LABEL_RESYNC_INTERVAL` has elapsed. The first invocation reads the configuration
 * and creates the clients; the storage client is created when a reconcile or a due resync needs it.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { labelSyncConfigFromEnv } from '../lib/label-sync/config.ts';
import { createLabelSyncController, labelSyncContext, CONTROLLER_NAME } from '../lib/label-sync/controller.ts';
import { isSqsEvent } from '../lib/label-sync/handler.ts';
import { clusterIdsFromEnv } from '../lib/kube/client.ts';
import { LabelResyncSlots, runLabelResync, type LabelResyncReport } from '../lib/label-sync/resync.ts';
import { runBatch } from '../lib/runtime/handler.ts';
import { claimflow, entryPoint, lambdaContextOf, type ClaimflowContext } from '../lib/runtime/middleware.ts';
import { createLogger, createMetrics } from '../lib/runtime/observability.ts';
import { SqsRuntime } from '../lib/runtime/runtime.ts';
import { ObjectCache } from '../lib/state/cache.ts';
import { indexAttributes } from '../lib/kube/cache-index.ts';
import { createDocumentClient } from '../lib/state/client.ts';
import { tableNames } from '../lib/state/schema.ts';
import { createStorageClientFromEnv } from '../lib/storage/storageos/from-env.ts';
import type { NodeLabels } from '../lib/storage/types.ts';

const logger = createLogger(CONTROLLER_NAME);
const metrics = createMetrics(CONTROLLER_NAME);

const labelSync = () => {
  const config = labelSyncConfigFromEnv();
  const doc = createDocumentClient();
  const tables = tableNames();
  let storage: NodeLabels | undefined;
  const storageClient = () => (storage ??= createStorageClientFromEnv());
  const context = labelSyncContext(storageClient, config);
  return {
    reconciler: new SqsRuntime(createLabelSyncController(), { component: CONTROLLER_NAME, doc, logger, metrics, context }),
    resync: { config, doc, tables, storageClient },
  };
};

/** A reconcile of every record for an SQS batch, the due clusters' resync for the scheduled event. */
async function reconcileOrResync(
  event: SQSEvent | Record<string, unknown>,
  context: ClaimflowContext<ReturnType<typeof labelSync>>,
): Promise<SQSBatchResponse | LabelResyncReport> {
  const { reconciler, resync } = context.claimflow;
  if (isSqsEvent(event)) return runBatch(reconciler, event, context);
  const lambda = lambdaContextOf(context);
  return runLabelResync({
    cache: new ObjectCache(resync.doc, resync.tables.cache, { indexer: indexAttributes }),
    // built only when a cluster's resync is due: an idle tick is one conditional write per cluster
    storage: resync.storageClient,
    slots: new LabelResyncSlots(resync.doc, resync.tables.control),
    clusters: clusterIdsFromEnv(),
    config: resync.config,
    logger,
    remainingMs: lambda ? () => lambda.getRemainingTimeInMillis() : undefined,
  });
}

export const handler = entryPoint(
  middy(reconcileOrResync)
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(claimflow(labelSync)),
);
