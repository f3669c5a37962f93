/**
 * The shared volume controller as a function: the SQS controller (an immediate reconcile of the volumes a
 * VolumeAttachment, PVC, Service or Endpoints event concerns) and the scheduled poll (every minute, polling at
 * the configured interval until shortly before the invocation must end, as the cluster's one poll owner).
 * Both take a volume's lease before reconciling it, so a volume is never reconciled by two invocations at once,
 * and both end their work before the Lambda timeout.
 *
 * @example
 * const controller = createSharedVolumeController({ storage, config });
 * export const handler = createSqsHandler(controller, sharedVolumeRuntimeOptions());
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { KubeClients, clusterIdsFromEnv } from '../kube/client.ts';
import { coreV1 } from '../kube/core-v1.ts';
import { KubeJsonApi } from '../kube/json-api.ts';
import { runWithStorageCluster } from '../storage/clusters.ts';
import { KubeEventRecorder, type EventRecorder } from '../kube/recorder.ts';
import type { RuntimeContext, SqsHandlerOptions } from '../runtime/handler.ts';
import { createLogger, createMetrics, type Log } from '../runtime/observability.ts';
import type { Controller } from '../runtime/reconcile.ts';
import { ApiBudget, budgetFromEnv, withBudgetDeadline } from '../state/bucket.ts';
import { ObjectCache } from '../state/cache.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import { createDocumentClient, type DocumentClient } from '../state/client.ts';
import { LeaseStore } from '../state/lease.ts';
import { tableNames, type TableNames } from '../state/schema.ts';
import { SharedVolumeCache } from './cache.ts';
import type { SharedVolumeConfig } from './config.ts';
import { BUSY_REQUEUE_MS, COMPONENT, CONTROLLER_NAME, startReserveMs, SV_METRIC } from './constants.ts';
import { SharedVolumeReconcileError } from './errors.ts';
import { acquirePollOwnership, type NotOwnerReason } from './ownership.ts';
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
export function loggerSink(logger: Log): SharedVolumeLogger {
  return {
    info: (message, extra) => logger.info(message, extra ?? {}),
    warn: (message, extra) => logger.warn(message, extra ?? {}),
  };
}

export interface SharedVolumeControllerOptions {
  storage: SharedVolumeApi;
  config: SharedVolumeConfig;
  /**
   * The event path stops its work this long before the Lambda timeout (default `TIME_MARGIN_MS`, else 5 s: the
   * runtime's own margin, so a reconcile never runs into the time the runtime keeps for itself).
   */
  timeMarginMs?: number;
}

const positiveInt = (value: string | undefined, fallback: number): number => {
  const parsed = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(parsed) && parsed >= 0 ? parsed : fallback;
};

/**
 * The SQS controller. A request whose volumes failed throws {@link SharedVolumeReconcileError}, so the
 * runtime retries it with backoff (a 412 or a 401 on the way is then survived even between polls). A volume
 * another invocation holds (`busy`), or one the Lambda deadline left undone (`deferred`), requeues the request
 * after {@link BUSY_REQUEUE_MS}: nothing is lost, and nothing counts as a failure.
 */
export function createSharedVolumeController(options: SharedVolumeControllerOptions): Controller<RuntimeContext> {
  const caches = new Map<string, SharedVolumeCache>();
  const timeMarginMs = options.timeMarginMs ?? positiveInt(process.env.TIME_MARGIN_MS, 5000);
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
        core: await coreV1(ctx.kube, request.cluster),
        recorder: ctx.recorder,
        cache,
        config: options.config,
        metrics: metricsSink(ctx.metrics),
        logger: loggerSink(ctx.logger),
        objects: new ObjectCache(ctx.doc, ctx.tables.cache, { indexer: indexAttributes }),
        leases: ctx.leases,
        cluster: request.cluster,
      });
      const deadline = ctx.lambdaContext ? Date.now() + ctx.lambdaContext.getRemainingTimeInMillis() - timeMarginMs : undefined;
      const result = await reconciler.pollOnce({ ...(trigger.all ? {} : { only: trigger.select }), deadline });
      throwOnFailure(result);
      if (result.deadlineReached || [...(result.outcomes?.values() ?? [])].some((o) => o === 'busy' || o === 'deferred')) {
        return { requeueAfterMs: BUSY_REQUEUE_MS };
      }
    },
  };
}

/** Throws when the list failed or a volume failed (not when the deadline cut the list short). */
function throwOnFailure(result: PollResult): void {
  if (result.outcomes === undefined) {
    if (result.deadlineReached) return;
    throw new SharedVolumeReconcileError('failed to list shared volumes');
  }
  const failed = [...result.outcomes].filter(([, outcome]) => outcome === 'failed').map(([id]) => id);
  if (failed.length > 0) throw new SharedVolumeReconcileError(`shared volumes failed: ${failed.join(', ')}`);
}

/**
 * Runtime options of the SQS handler: events as `storageos-api-manager`; no informer-cache gate (a read the
 * object cache cannot answer is a GET, so a half-filled cache is never wrong, only slower).
 */
export function sharedVolumeRuntimeOptions(): SqsHandlerOptions<RuntimeContext> {
  return { component: COMPONENT, requiresSynced: [] };
}

/** The scheduled event's `input` (serverless.yml) that tells a poll from an SQS batch. */
export interface ScheduledPollEvent {
  action: 'poll';
  /** Cluster id (default: every cluster of `CLUSTERS`, else `CLUSTER_ID`). */
  cluster?: string;
}

