/**
 * Lambda entry point of the shared volume controller (StorageOS api-manager `sharedvolume`): two event shapes.
 * - An SQS batch from the shared-volume queue (VolumeAttachment, PVC, Service and Endpoints events) → an
 *   immediate reconcile of the volumes concerned, through the reconcile runtime.
 * - The scheduled event (`{"action":"poll"}`, every minute) → poll at `SHARED_VOLUME_POLL_INTERVAL_MS` until
 *   shortly before the invocation must end (the next one's due time or the Lambda timeout), as each cluster's one
 *   poll owner (every cluster of `CLUSTERS`, side by side), handing over to the next invocation when it stops.
 * Configuration: `lib/shared-volume/config.ts` (`SHARED_VOLUME_*`) and the storage API variables. The first
 * invocation reads it and creates the clients.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { runBatch } from '../lib/runtime/handler.ts';
import { claimflow, entryPoint, lambdaContextOf, type ClaimflowContext } from '../lib/runtime/middleware.ts';
import { createLogger, createMetrics } from '../lib/runtime/observability.ts';
import { SqsRuntime } from '../lib/runtime/runtime.ts';
import { sharedVolumeConfigFromEnv } from '../lib/shared-volume/config.ts';
import { CONTROLLER_NAME } from '../lib/shared-volume/constants.ts';
import {
  createScheduledPoller,
  createSharedVolumeController,
  isScheduledPoll,
  sharedVolumeRuntimeOptions,
  type ScheduledPollEvent,
  type ScheduledPollSummaries,
  type ScheduledPollSummary,
} from '../lib/shared-volume/controller.ts';
import { createStorageClientFromEnv } from '../lib/storage/storageos/from-env.ts';

const logger = createLogger(CONTROLLER_NAME);
const metrics = createMetrics(CONTROLLER_NAME);

const sharedVolume = () => {
  const config = sharedVolumeConfigFromEnv(process.env);
  const storage = createStorageClientFromEnv(process.env);
  return {
    reconciler: new SqsRuntime(createSharedVolumeController({ storage, config }), { logger, metrics, ...sharedVolumeRuntimeOptions() }),
    poll: createScheduledPoller({ storage, config }),
  };
};

/** A poll for the scheduled event, a reconcile of every record for an SQS batch. */
async function pollOrReconcile(
  event: SQSEvent | ScheduledPollEvent,
  context: ClaimflowContext<ReturnType<typeof sharedVolume>>,
): Promise<SQSBatchResponse | ScheduledPollSummary | ScheduledPollSummaries> {
  const { reconciler, poll } = context.claimflow;
  return isScheduledPoll(event) ? poll(event, lambdaContextOf(context)) : runBatch(reconciler, event, context);
}

export const handler = entryPoint(
  middy(pollOrReconcile)
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(claimflow(sharedVolume)),
);
