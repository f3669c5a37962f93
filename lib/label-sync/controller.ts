/**
 * The node label sync controller on the reconcile runtime: a Node message → the trigger predicate →
 * `EnsureNodeLabels` against the storage control plane. Failed control-plane calls throw, so the runtime
 * retries the whole set with its per-key backoff until it all succeeds; invalid reserved labels are
 * reported as a Warning event on the Node (`FailedLabelSync`) after the valid labels were applied, and not
 * retried (only a label change can fix them, and that is a new event).
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { RuntimeContext } from '../runtime/handler.ts';
import type { Controller } from '../runtime/reconcile.ts';
import { ObjectCache } from '../state/cache.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import type { NodeLabels } from '../storage/types.ts';
import type { LabelSyncConfig } from './config.ts';
import { ensureNodeLabels, LabelSyncError } from './ensure.ts';
import { ObservedNodes, observedPk } from './observed.ts';
import { isStorageOSNode, labelsEqual, shouldSync, type NodeLike } from './predicate.ts';

/** The controller name (backoff, metrics and event source component). */
export const CONTROLLER_NAME = 'label-sync';

/** Reason of the Warning event for reserved labels that cannot be applied. */
export const REASON_FAILED_LABEL_SYNC = 'FailedLabelSync';

/** EMF metrics of this controller (besides the runtime's). */
export const LABEL_SYNC_METRIC = {
  /** Node events the predicate dropped. */
  filtered: 'NodeEventsFiltered',
  /** Node events dropped because the sync is disabled. */
  disabled: 'NodeEventsDisabled',
  /** Nodes whose labels were ensured. */
  synced: 'NodeLabelsEnsured',
  /** Control-plane writes (compute-only and label updates). */
  writes: 'StorageNodeWrites',
  /** Reserved labels rejected. */
  invalid: 'InvalidReservedLabels',
} as const;

/** What the reconcile needs besides the runtime. */
export interface LabelSyncContext extends RuntimeContext {
  storage: NodeLabels;
  config: LabelSyncConfig;
  observed: ObservedNodes;
  cache: ObjectCache;
}

/** Builds the {@link LabelSyncContext} from the runtime's (for `createSqsHandler`'s `context` option). */
export function labelSyncContext(storage: () => NodeLabels, config: LabelSyncConfig): (runtime: RuntimeContext) => LabelSyncContext {
  return (runtime) => ({
    ...runtime,
    storage: storage(),
    config,
    observed: new ObservedNodes(runtime.doc, runtime.tables.control),
    cache: new ObjectCache(runtime.doc, runtime.tables.cache, { indexer: indexAttributes }),
  });
}

const labelsOf = (node: NodeLike): Record<string, string> => ({ ...(node.metadata?.labels ?? {}) });

/** The label sync controller (Node only). */
export function createLabelSyncController(): Controller<LabelSyncContext> {
  return {
    name: CONTROLLER_NAME,
    kinds: ['Node'],
    // The node's previous state, read with the message's own (a deletion only forgets it).
    prefetch: (request) => (request.event.type === 'DELETED' ? {} : { control: [observedPk(request.cluster, request.key)] }),
    async reconcile(request, ctx) {
      const { cluster, key: name, event } = request;
      if (!ctx.config.enabled) {
        ctx.metrics.addMetric(LABEL_SYNC_METRIC.disabled, MetricUnit.Count, 1);
        return;
      }
      if (event.type === 'DELETED') {
        // Upstream ignores deletes (the node-delete controller owns removal); forget the previous state.
        ctx.metrics.addMetric(LABEL_SYNC_METRIC.filtered, MetricUnit.Count, 1);
        await ctx.observed.delete(cluster, name);
        return;
      }
      let node = event.object as NodeLike | undefined;
      if (!node?.metadata) {
        const cached = await ctx.cache.get(cluster, 'Node', name);
        if (!cached || cached.deleted) return;
        node = cached.object as NodeLike;
      }
      const pk = observedPk(cluster, name);
      const previous = request.prefetched?.control.has(pk) ? ObservedNodes.stateOf(request.prefetched.control.get(pk)) : await ctx.observed.get(cluster, name);
      const onMalformed = (error: Error) => ctx.logger.error('malformed CSI node id annotation', { error: error.message });
      const decision = shouldSync(previous, node, event.type !== 'ADDED', onMalformed);
      const current = { storageos: isStorageOSNode(node), labels: labelsOf(node) };
      if (!decision.sync) {
        ctx.metrics.addMetric(LABEL_SYNC_METRIC.filtered, MetricUnit.Count, 1);
        ctx.logger.debug('node event filtered', { reason: decision.reason });
        const same = previous && previous.storageos === current.storageos && labelsEqual(previous.labels, current.labels);
        if (!same) await ctx.observed.put(cluster, name, current);
        return;
      }
      const outcome = await ensureNodeLabels(ctx.storage, name, node.metadata?.labels);
      const writes = Number(outcome.computeOnlyWritten) + Number(outcome.labelsWritten);
      if (writes > 0) ctx.metrics.addMetric(LABEL_SYNC_METRIC.writes, MetricUnit.Count, writes);
      if (outcome.failures.length > 0) throw new LabelSyncError([...outcome.failures, ...outcome.invalid]);
      ctx.metrics.addMetric(LABEL_SYNC_METRIC.synced, MetricUnit.Count, 1);
      if (outcome.invalid.length > 0) {
        ctx.metrics.addMetric(LABEL_SYNC_METRIC.invalid, MetricUnit.Count, outcome.invalid.length);
        const message = new LabelSyncError(outcome.invalid).message;
        ctx.logger.warn('invalid reserved node labels not applied', { error: message });
        const meta = (node as { metadata?: { uid?: string; resourceVersion?: string } }).metadata;
        await ctx.recorder.event(
          { apiVersion: 'v1', kind: 'Node', metadata: { name, ...(meta?.uid ? { uid: meta.uid } : {}) } },
          'Warning',
          REASON_FAILED_LABEL_SYNC,
          message,
        );
      } else if (!outcome.nodeNotFound) {
        ctx.logger.info('node labels applied to storageos', { reason: decision.reason });
      }
      await ctx.observed.put(cluster, name, current);
    },
  };
}
