/**
 * The SQS FIFO → controller adapter: turns a Lambda SQS batch into `controller.reconcile` calls and their
 * outcomes into a partial batch response, backoff records, requeues, events and metrics.
 *
 * Per record, in order:
 * 0. **Time check:** with less than `timeMarginMs` of Lambda time left the record is not started but
 *    deferred for a second (no failure counted), so a function timeout never adds a receive to it. API
 *    budget waits inside the reconcile end at the same margin; a {@link BudgetTimeoutError} is a short
 *    wait, not a failure.
 * 1. **Validate** the body against {@link ClusterEventSchema}. A malformed message is a poison message: it
 *    is sent to the DLQ (`DLQ_URL`) at once with the reason, counted in `PoisonMessages`, logged, and then
 *    reported as processed so it does not bounce `maxReceiveCount` times.
 * 2. **Sync gate:** nothing runs before the forwarder marked the initial LIST of every kind the controller
 *    reads complete (`sync#<cluster>#<Kind>`, `listComplete`); until then the record waits a short delay.
 * 3. **Backoff gate:** a REQUEUE or a redelivery that arrives before its key's `nextAttemptAt` waits again.
 *    A fresh watch event is not held back (as upstream, where `queue.Add` bypasses the rate limiter).
 * 4. **Reconcile.** Success clears the key's backoff record (`Forget`). `{ requeueAfterMs }` forgets and
 *    waits. An error counts a failure and waits `base·2^(n-1)` (client-go defaults 5 ms … 1000 s); at the
 *    controller's `maxFailures` it gives up (Warning event, `ThresholdExceeded`) but keeps the count, as
 *    upstream's `Done` without `Forget`: a later change of the object gets one attempt, and a failure gives up
 *    again at once; only a success or the object's deletion clears it. A {@link TerminalError} is not
 *    retried (Warning event, `TerminalErrors`). Nor is an {@link UnknownClusterError} (a cluster with no
 *    `CLUSTERS` entry): the message is dropped with an error log and an `UnknownCluster` metric whose
 *    `cluster` dimension names it.
 *
 * Waiting ({@link planWait}) is either ChangeMessageVisibility on the message, reported failed, or parking
 * the key for the resync function (the message is then deleted).
 *
 * **FIFO failure rule.** AWS states: "for FIFO, stop at the first failure and return that record and all
 * unprocessed records". Its purpose is per-group order. {@link SqsFifoGroupsProcessor} runs the batch's
 * groups concurrently and each group's records in order; after a failure, the later records *of the same
 * message group* are returned unprocessed, while other groups' records still run. Each group (one object)
 * keeps its order — nothing of group A runs after a failed A record — and one object's failure does not hold
 * other objects back for a whole visibility timeout nor burn a receive of their `maxReceiveCount`.
 * `throwOnFullBatchFailure` is off: a batch whose every record failed is an ordinary partial response, not a
 * thrown error (which would make Lambda retry the whole batch and ignore our visibility changes). Records of a
 * group skipped behind a deferred record get that record's visibility too: SQS keeps a FIFO group locked while
 * any of its messages is in flight, so they would otherwise stretch its short wait to the queue's visibility
 * timeout.
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { ChangeMessageVisibilityBatchCommand, ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { KubeClients, UnknownClusterError } from '../kube/client.ts';
import { forbiddenRequest, retryAfterMs } from '../kube/errors.ts';
import { KubeEventRecorder, type EventRecorder, type InvolvedObject } from '../kube/recorder.ts';
import { budgetFromEnv, ApiBudget, BudgetTimeoutError, withBudgetDeadline } from '../state/bucket.ts';
import { BackoffStore, rateLimiterConfigFromEnv, type BackoffId, type BackoffRecord, type RateLimiterConfig } from '../state/backoff.ts';
import { createDocumentClient, type DocumentClient } from '../state/client.ts';
import { ObjectCache } from '../state/cache.ts';
import { readKeyState } from '../state/key-state.ts';
import { LeaseStore } from '../state/lease.ts';
import { tableNames, type TableNames } from '../state/schema.ts';
import { SyncMarkers } from '../state/sync.ts';
import { SqsFifoGroupsProcessor } from './fifo-groups.ts';
import { ClusterEventSchema, splitKey, type ClusterEvent, type WatchedKind } from './message.ts';
import { createLogger, createMetrics, METRIC } from './observability.ts';
import { ENV, TerminalError, type Controller, type ReconcileRequest } from './reconcile.ts';
import { createSqsClient } from './sqs.ts';
import { DEFAULT_MAX_VISIBILITY_DELAY_MS, planWait } from './wait.ts';

/** What every reconcile gets from the runtime (controllers may wrap it with {@link SqsHandlerOptions.context}). */
export interface RuntimeContext {
  request: ReconcileRequest;
  logger: Logger;
  metrics: Metrics;
  doc: DocumentClient;
  tables: TableNames;
  /** Kubernetes clients per cluster (spending the cluster's request budget). */
  kube: KubeClients;
  /** Event recorder for the request's cluster. */
  recorder: EventRecorder;
  leases: LeaseStore;
  lambdaContext: Context | undefined;
}

