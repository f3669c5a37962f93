/**
 * Lambda entry point of the binder (the upstream PersistentVolume controller): the binder queue (PVC, PV and
 * StorageClass events) through the reconcile runtime into {@link createBinderController}, events recorded as
 * `persistentvolume-controller`. Nothing but the logger and metrics is built at import.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { COMPONENT } from '../lib/binder/constants.ts';
import { createBinderController, CONTROLLER_WRITER } from '../lib/binder/controller.ts';
import { reconcileBatch } from '../lib/runtime/handler.ts';
import { claimflow, entryPoint } from '../lib/runtime/middleware.ts';
import { createLogger, createMetrics } from '../lib/runtime/observability.ts';
import { SqsRuntime } from '../lib/runtime/runtime.ts';

const logger = createLogger(CONTROLLER_WRITER);
const metrics = createMetrics(CONTROLLER_WRITER);

const binder = () =>
  new SqsRuntime(createBinderController(), {
    logger,
    metrics,
    component: COMPONENT,
    requiresSynced: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass'],
  });

export const handler = entryPoint(
  middy(reconcileBatch)
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(claimflow(binder)),
);
