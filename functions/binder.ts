/**
 * Lambda entry point of the binder (the upstream PersistentVolume controller): the binder queue (PVC,
 * PV and StorageClass events) → {@link createBinderController} through the shared SQS FIFO runtime,
 * events recorded as `persistentvolume-controller`. Nothing is built at import.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createSqsHandler, type SqsHandler } from '../lib/runtime/handler.ts';
import { createBinderController } from '../lib/binder/controller.ts';
import { COMPONENT } from '../lib/binder/constants.ts';

let built: SqsHandler | undefined;

export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  built ??= createSqsHandler(createBinderController(), { component: COMPONENT, requiresSynced: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass'] });
  return built(event, context);
}