export interface SqsHandlerOptions<Ctx> {
  doc?: DocumentClient;
  tables?: TableNames;
  sqs?: SQSClient;
  /** This controller's queue (for ChangeMessageVisibility). Default: its `*_QUEUE_URL`, else derived from the record's ARN. */
  queueUrl?: string;
  /** Default `DLQ_URL`. */
  dlqUrl?: string;
  limiter?: RateLimiterConfig;
  /** Stop retrying a key after this many consecutive failures (default `MAX_FAILURES`; 0 = forever). */
  maxFailures?: number;
  /** The queue's redrive maxReceiveCount (default `MAX_RECEIVE_COUNT`, else 5). */
  maxReceiveCount?: number;
  /**
   * Longer waits are parked rather than held in visibility (default 30 s): a message kept invisible holds
   * its object's whole FIFO group, so a fresh event (a deletion) would wait behind it. A parked key's
   * message is deleted and the resync function re-enqueues the key when due.
   */
  maxVisibilityDelayMs?: number;
  /**
   * A record is not started with less than this much Lambda time left (default `TIME_MARGIN_MS`, else 5 s):
   * it is deferred (short visibility, no failure counted) so a timeout cannot add a receive to it. Budget
   * waits inside a reconcile also stop this long before the timeout.
   */
  timeMarginMs?: number;
  /** How long a record waits for the forwarder's initial LIST (default 2 s). */
  syncWaitMs?: number;
  /** Kinds whose sync markers must be complete (default `controller.kinds`). */
  requiresSynced?: readonly WatchedKind[];
  /** `source.component` of events (default the controller name). */
  component?: string;
  logger?: Logger;
  metrics?: Metrics;
  kube?: KubeClients;
  /** The recorder for a cluster (default a {@link KubeEventRecorder} on `kube`). */
  recorderFor?: (cluster: string) => EventRecorder;
  /** Builds the controller's context from the runtime's (default: the runtime context itself). */
  context?: (runtime: RuntimeContext) => Ctx | Promise<Ctx>;
  now?: () => number;
}

/** The Lambda handler {@link createSqsHandler} returns. */
export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** Internal: the record must be reported failed so that SQS redelivers it after the visibility we set. */
export class RecordDeferredError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RecordDeferredError';
  }
}

/** Per-invocation bookkeeping. */
interface Invocation {
  /** Records our handler ran (the rest of the failures were skipped by the FIFO processor). */
  processed: Set<string>;
  /** Message group → the visibility (s) a deferred record of it got. */
  deferredGroups: Map<string, number>;
}

