/**
 * The shared volume controller as a function: the SQS controller (an immediate reconcile of the volumes a
 * VolumeAttachment, PVC, Service or Endpoints event concerns) and the scheduled poll (every minute, polling at
 * the configured interval until shortly before the next invocation).
 *
 * @example
 * const controller = createSharedVolumeController({ storage, config });
 * export const handler = createSqsHandler(controller, sharedVolumeRuntimeOptions());
 */
import type { Context } from 'aws-lambda';
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { KubeClients } from '../kube/client.ts';
import { KubeEventRecorder, type EventRecorder } from '../kube/recorder.ts';
import type { RuntimeContext, SqsHandlerOptions } from '../runtime/handler.ts';
import { createLogger, createMetrics } from '../runtime/observability.ts';
import { ENV, type Controller } from '../runtime/reconcile.ts';
import { ApiBudget, budgetFromEnv } from '../state/bucket.ts';
import { createDocumentClient, type DocumentClient } from '../state/client.ts';
import { tableNames, type TableNames } from '../state/schema.ts';
import { SharedVolumeCache } from './cache.ts';
import type { SharedVolumeConfig } from './config.ts';
import { COMPONENT, CONTROLLER_NAME } from './constants.ts';
import { SharedVolumeReconcileError } from './errors.ts';
import { SharedVolumeReconciler, type PollResult, type SharedVolumeApi, type SharedVolumeLogger, type SharedVolumeMetricsSink } from './reconciler.ts';
import { triggerFor } from './triggers.ts';

/** Adapts Powertools metrics to the reconciler's sink. */
export function metricsSink(metrics: Metrics): SharedVolumeMetricsSink {
  return {
    count: (name, value = 1) => metrics.addMetric(name, MetricUnit.Count, value),
    duration: (name, ms) => metrics.addMetric(name, MetricUnit.Milliseconds, ms),
  };
}

/** Adapts a Powertools logger to the reconciler's. */
export function loggerSink(logger: Logger): SharedVolumeLogger {
  return {
    info: (message, extra) => logger.info(message, extra ?? {}),
    warn: (message, extra) => logger.warn(message, extra ?? {}),
  };
}

export interface SharedVolumeControllerOptions {
  storage: SharedVolumeApi;
  config: SharedVolumeConfig;
}

/**
 * The SQS controller. A request whose volumes failed throws {@link SharedVolumeReconcileError}, so the
 * runtime retries it with backoff (a 412 or a 401 on the way is then survived even between polls).
 */
export function createSharedVolumeController(options: SharedVolumeControllerOptions): Controller<RuntimeContext> {
  const caches = new Map<string, SharedVolumeCache>();
  return {
    name: CONTROLLER_NAME,
    kinds: ['VolumeAttachment', 'PersistentVolumeClaim', 'Service', 'Endpoints'],
    async reconcile(request, ctx) {
      const trigger = triggerFor(request);
      if (trigger === undefined) return;
      let cache = caches.get(request.cluster);
      if (!cache) caches.set(request.cluster, (cache = new SharedVolumeCache({ doc: ctx.doc, table: ctx.tables.control, cluster: request.cluster })));
      const reconciler = new SharedVolumeReconciler({
        storage: options.storage,
        core: await ctx.kube.coreV1(request.cluster),
        recorder: ctx.recorder,
        cache,
        config: options.config,
        metrics: metricsSink(ctx.metrics),
        logger: loggerSink(ctx.logger),
      });
      const result = await reconciler.pollOnce(trigger.all ? {} : { only: trigger.select });
      throwOnFailure(result);
    },
  };
}

/** Throws when the list failed or a volume failed. */
function throwOnFailure(result: PollResult): void {
  if (result.outcomes === undefined) throw new SharedVolumeReconcileError('failed to list shared volumes');
  const failed = [...result.outcomes].filter(([, outcome]) => outcome === 'failed').map(([id]) => id);
  if (failed.length > 0) throw new SharedVolumeReconcileError(`shared volumes failed: ${failed.join(', ')}`);
}

