/**
 * One claim sync end to end (upstream `syncClaim`): plan → `Provisioner.provision` → decide → volume
 * store → decide. The only I/O is the Provisioner and the store; the caller (the shell) applies the
 * outcome: records events and metrics, writes the claim update, keeps the in-progress and slow-retry
 * records, and returns the result to the runtime.
 *
 * @example
 * const outcome = await syncClaim({ config, provisioner, store, slowRetryPeriodMs: 300_000 }, { claim, storageClass, now: Date.now() });
 * if (outcome.result === 'requeue') throw outcome.error;
 */
import { afterProvision, afterSave, planClaimSync, type ClaimOutcome, type ClaimSnapshot, type CoreConfig, type StoreResult } from './claim.ts';
import type { PersistentVolume, PersistentVolumeClaim } from './objects.ts';
import type { ProvisionContext, Provisioner, ProvisionResult } from './types.ts';

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
  /** Cancelled at the provision timeout. */
  signal?: AbortSignal;
  /** Epoch ms; injectable for tests. */
  clock?: () => number;
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
  const ctx: ProvisionContext = { signal: deps.signal ?? new AbortController().signal };
  const plan = planClaimSync(deps.config, deps.provisioner, ctx, snapshot);
  if (plan.action === 'finish') return plan.outcome;
  const started = clock();
  const result = await callProvision(deps.provisioner, ctx, plan.options);
  const outcome = afterProvision(deps.config, plan, result, clock(), deps.slowRetryPeriodMs);
  const events = [...plan.events, ...outcome.events];
  if (!outcome.saveVolume) return { ...outcome, events };
  const stored = await deps.store.storeVolume(ctx, plan.options.pvc, outcome.saveVolume);
  return afterSave(plan.options.pvc, { ...outcome, events }, stored, (clock() - started) / 1000);
}