const SYNC_CACHE_MS = 30_000;
/** How soon a record deferred for lack of Lambda time or API budget is retried. */
const SOON_MS = 1000;
const GATE_SLACK_MS = 1000;

const positiveInt = (value: string | undefined, fallback: number): number => {
  const parsed = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(parsed) && parsed >= 0 ? parsed : fallback;
};

/**
 * The cluster event inside an SNS notification envelope (a subscription without raw message delivery);
 * anything else is returned as it is.
 */
export function unwrapSnsEnvelope(body: unknown): unknown {
  const envelope = body as { Type?: unknown; Message?: unknown; TopicArn?: unknown } | null;
  if (envelope && envelope.Type === 'Notification' && typeof envelope.Message === 'string' && typeof envelope.TopicArn === 'string') {
    try {
      return JSON.parse(envelope.Message);
    } catch {
      return body;
    }
  }
  return body;
}

/** `error` or the first of its causes that is a `type`. */
function findError<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof type) return e;
  }
  return undefined;
}

/** `arn:aws:sqs:<region>:<account>:<name>` → the queue URL. */
export function queueUrlFromArn(arn: string): string | undefined {
  const parts = arn.split(':');
  if (parts.length !== 6 || parts[2] !== 'sqs') return undefined;
  const [, partition, , region, account, name] = parts;
  const domain = partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com';
  return `https://sqs.${region}.${domain}/${account}/${name}`;
}

const API_VERSIONS: Record<WatchedKind, string> = {
  PersistentVolume: 'v1',
  PersistentVolumeClaim: 'v1',
  Node: 'v1',
  Service: 'v1',
  Endpoints: 'v1',
  StorageClass: 'storage.k8s.io/v1',
  VolumeAttachment: 'storage.k8s.io/v1',
};

/** The object an event about `request` is recorded against: the embedded object, else a reference from the key. */
export function involvedObjectOf(request: ReconcileRequest): InvolvedObject {
  const embedded = request.event.object as InvolvedObject | undefined;
  if (embedded?.metadata?.name) return { apiVersion: API_VERSIONS[request.kind], kind: request.kind, ...embedded };
  const { namespace, name } = splitKey(request.key);
  return {
    apiVersion: API_VERSIONS[request.kind],
    kind: request.kind,
    metadata: { name, ...(namespace ? { namespace } : {}), ...(request.event.uid ? { uid: request.event.uid } : {}) },
  };
}

/**
 * Builds the Lambda handler for `controller`. Clients are created on first use, so importing a function
 * module has no side effects.
 */