/** Runtime options of the SQS handler: events as `storageos-api-manager`; no informer-cache gate (reads go to the API). */
export function sharedVolumeRuntimeOptions(): SqsHandlerOptions<RuntimeContext> {
  return { component: COMPONENT, requiresSynced: [] };
}

/** The scheduled event's `input` (serverless.yml) that tells a poll from an SQS batch. */
export interface ScheduledPollEvent {
  action: 'poll';
  /** Cluster id (default `CLUSTER_ID`). */
  cluster?: string;
}

/** Whether a Lambda event is the scheduled poll. */
export function isScheduledPoll(event: unknown): event is ScheduledPollEvent {
  return typeof event === 'object' && event !== null && (event as { action?: unknown }).action === 'poll';
}

export interface ScheduledPollerOptions extends SharedVolumeControllerOptions {
  env?: NodeJS.ProcessEnv;
  doc?: DocumentClient;
  tables?: TableNames;
  kube?: KubeClients;
  recorderFor?: (cluster: string) => EventRecorder;
  metrics?: Metrics;
}

/** What one scheduled invocation did. */
export interface ScheduledPollSummary {
  cluster: string;
  iterations: number;
  listFailures: number;
  volumes: number;
}

/**
 * The scheduled poll: iterations at `pollIntervalMs` until `scheduleIntervalMs - scheduleMarginMs` after the
 * start (and never closer than the margin to the Lambda timeout), so consecutive invocations tile the schedule.
 */
export function createScheduledPoller(options: ScheduledPollerOptions): (event: ScheduledPollEvent, context?: Context) => Promise<ScheduledPollSummary> {
  const env = options.env ?? process.env;
  const logger = createLogger(CONTROLLER_NAME);
  const metrics = options.metrics ?? createMetrics(CONTROLLER_NAME);
  const caches = new Map<string, SharedVolumeCache>();
  const recorders = new Map<string, EventRecorder>();
  let doc: DocumentClient | undefined;
  let tables: TableNames | undefined;
  let kube: KubeClients | undefined;
  return async (event, context) => {
    const started = Date.now();
    const cluster = event.cluster ?? env[ENV.clusterId] ?? 'default';
    doc ??= options.doc ?? createDocumentClient();
    tables ??= options.tables ?? tableNames(env);
    const d = doc;
    const t = tables;
    kube ??=
      options.kube ??
      new KubeClients({ env, budget: (c) => new ApiBudget({ doc: d, table: t.control, cluster: c, ...budgetFromEnv(env) }) });
    const k = kube;
    let cache = caches.get(cluster);
    if (!cache) caches.set(cluster, (cache = new SharedVolumeCache({ doc: d, table: t.control, cluster })));
    let recorder = recorders.get(cluster);
    if (!recorder) {
      recorder =
        options.recorderFor?.(cluster) ??
        new KubeEventRecorder({
          api: () => k.coreV1(cluster),
          component: COMPONENT,
          cluster,
          doc: d,
          table: t.control,
          onError: (error, e) => logger.warn('event not recorded', { reason: e.reason, error: String(error) }),
        });
      recorders.set(cluster, recorder);
    }
    const { config } = options;
    let deadline = started + config.scheduleIntervalMs - config.scheduleMarginMs;
    if (context) deadline = Math.min(deadline, started + context.getRemainingTimeInMillis() - config.scheduleMarginMs);
    const reconciler = new SharedVolumeReconciler({
      storage: options.storage,
      core: await k.coreV1(cluster),
      recorder,
      cache,
      config,
      metrics: metricsSink(metrics),
      logger: loggerSink(logger),
    });
    try {
      const results = await reconciler.pollUntil(deadline);
      return {
        cluster,
        iterations: results.length,
        listFailures: results.filter((r) => r.outcomes === undefined).length,
        volumes: Math.max(0, ...results.map((r) => r.listed)),
      };
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
