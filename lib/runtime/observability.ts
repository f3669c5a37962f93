/**
 * Structured logs and EMF metrics for a controller function (Powertools Logger and Metrics): the
 * controller name is a persistent log key and the metrics dimension; cluster, kind and key are appended
 * per record by the handler.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

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
} as const;

/** A Logger for `controller`. */
export function createLogger(controller: string): Logger {
  return new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'claimflow', persistentKeys: { controller } });
}

/** EMF metrics with the `controller` dimension. */
export function createMetrics(controller: string): Metrics {
  return new Metrics({ namespace: METRICS_NAMESPACE, serviceName: 'claimflow', defaultDimensions: { controller } });
}
