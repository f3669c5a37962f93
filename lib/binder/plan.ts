/**
 * The ordered actions one sync decides. Upstream's sync functions call the API as they go and
 * continue with the object each write returned; the pure core instead records each write and
 * continues with the object it *would* return, marking later writes to the same object `chained` so
 * the applier carries the fresh resourceVersion forward. Applying stops at the first failed write,
 * which is exactly where upstream's sync would have returned its error.
 *
 * @example
 * const plan = new SyncPlan();
 * const pv = plan.updateVolumeStatus(withPhase(volume, 'Bound'), 'updateVolumePhase');
 * plan.event('PersistentVolumeClaim', claim, 'Normal', 'FailedBinding', '...');
 * return plan.result();
 */
import { clone } from './helpers.ts';
import type { BinderAction, BinderKind, PersistentVolume, PersistentVolumeClaim, SyncResult } from './types.ts';

export class SyncPlan {
  readonly #actions: BinderAction[] = [];
  readonly #written = new Set<string>();

  #chain(kind: BinderKind, meta: { namespace?: string; name: string }): boolean {
    const key = `${kind}:${meta.namespace ?? ''}/${meta.name}`;
    const chained = this.#written.has(key);
    this.#written.add(key);
    return chained;
  }

  /** PUT the volume (spec and metadata). Returns what the API server would return (status untouched). */
  updateVolume(volume: PersistentVolume, purpose: string): PersistentVolume {
    const object = clone(volume);
    this.#actions.push({ action: 'write', verb: 'update', kind: 'PersistentVolume', object, chained: this.#chain('PersistentVolume', volume.metadata), purpose });
    return clone(object);
  }

  /** PUT the volume's status subresource. */
  updateVolumeStatus(volume: PersistentVolume, purpose: string): PersistentVolume {
    const object = clone(volume);
    this.#actions.push({ action: 'write', verb: 'updateStatus', kind: 'PersistentVolume', object, chained: this.#chain('PersistentVolume', volume.metadata), purpose });
    return clone(object);
  }

  /** PUT the claim (spec and metadata). */
  updateClaim(claim: PersistentVolumeClaim, purpose: string): PersistentVolumeClaim {
    const object = clone(claim);
    this.#actions.push({ action: 'write', verb: 'update', kind: 'PersistentVolumeClaim', object, chained: this.#chain('PersistentVolumeClaim', claim.metadata), purpose });
    return clone(object);
  }

  /** PUT the claim's status subresource. */
  updateClaimStatus(claim: PersistentVolumeClaim, purpose: string): PersistentVolumeClaim {
    const object = clone(claim);
    this.#actions.push({ action: 'write', verb: 'updateStatus', kind: 'PersistentVolumeClaim', object, chained: this.#chain('PersistentVolumeClaim', claim.metadata), purpose });
    return clone(object);
  }

  /** Record an event about a volume or a claim. */
  event(
    kind: BinderKind,
    object: PersistentVolume | PersistentVolumeClaim,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void {
    this.#actions.push({ action: 'event', kind, object, type, reason, message });
  }

  /** Ask for another reconcile of a key (upstream's `claimQueue.Add`). */
  enqueue(kind: BinderKind, key: string): void {
    this.#actions.push({ action: 'enqueue', kind, key });
  }

  /** The actions so far, and the error the sync returns after them, if any. */
  result(error?: Error): SyncResult {
    return error ? { actions: [...this.#actions], error } : { actions: [...this.#actions] };
  }
}
