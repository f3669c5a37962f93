/**
 * A volume's lease (`lease#sv-volume#<cluster>#<volumeId>`), so that the scheduled poll and the event path (or two
 * events of different objects: a claim and an attachment are different FIFO groups) never reconcile one volume
 * at once. It is taken lazily, before the step's first write — a create or update of the Service or Endpoints, or
 * the mount-endpoint publish — so the common step that finds everything in place writes no lease at all. It lasts
 * until the step's deadline (every call of the step is aborted by then) plus a little, and is released when the
 * step ends.
 *
 * @example
 * const lease = new VolumeLease({ leases, cluster, volumeId, until: deadline + 1000 });
 * try { await lease.beforeWrite(); await write(); } finally { await lease.release(); }
 */
import { randomUUID } from 'node:crypto';
import type { Lease, LeaseStore } from '../state/lease.ts';
import { volumeLeaseName } from './constants.ts';
import { VolumeBusyError } from './errors.ts';

export interface VolumeLeaseOptions {
  /** Without a store there is no exclusion (`beforeWrite` does nothing). */
  leases: LeaseStore | undefined;
  cluster: string;
  volumeId: string;
  /** Epoch ms the lease lasts until. */
  until: number;
}

/** The lease of one volume step. */
export class VolumeLease {
  readonly #o: VolumeLeaseOptions;
  readonly #holder = randomUUID();
  #lease: Lease | undefined;

  constructor(options: VolumeLeaseOptions) {
    this.#o = options;
  }

  /** Whether the step holds the lease. */
  get held(): boolean {
    return this.#lease !== undefined;
  }

  /** Takes the lease if the step does not hold it yet; {@link VolumeBusyError} when another invocation does. */
  async beforeWrite(): Promise<void> {
    const { leases } = this.#o;
    if (!leases || this.#lease) return;
    const lease = await leases.tryAcquire(volumeLeaseName(this.#o.cluster, this.#o.volumeId), this.#holder, Math.max(1, this.#o.until - Date.now()));
    if (!lease) throw new VolumeBusyError(this.#o.volumeId);
    this.#lease = lease;
  }

  /** Gives the lease up (a no-op when not held). */
  async release(): Promise<void> {
    const lease = this.#lease;
    this.#lease = undefined;
    if (lease) await this.#o.leases!.release(lease);
  }
}
