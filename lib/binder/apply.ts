/**
 * Applying a sync's actions in order, as upstream's sync functions make their calls: each write
 * carries the resourceVersion it was computed from (a chained write the version the previous write to
 * the same object returned), the first failed write stops everything after it (events included), and
 * the sync's own error comes last. Shared by the Lambda shell and the unit tests' in-memory reactor.
 *
 * @example
 * const outcome = await applyActions(syncClaim(snapshot), {
 *   write: (w) => api.replace(w.kind, w.verb, w.object),
 *   event: (e) => recorder.record(e),
 *   enqueue: (q) => queue.send(q),
 * });
 * if (outcome.error) throw outcome.error;
 */
import { clone } from './helpers.ts';
import type { BinderEnqueue, BinderEvent, BinderWrite, PersistentVolume, PersistentVolumeClaim, SyncResult } from './types.ts';

/** Where a sync's actions go. `write` returns the object the API server returned. */
export interface ActionSink {
  write(write: BinderWrite): Promise<PersistentVolume | PersistentVolumeClaim> | PersistentVolume | PersistentVolumeClaim;
  event(event: BinderEvent): Promise<void> | void;
  enqueue(enqueue: BinderEnqueue): Promise<void> | void;
}

export interface ApplyOutcome {
  /** Objects the API returned, in write order. */
  written: Array<PersistentVolume | PersistentVolumeClaim>;
  /** The failed write's error, or the sync's own error; undefined when everything applied. */
  error?: Error;
  /** Whether the error came from a write (true) or from the sync's decision (false). */
  writeFailed: boolean;
}

const objectId = (kind: string, meta: { namespace?: string; name: string }): string => `${kind}:${meta.namespace ?? ''}/${meta.name}`;

/** Applies `result.actions` in order through `sink`; see the module comment for the rules. */
export async function applyActions(result: SyncResult, sink: ActionSink): Promise<ApplyOutcome> {
  const written: ApplyOutcome['written'] = [];
  const returnedVersion = new Map<string, string | undefined>();
  for (const action of result.actions) {
    if (action.action === 'write') {
      const id = objectId(action.kind, action.object.metadata);
      const object = clone(action.object);
      if (action.chained && returnedVersion.has(id)) object.metadata.resourceVersion = returnedVersion.get(id);
      try {
        const returned = await sink.write({ ...action, object } as BinderWrite);
        returnedVersion.set(id, returned.metadata.resourceVersion);
        written.push(returned);
      } catch (error) {
        return { written, error: error as Error, writeFailed: true };
      }
    } else if (action.action === 'event') {
      await sink.event(action);
    } else {
      await sink.enqueue(action);
    }
  }
  return result.error ? { written, error: result.error, writeFailed: false } : { written, writeFailed: false };
}
