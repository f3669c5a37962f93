/**
 * The label sync Lambda handler: SQS batches from the LabelSyncQueue go through the reconcile runtime;
 * the scheduled event (EventBridge, `labelSyncResyncSchedule`, a tick every minute) runs the resync of
 * every cluster whose `NODE_LABEL_RESYNC_INTERVAL` has elapsed (see resync.ts). Nothing is built at import.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { createSqsHandler, type SqsHandler, type SqsHandlerOptions } from '../runtime/handler.ts';
import { clusterIdsFromEnv } from '../kube/client.ts';
import { serviceName } from '../runtime/observability.ts';
import { ObjectCache } from '../state/cache.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import { createDocumentClient, type DocumentClient } from '../state/client.ts';
import { tableNames } from '../state/schema.ts';
import { createStorageClientFromEnv } from '../storage/storageos/from-env.ts';
import type { NodeLabels } from '../storage/types.ts';
import { labelSyncConfigFromEnv, type LabelSyncConfig } from './config.ts';
import { createLabelSyncController, labelSyncContext, CONTROLLER_NAME, type LabelSyncContext } from './controller.ts';
import { LabelResyncSlots, runLabelResync, type LabelResyncReport } from './resync.ts';

export interface LabelSyncHandlerOptions {
  /** Default {@link labelSyncConfigFromEnv}. */
  config?: LabelSyncConfig;
  /** Default {@link createStorageClientFromEnv}. */
  storage?: NodeLabels;
  doc?: DocumentClient;
  /** Cluster ids the resync covers (default {@link clusterIdsFromEnv}). */
  clusters?: string[];
  /** Passed to {@link createSqsHandler}. */
  runtime?: SqsHandlerOptions<LabelSyncContext>;
  /** Clock of the resync's period slots (epoch ms). Default `Date.now`. */
  now?: () => number;
  /** Time the resync keeps in hand before the invocation's deadline (default 5 s). */
  resyncMarginMs?: number;
}

/** The function's handler: an SQS batch response for a batch, a resync report for anything else. */
export type LabelSyncHandler = (event: SQSEvent | Record<string, unknown>, context?: Context) => Promise<SQSBatchResponse | LabelResyncReport>;

/** True for a Lambda SQS event. */
export function isSqsEvent(event: unknown): event is SQSEvent {
  return Array.isArray((event as { Records?: unknown } | null)?.Records);
}

/** Builds the handler for both event shapes. */
export function createLabelSyncHandler(options: LabelSyncHandlerOptions = {}): LabelSyncHandler {
  let config: LabelSyncConfig | undefined = options.config;
  let storage: NodeLabels | undefined = options.storage;
  let doc: DocumentClient | undefined = options.doc ?? options.runtime?.doc;
  let sqs: SqsHandler | undefined;
  const logger = options.runtime?.logger ?? new Logger({ serviceName: serviceName(), persistentKeys: { controller: CONTROLLER_NAME } });
  const getConfig = () => (config ??= labelSyncConfigFromEnv());
  const getStorage = () => (storage ??= createStorageClientFromEnv());
  const getDoc = () => (doc ??= createDocumentClient());

  return async (event, context) => {
    if (isSqsEvent(event)) {
      sqs ??= createSqsHandler(createLabelSyncController(), {
        component: CONTROLLER_NAME,
        doc: getDoc(),
        logger,
        ...options.runtime,
        context: labelSyncContext(getStorage, getConfig()),
      });
      return sqs(event, context);
    }
    if (context) logger.addContext(context);
    const tables = options.runtime?.tables ?? tableNames();
    return runLabelResync({
      cache: new ObjectCache(getDoc(), tables.cache, { indexer: indexAttributes }),
      // built only when a cluster's resync is due: an idle tick is one conditional write per cluster
      storage: getStorage,
      slots: new LabelResyncSlots(getDoc(), tables.control),
      clusters: options.clusters ?? clusterIdsFromEnv(),
      config: getConfig(),
      logger,
      now: options.now,
      remainingMs: context ? () => context.getRemainingTimeInMillis() : undefined,
      marginMs: options.resyncMarginMs,
    });
  };
}
