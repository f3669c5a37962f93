/**
 * Gate `backoff`: reads the key's backoff record, its cache entry and what the controller prefetches in one
 * request (the entry becomes `request.cached`, the rest `request.prefetched`), shared with the other
 * records of the batch that reach this gate at the same moment (the runtime's `reader`). A REQUEUE or a
 * redelivery that arrives before the record's `nextAttemptAt` waits again; a fresh watch event goes
 * through, as upstream's `queue.Add` bypasses the rate limiter.
 *
 * It also ends an own write that was tagged too late: the forwarder publishes a version untagged when its
 * last look at the cache (lib/forwarder/review.ts) comes before the writer's write-back, which is usual when
 * the writer runs elsewhere (a Lambda's API response and write-back against the forwarder's watch event).
 * When the entry just read holds the event's very version (or lists it among the writer's earlier ones,
 * `writerRvs`), tagged by this controller, and the key has no retry pending, the record is this
 * controller's own write, as the subscription filter would have dropped it: done, counted as
 * `OwnWriteSkipped`, with no reconcile (no API requests, no 409 against the sync that wrote it).
 *
 * @example
 * // REQUEUE, nextAttemptAt in 10 s ⇒ { kind: 'wait', delayMs: 10000 }; ADDED ⇒ next()
 */
import type { SQSRecord } from 'aws-lambda';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { writerOfVersion, type CachedObject } from '../../state/cache.ts';
import type { BackoffRecord } from '../../state/backoff.ts';
import { readKeyState } from '../../state/key-state.ts';
import type { ClusterEvent, ClusterEventType } from '../message.ts';
import { parsedOf, type Gate } from '../job.ts';
import { METRIC } from '../observability.ts';
import type { SqsRuntime } from '../runtime.ts';

/** Early arrivals within this much of `nextAttemptAt` go through. */
const GATE_SLACK_MS = 1000;

/** How long a record must still wait for its key's next attempt (0: go). */
export function backoffWaitMs(known: BackoffRecord | null, type: ClusterEventType, record: SQSRecord, now: number): number {
  if (!known) return 0;
  const early = known.nextAttemptAt - now;
  const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
  return early > GATE_SLACK_MS && (type === 'REQUEUE' || receiveCount > 1) ? early : 0;
}

/** A watch event of the version `controller` wrote and tagged itself (see the module comment). */
export function isOwnTaggedVersion(event: ClusterEvent, cached: CachedObject | undefined, controller: string): boolean {
  return (event.type === 'ADDED' || event.type === 'MODIFIED') && cached !== undefined && !cached.deleted && writerOfVersion(cached, Number(event.resourceVersion)) === controller;
}

export function backoff<Ctx>(rt: SqsRuntime<Ctx>): Gate {
  return async (job, next) => {
    const { request, id, event } = parsedOf(job);
    const s = rt.services;
    const extra = rt.controller.prefetch?.(request) ?? {};
    const state = await readKeyState({ doc: s.doc, tables: s.tables, backoff: s.backoff, cache: s.cache, reader: s.reader }, id, extra);
    request.cached = state.cached ?? null;
    if (rt.controller.prefetch) request.prefetched = state.extra;
    job.known = state.backoff ?? null;
    request.retry = job.known !== null || Number(job.record.attributes.ApproximateReceiveCount) > 1;
    if (!job.known && isOwnTaggedVersion(event, state.cached, rt.controller.name)) {
      rt.metrics.addMetric(METRIC.ownWriteSkipped, MetricUnit.Count, 1);
      job.log.debug('own write, tagged after it was published: nothing to do', { resourceVersion: event.resourceVersion });
      return { kind: 'done' };
    }
    const delayMs = backoffWaitMs(job.known, event.type, job.record, rt.now());
    if (delayMs > 0) return { kind: 'wait', delayMs, why: 'backoff: next attempt not due yet' };
    return next();
  };
}
