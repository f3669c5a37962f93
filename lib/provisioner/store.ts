/**
 * Saving the provisioned PV (upstream `controller/volume_store.go`), two policies:
 *
 * - {@link BackoffStore} (default): `Create` retried in-line with a backoff (linear 10 s × 5 attempts by
 *   default); when it keeps failing, record "Deleting the volume", delete the storage asset with the same
 *   backoff (or record "Please delete manually"), and fail the claim sync so it provisions again. Inside a
 *   function the retries are bounded by the time left: a retry whose wait would run past it is not made,
 *   and the unsaved PV is handed to the claim's durable record instead (see {@link BackoffStoreOptions}).
 * - {@link QueueStore} (`CreateProvisionedPVLimiter`): one `Create` in-line; on failure keep the PV in a
 *   durable pending record and report success: the shell retries the save forever, never deleting the
 *   asset.
 *
 * `AlreadyExists` is success in both.
 *
 * @example
 * const store = new BackoffStore({ creator: writer, provisioner, backoff: { durationMs: 10_000, factor: 1, steps: 5 },
 *   timeLeftMs: () => context.getRemainingTimeInMillis() - 10_000, pending });
 * const result = await store.storeVolume(ctx, claim, pv);
 */
import { storeMessages, type StoreResult } from './claim.ts';
import { EventReason } from './constants.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../kube/objects.ts';
import type { VolumeStore } from './sync-claim.ts';
import type { ProvisionContext, Provisioner } from './types.ts';

/** Creates a PV object; resolves `'exists'` on AlreadyExists (409), throws on anything else. */
export interface PersistentVolumeCreator {
  createVolume(pv: PersistentVolume): Promise<'created' | 'exists'>;
}

/** `wait.Backoff`: first try at once, then sleep `durationMs`, ×`factor` each time, `steps` tries in all. */
export interface Backoff {
  durationMs: number;
  factor: number;
  steps: number;
  /** Upper bound of one sleep (0 = none). */
  capMs?: number;
}

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

const defaultSleep: Sleep = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason);
  const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
  const onAbort = (): void => { clearTimeout(timer); reject(signal?.reason); };
  signal?.addEventListener('abort', onAbort, { once: true });
});

/** How a backoff loop ended. */
export interface BackoffResult {
  /** The last error; undefined on success. */
  error?: Error;
  /** The loop stopped with steps left, because the next wait would not have ended within the time left. */
  outOfTime: boolean;
}

/**
 * Runs `attempt` under `backoff` (`wait.ExponentialBackoff`): the first try at once, then a wait before
 * each further try. With `timeLeftMs`, a try whose wait would not end before the time left runs out is not
 * made (`outOfTime`); the first try always is.
 */
export async function runBackoff(
  backoff: Backoff,
  attempt: () => Promise<void>,
  options: { sleep?: Sleep; timeLeftMs?: () => number } = {},
): Promise<BackoffResult> {
  const sleep = options.sleep ?? defaultSleep;
  let delay = backoff.durationMs;
  let lastError: Error | undefined;
  for (let step = 0; step < Math.max(1, backoff.steps); step++) {
    if (step > 0) {
      const wait = backoff.capMs ? Math.min(delay, backoff.capMs) : delay;
      if (options.timeLeftMs && options.timeLeftMs() <= wait) return { error: lastError, outOfTime: true };
      await sleep(wait);
      delay *= backoff.factor;
    }
    try {
      await attempt();
      return { outOfTime: false };
    } catch (err) {
      lastError = err instanceof Error ? err : new Error(String(err));
    }
  }
  return { error: lastError, outOfTime: false };
}

/** Runs `attempt` under `backoff` without a time bound; resolves the last error, or undefined on success. */
export async function withBackoff(backoff: Backoff, attempt: () => Promise<void>, sleep: Sleep = defaultSleep): Promise<Error | undefined> {
  return (await runBackoff(backoff, attempt, { sleep })).error;
}

const succeeded = (pv: PersistentVolume): StoreResult => ({
  saved: true,
  events: [{ on: 'claim', type: 'Normal', reason: EventReason.ProvisioningSucceeded, message: storeMessages.succeeded(pv.metadata.name ?? '') }],
});

