/**
 * Gate `deadline`: a record is not started with less than `timeMarginMs` of Lambda time left. It is deferred
 * for a second without a failure (`DeferredForTime`), so a function timeout never adds a receive to it. The
 * deadline it computes also ends API budget waits inside the reconcile (gate `budget`).
 *
 * @example
 * // 3 s left, margin 5 s ⇒ { kind: 'defer', visibilityS: 1 }
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { SOON_MS, type Gate } from '../job.ts';
import { METRIC } from '../observability.ts';
import type { SqsRuntime } from '../runtime.ts';

export function deadline<Ctx>(rt: SqsRuntime<Ctx>): Gate {
  return async (job, next) => {
    job.deadline = job.lambdaContext ? rt.now() + job.lambdaContext.getRemainingTimeInMillis() - rt.timeMarginMs : undefined;
    if (job.deadline !== undefined && job.deadline <= rt.now()) {
      rt.metrics.addMetric(METRIC.deferredForTime, MetricUnit.Count, 1);
      return { kind: 'defer', visibilityS: Math.ceil(SOON_MS / 1000), why: 'too little Lambda time left to start a reconcile' };
    }
    return next();
  };
}
