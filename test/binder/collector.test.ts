/**
 * The `pv_collector_*` gauges computed from the object cache in dynalite.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { collectVolumeStats } from '../../lib/binder/collector.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

let db: Dynalite;
before(async () => {
  db = await startDynalite();
});
after(async () => {
  await db.stop();
});

it('counts volumes by plugin/mode and class, claims by namespace/class/VAC, bound and unbound', async () => {
  const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
  let rv = 1;
  const pv = (name: string, phase: string, extra: Record<string, unknown> = {}) =>
    cache.put('c1', 'PersistentVolume', { metadata: { name, uid: name, resourceVersion: String(rv++) }, spec: { storageClassName: 'gold', ...extra }, status: { phase } });
  const pvc = (name: string, namespace: string, phase: string, className?: string) =>
    cache.put('c1', 'PersistentVolumeClaim', { metadata: { name, namespace, uid: name, resourceVersion: String(rv++) }, spec: { ...(className ? { storageClassName: className } : {}) }, status: { phase } });
  await pv('a', 'Bound', { csi: { driver: 'csi.storageos.com', volumeHandle: 'x' } });
  await pv('b', 'Available', { csi: { driver: 'csi.storageos.com', volumeHandle: 'y' }, volumeMode: 'Block' });
  await pv('c', 'Released', { hostPath: { path: '/x' } });
  await pvc('p1', 'ns1', 'Bound', 'gold');
  await pvc('p2', 'ns1', 'Pending', 'gold');
  await pvc('p3', 'ns2', 'Pending');
  const samples = await collectVolumeStats(cache, 'c1');
  const value = (name: string, labels: Record<string, string>) =>
    samples.find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value;
  assert.equal(value('pv_collector_total_pv_count', { plugin_name: 'kubernetes.io/csi:csi.storageos.com', volume_mode: 'Filesystem' }), 1);
  assert.equal(value('pv_collector_total_pv_count', { plugin_name: 'kubernetes.io/csi:csi.storageos.com', volume_mode: 'Block' }), 1);
  assert.equal(value('pv_collector_total_pv_count', { plugin_name: 'N/A', volume_mode: 'Filesystem' }), 1);
  assert.equal(value('pv_collector_bound_pv_count', { storage_class: 'gold' }), 1);
  assert.equal(value('pv_collector_unbound_pv_count', { storage_class: 'gold' }), 2);
  assert.equal(value('pv_collector_bound_pvc_count', { namespace: 'ns1', storage_class: 'gold', volume_attributes_class: '' }), 1);
  assert.equal(value('pv_collector_unbound_pvc_count', { namespace: 'ns1', storage_class: 'gold', volume_attributes_class: '' }), 1);
  assert.equal(value('pv_collector_unbound_pvc_count', { namespace: 'ns2', storage_class: '', volume_attributes_class: '' }), 1);
  assert.equal(samples.reduce((n, s) => n + s.value, 0), 3 + 3 + 3);
});