export interface BackoffStoreOptions {
  creator: PersistentVolumeCreator;
  provisioner: Provisioner;
  /** Default: linear 10 s × 5 attempts (`CreateProvisionedPVInterval` × `CreateProvisionedPVRetryCount`). */
  backoff: Backoff;
  sleep?: Sleep;
  /**
   * Milliseconds this sync may still spend waiting between retries; a retry whose wait would not end
   * before then is not made. The shell passes the Lambda's remaining time less two runtime margins
   * (`TIME_MARGIN_MS`): one for the attempt after the last wait, one to hand the PV over and finish the
   * sync before the function is killed. Unset: upstream's unbounded retries.
   */
  timeLeftMs?: () => number;
  /**
   * Where an unsaved PV goes when the time runs out before the retries do: the claim's durable record,
   * whose PV the next reconcile of the claim saves before anything else (the queue store's path).
   */
  pending?: PendingVolumes;
}

/**
 * The default store: bounded retries, then the storage asset is deleted [`backoffStore`].
 *
 * Out of Lambda time with retries left, the PV is handed to {@link BackoffStoreOptions.pending} instead:
 * the asset exists and its PV is durably recorded, so neither is lost when the function stops, and the
 * asset is not deleted on a guess (a deletion cut short by the timeout would leak it). If the hand-over
 * cannot be written, or no `pending` is given, the store falls back to upstream's cleanup, its retries
 * bounded by the same time.
 */
export class BackoffStore implements VolumeStore {
  #options: BackoffStoreOptions;

  constructor(options: BackoffStoreOptions) {
    this.#options = options;
  }

  async storeVolume(_ctx: ProvisionContext, claim: PersistentVolumeClaim, pv: PersistentVolume): Promise<StoreResult> {
    const { creator, provisioner, backoff, sleep, timeLeftMs, pending } = this.#options;
    const bounds = { ...(sleep ? { sleep } : {}), ...(timeLeftMs ? { timeLeftMs } : {}) };
    // Upstream ignores the sync's timeout here (context.Background()): a PV whose asset exists must be
    // saved or cleaned up, not abandoned half-way.
    const save = await runBackoff(backoff, async () => { await creator.createVolume(pv); }, bounds);
    if (!save.error) return succeeded(pv);
    if (save.outOfTime && pending) {
      try {
        await pending.put(pv);
        return { saved: true, queued: true, events: [] };
      } catch {
        // The record cannot be written either: clean up as upstream does.
      }
    }
    const events: StoreResult['events'] = [{ on: 'claim', type: 'Warning', reason: EventReason.ProvisioningFailed, message: storeMessages.deleting(claim, save.error) }];
    // The cleanup must not inherit the sync's timeout either (upstream: context.Background()).
    const cleanupCtx: ProvisionContext = { signal: new AbortController().signal };
    const deletion = await runBackoff(backoff, () => provisioner.delete(cleanupCtx, pv), bounds);
    if (deletion.error) {
      events.push({ on: 'claim', type: 'Warning', reason: EventReason.ProvisioningCleanupFailed, message: storeMessages.cleanupFailed(claim, deletion.error) });
    }
    return { saved: false, error: save.error, events };
  }
}

/** Durable home of PVs whose save failed under the {@link QueueStore} (upstream keeps them in memory). */
export interface PendingVolumes {
  put(pv: PersistentVolume): Promise<void>;
  get(name: string): Promise<PersistentVolume | undefined>;
  delete(name: string): Promise<void>;
}

/**
 * Retry forever, never delete the asset [`queueStore`]. A failed save is parked in {@link PendingVolumes}
 * and counted as success; {@link QueueStore.retryPending} saves it later (the shell calls it before
 * provisioning the claim again, and on each requeue).
 */
export class QueueStore implements VolumeStore {
  #creator: PersistentVolumeCreator;
  #pending: PendingVolumes;

  constructor(creator: PersistentVolumeCreator, pending: PendingVolumes) {
    this.#creator = creator;
    this.#pending = pending;
  }

  async storeVolume(_ctx: ProvisionContext, _claim: PersistentVolumeClaim, pv: PersistentVolume): Promise<StoreResult> {
    try {
      await this.#creator.createVolume(pv);
      return succeeded(pv);
    } catch {
      await this.#pending.put(pv);
      return { saved: true, queued: true, events: [] };
    }
  }

  /**
   * Saves the pending PV of this name, if any: `'none'` when nothing is pending, `'saved'` (with the
   * success event) or throws the save error (the PV stays pending).
   */
  async retryPending(name: string): Promise<{ status: 'none' } | { status: 'saved'; result: StoreResult }> {
    const pv = await this.#pending.get(name);
    if (!pv) return { status: 'none' };
    await this.#creator.createVolume(pv);
    await this.#pending.delete(name);
    return { status: 'saved', result: succeeded(pv) };
  }
}
