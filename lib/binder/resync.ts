/**
 * The binder's level-triggered resync (upstream: `resync()` every `--pvclaimbinder-sync-period`): the
 * resync function re-enqueues every pending claim and every Released or Failed volume of a cluster on
 * its schedule, so a claim no event wakes (e.g. waiting for a volume that an admin frees by hand) and a
 * volume whose reclaim failed are looked at again.
 */
import { registerResync } from '../resync/registry.ts';
import { ClaimPhase, VolumePhase } from './constants.ts';

registerResync('binder', async function* binderResync(cluster, cache) {
  for await (const entry of cache.list(cluster, 'PersistentVolumeClaim')) {
    const claim = entry.object as { status?: { phase?: string }; metadata?: { namespace?: string; name?: string } };
    if ((claim.status?.phase ?? ClaimPhase.Pending) !== ClaimPhase.Pending) continue;
    yield { kind: 'PersistentVolumeClaim', key: `${claim.metadata?.namespace ?? ''}/${claim.metadata?.name}`, uid: entry.uid, resourceVersion: String(entry.rv) };
  }
  for await (const entry of cache.list(cluster, 'PersistentVolume')) {
    const phase = (entry.object as { status?: { phase?: string } }).status?.phase;
    if (phase !== VolumePhase.Released && phase !== VolumePhase.Failed) continue;
    yield { kind: 'PersistentVolume', key: String(entry.object.metadata?.name), uid: entry.uid, resourceVersion: String(entry.rv) };
  }
});
