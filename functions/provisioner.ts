/**
 * Lambda entry point of the provisioner: the provisioner queue (PVC, PV, StorageClass and VolumeAttachment
 * events) through the reconcile runtime into {@link createProvisionerController}. Configuration: see
 * `lib/provisioner/OPTIONS.md` (`PROVISIONER_*`) and the storage API variables (`STORAGE_API_URL`, …). The
 * first invocation reads the options and creates the clients.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { createProvisionerController, runtimeOptionsFor, CONTROLLER_NAME } from '../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../lib/provisioner/options.ts';
import { LocalProvisioner } from '../lib/provisioner/provisioners/local.ts';
import { StorageOSProvisioner } from '../lib/provisioner/provisioners/storageos.ts';
import { reconcileBatch } from '../lib/runtime/handler.ts';
import { claimflow, entryPoint } from '../lib/runtime/middleware.ts';
import { createLogger, createMetrics } from '../lib/runtime/observability.ts';
import { SqsRuntime } from '../lib/runtime/runtime.ts';
import { createStorageClientFromEnv } from '../lib/storage/storageos/from-env.ts';

const logger = createLogger(CONTROLLER_NAME);
const metrics = createMetrics(CONTROLLER_NAME);

const provisioner = () => {
  const options = provisionerOptionsFromEnv(process.env);
  const storage = createStorageClientFromEnv(process.env);
  const backend = options.backend === 'local' ? new LocalProvisioner(storage) : new StorageOSProvisioner(storage, options.provisionerName);
  return new SqsRuntime(createProvisionerController({ options, provisioner: backend }), { logger, metrics, ...runtimeOptionsFor(options) });
};

export const handler = entryPoint(
  middy(reconcileBatch)
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(claimflow(provisioner)),
);
