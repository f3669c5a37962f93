/**
 * One poll owner per cluster: the scheduled invocation that polls a cluster holds the lease
 * `lease#sv-poll#<cluster>` (lib/state/lease.ts) until the moment it must be over (its Lambda timeout, or the next
 * invocation's due time), so two invocations never poll one cluster at once, even when EventBridge delivers a
 * schedule twice or late. The owner releases the lease as soon as it stops; that release is the handover.
 *
 * An invocation that finds the lease held:
 * - ends at once when the owner's lease outlasts its own polling window (a duplicate delivery: the owner
 *   covers everything this invocation could do);
 * - otherwise waits as a standby, looking at the lease every {@link HANDOVER_CHECK_MS}, and takes it when the owner
 *   releases it (or when it expires: an owner that died), then polls at once. Polling thus continues across
 *   invocations with a gap of the owner's stop margin and the successor's start, not a whole poll interval.
 *
 * @example
 * const owner = await acquirePollOwnership({ leases, cluster: 'prod', holder: context.awsRequestId, leaseUntil: end, stopAt });
 * if (owner.lease) try { await reconciler.pollUntil(stopAt); } finally { await leases.release(owner.lease); }
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lease, LeaseStore } from '../state/lease.ts';
import { HANDOVER_CHECK_MS, pollLeaseName, VOLUME_START_RESERVE_MS } from './constants.ts';

export interface PollOwnershipRequest {
  leases: LeaseStore;
  cluster: string;
  /** Unique per invocation (the Lambda request id). */
  holder: string;
  /** Epoch ms the lease lasts until: when this invocation is over for sure. */
  leaseUntil: number;
  /** Epoch ms this invocation stops polling; no point in owning the poll with less than a pass before it. */
  stopAt: number;
  /** Less time than this before `stopAt` is not worth a pass (default {@link VOLUME_START_RESERVE_MS}). */
  reserveMs?: number;
  /** How often a standby looks at the lease (default {@link HANDOVER_CHECK_MS}). */
  checkEveryMs?: number;
  signal?: AbortSignal;
}

/** Why an invocation does not poll. */
export type NotOwnerReason = 'covered' | 'no-time';

/** The outcome: the lease, or why not; and how long the invocation waited for the handover. */
export type PollOwnership = { lease: Lease; waitedMs: number } | { lease?: undefined; reason: NotOwnerReason; waitedMs: number };

/** Takes the cluster's poll lease, waiting for the current owner's handover when that is worth it. */
export async function acquirePollOwnership(request: PollOwnershipRequest): Promise<PollOwnership> {
  const { leases, holder } = request;
  const name = pollLeaseName(request.cluster);
  const started = Date.now();
  for (;;) {
    const now = Date.now();
    const waitedMs = now - started;
    if (request.signal?.aborted || request.stopAt - now < (request.reserveMs ?? VOLUME_START_RESERVE_MS)) return { reason: 'no-time', waitedMs };
    const lease = await leases.tryAcquire(name, holder, Math.max(1, request.leaseUntil - now));
    if (lease) return { lease, waitedMs };
    const current = await leases.get(name);
    if (current?.holder !== undefined && current.expiresAt >= request.stopAt) return { reason: 'covered', waitedMs };
    const untilExpiry = current ? current.expiresAt - Date.now() : 0;
    const wait = Math.max(1, Math.min(request.checkEveryMs ?? HANDOVER_CHECK_MS, untilExpiry > 0 ? untilExpiry : 1));
    await sleep(wait, undefined, request.signal ? { signal: request.signal } : undefined).catch(() => {});
  }
}
