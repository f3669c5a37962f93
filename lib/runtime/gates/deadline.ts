/**
 * Gate `deadline`: a record is not started with less than the time margin of Lambda time left. It is deferred
 * for a second without a failure (`DeferredForTime`), so a function timeout never adds a receive to it. The
 * deadline it computes also ends API budget waits inside the reconcile (gate `budget`).
 *
 * The margin is `timeMarginMs`, but never more than half the time the invocation started with (the time
 * left when its first record reached this gate): with a function timeout at or below the margin every
 * record would be deferred, every receive would count toward the queue's maxReceiveCount, and every message
 * would end in the DLQ. Such a timeout (below twice the margin) is logged as a warning once per container.
 *
 * @example
 * // 3 s left of an invocation that started with 60 s, margin 5 s ⇒ { kind: 'defer', visibilityS: 1 }
 * // 3 s left of an invocation that started with 5 s, margin 5 s ⇒ margin 2.5 s: goes on, deadline in 0.5 s
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { SOON_MS, type BatchState, type Gate } from '../job.ts';
import { METRIC } from '../observability.ts';
import type { SqsRuntime } from '../runtime.ts';

/** The largest share of the invocation's starting time the margin may take. */
export const MAX_MARGIN_SHARE = 0.5;

/** Lambda time left when the invocation's first record reached the gate, per batch. */
const startedWith = new WeakMap<BatchState, number>();
/** Runtimes (containers) that warned about a short timeout already. */
const warned = new WeakSet<object>();

/** The margin kept back for an invocation that started with `startedWithMs` of Lambda time. */
export function effectiveMarginMs(timeMarginMs: number, startedWithMs: number): number {
  return Math.max(0, Math.min(timeMarginMs, Math.floor(startedWithMs * MAX_MARGIN_SHARE)));
}

export function deadline<Ctx>(rt: SqsRuntime<Ctx>): Gate {
  return async (job, next) => {
    if (!job.lambdaContext) {
      job.deadline = undefined;
      return next();
    }
    const now = rt.now();
    const left = job.lambdaContext.getRemainingTimeInMillis();
    let started = startedWith.get(job.batch);
    if (started === undefined) {
      startedWith.set(job.batch, (started = left));
      if (started < 2 * rt.timeMarginMs && !warned.has(rt)) {
        warned.add(rt);
        rt.logger.warn(
          `function timeout too short for the time margin: this invocation started with ${started} ms, below twice TIME_MARGIN_MS ` +
            `(${rt.timeMarginMs} ms); records start with only ${effectiveMarginMs(rt.timeMarginMs, started)} ms kept back, so a slow ` +
            `reconcile may be cut by the timeout. Raise the timeout to at least ${2 * rt.timeMarginMs} ms or lower TIME_MARGIN_MS.`,
          { timeMarginMs: rt.timeMarginMs, startedWithMs: started },
        );
      }
    }
    job.deadline = now + left - effectiveMarginMs(rt.timeMarginMs, started);
    if (job.deadline <= now) {
      rt.metrics.addMetric(METRIC.deferredForTime, MetricUnit.Count, 1);
      return { kind: 'defer', visibilityS: Math.ceil(SOON_MS / 1000), why: 'too little Lambda time left to start a reconcile' };
    }
    return next();
  };
}
