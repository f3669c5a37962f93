/**
 * Lambda entry point of the shared volume controller (StorageOS api-manager `sharedvolume`): two event shapes.
 * - An SQS batch from the shared-volume queue (VolumeAttachment, PVC, Service and Endpoints events) → an
 *   immediate reconcile of the volumes concerned, through the shared SQS FIFO runtime.
 * - The scheduled event (`{"action":"poll"}`, every minute) → poll at `SHARED_VOLUME_POLL_INTERVAL_MS` until
 *   shortly before the invocation must end (the next one's due time or the Lambda timeout), as the cluster's one
 *   poll owner, handing over to the next invocation when it stops.
 * Configuration: `lib/shared-volume/config.ts` (`SHARED_VOLUME_*`) and the storage API variables. Nothing is
 * built at import.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createSqsHandler, type SqsHandler } from '../lib/runtime/handler.ts';
import { sharedVolumeConfigFromEnv } from '../lib/shared-volume/config.ts';
import {
  createScheduledPoller,
  createSharedVolumeController,
  isScheduledPoll,
  sharedVolumeRuntimeOptions,
  type ScheduledPollEvent,
  type ScheduledPollSummary,
} from '../lib/shared-volume/controller.ts';
import { createStorageClientFromEnv } from '../lib/storage/storageos/from-env.ts';

interface Built {
  sqs: SqsHandler;
  poll: (event: ScheduledPollEvent, context?: Context) => Promise<ScheduledPollSummary>;
}

let built: Built | undefined;

function build(): Built {
  const config = sharedVolumeConfigFromEnv(process.env);
  const storage = createStorageClientFromEnv(process.env);
  return {
    sqs: createSqsHandler(createSharedVolumeController({ storage, config }), sharedVolumeRuntimeOptions()),
    poll: createScheduledPoller({ storage, config }),
  };
}

export async function handler(event: SQSEvent | ScheduledPollEvent, context?: Context): Promise<SQSBatchResponse | ScheduledPollSummary> {
  built ??= build();
  if (isScheduledPoll(event)) return built.poll(event, context);
  return built.sqs(event, context);
}
