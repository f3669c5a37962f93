/**
 * Gate `settle`: acts on how a record ended.
 * - **forget**: a success clears the key's backoff record (`ReconcileSuccess`); `{ requeueAfterMs }` forgets,
 *   then waits (`Requeue`).
 * - **wait**: {@link planWait} keeps the message invisible (reported failed, so SQS redelivers it) or
 *   **parks** the key for the resync function (`Parked`; the message is deleted).
 * - **failure**: `failures+1` and a wait of `base·2^(n-1)` (or the 429's `Retry-After`); at `maxFailures`
 *   the **threshold**: give up (Warning `RetryThresholdExceeded`, `ThresholdExceeded`, the first time only)
 *   but keep the count, as upstream's `Done` without `Forget`. A {@link TerminalError} is not retried
 *   (Warning `ReconcileFailed`, `TerminalErrors`), nor is an {@link UnknownClusterError} (`UnknownCluster`).
 *
 * @example
 * await settle(rt, job, { kind: 'failed', error }); // backoff record updated, then a wait
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { UnknownClusterError } from '../../kube/client.ts';
import { retryAfterMs } from '../../kube/errors.ts';
import type { InvolvedObject } from '../../kube/recorder.ts';
import { findError, parsedOf, type Job, type Outcome } from '../job.ts';
import { splitKey, type WatchedKind } from '../message.ts';
import { countWithDimensions, METRIC, reportForbidden } from '../observability.ts';
import { TerminalError, type ReconcileRequest } from '../reconcile.ts';
import type { SqsRuntime } from '../runtime.ts';
import { deferRecord } from '../visibility.ts';
import { planWait } from '../wait.ts';

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

/** Makes the record wait `delayMs`: visibility (throws) or parking (returns). */
async function wait<Ctx>(rt: SqsRuntime<Ctx>, job: Job, delayMs: number, why: string): Promise<void> {
  const { record, log } = job;
  const plan = planWait({
    delayMs,
    now: rt.now(),
    receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
    firstReceiveAt: Number(record.attributes.ApproximateFirstReceiveTimestamp) || rt.now(),
    maxReceiveCount: rt.maxReceiveCount,
    maxVisibilityDelayMs: rt.maxVisibilityDelayMs,
  });
  if (plan.via === 'visibility') return deferRecord(rt, job, plan.visibilityTimeoutS, why);
  const { id, event } = parsedOf(job);
  await rt.services.backoff.park(id, plan.dueAt, { uid: event.uid, resourceVersion: event.resourceVersion });
  rt.metrics.addMetric(METRIC.parked, MetricUnit.Count, 1);
  log.info('key parked until due', { why, delayMs, dueAt: new Date(plan.dueAt).toISOString() });
}

/** A failed reconcile: drop, give up, or count and wait. */
async function onFailure<Ctx>(rt: SqsRuntime<Ctx>, job: Job, error: unknown): Promise<void> {
  const { log } = job;
  const { id, event, request } = parsedOf(job);
  const { metrics } = rt;
  const message = error instanceof Error ? error.message : String(error);
  const unknownCluster = findError(error, UnknownClusterError);
  if (unknownCluster) {
    // Terminal: no configuration will appear by retrying.
    countWithDimensions(metrics, METRIC.unknownCluster, { cluster: unknownCluster.cluster });
    log.error('message for a cluster with no CLUSTERS entry dropped; not retrying', { error: message });
    await rt.services.backoff.clear(id);
    return;
  }
  reportForbidden(metrics, log, error);
  if (error instanceof TerminalError) {
    metrics.addMetric(METRIC.terminalErrors, MetricUnit.Count, 1);
    log.error('reconcile failed terminally; not retrying', { error: message });
    await rt.services.backoff.clear(id);
    await rt.recorderFor(event.cluster).event(involvedObjectOf(request), 'Warning', 'ReconcileFailed', message);
    return;
  }
  metrics.addMetric(METRIC.reconcileError, MetricUnit.Count, 1);
  const known = job.known ?? null;
  const observed = { uid: event.uid, resourceVersion: event.resourceVersion };
  const { record: failure, delayMs } = await rt.services.backoff.recordFailure(id, message, observed, known, rt.maxFailures);
  if (failure.givenUp) {
    // Upstream `Done` without `Forget`: the count stays, so each later change gets one attempt and a
    // failure gives up again at once. The event and the metric mark the first give-up only.
    if (known?.givenUp) {
      log.warn('failed again after the failure threshold; giving up until the object changes', { failures: failure.failures, error: message });
      return;
    }
    metrics.addMetric(METRIC.thresholdExceeded, MetricUnit.Count, 1);
    log.error('failure threshold exceeded; giving up until the object changes', { failures: failure.failures, error: message });
    const note = `giving up after ${failure.failures} failed attempts: ${message}`;
    await rt.recorderFor(event.cluster).event(involvedObjectOf(request), 'Warning', 'RetryThresholdExceeded', note);
    return;
  }
  const waitMs = Math.max(delayMs, retryAfterMs(error) ?? 0);
  log.warn('reconcile failed; will retry', { failures: failure.failures, delayMs: waitMs, error: message });
  await wait(rt, job, waitMs, `failure ${failure.failures}: ${message}`);
}

/** Acts on `outcome`; throws (the record is reported failed) when the message must stay invisible. */
export async function settle<Ctx>(rt: SqsRuntime<Ctx>, job: Job, outcome: Outcome): Promise<void> {
  switch (outcome.kind) {
    case 'done':
      return;
    case 'defer':
      return deferRecord(rt, job, outcome.visibilityS, outcome.why);
    case 'wait':
      return wait(rt, job, outcome.delayMs, outcome.why);
    case 'failed':
      return onFailure(rt, job, outcome.error);
    case 'reconciled': {
      rt.metrics.addMetric(METRIC.reconcileSuccess, MetricUnit.Count, 1);
      if (job.known) await rt.services.backoff.clear(parsedOf(job).id);
      const { result } = outcome;
      if (result && 'requeueAfterMs' in result) {
        rt.metrics.addMetric(METRIC.requeue, MetricUnit.Count, 1);
        return wait(rt, job, result.requeueAfterMs, 'requeueAfter');
      }
      job.log.debug('reconciled');
    }
  }
}
