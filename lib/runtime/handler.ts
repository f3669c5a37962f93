/**
 * The SQS FIFO → controller adapter. Each record goes through the gates in order, and `settle` acts on
 * where it ended:
 *
 *   deadline → parse → synced → backoff → budget → reconcile  ⇒  settle (forget / wait / park / threshold)
 *
 * One file per gate (gates/*.ts); the contract is in reconcile.ts and README.md.
 *
 * **FIFO failure rule.** AWS states: "for FIFO, stop at the first failure and return that record and all
 * unprocessed records". Its purpose is per-group order. {@link SqsFifoGroupsProcessor} runs the batch's
 * groups concurrently and each group's records in order; after a failure, the later records *of the same
 * message group* are returned unprocessed, while other groups' records still run. `throwOnFullBatchFailure`
 * is off: a batch whose every record failed is an ordinary partial response, not a thrown error (which would
 * make Lambda retry the whole batch and ignore our visibility changes). Records of a group skipped behind a
 * deferred record get that record's visibility too ({@link holdSkippedRecords}).
 *
 * @example
 * export const handler = createSqsHandler(controller, { component: 'persistentvolume-controller' });
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { processPartialResponse } from '@aws-lambda-powertools/batch';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import { SqsFifoGroupsProcessor } from './fifo-groups.ts';
import { backoff } from './gates/backoff.ts';
import { budget } from './gates/budget.ts';
import { deadline } from './gates/deadline.ts';
import { parse } from './gates/parse.ts';
import { reconcile } from './gates/reconcile.ts';
import { settle } from './gates/settle.ts';
import { synced } from './gates/synced.ts';
import { runGates, type BatchState, type Gate, type Job } from './job.ts';
import { claimflow, entryPoint, lambdaContextOf, type ClaimflowContext } from './middleware.ts';
import type { Controller } from './reconcile.ts';
import { SqsRuntime, type RuntimeContext, type SqsHandlerOptions } from './runtime.ts';
import { METRIC } from './observability.ts';
import { deferRecord, holdSkippedRecords, RecordDeferredError } from './visibility.ts';
import { planWait } from './wait.ts';

export type { RuntimeContext, SqsHandlerOptions } from './runtime.ts';
export { RecordDeferredError } from './visibility.ts';
export { queueUrlFromArn } from './sqs.ts';
export { unwrapSnsEnvelope } from './gates/parse.ts';
export { involvedObjectOf } from './gates/settle.ts';

/** The Lambda handler {@link createSqsHandler} returns. */
export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** The gates every record passes, in order. */
export function gatesOf<Ctx>(rt: SqsRuntime<Ctx>): Gate[] {
  return [deadline(rt), parse(rt), synced(rt), backoff(rt), budget(rt), reconcile(rt)];
}

const pipelines = new WeakMap<SqsRuntime<never>, Gate[]>();

/**
 * The handler of an SQS batch, behind the {@link claimflow} middleware that set `context.claimflow`: every
 * record through the gates, groups side by side, a partial batch response out.
 */
export function reconcileBatch<Ctx>(event: SQSEvent, context: ClaimflowContext<SqsRuntime<Ctx>>): Promise<SQSBatchResponse> {
  return runBatch(context.claimflow, event, context);
}

/** Every record of `event` through `rt`'s gates (for a handler that serves more than one event shape). */
export async function runBatch<Ctx>(rt: SqsRuntime<Ctx>, event: SQSEvent, context: Context | undefined): Promise<SQSBatchResponse> {
  let gates = pipelines.get(rt as SqsRuntime<never>);
  if (!gates) pipelines.set(rt as SqsRuntime<never>, (gates = gatesOf(rt)));
  const lambdaContext = lambdaContextOf(context);
  const batch: BatchState = { processed: new Set(), deferredGroups: new Map() };
  const handleRecord = async (record: SQSRecord): Promise<void> => {
    batch.processed.add(record.messageId);
    const job = { record, lambdaContext, batch, log: rt.logger };
    try {
      await settle(rt, job, await runGates(gates, job));
    } catch (error) {
      if (error instanceof RecordDeferredError) throw error;
      await retrySoon(rt, job, error);
    }
  };
  rt.logger.appendKeys({ invocation: randomUUID() });
  try {
    const response = await processPartialResponse(event, handleRecord, new SqsFifoGroupsProcessor(), {
      ...(lambdaContext ? { context: lambdaContext } : {}),
      throwOnFullBatchFailure: false,
    });
    await holdSkippedRecords(rt, event, response, batch);
    return response;
  } finally {
    rt.logger.removeKeys(['invocation']);
  }
}

/**
 * First retry after a record failed outside its reconcile; each receive waits 4 times longer, up to
 * `maxVisibilityDelayMs` (2 s, 8 s, 30 s …): with `maxReceiveCount` 5 the three short waits the reserve rule
 * allows cover 40 s of an outage before the queue's own timeout takes over.
 */
export const INFRASTRUCTURE_RETRY_BASE_MS = 2000;

/**
 * A record that failed outside its reconcile — its backoff record or cache entry could not be read, its
 * outcome could not be written (DynamoDB unavailable or throttled past the SDK's retries) — is tried again
 * after 2 s, 8 s, 30 s … by its receive count, capped at `maxVisibilityDelayMs`, instead of after the queue's
 * visibility timeout (3–12 minutes as shipped). Only while the next receive leaves one in reserve below
 * `maxReceiveCount` (as every visibility wait, see wait.ts); after that the error goes out as it is and the
 * message returns after the queue's timeout. Throws either way: the record is reported failed.
 */
async function retrySoon<Ctx>(rt: SqsRuntime<Ctx>, job: Job, error: unknown): Promise<never> {
  const receiveCount = Number(job.record.attributes.ApproximateReceiveCount) || 1;
  const delayMs = Math.min(rt.maxVisibilityDelayMs, INFRASTRUCTURE_RETRY_BASE_MS * 4 ** Math.min(receiveCount - 1, 10));
  const plan = planWait({
    delayMs,
    now: rt.now(),
    receiveCount,
    firstReceiveAt: Number(job.record.attributes.ApproximateFirstReceiveTimestamp) || rt.now(),
    maxReceiveCount: rt.maxReceiveCount,
    maxVisibilityDelayMs: rt.maxVisibilityDelayMs,
  });
  job.log.warn('record failed outside its reconcile; will retry', {
    error: String(error),
    receiveCount,
    ...(plan.via === 'visibility' ? { visibilityTimeoutS: plan.visibilityTimeoutS } : { retry: 'after the queue visibility timeout' }),
  });
  rt.metrics.addMetric(METRIC.infrastructureRetry, MetricUnit.Count, 1);
  if (plan.via === 'visibility') return deferRecord(rt, job, plan.visibilityTimeoutS, `failed outside its reconcile: ${String(error)}`);
  throw error;
}

/**
 * The Lambda handler for `controller`: {@link reconcileBatch} on the middy chain every function uses
 * (Powertools' logger context and metrics flush, then the runtime built on first use).
 */
export function createSqsHandler<Ctx = RuntimeContext>(controller: Controller<Ctx>, options: SqsHandlerOptions<Ctx> = {}): SqsHandler {
  const rt = new SqsRuntime(controller, options);
  return entryPoint(
    middy(reconcileBatch<Ctx>)
      .use(injectLambdaContext(rt.logger))
      .use(logMetrics(rt.metrics))
      .use(claimflow(() => rt)),
  );
}
