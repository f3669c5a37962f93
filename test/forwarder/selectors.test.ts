import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';
import { STORAGEOS_VOLUME_ID_LABEL } from '../../lib/forwarder/kinds.ts';

describe('forwarder: Services and Endpoints by label selector, VolumeAttachments', () => {
  let env: StandIns;
  before(async () => {
    env = await startStandIns();
  });
  after(() => env?.stop());

  it('forwards only Services/Endpoints labelled with a StorageOS volume id, and every VolumeAttachment', async () => {
    const forwarder = await env.forwarder({ kinds: ['Service', 'Endpoints', 'VolumeAttachment'] });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    const store = env.kube.store;
    const labels = { [STORAGEOS_VOLUME_ID_LABEL]: 'vol-1' };
    store.create('/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'pvc-1', namespace: 'default', labels }, spec: { ports: [{ name: 'nfs', port: 2049 }] } });
    store.create('/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { ports: [{ port: 80 }] } });
    store.create('/endpoints', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'pvc-1', namespace: 'default', labels }, subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ name: 'nfs', port: 2049 }] }] });
    store.create('/endpoints', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'web', namespace: 'default' }, subsets: [] });
    store.create('storage.k8s.io/volumeattachments', {
      apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', metadata: { name: 'va-1' },
      spec: { attacher: 'csi.storageos.com', nodeName: 'node-1', source: { persistentVolumeName: 'pv-1' } },
    });
    const collector = new QueueCollector(env.messaging);
    await collector.until(() => collector.received['shared-volume'].length >= 3, 20_000, 'three events');
    await forwarder.flush();
    await collector.drain();
    assert.deepEqual(
      collector.received['shared-volume'].map((e) => `${e.kind} ${e.key} ${e.type}`).sort(),
      ['Endpoints default/pvc-1 ADDED', 'Service default/pvc-1 ADDED', 'VolumeAttachment va-1 ADDED'],
    );
    assert.deepEqual(collector.received.binder, []);
    assert.deepEqual(collector.received['label-sync'], []);
  });
});
