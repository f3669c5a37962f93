/**
 * Which shared volumes a watch event concerns (beyond upstream, which only polls): a pure function of the
 * reconcile request. `undefined` = the event says nothing about shared volumes (done at once);
 * `{ all: true }` = not enough to tell which (a regular cache-respecting poll iteration);
 * otherwise a predicate selecting the volumes to reconcile now, bypassing their cache entries.
 */
import { splitKey } from '../runtime/message.ts';
import type { ReconcileRequest } from '../runtime/reconcile.ts';
import type { SharedVolume } from '../storage/types.ts';
import { VOLUME_ID_LABEL } from './constants.ts';

/** What to reconcile for an event. */
export type Trigger = { all: true } | { all: false; select: (volume: SharedVolume) => boolean };

interface ObjectHint {
  metadata?: { labels?: Record<string, string> };
  spec?: { accessModes?: string[]; source?: { persistentVolumeName?: string } };
}

/**
 * - PersistentVolumeClaim: the volume of that claim, unless the claim is deleted (garbage collection
 *   removes the Service) or is known not to be ReadWriteMany.
 * - VolumeAttachment: the volume of the attached PV (`spec.source.persistentVolumeName`); all when unknown.
 * - Service / Endpoints: only their deletion (and relist/requeue) triggers, so a Service or Endpoints deleted
 *   by hand is recreated at once; our own creates and updates come back as ADDED/MODIFIED and are ignored.
 */
export function triggerFor(request: ReconcileRequest): Trigger | undefined {
  const { event } = request;
  const hint = event.object as ObjectHint | undefined;
  const { namespace, name } = splitKey(request.key);
  switch (request.kind) {
    case 'PersistentVolumeClaim': {
      if (event.type === 'DELETED') return undefined;
      const modes = hint?.spec?.accessModes;
      if (modes && !modes.includes('ReadWriteMany')) return undefined;
      return { all: false, select: (v) => v.namespace === namespace && v.pvcName === name };
    }
    case 'VolumeAttachment': {
      if (event.type === 'DELETED') return undefined;
      const pv = hint?.spec?.source?.persistentVolumeName;
      return pv ? { all: false, select: (v) => v.serviceName === pv } : { all: true };
    }
    case 'Service':
    case 'Endpoints': {
      if (event.type === 'ADDED' || event.type === 'MODIFIED') return undefined;
      const volumeId = hint?.metadata?.labels?.[VOLUME_ID_LABEL];
      return { all: false, select: (v) => (v.namespace === namespace && v.serviceName === name) || v.id === volumeId };
    }
    default:
      return undefined;
  }
}
