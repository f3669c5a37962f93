/**
 * Upstream's six provisioning metrics (`controller/metrics/metrics.go`) as CloudWatch EMF through
 * Powertools: the same names, `class` (and `source` for claims) as dimensions; durations in seconds.
 *
 * @example
 * emitObservations(metrics, [{ op: 'provision', outcome: 'success', class: 'fast', source: '', durationSeconds: 1.2 }]);
 */
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { singleMetricOf } from '../runtime/observability.ts';
import { MetricName } from './constants.ts';
import type { MetricObservation } from './types.ts';

/** EMF dimension values may not be empty: upstream's `""` label is published as `none`. */
const label = (value: string): string => value || 'none';

/** The metric a counted observation increments. */
export function counterName(o: MetricObservation): string {
  if (o.op === 'provision') return o.outcome === 'success' ? MetricName.provisionTotal : MetricName.provisionFailedTotal;
  return o.outcome === 'success' ? MetricName.deleteTotal : MetricName.deleteFailedTotal;
}

/** Publishes each observation as its own EMF metric with its dimensions. */
export function emitObservations(metrics: Metrics, observations: readonly MetricObservation[]): void {
  // A single metric is flushed by its addMetric: one per metric, each with the dimensions.
  const publish = (o: MetricObservation, name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number): void => {
    const single = singleMetricOf(metrics);
    single.addDimension('class', label(o.class));
    if (o.op === 'provision') single.addDimension('source', label(o.source));
    single.addMetric(name, unit, value);
  };
  for (const o of observations) {
    publish(o, counterName(o), MetricUnit.Count, 1);
    if (o.durationSeconds !== undefined) {
      publish(o, o.op === 'provision' ? MetricName.provisionDuration : MetricName.deleteDuration, MetricUnit.Seconds, o.durationSeconds);
    }
  }
}