/** What a scheduled invocation that polled several clusters did, one summary per cluster. */
export interface ScheduledPollSummaries {
  clusters: ScheduledPollSummary[];
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
  /** Whether this invocation owned the cluster's poll (else `notOwner` says why it did not poll). */
  owner: boolean;
  notOwner?: NotOwnerReason;
  /** Time spent waiting for the previous owner's handover. */
  waitedMs: number;
  iterations: number;
  listFailures: number;
  volumes: number;
  /** Volumes skipped because the event path held them, over all passes. */
  busy: number;
  /** Volumes (or a list) the stop time cut short, over all passes. */
  deferred: number;
}

/**
 * The scheduled poll. The invocation must be over by `end` = the next invocation's due time
 * (`scheduleIntervalMs` after the start) or the Lambda timeout, whichever is first; it polls until
 * `stopAt = end - scheduleMarginMs`, when every call still in flight is aborted. It polls only as the cluster's
 * poll owner (the lease `sv-poll#<cluster>` until `end`; see ownership.ts), taking over from the previous owner
 * at its handover, and hands over (releases the lease) as soon as it stops.
 */
export function createScheduledPoller(
  options: ScheduledPollerOptions,
): (event: ScheduledPollEvent, context?: Context) => Promise<ScheduledPollSummary | ScheduledPollSummaries> {
  const env = options.env ?? process.env;
  const pollOne = createClusterPoller(options);
  return async (event, context) => {
    if (event.cluster !== undefined) return runWithStorageCluster(event.cluster, () => pollOne(event.cluster!, context));
    const clusters = clusterIdsFromEnv(env);
    if (clusters.length === 1) return runWithStorageCluster(clusters[0], () => pollOne(clusters[0], context));
    // Each cluster under its own poll-owner lease, side by side, each against its own storage control plane.
    return { clusters: await Promise.all(clusters.map((cluster) => runWithStorageCluster(cluster, () => pollOne(cluster, context)))) };
  };
}

/** One cluster's poll (see {@link createScheduledPoller}). */
function createClusterPoller(options: ScheduledPollerOptions): (cluster: string, context?: Context) => Promise<ScheduledPollSummary> {
  const env = options.env ?? process.env;
  const logger = createLogger(CONTROLLER_NAME);
  const metrics = options.metrics ?? createMetrics(CONTROLLER_NAME);
  const caches = new Map<string, SharedVolumeCache>();
  const recorders = new Map<string, EventRecorder>();
  let doc: DocumentClient | undefined;
  let tables: TableNames | undefined;
  let kube: KubeClients | undefined;
  let leases: LeaseStore | undefined;
  let objects: ObjectCache | undefined;
  return async (cluster, context) => {
    const started = Date.now();
    const { config } = options;
    const end = Math.min(started + config.scheduleIntervalMs, context ? started + context.getRemainingTimeInMillis() : Infinity);
    const stopAt = end - config.scheduleMarginMs;
    doc ??= options.doc ?? createDocumentClient();
    tables ??= options.tables ?? tableNames(env);
    const d = doc;
    const t = tables;
    leases ??= new LeaseStore({ doc: d, table: t.control });
    objects ??= new ObjectCache(d, t.cache, { indexer: indexAttributes });
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
          api: () => k.api(cluster, KubeJsonApi),
          component: COMPONENT,
          cluster,
          doc: d,
          table: t.control,
          onError: (error, e) => logger.warn('event not recorded', { reason: e.reason, error: String(error) }),
        });
      recorders.set(cluster, recorder);
    }
    const summary: ScheduledPollSummary = { cluster, owner: false, waitedMs: 0, iterations: 0, listFailures: 0, volumes: 0, busy: 0, deferred: 0 };
    const holder = context?.awsRequestId ?? randomUUID();
    try {
      const ownership = await acquirePollOwnership({ leases, cluster, holder, leaseUntil: end, stopAt, reserveMs: startReserveMs(config.pollIntervalMs) });
      summary.waitedMs = ownership.waitedMs;
      if (ownership.waitedMs > 0) metrics.addMetric(SV_METRIC.handoverWait, MetricUnit.Milliseconds, ownership.waitedMs);
      if (!ownership.lease) {
        summary.notOwner = ownership.reason;
        metrics.addMetric(SV_METRIC.pollNotOwner, MetricUnit.Count, 1);
        logger.info('not polling: another invocation owns the poll of this cluster', { cluster, reason: ownership.reason, waitedMs: ownership.waitedMs });
        return summary;
      }
      summary.owner = true;
      const reconciler = new SharedVolumeReconciler({
        storage: options.storage,
        core: await coreV1(k, cluster),
        recorder,
        cache,
        config,
        metrics: metricsSink(metrics),
        logger: loggerSink(logger),
        objects,
        leases,
        cluster,
      });
      try {
        const results = await withBudgetDeadline(stopAt, () => reconciler.pollUntil(stopAt));
        summary.iterations = results.length;
        summary.listFailures = results.filter((r) => r.outcomes === undefined && !r.deadlineReached).length;
        summary.volumes = Math.max(0, ...results.map((r) => r.listed));
        for (const r of results) {
          for (const outcome of r.outcomes?.values() ?? []) {
            if (outcome === 'busy') summary.busy++;
            if (outcome === 'deferred') summary.deferred++;
          }
          if (r.outcomes === undefined && r.deadlineReached) summary.deferred++;
        }
      } finally {
        await leases.release(ownership.lease).catch((error: unknown) => logger.warn('poll lease not released', { cluster, error: String(error) }));
      }
      return summary;
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
