// The generic machinery wired to the real kinds, admission plugins and cluster controllers (startKubeApi defaults).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventsV1Api } from '@kubernetes/client-node';
import { startHarness, rejection, collectWatch, type Harness } from '../../infra/local/kube-api/testing/client.ts';
import { KINDS } from '../../infra/local/kube-api/kinds/index.ts';

const until = async (cond: () => boolean, ms = 5000): Promise<void> => {
  for (let waited = 0; !cond() && waited < ms; waited += 20) await new Promise((r) => setTimeout(r, 20));
};

describe('kube-api wired to the real kinds', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined, serviceCidr: '10.123.0.0/24' }); });
  after(async () => { await h.api.stop(); });

  it('seeds default, kube-system, kube-public and kube-node-lease (Active)', async () => {
    const list = await h.core.listNamespace();
    assert.deepEqual(list.items.map((n) => [n.metadata!.name, n.status!.phase]),
      [['default', 'Active'], ['kube-node-lease', 'Active'], ['kube-public', 'Active'], ['kube-system', 'Active']]);
    assert.equal(h.api.store.kinds.size, KINDS.length);
  });

  it('namespace deletion: Terminating with deletionTimestamp, content removed, then gone via the finalize subresource', async () => {
    await h.core.createNamespace({ body: { metadata: { name: 'doomed' } } });
    await h.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'content' } } });
    const deleting = await h.http('/api/v1/namespaces/doomed', { method: 'DELETE' });
    assert.equal(deleting.status, 200);
    assert.ok(deleting.body.metadata.deletionTimestamp);
    assert.equal(deleting.body.status.phase, 'Terminating');
    await until(() => h.api.store.get({ resource: '/namespaces', namespace: '', name: 'doomed' }) === undefined);
    assert.equal(h.api.store.get({ resource: '/namespaces', namespace: '', name: 'doomed' }), undefined);
    assert.equal(h.api.store.list('/configmaps', 'doomed').length, 0);
    const protectedNs = await rejection(h.core.deleteNamespace({ name: 'default' }));
    assert.equal(protectedNs.code, 403);
  });

  it('a Service gets its ClusterIP from the configured range inside the create response', async () => {
    const svc = await h.core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } } });
    assert.match(svc.spec!.clusterIP!, /^10\.123\.0\.\d+$/);
  });

  it('events.k8s.io/v1 is a view of core/v1 Events: one store, one revision, converted on read, write and watch', async () => {
    const events = h.kc.makeApiClient(EventsV1Api);
    const rv = String(h.api.store.revision);
    await h.core.createNamespacedEvent({ namespace: 'default', body: {
      metadata: { name: 'core-event' }, involvedObject: { kind: 'PersistentVolumeClaim', name: 'c1', namespace: 'default' }, reason: 'Provisioning', message: 'hello', type: 'Normal',
    } });
    const viewed = await events.readNamespacedEvent({ name: 'core-event', namespace: 'default' });
    assert.equal(viewed.note, 'hello');
    assert.equal(viewed.regarding!.name, 'c1');
    const watched = await collectWatch(h, '/apis/events.k8s.io/v1/namespaces/default/events', { resourceVersion: rv }, (e) => e.length >= 1);
    assert.equal(watched[0].object.apiVersion, 'events.k8s.io/v1');
    assert.equal(watched[0].object.note, 'hello');
    const list = await h.http('/api/v1/namespaces/default/events');
    assert.deepEqual(list.body.items.map((e: any) => e.metadata.name), ['core-event']);
  });
});

describe('kube-api with a controller switched off', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined, disableControllers: ['pvc-protection'] }); });
  after(async () => { await h.api.stop(); });

  it('a deleted PVC keeps its protection finalizer (and deletionTimestamp) until the test removes it', async () => {
    await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: {
      metadata: { name: 'held' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } });
    const deleting = await h.core.deleteNamespacedPersistentVolumeClaim({ name: 'held', namespace: 'default' });
    assert.deepEqual(deleting.metadata!.finalizers, ['kubernetes.io/pvc-protection']);
    await new Promise((r) => setTimeout(r, 200));
    const still = await h.core.readNamespacedPersistentVolumeClaim({ name: 'held', namespace: 'default' });
    assert.ok(still.metadata!.deletionTimestamp);
    const pvc = h.api.store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: 'held' })!;
    delete pvc.metadata.finalizers;
    h.api.store.update('/persistentvolumeclaims', pvc);
    assert.equal(h.api.store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: 'held' }), undefined);
  });
});
