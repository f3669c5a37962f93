/**
 * Gate `budget`: the reconcile's API budget waits end at the invocation's deadline (gate `deadline`); a
 * {@link BudgetTimeoutError} is then a one-second wait, not a failure (`BudgetWait`).
 *
 * @example
 * // reconcile threw BudgetTimeoutError ⇒ { kind: 'wait', delayMs: 1000 }
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { UnknownClusterError } from '../../kube/client.ts';
import { BudgetTimeoutError, withBudgetDeadline } from '../../state/bucket.ts';
import { findError, SOON_MS, type Gate } from '../job.ts';
import { METRIC } from '../observability.ts';
import type { SqsRuntime } from '../runtime.ts';

export function budget<Ctx>(rt: SqsRuntime<Ctx>): Gate {
  return async (job, next) => {
    const outcome = job.deadline === undefined ? await next() : await withBudgetDeadline(job.deadline, next);
    if (outcome.kind !== 'failed' || !findError(outcome.error, BudgetTimeoutError) || findError(outcome.error, UnknownClusterError)) return outcome;
    rt.metrics.addMetric(METRIC.budgetWait, MetricUnit.Count, 1);
    const message = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
    return { kind: 'wait', delayMs: SOON_MS, why: `waiting for API budget: ${message}` };
  };
}
