/**
 * Lambda entry point of the provisioner: the provisioner queue (PVC, PV, StorageClass and VolumeAttachment events) →
 * {@link createProvisionerController} through the shared SQS FIFO runtime. Configuration: see
 * `lib/provisioner/OPTIONS.md` (`PROVISIONER_*`) and the storage API variables (`STORAGE_API_URL`, …).
 * Nothing is built at import; the first invocation reads the options and creates the clients.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createSqsHandler, type SqsHandler } from '../lib/runtime/handler.ts';
import { createProvisionerController, runtimeOptionsFor } from '../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../lib/provisioner/options.ts';
import { LocalProvisioner } from '../lib/provisioner/provisioners/local.ts';
import { StorageOSProvisioner } from '../lib/provisioner/provisioners/storageos.ts';
import { createStorageClientFromEnv } from '../lib/storage/storageos/from-env.ts';

let built: SqsHandler | undefined;

function build(): SqsHandler {
  const options = provisionerOptionsFromEnv(process.env);
  const storage = createStorageClientFromEnv(process.env);
  const provisioner = options.backend === 'local' ? new LocalProvisioner(storage) : new StorageOSProvisioner(storage, options.provisionerName);
  return createSqsHandler(createProvisionerController({ options, provisioner }), runtimeOptionsFor(options));
}

export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  built ??= build();
  return built(event, context);
}