export function createSqsHandler<Ctx = RuntimeContext>(controller: Controller<Ctx>, options: SqsHandlerOptions<Ctx> = {}): SqsHandler {
  const env = process.env;
  const now = options.now ?? Date.now;
  const logger = options.logger ?? createLogger(controller.name);
  const metrics = options.metrics ?? createMetrics(controller.name);
  const maxFailures = options.maxFailures ?? positiveInt(env[ENV.maxFailures], 0);
  const maxReceiveCount = options.maxReceiveCount ?? positiveInt(env[ENV.maxReceiveCount], 5);
  const maxVisibilityDelayMs = options.maxVisibilityDelayMs ?? DEFAULT_MAX_VISIBILITY_DELAY_MS;
  const syncWaitMs = options.syncWaitMs ?? 2000;
  const timeMarginMs = options.timeMarginMs ?? positiveInt(env.TIME_MARGIN_MS, 5000);
  const requiresSynced = options.requiresSynced ?? controller.kinds;
  const component = options.component ?? controller.name;
  const syncedUntil = new Map<string, number>();
  const recorders = new Map<string, EventRecorder>();
  const budgets = new Map<string, ApiBudget>();

  let services:
    | { doc: DocumentClient; tables: TableNames; sqs: SQSClient; backoff: BackoffStore; cache: ObjectCache; sync: SyncMarkers; leases: LeaseStore; kube: KubeClients }
    | undefined;
  const init = () => {
    if (services) return services;
    const doc = options.doc ?? createDocumentClient();
    const tables = options.tables ?? tableNames(env);
    const limiter = options.limiter ?? rateLimiterConfigFromEnv(env);
    const budget = budgetFromEnv(env);
    const kube =
      options.kube ??
      new KubeClients({
        budget: (cluster) => {
          let b = budgets.get(cluster);
          if (!b) budgets.set(cluster, (b = new ApiBudget({ doc, table: tables.control, cluster, ...budget })));
          return b;
        },
      });
    services = {
      doc,
      tables,
      sqs: options.sqs ?? createSqsClient(),
      backoff: new BackoffStore({ doc, table: tables.control, limiter, now }),
      cache: new ObjectCache(doc, tables.cache, { now }),
      sync: new SyncMarkers(doc, tables.control, { now }),
      leases: new LeaseStore({ doc, table: tables.control, now }),
      kube,
    };
    return services;
  };

  const recorderFor = (cluster: string): EventRecorder => {
    if (options.recorderFor) return options.recorderFor(cluster);
    let recorder = recorders.get(cluster);
    if (!recorder) {
      const s = init();
      recorder = new KubeEventRecorder({
        api: () => s.kube.coreV1(cluster),
        component,
        cluster,
        doc: s.doc,
        table: s.tables.control,
        now,
        onError: (error, event) => {
          reportForbidden(logger, error);
          logger.warn('event not recorded', { reason: event.reason, error: String(error) });
        },
      });
      recorders.set(cluster, recorder);
    }
    return recorder;
  };

  /**
   * An RBAC denial is a missing permission, not a transient failure: say which verb on which resource, loudly
   * (an error log line `forbidden: <verb> <resource>` and a `Forbidden` metric with `verb` and `resource`
   * dimensions). The caller still retries with backoff, so the work converges once the role is fixed.
   */
  const reportForbidden = (log: Logger, error: unknown): void => {
    const denied = forbiddenRequest(error);
    if (!denied) return;
    metrics.publishStoredMetrics();
    metrics.addDimension('verb', denied.verb);
    metrics.addDimension('resource', denied.qualifiedResource);
    metrics.addMetric(METRIC.forbidden, MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
    metrics.clearDimensions();
    log.error(`forbidden: ${denied.verb} ${denied.qualifiedResource}`, {
      verb: denied.verb, resource: denied.qualifiedResource, namespace: denied.namespace, name: denied.name, user: denied.user, error: denied.message,
    });
  };

  const queueUrlFor = (record: SQSRecord): string | undefined =>
    options.queueUrl ?? env[(ENV.queueUrl as Record<string, string>)[controller.name] ?? ''] ?? queueUrlFromArn(record.eventSourceARN);

  const isSynced = async (cluster: string): Promise<boolean> => {
    const cached = syncedUntil.get(cluster);
    if (cached !== undefined && cached > now()) return true;
    const synced = await init().sync.isListComplete(cluster, requiresSynced);
    if (synced) syncedUntil.set(cluster, now() + SYNC_CACHE_MS);
    return synced;
  };

  /** Sends a malformed record to the DLQ; returns normally so the batch reports it processed. */
  const poison = async (log: Logger, record: SQSRecord, reason: string): Promise<void> => {
    const dlqUrl = options.dlqUrl ?? env[ENV.dlqUrl];
    if (!dlqUrl) throw new Error(`poison message ${record.messageId} (${reason}) and no ${ENV.dlqUrl} to send it to`);
    await init().sqs.send(
      new SendMessageCommand({
        QueueUrl: dlqUrl,
        MessageBody: record.body,
        MessageGroupId: record.attributes.MessageGroupId ?? 'poison',
        MessageDeduplicationId: record.messageId.replace(/[^\w-]/g, '_').slice(0, 128),
        MessageAttributes: {
          poisonReason: { DataType: 'String', StringValue: reason.slice(0, 1024) || 'invalid' },
          controller: { DataType: 'String', StringValue: controller.name },
          sourceMessageId: { DataType: 'String', StringValue: record.messageId },
        },
      }),
    );
    metrics.addMetric(METRIC.poisonMessages, MetricUnit.Count, 1);
    log.error('poison message sent to the DLQ', { messageId: record.messageId, reason, dlqUrl });
  };

  /** Makes the record wait `delayMs`: visibility (throws) or parking (returns). */
  const wait = async (log: Logger, inv: Invocation, record: SQSRecord, event: ClusterEvent, id: BackoffId, delayMs: number, why: string): Promise<void> => {
    const s = init();
    const plan = planWait({
      delayMs,
      now: now(),
      receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
      firstReceiveAt: Number(record.attributes.ApproximateFirstReceiveTimestamp) || now(),
      maxReceiveCount,
      maxVisibilityDelayMs,
    });
    if (plan.via === 'park') {
      await s.backoff.park(id, plan.dueAt, { uid: event.uid, resourceVersion: event.resourceVersion });
      metrics.addMetric(METRIC.parked, MetricUnit.Count, 1);
      log.info('key parked until due', { why, delayMs, dueAt: new Date(plan.dueAt).toISOString() });
      return;
    }
    return defer(log, inv, record, plan.visibilityTimeoutS, why);
  };

  /** Hides the record for `visibilityTimeoutS` and reports it failed (throws). */
  const defer = async (log: Logger, inv: Invocation, record: SQSRecord, visibilityTimeoutS: number, why: string): Promise<never> => {
    const queueUrl = queueUrlFor(record);
    if (queueUrl) {
      try {
        await init().sqs.send(
          new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: record.receiptHandle, VisibilityTimeout: visibilityTimeoutS }),
        );
      } catch (error) {
        log.warn('could not change message visibility; it returns after the queue visibility timeout', { error: String(error) });
      }
    }
    const group = record.attributes.MessageGroupId;
    if (group !== undefined) inv.deferredGroups.set(group, visibilityTimeoutS);
    log.info('record waits', { why, visibilityTimeoutS });
    throw new RecordDeferredError(why);
  };

  /** Epoch ms (on `now`) by which this invocation must stop waiting; undefined outside Lambda. */
  const deadlineOf = (lambdaContext: Context | undefined): number | undefined =>
    lambdaContext ? now() + lambdaContext.getRemainingTimeInMillis() - timeMarginMs : undefined;

  const handleRecord = async (record: SQSRecord, lambdaContext: Context | undefined, inv: Invocation): Promise<void> => {
    inv.processed.add(record.messageId);
    const deadline = deadlineOf(lambdaContext);
    if (deadline !== undefined && deadline <= now()) {
      metrics.addMetric(METRIC.deferredForTime, MetricUnit.Count, 1);
      return defer(logger, inv, record, Math.ceil(SOON_MS / 1000), 'too little Lambda time left to start a reconcile');
    }
    let body: unknown;
    try {
      body = JSON.parse(record.body);
    } catch (error) {
      return poison(logger, record, `body is not JSON: ${(error as Error).message}`);
    }
    body = unwrapSnsEnvelope(body);
    const parsed = ClusterEventSchema.safeParse(body);
    if (!parsed.success) {
      return poison(logger, record, `body does not match the cluster event schema: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    }
    const event = parsed.data;
    if (!controller.kinds.includes(event.kind)) {
      logger.warn('ignoring a kind this controller does not reconcile', { kind: event.kind, messageId: record.messageId });
      return;
    }
    if (event.writer === controller.name) {
      // A version this controller wrote and wrote back itself; its subscription normally filters these out.
      metrics.addMetric(METRIC.ownWriteSkipped, MetricUnit.Count, 1);
      return;
    }
    const request: ReconcileRequest = { cluster: event.cluster, kind: event.kind, key: event.key, event };
    const id: BackoffId = { controller: controller.name, cluster: event.cluster, kind: event.kind, key: event.key };
    // Groups run concurrently, so each record logs through a child logger of its own keys.
    const log = logger.createChild();
    log.appendKeys({ cluster: event.cluster, kind: event.kind, key: event.key, messageId: record.messageId, eventType: event.type });
    const s = init();
    if (!(await isSynced(event.cluster))) {
      metrics.addMetric(METRIC.cacheNotSynced, MetricUnit.Count, 1);
      return await wait(log, inv, record, event, id, syncWaitMs, 'cache not synced: the initial LIST is not complete');
    }
    const { backoff, cached } = await readKeyState({ doc: s.doc, tables: s.tables, backoff: s.backoff, cache: s.cache }, id);
    request.cached = cached ?? null;
    const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
    const early = backoff ? backoff.nextAttemptAt - now() : 0;
    if (backoff && early > GATE_SLACK_MS && (event.type === 'REQUEUE' || receiveCount > 1)) {
      return await wait(log, inv, record, event, id, early, 'backoff: next attempt not due yet');
    }
    const runtime: RuntimeContext = {
      request,
      logger: log,
      metrics,
      doc: s.doc,
      tables: s.tables,
      kube: s.kube,
      recorder: recorderFor(event.cluster),
      leases: s.leases,
      lambdaContext,
    };
    const ctx = options.context ? await options.context(runtime) : (runtime as Ctx);
    const started = now();
    let result;
    try {
      result = deadline === undefined ? await controller.reconcile(request, ctx) : await withBudgetDeadline(deadline, () => controller.reconcile(request, ctx));
    } catch (error) {
      metrics.addMetric(METRIC.reconcileLatency, MetricUnit.Milliseconds, now() - started);
      return await onError(log, inv, record, event, request, id, error, backoff ?? null);
    }
    metrics.addMetric(METRIC.reconcileLatency, MetricUnit.Milliseconds, now() - started);
    metrics.addMetric(METRIC.reconcileSuccess, MetricUnit.Count, 1);
    if (backoff) await s.backoff.clear(id);
    if (result && 'requeueAfterMs' in result) {
      metrics.addMetric(METRIC.requeue, MetricUnit.Count, 1);
      return await wait(log, inv, record, event, id, result.requeueAfterMs, 'requeueAfter');
    }
    log.debug('reconciled');
  };

  const onError = async (
    log: Logger,
    inv: Invocation,
    record: SQSRecord,
    event: ClusterEvent,
    request: ReconcileRequest,
    id: BackoffId,
    error: unknown,
    known: BackoffRecord | null,
  ): Promise<void> => {
    const s = init();
    const message = error instanceof Error ? error.message : String(error);
    const unknownCluster = findError(error, UnknownClusterError);
    if (unknownCluster) {
      // Terminal: no configuration will appear by retrying. Flush first so the cluster dimension names only this metric.
      metrics.publishStoredMetrics();
      metrics.addDimension('cluster', unknownCluster.cluster);
      metrics.addMetric(METRIC.unknownCluster, MetricUnit.Count, 1);
      metrics.publishStoredMetrics();
      metrics.clearDimensions();
      log.error('message for a cluster with no CLUSTERS entry dropped; not retrying', { error: message });
      await s.backoff.clear(id);
      return;
    }
    if (findError(error, BudgetTimeoutError)) {
      metrics.addMetric(METRIC.budgetWait, MetricUnit.Count, 1);
      await wait(log, inv, record, event, id, SOON_MS, `waiting for API budget: ${message}`);
      return;
    }
    reportForbidden(log, error);
    if (error instanceof TerminalError) {
      metrics.addMetric(METRIC.terminalErrors, MetricUnit.Count, 1);
      log.error('reconcile failed terminally; not retrying', { error: message });
      await s.backoff.clear(id);
      await recorderFor(event.cluster).event(involvedObjectOf(request), 'Warning', 'ReconcileFailed', message);
      return;
    }
    metrics.addMetric(METRIC.reconcileError, MetricUnit.Count, 1);
    const { record: failure, delayMs } = await s.backoff.recordFailure(
      id,
      message,
      { uid: event.uid, resourceVersion: event.resourceVersion },
      known,
      maxFailures,
    );
    if (failure.givenUp) {
      // Upstream `Done` without `Forget`: the count stays, so each later change gets one attempt and a
      // failure gives up again at once. The event and the metric mark the first give-up only.
      if (known?.givenUp) {
        log.warn('failed again after the failure threshold; giving up until the object changes', { failures: failure.failures, error: message });
        return;
      }
      metrics.addMetric(METRIC.thresholdExceeded, MetricUnit.Count, 1);
      log.error('failure threshold exceeded; giving up until the object changes', { failures: failure.failures, error: message });
      await recorderFor(event.cluster).event(
        involvedObjectOf(request),
        'Warning',
        'RetryThresholdExceeded',
        `giving up after ${failure.failures} failed attempts: ${message}`,
      );
      return;
    }
    const serverDelay = retryAfterMs(error) ?? 0;
    log.warn('reconcile failed; will retry', { failures: failure.failures, delayMs: Math.max(delayMs, serverDelay), error: message });
    await wait(log, inv, record, event, id, Math.max(delayMs, serverDelay), `failure ${failure.failures}: ${message}`);
  };

  /**
   * Records of a group that the FIFO processor skipped after one of the group's records was deferred get the
   * same visibility: a FIFO group stays locked while any of its messages is in flight, so leaving them at the
   * queue's (long) visibility timeout would stretch the deferred record's short wait to that timeout.
   */
  const holdSkippedRecords = async (event: SQSEvent, response: SQSBatchResponse, inv: Invocation): Promise<void> => {
    if (inv.deferredGroups.size === 0) return;
    const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
    const byQueue = new Map<string, Array<{ Id: string; ReceiptHandle: string; VisibilityTimeout: number }>>();
    for (const record of event.Records) {
      const group = record.attributes.MessageGroupId;
      const visibility = group === undefined ? undefined : inv.deferredGroups.get(group);
      if (visibility === undefined || !failed.has(record.messageId) || inv.processed.has(record.messageId)) continue;
      const queueUrl = queueUrlFor(record);
      if (!queueUrl) continue;
      let entries = byQueue.get(queueUrl);
      if (!entries) byQueue.set(queueUrl, (entries = []));
      entries.push({ Id: String(entries.length), ReceiptHandle: record.receiptHandle, VisibilityTimeout: visibility });
    }
    for (const [queueUrl, entries] of byQueue) {
      for (let i = 0; i < entries.length; i += 10) {
        try {
          const out = await init().sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: queueUrl, Entries: entries.slice(i, i + 10) }));
          if (out.Failed?.length) logger.warn('could not hold skipped records', { failed: out.Failed.map((f) => f.Message ?? f.Code) });
        } catch (error) {
          logger.warn('could not hold skipped records', { error: String(error) });
        }
      }
    }
  };

  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    if (context) logger.addContext(context);
    const processor = new SqsFifoGroupsProcessor();
    const invocation = randomUUID();
    const inv: Invocation = { processed: new Set(), deferredGroups: new Map() };
    logger.appendKeys({ invocation });
    try {
      const response = await processPartialResponse(event, (record: SQSRecord) => handleRecord(record, context, inv), processor, {
        ...(context ? { context } : {}),
        throwOnFullBatchFailure: false,
      });
      await holdSkippedRecords(event, response, inv);
      return response;
    } finally {
      logger.removeKeys(['invocation']);
      metrics.publishStoredMetrics();
    }
  };
}
