/**
 * The node label resync (operator-toolkit `metadata-sync` Diff + Ensure): every cached Node of a
 * cluster whose labels differ from the storage node of the same name is ensured directly. Nodes the
 * control plane does not know are skipped; per-node errors are only logged and counted, as upstream
 * (the next period retries them).
 *
 * Cadence. Upstream runs it `-node-label-resync-delay` (10 s) after start, then every
 * `-node-label-resync-interval` (1h; 0 = never). Here the schedule only ticks (every minute by default)
 * and each tick first takes the period's slot of each cluster with one conditional write in the control
 * table (`resync#label-sync#<cluster>`):
 *
 * | attribute | meaning |
 * |---|---|
 * | `lastRunAt` (N, epoch ms) | start of the last run that finished; the next is due `interval` later |
 * | `lastCompletedAt` (N, epoch ms) | when that run finished |
 * | `runToken` (S), `runStartedAt`, `runUntil` (N) | a run in progress, and when its invocation is dead at the latest |
 *
 * A tick takes the slot when no run is recorded (the first tick after deploy) or the last one started at
 * least `interval` ago, and no other invocation's run is in progress. A run that finishes records
 * `lastRunAt`; a run that throws (control plane or cache unreachable) or runs short of time gives the
 * slot back, so the next tick goes on; a run whose invocation crashed or timed out holds it only until
 * `runUntil`. So: one run per interval (rounded up to the next tick), whatever the tick rate and however
 * invocations overlap, and a failed run does not cost the period. A tick with nothing due costs one
 * conditional write per cluster: no storage call, no cache listing.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ObjectCache } from '../state/cache.ts';
import { runWithStorageCluster } from '../storage/clusters.ts';
import type { DocumentClient } from '../state/client.ts';
import type { NodeLabels, StorageNode } from '../storage/types.ts';
import type { LabelSyncConfig } from './config.ts';
import { ensureNodeLabels, LabelSyncError } from './ensure.ts';
import { labelsEqual, type NodeLike } from './predicate.ts';

/** What one scheduled tick did. */
export interface LabelResyncReport {
  /**
   * `disabled`: the label sync is off; `resync-disabled`: the interval is 0; `not-due`: no cluster's
   * period has elapsed (or another invocation is resyncing it).
   */
  skipped?: 'disabled' | 'resync-disabled' | 'not-due';
  /** Clusters resynced by this tick (their period's slot taken). */
  clusters: string[];
  /** Cached nodes looked at. */
  nodes: number;
  /** Nodes whose labels differed. */
  differed: number;
  /** Control-plane writes made. */
  writes: number;
  /** Nodes whose ensure failed (logged). */
  failed: number;
  /** Differing nodes not ensured because the invocation was running out of time (the next tick goes on). */
  deferred: number;
}

/** Control-table key of the label resync slot of `cluster`. */
export const labelResyncPk = (cluster: string): string => `resync#label-sync#${cluster}`;

/** The slot of one cluster, taken by one run. */
export interface LabelResyncClaim {
  cluster: string;
  token: string;
  startedAt: number;
}

/** The slot record as stored (tests, diagnostics). */
export interface LabelResyncRecord {
  lastRunAt?: number;
  lastCompletedAt?: number;
  runToken?: string;
  runStartedAt?: number;
  runUntil?: number;
}

const isConditionFailure = (error: unknown): boolean => (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

/** The per-cluster period slots in the control table. */
export class LabelResyncSlots {
  readonly #doc: DocumentClient;
  readonly #table: string;

  constructor(doc: DocumentClient, table: string) {
    this.#doc = doc;
    this.#table = table;
  }

  /**
   * Takes the slot of `cluster` at `now` when the last finished run started at least `intervalMs` before
   * and no unexpired run holds it; the run holds it until `now + leaseMs`. Undefined when not due.
   */
  async claim(cluster: string, intervalMs: number, now: number, leaseMs: number): Promise<LabelResyncClaim | undefined> {
    const token = randomUUID();
    try {
      // UpdateItem: one write whether or not the record exists (the role may update control items).
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk: labelResyncPk(cluster) },
          UpdateExpression: 'SET runToken = :token, runStartedAt = :now, runUntil = :until',
          ConditionExpression: '(attribute_not_exists(lastRunAt) OR lastRunAt <= :cutoff) AND (attribute_not_exists(runUntil) OR runUntil <= :now)',
          ExpressionAttributeValues: { ':token': token, ':now': now, ':until': now + leaseMs, ':cutoff': now - intervalMs },
        }),
      );
      return { cluster, token, startedAt: now };
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  /** Records the run as finished: the next one is due an interval after it started. False if it lost the slot. */
  async complete(claim: LabelResyncClaim, now: number): Promise<boolean> {
    return this.#settle(claim, 'SET lastRunAt = :started, lastCompletedAt = :now REMOVE runToken, runStartedAt, runUntil', { ':started': claim.startedAt, ':now': now });
  }

  /** Gives the slot back without recording a run: the next tick resyncs. False if it lost the slot. */
  async release(claim: LabelResyncClaim): Promise<boolean> {
    return this.#settle(claim, 'REMOVE runToken, runStartedAt, runUntil', {});
  }

  async get(cluster: string): Promise<LabelResyncRecord | undefined> {
    const out = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: { pk: labelResyncPk(cluster) }, ConsistentRead: true }));
    if (!out.Item) return undefined;
    const { pk: _pk, ...record } = out.Item;
    return record as LabelResyncRecord;
  }

  async #settle(claim: LabelResyncClaim, update: string, values: Record<string, unknown>): Promise<boolean> {
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk: labelResyncPk(claim.cluster) },
          UpdateExpression: update,
          // Only our own run: after our lease expired another invocation may hold the slot.
          ConditionExpression: 'runToken = :token',
          ExpressionAttributeValues: { ':token': claim.token, ...values },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}

