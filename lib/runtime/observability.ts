/**
 * Structured logs and EMF metrics for a controller function (Powertools Logger and Metrics): the
 * controller name is a persistent log key and the metrics dimension; a record's cluster, kind, key, message
 * id and event type go into each of its entries (`recordLogger`, set up by the parse gate).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { LogAttributes } from '@aws-lambda-powertools/logger/types';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { forbiddenRequest } from '../kube/errors.ts';

/** The metrics namespace every claimflow function publishes to. */
export const METRICS_NAMESPACE = 'claimflow';

/** Metric names the runtime emits. */
export const METRIC = {
  reconcileSuccess: 'ReconcileSuccess',
  reconcileError: 'ReconcileError',
  reconcileLatency: 'ReconcileLatency',
  requeue: 'Requeue',
  poisonMessages: 'PoisonMessages',
  ownWriteSkipped: 'OwnWriteSkipped',
  thresholdExceeded: 'ThresholdExceeded',
  terminalErrors: 'TerminalErrors',
  cacheNotSynced: 'CacheNotSynced',
  parked: 'Parked',
  /** A record not started because too little Lambda time was left. */
  deferredForTime: 'DeferredForTime',
  /** A reconcile that ran out of API budget time and was requeued soon (not a failure). */
  budgetWait: 'BudgetWait',
  /** A message for a cluster with no configuration, dropped. */
  unknownCluster: 'UnknownCluster',
  /** A Kubernetes API call RBAC denied (dimensions `verb`, `resource`): the role lacks a permission. */
  forbidden: 'Forbidden',
  /** A record that failed outside its reconcile (state store unavailable), retried within seconds. */
  infrastructureRetry: 'InfrastructureRetry',
} as const;

/**
 * The `service` of logs and the `service` dimension of every metric: `POWERTOOLS_SERVICE_NAME`, which
 * serverless.yml sets to `<service>-<stage>` so two stages in one account never share a metric (their
 * alarms and dashboards read their own stage's); `claimflow` where it is unset.
 */
export function serviceName(env: NodeJS.ProcessEnv = process.env): string {
  return env.POWERTOOLS_SERVICE_NAME || 'claimflow';
}

/** What a reconcile logs through: Powertools' four levels. */
export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

/**
 * A record's logger: the function's own, with the record's `keys` in every entry. Records of different
 * message groups run at once, so the keys cannot be the function logger's; Powertools' `createChild()`
 * would build each record a whole Logger (its settings read from the environment again, a Console of its
 * own): 3.9 % of the functions' CPU in the provisioner bench's burst, more than the runtime's gates
 * together.
 *
 * Precedence as a child logger's keys had it: the entry's own attributes (an object message's, then its
 * extra inputs') win over the record's keys, which win over the function logger's. The function logger's
 * keys are the ones it has when the entry is written (a child copied them when it was made): an entry
 * written after its invocation ended (a late callback) carries the invocation key of whatever runs then.
 */
export function recordLogger(parent: Logger, keys: LogAttributes): Log {
  type Message = Parameters<Logger['info']>[0];
  // A string message takes the keys as its first extra input (later extras win); an object message takes
  // them under its own attributes. Powertools takes any mix of attributes, an Error and a string as extra
  // inputs; its type offers one or the other.
  const entry = (input: Message, extra: unknown[]): [Message, ...LogAttributes[]] =>
    typeof input === 'string' ? [input, keys, ...(extra as LogAttributes[])] : [{ ...keys, ...input }, ...(extra as LogAttributes[])];
  return {
    debug: (input, ...extra) => parent.debug(...entry(input, extra)),
    info: (input, ...extra) => parent.info(...entry(input, extra)),
    warn: (input, ...extra) => parent.warn(...entry(input, extra)),
    error: (input, ...extra) => parent.error(...entry(input, extra)),
  };
}

/** A Logger for `controller`. */
export function createLogger(controller: string): Logger {
  return new Logger({ serviceName: serviceName(), persistentKeys: { controller } });
}

/** Each function's Metrics → the single metric it reuses (see {@link singleMetricOf}). */
const singles = new WeakMap<Metrics, Metrics>();

/**
 * `metrics`' single metric (one published by its `addMetric`, with dimensions of its own), the same one each
 * call. Powertools' `singleMetric()` builds a new Metrics every time (its settings read from the
 * environment again, a Console of its own), a per-bind and per-provision cost; one instance serves every
 * metric because its publish clears the dimensions it was given and keeps only the function's defaults,
 * and nothing runs between a caller's `addDimension`s and its `addMetric`. It comes back with no dimensions
 * of its own, even after a caller's `addMetric` threw (an invalid metric) and left its dimensions behind.
 * Its default dimensions are the function's when it was first asked for (they are set at creation and
 * never changed).
 *
 * @example
 * const single = singleMetricOf(metrics);
 * single.addDimension('class', 'fast');
 * single.addMetric('ProvisionTotal', MetricUnit.Count, 1); // published with controller + class
 */
export function singleMetricOf(metrics: Metrics): Metrics {
  let single = singles.get(metrics);
  if (!single) singles.set(metrics, (single = metrics.singleMetric()));
  single.clearDimensions();
  return single;
}

/** EMF metrics with the `controller` dimension. */
export function createMetrics(controller: string): Metrics {
  return new Metrics({ namespace: METRICS_NAMESPACE, serviceName: serviceName(), defaultDimensions: { controller }, logger: metricsWarnings });
}

/**
 * Where Powertools Metrics sends its own warnings: the console as by default, without "No application
 * metrics to publish", which it prints at every flush with nothing stored (most batches and scheduled runs
 * of a quiet cluster) and which says nothing an operator can act on.
 */
export const metricsWarnings = {
  debug: (...args: unknown[]) => console.debug(...args),
  info: (...args: unknown[]) => console.info(...args),
  warn: (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('No application metrics to publish')) return;
    console.warn(...args);
  },
  error: (...args: unknown[]) => console.error(...args),
};

/**
 * Counts one `name` under extra `dimensions` alone: what is stored is flushed first and the datapoint is
 * flushed at once, so the dimensions name only this metric.
 */
export function countWithDimensions(metrics: Metrics, name: string, dimensions: Record<string, string>): void {
  metrics.publishStoredMetrics();
  for (const [key, value] of Object.entries(dimensions)) metrics.addDimension(key, value);
  metrics.addMetric(name, MetricUnit.Count, 1);
  metrics.publishStoredMetrics();
  metrics.clearDimensions();
}

/**
 * An RBAC denial is a missing permission, not a transient failure: say which verb on which resource, loudly
 * (an error log line `forbidden: <verb> <resource>` and a `Forbidden` metric with `verb` and `resource`
 * dimensions). The caller still retries with backoff, so the work converges once the role is fixed.
 */
export function reportForbidden(metrics: Metrics, log: Log, error: unknown): void {
  const denied = forbiddenRequest(error);
  if (!denied) return;
  countWithDimensions(metrics, METRIC.forbidden, { verb: denied.verb, resource: denied.qualifiedResource });
  log.error(`forbidden: ${denied.verb} ${denied.qualifiedResource}`, {
    verb: denied.verb, resource: denied.qualifiedResource, namespace: denied.namespace, name: denied.name, user: denied.user, error: denied.message,
  });
}
