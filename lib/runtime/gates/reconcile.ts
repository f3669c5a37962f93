/**
 * Gate `reconcile`: builds the controller's context (a {@link RuntimeContext}, or what
 * `options.context` makes of it), calls `controller.reconcile`, and reports its result or its error as the
 * outcome (`ReconcileLatency` either way). It never answers for the record itself: `settle` does. The
 * reconcile runs inside `runWithStorageCluster(request.cluster)`, so a storage client made by
 * `createStorageClientFromEnv` routes its calls to that cluster's control plane.
 *
 * @example
 * // reconcile returned { requeueAfterMs: 500 } ⇒ { kind: 'reconciled', result: { requeueAfterMs: 500 } }
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { runWithStorageCluster } from '../../storage/clusters.ts';
import { parsedOf, type Gate } from '../job.ts';
import { METRIC } from '../observability.ts';
import type { RuntimeContext, SqsRuntime } from '../runtime.ts';

export function reconcile<Ctx>(rt: SqsRuntime<Ctx>): Gate {
  return async (job) => {
    const { request, event } = parsedOf(job);
    const s = rt.services;
    const runtime: RuntimeContext = {
      request,
      logger: job.log,
      metrics: rt.metrics,
      doc: s.doc,
      tables: s.tables,
      kube: s.kube,
      recorder: rt.recorderFor(event.cluster),
      leases: s.leases,
      reader: s.reader,
      lambdaContext: job.lambdaContext,
    };
    const ctx = rt.options.context ? await rt.options.context(runtime) : (runtime as Ctx);
    const started = rt.now();
    try {
      // every storage call made inside goes to this cluster's control plane (lib/storage/clusters.ts)
      const result = await runWithStorageCluster(request.cluster, () => rt.controller.reconcile(request, ctx));
      return { kind: 'reconciled', result };
    } catch (error) {
      return { kind: 'failed', error };
    } finally {
      rt.metrics.addMetric(METRIC.reconcileLatency, MetricUnit.Milliseconds, rt.now() - started);
    }
  };
}
