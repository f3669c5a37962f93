/**
 * Saving the provisioned PV (upstream `controller/volume_store.go`), two policies:
 *
 * - {@link BackoffStore} (default): `Create` retried in-line with a backoff (linear 10 s × 5 attempts by
 *   default); when it keeps failing, record "Deleting the volume", delete the storage asset with the same
 *   backoff (or record "Please delete manually"), and fail the claim sync so it provisions again.
 * - {@link QueueStore} (`CreateProvisionedPVLimiter`): one `Create` in-line; on failure keep the PV in a
 *   durable pending record and report success: the shell retries the save forever, never deleting the
 *   asset.
 *
 * `AlreadyExists` is success in both.
 *
 * @example
 * const store = new BackoffStore({ writer, provisioner, backoff: { durationMs: 10_000, factor: 1, steps: 5 } });
 * const result = await store.storeVolume(ctx, claim, pv);
 */
import { storeMessages, type StoreResult } from './claim.ts';
import { EventReason } from './constants.ts';
import type { PersistentVolume, PersistentVolumeClaim } from './objects.ts';
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

/** Runs `attempt` under `backoff`; resolves the last error, or undefined on success. */
export async function withBackoff(backoff: Backoff, attempt: () => Promise<void>, sleep: Sleep = defaultSleep): Promise<Error | undefined> {
  let delay = backoff.durationMs;
  let lastError: Error | undefined;
  for (let step = 0; step < Math.max(1, backoff.steps); step++) {
    if (step > 0) {
      await sleep(backoff.capMs ? Math.min(delay, backoff.capMs) : delay);
      delay *= backoff.factor;
    }
    try {
      await attempt();
      return undefined;
    } catch (err) {
      lastError = err instanceof Error ? err : new Error(String(err));
    }
  }
  return lastError;
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
}

/** The default store: bounded retries, then the storage asset is deleted [`backoffStore`]. */
export class BackoffStore implements VolumeStore {
  #options: BackoffStoreOptions;

  constructor(options: BackoffStoreOptions) {
    this.#options = options;
  }

  async storeVolume(_ctx: ProvisionContext, claim: PersistentVolumeClaim, pv: PersistentVolume): Promise<StoreResult> {
    const { creator, provisioner, backoff, sleep } = this.#options;
    // Upstream ignores the sync's timeout here (context.Background()): a PV whose asset exists must be
    // saved or cleaned up, not abandoned half-way.
    const saveError = await withBackoff(backoff, async () => { await creator.createVolume(pv); }, sleep);
    if (!saveError) return succeeded(pv);
    const events: StoreResult['events'] = [{ on: 'claim', type: 'Warning', reason: EventReason.ProvisioningFailed, message: storeMessages.deleting(claim, saveError) }];
    // The cleanup must not inherit the sync's timeout either (upstream: context.Background()).
    const cleanupCtx: ProvisionContext = { signal: new AbortController().signal };
    const deleteError = await withBackoff(backoff, () => provisioner.delete(cleanupCtx, pv), sleep);
    if (deleteError) {
      events.push({ on: 'claim', type: 'Warning', reason: EventReason.ProvisioningCleanupFailed, message: storeMessages.cleanupFailed(claim, deleteError) });
    }
    return { saved: false, error: saveError, events };
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
      return { saved: true, events: [] };
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
