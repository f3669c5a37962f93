/**
 * Structured logs and EMF metrics for a controller function (Powertools Logger and Metrics): the
 * controller name is a persistent log key and the metrics dimension; cluster, kind and key are appended
 * per record by the handler.
 */
import { Logger } from '@aws-lambda-powertools/logger';
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

/** A Logger for `controller`. */
export function createLogger(controller: string): Logger {
  return new Logger({ serviceName: serviceName(), persistentKeys: { controller } });
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
export function reportForbidden(metrics: Metrics, log: Logger, error: unknown): void {
  const denied = forbiddenRequest(error);
  if (!denied) return;
  countWithDimensions(metrics, METRIC.forbidden, { verb: denied.verb, resource: denied.qualifiedResource });
  log.error(`forbidden: ${denied.verb} ${denied.qualifiedResource}`, {
    verb: denied.verb, resource: denied.qualifiedResource, namespace: denied.namespace, name: denied.name, user: denied.user, error: denied.message,
  });
}
