/**
 * What the gates of one controller share for the life of a Lambda container: its settings (from
 * {@link SqsHandlerOptions} and the environment), its logger and metrics, and the clients, tables and
 * per-cluster API budgets, built on first use so that importing a function module has no side effects.
 *
 * @example
 * const rt = new SqsRuntime(controller, { component: 'persistentvolume-controller' });
 * rt.services.backoff; // a BackoffStore on the control table, created now
 */
import type { Context, SQSRecord } from 'aws-lambda';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { KubeClients } from '../kube/client.ts';
import { KubeJsonApi } from '../kube/json-api.ts';
import { KubeEventRecorder, type EventRecorder } from '../kube/recorder.ts';
import { ApiBudget, budgetFromEnv } from '../state/bucket.ts';
import { BackoffStore, rateLimiterConfigFromEnv, type RateLimiterConfig } from '../state/backoff.ts';
import { BatchGetReader } from '../state/batch-get.ts';
import { ObjectCache } from '../state/cache.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import { createDocumentClient, type DocumentClient } from '../state/client.ts';
import { LeaseStore } from '../state/lease.ts';
import { tableNames, type TableNames } from '../state/schema.ts';
import { SyncMarkers } from '../state/sync.ts';
import type { WatchedKind } from './message.ts';
import { createLogger, createMetrics, reportForbidden, type Log } from './observability.ts';
import { ENV, type Controller, type ReconcileRequest } from './reconcile.ts';
import { createSqsClient, queueUrlFromArn } from './sqs.ts';
import { DEFAULT_MAX_VISIBILITY_DELAY_MS } from './wait.ts';

/** What every reconcile gets from the runtime (controllers may wrap it with {@link SqsHandlerOptions.context}). */
export interface RuntimeContext {
  request: ReconcileRequest;
  /** The record's logger: the function's, adding the record's keys (cluster, kind, key, message) to each entry. */
  logger: Log;
  metrics: Metrics;
  doc: DocumentClient;
  tables: TableNames;
  /** Kubernetes clients per cluster (spending the cluster's request budget). */
  kube: KubeClients;
  /** Event recorder for the request's cluster. */
  recorder: EventRecorder;
  leases: LeaseStore;
  /**
   * Strongly consistent point reads shared with the batch's other records that ask at the same moment
   * (lib/state/batch-get.ts): a read a record makes anyway, never staler than its own request.
   */
  reader?: BatchGetReader;
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

/** The clients and stores every gate uses. */
export interface RuntimeServices {
  doc: DocumentClient;
  tables: TableNames;
  sqs: SQSClient;
  backoff: BackoffStore;
  cache: ObjectCache;
  sync: SyncMarkers;
  leases: LeaseStore;
  kube: KubeClients;
  /** The records' reads before their reconciles, those of one moment in one request (lib/state/batch-get.ts). */
  reader: BatchGetReader;
}

const nonNegativeInt = (value: string | undefined, fallback: number): number => {
  const parsed = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(parsed) && parsed >= 0 ? parsed : fallback;
};

export class SqsRuntime<Ctx = RuntimeContext> {
  readonly controller: Controller<Ctx>;
  readonly options: SqsHandlerOptions<Ctx>;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  readonly maxFailures: number;
  readonly maxReceiveCount: number;
  readonly maxVisibilityDelayMs: number;
  readonly syncWaitMs: number;
  readonly timeMarginMs: number;
  readonly requiresSynced: readonly WatchedKind[];
  readonly component: string;
  /** Cluster → until when its sync markers are known complete (epoch ms). */
  readonly syncedUntil = new Map<string, number>();
  readonly #env: NodeJS.ProcessEnv;
  readonly #recorders = new Map<string, EventRecorder>();
  readonly #budgets = new Map<string, ApiBudget>();
  #services: RuntimeServices | undefined;

  constructor(controller: Controller<Ctx>, options: SqsHandlerOptions<Ctx> = {}, env: NodeJS.ProcessEnv = process.env) {
    this.controller = controller;
    this.options = options;
    this.#env = env;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? createLogger(controller.name);
    this.metrics = options.metrics ?? createMetrics(controller.name);
    this.maxFailures = options.maxFailures ?? nonNegativeInt(env[ENV.maxFailures], 0);
    this.maxReceiveCount = options.maxReceiveCount ?? nonNegativeInt(env[ENV.maxReceiveCount], 5);
    this.maxVisibilityDelayMs = options.maxVisibilityDelayMs ?? DEFAULT_MAX_VISIBILITY_DELAY_MS;
    this.syncWaitMs = options.syncWaitMs ?? 2000;
    this.timeMarginMs = options.timeMarginMs ?? nonNegativeInt(env.TIME_MARGIN_MS, 5000);
    this.requiresSynced = options.requiresSynced ?? controller.kinds;
    this.component = options.component ?? controller.name;
  }

  /** The clients and stores, created on first use. */
  get services(): RuntimeServices {
    if (this.#services) return this.#services;
    const { options, now } = this;
    const doc = options.doc ?? createDocumentClient();
    const tables = options.tables ?? tableNames(this.#env);
    const budget = budgetFromEnv(this.#env);
    const kube = options.kube ?? new KubeClients({ budget: (cluster) => this.#budgetFor(cluster, doc, tables, budget) });
    this.#services = {
      doc,
      tables,
      sqs: options.sqs ?? createSqsClient(),
      backoff: new BackoffStore({ doc, table: tables.control, limiter: options.limiter ?? rateLimiterConfigFromEnv(this.#env), now }),
      cache: new ObjectCache(doc, tables.cache, { now, indexer: indexAttributes }),
      sync: new SyncMarkers(doc, tables.control, { now }),
      leases: new LeaseStore({ doc, table: tables.control, now }),
      kube,
      reader: new BatchGetReader(doc),
    };
    return this.#services;
  }

  #budgetFor(cluster: string, doc: DocumentClient, tables: TableNames, budget: { qps: number; burst: number }): ApiBudget {
    let found = this.#budgets.get(cluster);
    if (!found) this.#budgets.set(cluster, (found = new ApiBudget({ doc, table: tables.control, cluster, ...budget })));
    return found;
  }

  /** The event recorder for `cluster` (one per cluster, as `source.component`). */
  recorderFor(cluster: string): EventRecorder {
    if (this.options.recorderFor) return this.options.recorderFor(cluster);
    let recorder = this.#recorders.get(cluster);
    if (!recorder) {
      const s = this.services;
      recorder = new KubeEventRecorder({
        api: () => s.kube.api(cluster, KubeJsonApi),
        component: this.component,
        cluster,
        doc: s.doc,
        table: s.tables.control,
        now: this.now,
        onError: (error, event) => {
          reportForbidden(this.metrics, this.logger, error);
          this.logger.warn('event not recorded', { reason: event.reason, error: String(error) });
        },
      });
      this.#recorders.set(cluster, recorder);
    }
    return recorder;
  }

  /** The queue a record came from (for ChangeMessageVisibility). */
  queueUrlFor(record: SQSRecord): string | undefined {
    const variable = (ENV.queueUrl as Record<string, string>)[this.controller.name] ?? '';
    return this.options.queueUrl ?? this.#env[variable] ?? queueUrlFromArn(record.eventSourceARN);
  }

  /** The DLQ poison messages go to. */
  get dlqUrl(): string | undefined {
    return this.options.dlqUrl ?? this.#env[ENV.dlqUrl];
  }
}
