/**
 * One volume sync end to end (upstream `syncVolume` → `handleProtectionFinalizer` → `shouldDelete` →
 * `deleteVolumeOperation`). The API writes go through {@link VolumeWriter} so the same sequence runs
 * against the Kubernetes API (the shell) or an in-memory table (the unit tables).
 *
 * Before `Provisioner.delete` the VolumeAttachments are checked (the CSI external-provisioner's
 * `canDeleteVolume`, there inside its `Delete`): a PV that an attachment still names is not deleted;
 * the sync fails like a failed `Delete` (Warning `VolumeFailedDelete` with upstream's text, failed
 * delete metric, retried with backoff).
 *
 * @example
 * const outcome = await syncVolume({ config, provisioner, writer, attachments }, pv);
 * if (outcome.result === 'requeue') throw outcome.error;
 */
import { canDeleteVolume, type VolumeAttachment, type VolumeAttachmentLister } from './attachments.ts';
import { EventReason, finalizerPV } from './constants.ts';
import type { CoreConfig } from './claim.ts';
import { IgnoredError } from './errors.ts';
import type { PersistentVolume } from '../kube/objects.ts';
import type { MetricObservation, ProvisionContext, ProvisionerEvent, Provisioner } from './types.ts';
import { planVolumeSync, removeFinalizer, volumeMetricClass } from './volume.ts';

/** The API writes a volume sync makes. */
export interface VolumeWriter {
  /** PATCH `metadata.finalizers` (`null` removes the field); returns the patched PV. NotFound must throw {@link VolumeGoneError}. */
  patchFinalizers(pv: PersistentVolume, finalizers: string[] | null): Promise<PersistentVolume>;
  /** DELETE the PV object. */
  deleteVolume(pv: PersistentVolume): Promise<void>;
  /** The PV as the cache now has it (after the DELETE, to drop our finalizer); undefined when gone. */
  getVolume(name: string): Promise<PersistentVolume | undefined>;
}

/** The PV disappeared under a finalizer patch: nothing left to do. */
export class VolumeGoneError extends Error {
  constructor(name: string) {
    super(`persistentvolume "${name}" not found`);
    this.name = 'VolumeGoneError';
  }
}

export interface VolumeOutcome {
  result: 'done' | 'requeue';
  error?: Error;
  events: ProvisionerEvent[];
  metrics: MetricObservation[];
  /** Whether `Provisioner.delete` removed the storage asset (false when it said Ignored). */
  deletedAsset: boolean;
}

export interface VolumeSyncDeps {
  config: CoreConfig;
  provisioner: Provisioner;
  writer: VolumeWriter;
  /**
   * The cluster's VolumeAttachments, read just before `Provisioner.delete` (required: an attached
   * volume must never be deleted, so every caller says where attachments come from).
   */
  attachments: VolumeAttachmentLister;
  /** Cancelled at the deletion timeout. */
  signal?: AbortSignal;
  clock?: () => number;
}

const none = (): VolumeOutcome => ({ result: 'done', events: [], metrics: [], deletedAsset: false });

/** Runs one volume sync; `pv` is the PV from the cache (undefined: deleted, nothing to do). */
export async function syncVolume(deps: VolumeSyncDeps, pv: PersistentVolume | undefined): Promise<VolumeOutcome> {
  if (!pv) return none();
  const clock = deps.clock ?? Date.now;
  const ctx: ProvisionContext = { signal: deps.signal ?? new AbortController().signal };
  const plan = planVolumeSync(deps.config, deps.provisioner, ctx, pv);
  if (!plan.ours) return none();
  let current = pv;
  if (plan.finalizers !== undefined) {
    try {
      current = await deps.writer.patchFinalizers(pv, plan.finalizers);
    } catch (err) {
      if (err instanceof VolumeGoneError) return none();
      const e = err as Error;
      return { ...none(), result: 'requeue', error: new Error(`failed to modify finalizers to ${JSON.stringify(plan.finalizers ?? [])} on volume ${pv.metadata.name} err: ${e.message}`, { cause: e }) };
    }
  }
  if (!plan.delete) return none();

  const cls = volumeMetricClass(current);
  const failed = (error: Error, events: ProvisionerEvent[] = [], deletedAsset = false): VolumeOutcome =>
    ({ result: 'requeue', error, events, metrics: [{ op: 'delete', outcome: 'failed', class: cls }], deletedAsset });
  const started = clock();
  let attachments: VolumeAttachment[];
  try {
    attachments = await deps.attachments.list(current.metadata.name);
  } catch (err) {
    const e = new Error(`failed to list volumeattachments: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    return failed(e, [{ on: 'volume', type: 'Warning', reason: EventReason.VolumeFailedDelete, message: e.message }]);
  }
  const attached = canDeleteVolume(current, attachments);
  if (attached) return failed(attached, [{ on: 'volume', type: 'Warning', reason: EventReason.VolumeFailedDelete, message: attached.message }]);
  try {
    await deps.provisioner.delete(ctx, current);
  } catch (err) {
    if (err instanceof IgnoredError) {
      return { result: 'done', events: [], metrics: [{ op: 'delete', outcome: 'success', class: cls, durationSeconds: (clock() - started) / 1000 }], deletedAsset: false };
    }
    const e = err instanceof Error ? err : new Error(String(err));
    return failed(e, [{ on: 'volume', type: 'Warning', reason: EventReason.VolumeFailedDelete, message: e.message }]);
  }
  try {
    await deps.writer.deleteVolume(current);
  } catch (err) {
    if (!(err instanceof VolumeGoneError)) return failed(err as Error, [], true);
  }
  if (deps.config.addFinalizer && (current.metadata.finalizers?.length ?? 0) > 0) {
    const latest = await deps.writer.getVolume(current.metadata.name ?? '');
    if (latest) {
      const removed = removeFinalizer(latest.metadata.finalizers, finalizerPV);
      if (removed.modified) {
        try {
          await deps.writer.patchFinalizers(latest, removed.finalizers ?? null);
        } catch (err) {
          if (!(err instanceof VolumeGoneError)) return failed(err as Error, [], true);
        }
      }
    }
  }
  return { result: 'done', events: [], metrics: [{ op: 'delete', outcome: 'success', class: cls, durationSeconds: (clock() - started) / 1000 }], deletedAsset: true };
}
