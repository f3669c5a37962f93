/**
 * Upstream's `pv_collector_*` gauges (`persistentvolume/metrics`), computed from the object cache
 * instead of the controller's informer caches: volumes by plugin and volume mode, bound and unbound
 * volumes by class, bound and unbound claims by namespace, class and volume attributes class.
 * claimflow has no in-tree volume plugins: a CSI volume's plugin is `kubernetes.io/csi:<driver>`, any
 * other `N/A` (upstream's name for an unknown plugin).
 *
 * Reading every volume and claim is a periodic job's work (the resync function's schedule), never a
 * bind's.
 *
 * @example
 * const series = await collectVolumeStats(cache, 'c1');
 * publishVolumeStats(metrics, series);
 */
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { ObjectCache } from '../state/cache.ts';
import { ClaimPhase, VolumePhase } from './constants.ts';
import { getPersistentVolumeClaimClass, getPersistentVolumeClass } from './helpers.ts';
import type { PersistentVolume, PersistentVolumeClaim } from './types.ts';

export const CollectorMetric = {
  totalPV: 'pv_collector_total_pv_count',
  boundPV: 'pv_collector_bound_pv_count',
  unboundPV: 'pv_collector_unbound_pv_count',
  boundPVC: 'pv_collector_bound_pvc_count',
  unboundPVC: 'pv_collector_unbound_pvc_count',
} as const;

/** One gauge value with its labels. */
export interface GaugeSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The plugin label of a volume. */
export function volumePluginName(volume: PersistentVolume): string {
  return volume.spec.csi ? `kubernetes.io/csi:${volume.spec.csi.driver}` : 'N/A';
}

function tally(samples: Map<string, GaugeSample>, name: string, labels: Record<string, string>): void {
  const key = `${name}${JSON.stringify(labels)}`;
  const sample = samples.get(key);
  if (sample) sample.value++;
  else samples.set(key, { name, labels, value: 1 });
}

/** Every gauge sample for one cluster, from the cache (deleted objects excluded). */
export async function collectVolumeStats(cache: ObjectCache, cluster: string): Promise<GaugeSample[]> {
  const samples = new Map<string, GaugeSample>();
  for await (const entry of cache.list(cluster, 'PersistentVolume')) {
    const volume = entry.object as unknown as PersistentVolume;
    tally(samples, CollectorMetric.totalPV, { plugin_name: volumePluginName(volume), volume_mode: volume.spec.volumeMode || 'Filesystem' });
    const bound = volume.status?.phase === VolumePhase.Bound;
    tally(samples, bound ? CollectorMetric.boundPV : CollectorMetric.unboundPV, { storage_class: getPersistentVolumeClass(volume) });
  }
  for await (const entry of cache.list(cluster, 'PersistentVolumeClaim')) {
    const claim = entry.object as unknown as PersistentVolumeClaim;
    const bound = claim.status?.phase === ClaimPhase.Bound;
    tally(samples, bound ? CollectorMetric.boundPVC : CollectorMetric.unboundPVC, {
      namespace: claim.metadata.namespace ?? '',
      storage_class: getPersistentVolumeClaimClass(claim),
      volume_attributes_class: claim.spec.volumeAttributesClassName ?? '',
    });
  }
  return [...samples.values()];
}

/** Publishes the samples as EMF gauges, one metric object per label set. */
export function publishVolumeStats(metrics: Metrics, samples: readonly GaugeSample[]): void {
  for (const sample of samples) {
    const metric = metrics.singleMetric();
    for (const [key, value] of Object.entries(sample.labels)) metric.addDimension(key, value || '""');
    metric.addMetric(sample.name, MetricUnit.Count, sample.value);
  }
}
