/**
 * One claim sync end to end (upstream `syncClaim`): plan → record `Provisioning` → `Provisioner.provision`
 * → decide → volume store → decide. The only I/O is the event recorder (for the events that must be out
 * before the backend call), the Provisioner and the store; the caller (the shell) applies the outcome:
 * records the remaining events and the metrics, writes the claim update, keeps the in-progress and
 * slow-retry records, and returns the result to the runtime.
 *
 * @example
 * const outcome = await syncClaim(
 *   { config, provisioner, store, slowRetryPeriodMs: 300_000, recordEvents: (events) => record(claim, events) },
 *   { claim, storageClass, now: Date.now() },
 * );
 * if (outcome.result === 'requeue') throw outcome.error;
 */
import { afterProvision, afterSave, planClaimSync, type ClaimOutcome, type ClaimSnapshot, type CoreConfig, type StoreResult } from './claim.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../kube/objects.ts';
import type { ProvisionContext, ProvisionerEvent, Provisioner, ProvisionResult } from './types.ts';

/** Saves a provisioned PV (upstream `VolumeStore.StoreVolume`). */
export interface VolumeStore {
  storeVolume(ctx: ProvisionContext, claim: PersistentVolumeClaim, pv: PersistentVolume): Promise<StoreResult>;
}

export interface ClaimSyncDeps {
  config: CoreConfig;
  provisioner: Provisioner;
  store: VolumeStore;
  /** How long an infeasible claim waits (upstream: 5 min, fixed). */
  slowRetryPeriodMs: number;
  /** Cancels the sync from outside (tests). */
  signal?: AbortSignal;
  /**
   * The provision timeout (upstream: a context deadline around the claim sync), started once the events
   * before the backend call are recorded: upstream records them asynchronously, so an event waiting for
   * API budget here must not eat the backend's time (under a saturated budget every call would time out).
   */
  timeoutMs?: number;
  /** Epoch ms; injectable for tests. */
  clock?: () => number;
  /**
   * Records events on the claim before the backend call: upstream records `Provisioning` just before
   * `Provision`, so the event is out even if the process dies during the call. Without it those events are
   * returned in the outcome with the others.
   */
  recordEvents?: (events: ProvisionerEvent[]) => Promise<void>;
}

/** Calls the provisioner; a thrown error is read as `{ state: 'Finished', error }`. */
export async function callProvision(provisioner: Provisioner, ctx: ProvisionContext, options: Parameters<Provisioner['provision']>[1]): Promise<ProvisionResult> {
  try {
    return await provisioner.provision(ctx, options);
  } catch (err) {
    return { state: 'Finished', error: err instanceof Error ? err : new Error(String(err)) };
  }
}

/** Runs one claim sync and returns what the shell must apply. */
export async function syncClaim(deps: ClaimSyncDeps, snapshot: ClaimSnapshot): Promise<ClaimOutcome> {
  const clock = deps.clock ?? Date.now;
  const deadline = new AbortController();
  const ctx: ProvisionContext = { signal: deps.signal ? AbortSignal.any([deps.signal, deadline.signal]) : deadline.signal };
  const plan = planClaimSync(deps.config, deps.provisioner, ctx, snapshot);
  if (plan.action === 'finish') return plan.outcome;
  const started = clock();
  let unrecorded = plan.events;
  if (deps.recordEvents) {
    await deps.recordEvents(plan.events);
    unrecorded = [];
  }
  const timer = deps.timeoutMs && deps.timeoutMs > 0
    ? setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), deps.timeoutMs)
    : undefined;
  try {
    const result = await callProvision(deps.provisioner, ctx, plan.options);
    const outcome = afterProvision(deps.config, plan, result, clock(), deps.slowRetryPeriodMs);
    const events = [...unrecorded, ...outcome.events];
    if (!outcome.saveVolume) return { ...outcome, events };
    const stored = await deps.store.storeVolume(ctx, plan.options.pvc, outcome.saveVolume);
    return afterSave(plan.options.pvc, { ...outcome, events }, stored, (clock() - started) / 1000);
  } finally {
    clearTimeout(timer);
  }
}