/** Lambda's longest invocation: the lease when the invocation's own deadline is unknown. */
export const MAX_INVOCATION_MS = 15 * 60_000;

/** Default time kept in hand: no ensure starts with less than this left in the invocation. */
export const DEFAULT_RESYNC_MARGIN_MS = 5_000;

export interface LabelResyncOptions {
  cache: ObjectCache;
  /** The control plane (or a getter, called only when a run is due). */
  storage: NodeLabels | (() => NodeLabels);
  /** The period slots (control table). */
  slots: LabelResyncSlots;
  clusters: readonly string[];
  config: LabelSyncConfig;
  logger?: Logger;
  /** Nodes ensured at once (upstream `-node-label-sync-workers`, 5). */
  workers?: number;
  /** Clock (epoch ms). Default `Date.now`. */
  now?: () => number;
  /** Time left in the invocation (Lambda's `context.getRemainingTimeInMillis`); default unbounded. */
  remainingMs?: () => number;
  /** No ensure starts with less than this left (default {@link DEFAULT_RESYNC_MARGIN_MS}). */
  marginMs?: number;
}

/** One scheduled tick: takes every due cluster's slot and resyncs those clusters. */
export async function runLabelResync(options: LabelResyncOptions): Promise<LabelResyncReport> {
  const report: LabelResyncReport = { clusters: [], nodes: 0, differed: 0, writes: 0, failed: 0, deferred: 0 };
  if (!options.config.enabled) return { ...report, skipped: 'disabled' };
  if (options.config.resyncIntervalMs <= 0) return { ...report, skipped: 'resync-disabled' };
  const now = options.now ?? Date.now;
  const remaining = options.remainingMs;
  const margin = options.marginMs ?? DEFAULT_RESYNC_MARGIN_MS;
  const leaseMs = remaining ? remaining() : MAX_INVOCATION_MS;

  const claims: LabelResyncClaim[] = [];
  for (const cluster of options.clusters) {
    const claim = await options.slots.claim(cluster, options.config.resyncIntervalMs, now(), leaseMs);
    if (claim) claims.push(claim);
  }
  if (claims.length === 0) {
    options.logger?.debug('node label resync not due');
    return { ...report, skipped: 'not-due' };
  }
  report.clusters = claims.map((c) => c.cluster);

  const unfinished = new Set<string>();
  try {
    const storage = typeof options.storage === 'function' ? options.storage() : options.storage;
    const due: { cluster: string; name: string; labels: Record<string, string> }[] = [];
    for (const { cluster } of claims) {
      // each cluster's nodes against its own control plane (the `storage` field of its CLUSTERS entry)
      const storageNodes = new Map<string, StorageNode>((await runWithStorageCluster(cluster, () => storage.listNodes())).map((n) => [n.name, n]));
      for await (const entry of options.cache.list(cluster, 'Node')) {
        report.nodes++;
        const node = entry.object as NodeLike;
        const name = node.metadata?.name ?? '';
        const known = storageNodes.get(name);
        if (!known || labelsEqual(node.metadata?.labels, known.labels)) continue;
        due.push({ cluster, name, labels: { ...(node.metadata?.labels ?? {}) } });
      }
    }
    report.differed = due.length;
    let next = 0;
    const worker = async () => {
      while (next < due.length) {
        if (remaining && remaining() < margin) {
          // Out of time: the rest is left to the next tick (nodes ensured by now no longer differ).
          for (const rest of due.slice(next)) unfinished.add(rest.cluster);
          report.deferred += due.length - next;
          next = due.length;
          return;
        }
        const { cluster, name, labels } = due[next++];
        const outcome = await runWithStorageCluster(cluster, () => ensureNodeLabels(storage, name, labels));
        report.writes += Number(outcome.computeOnlyWritten) + Number(outcome.labelsWritten);
        const errors = [...outcome.failures, ...outcome.invalid];
        if (outcome.failures.length > 0) report.failed++;
        if (errors.length > 0) options.logger?.error('failed to resync metadata to external object', { node: name, error: new LabelSyncError(errors).message });
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.workers ?? 5) }, worker));
  } catch (error) {
    // The period is not spent: give every slot back, so the next tick runs again.
    await Promise.allSettled(claims.map((c) => options.slots.release(c)));
    throw error;
  }

  for (const claim of claims) {
    if (unfinished.has(claim.cluster)) await options.slots.release(claim);
    else await options.slots.complete(claim, now());
  }
  if (report.deferred > 0) options.logger?.warn('node label resync ran out of time; the next tick goes on', { deferred: report.deferred });
  options.logger?.info('resync of metadata completed', { count: report.differed - report.deferred, clusters: report.clusters });
  return report;
}
