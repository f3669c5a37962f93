/**
 * The scheduled resync (operator-toolkit `metadata-sync` Diff + Ensure): every cached Node of every
 * cluster whose labels differ from the storage node of the same name is ensured directly. Nodes the
 * control plane does not know are skipped; errors are only logged and counted (the next run retries).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { ObjectCache } from '../state/cache.ts';
import type { NodeLabels, StorageNode } from '../storage/types.ts';
import type { LabelSyncConfig } from './config.ts';
import { ensureNodeLabels, LabelSyncError } from './ensure.ts';
import { labelsEqual, type NodeLike } from './predicate.ts';

/** What one resync run did. */
export interface LabelResyncReport {
  /** `disabled` when the sync or its resync is switched off. */
  skipped?: 'disabled' | 'resync-disabled';
  /** Cached nodes looked at. */
  nodes: number;
  /** Nodes whose labels differed and were ensured. */
  differed: number;
  /** Control-plane writes made. */
  writes: number;
  /** Nodes whose ensure failed (logged). */
  failed: number;
}

export interface LabelResyncOptions {
  cache: ObjectCache;
  storage: NodeLabels;
  clusters: readonly string[];
  config: LabelSyncConfig;
  logger?: Logger;
  /** Nodes ensured at once (upstream `-node-label-sync-workers`, 5). */
  workers?: number;
}

/** One resync run over all clusters. */
export async function runLabelResync(options: LabelResyncOptions): Promise<LabelResyncReport> {
  const report: LabelResyncReport = { nodes: 0, differed: 0, writes: 0, failed: 0 };
  if (!options.config.enabled) return { ...report, skipped: 'disabled' };
  if (options.config.resyncIntervalMs === 0) return { ...report, skipped: 'resync-disabled' };
  const storageNodes = new Map<string, StorageNode>((await options.storage.listNodes()).map((n) => [n.name, n]));
  const due: { name: string; labels: Record<string, string> }[] = [];
  for (const cluster of options.clusters) {
    for await (const entry of options.cache.list(cluster, 'Node')) {
      report.nodes++;
      const node = entry.object as NodeLike;
      const name = node.metadata?.name ?? '';
      const known = storageNodes.get(name);
      if (!known || labelsEqual(node.metadata?.labels, known.labels)) continue;
      due.push({ name, labels: { ...(node.metadata?.labels ?? {}) } });
    }
  }
  report.differed = due.length;
  let next = 0;
  const worker = async () => {
    while (next < due.length) {
      const { name, labels } = due[next++];
      const outcome = await ensureNodeLabels(options.storage, name, labels);
      report.writes += Number(outcome.computeOnlyWritten) + Number(outcome.labelsWritten);
      const errors = [...outcome.failures, ...outcome.invalid];
      if (outcome.failures.length > 0) report.failed++;
      if (errors.length > 0) options.logger?.error('failed to resync metadata to external object', { node: name, error: new LabelSyncError(errors).message });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.workers ?? 5) }, worker));
  options.logger?.info('resync of metadata completed', { count: due.length });
  return report;
}
