// DELETE: finalizers, preconditions, propagation and response bodies (generic fixture kinds).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';
import type { StoreEvent } from '../../infra/local/kube-api/types.ts';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('kube-api DELETE', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.api.stop(); });

  it('with finalizers: deletionTimestamp + MODIFIED + 200 with the object; repeated DELETE returns it unchanged', async () => {
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'fin', finalizers: ['example.com/hold'] } } });
    const events: StoreEvent[] = [];
    const unsubscribe = h.api.store.subscribe((e) => events.push(e));
    const first = await h.http('/api/v1/namespaces/default/configmaps/fin', { method: 'DELETE' });
    assert.equal(first.status, 200);
    assert.equal(first.body.kind, 'ConfigMap');
    assert.match(first.body.metadata.deletionTimestamp, /Z$/);
    assert.equal(first.body.metadata.deletionGracePeriodSeconds, 0);
    const again = await h.http('/api/v1/namespaces/default/configmaps/fin', { method: 'DELETE' });
    assert.deepEqual(again.body, first.body);
    assert.deepEqual(events.map((e) => e.type), ['MODIFIED']);
    // no new finalizers once deleting
    const add = await rejection(h.core.patchNamespacedConfigMap({ name: 'fin', namespace: 'default', body: { metadata: { finalizers: ['example.com/hold', 'example.com/new'] } } }, merge));
    assert.equal(add.code, 422);
    assert.match(add.message, /no new finalizers can be added if the object is being deleted/);
    // removing the last finalizer deletes inside the update: 200 with the object, DELETED for watchers
    const done = await h.core.patchNamespacedConfigMap({ name: 'fin', namespace: 'default', body: { metadata: { finalizers: null } } }, merge);
    assert.equal(done.metadata!.name, 'fin');
    unsubscribe();
    assert.deepEqual(events.map((e) => e.type), ['MODIFIED', 'DELETED']);
    assert.equal(events[1].object.metadata.resourceVersion, String(events[1].revision));
    assert.equal((await h.http('/api/v1/namespaces/default/configmaps/fin')).status, 404);
  });

  it('immediate delete: Status for kinds without ReturnDeletedObject, the object for kinds with it', async () => {
    const cm = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'gone' } } });
    const status = await h.http('/api/v1/namespaces/default/configmaps/gone', { method: 'DELETE' });
    assert.deepEqual(status.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: 'gone', kind: 'configmaps', uid: cm.metadata!.uid } });
    await h.core.createPersistentVolume({ body: { metadata: { name: 'pv-gone' } } });
    const pv = await h.core.deletePersistentVolume({ name: 'pv-gone' });
    assert.equal(pv.kind, 'PersistentVolume');
    assert.equal(pv.metadata!.name, 'pv-gone');
    const sc = await h.http('/apis/storage.k8s.io/v1/storageclasses', { method: 'POST', body: { metadata: { name: 'sc1' } } });
    assert.equal(sc.status, 201);
    const scDel = await h.http('/apis/storage.k8s.io/v1/storageclasses/sc1', { method: 'DELETE' });
    assert.equal(scDel.body.kind, 'StorageClass');
  });

  it('preconditions: uid and resourceVersion mismatches are 409 with upstream texts', async () => {
    const cm = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'pre' } } });
    const uid = await h.http('/api/v1/namespaces/default/configmaps/pre', { method: 'DELETE', body: { preconditions: { uid: 'wrong' } } });
    assert.equal(uid.status, 409);
    assert.equal(uid.body.message, `Operation cannot be fulfilled on ConfigMap "pre": the UID in the precondition (wrong) does not match the UID in record (${cm.metadata!.uid}). The object might have been deleted and then recreated`);
    const rv = await h.http('/api/v1/namespaces/default/configmaps/pre', { method: 'DELETE', body: { preconditions: { resourceVersion: '1' } } });
    assert.equal(rv.status, 409);
    assert.equal(rv.body.message, `Operation cannot be fulfilled on ConfigMap "pre": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${cm.metadata!.resourceVersion}). The object might have been modified`);
    const ok = await h.http('/api/v1/namespaces/default/configmaps/pre', { method: 'DELETE', body: { preconditions: { uid: cm.metadata!.uid, resourceVersion: cm.metadata!.resourceVersion } } });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.status, 'Success');
  });

  it('propagation: Orphan and Foreground add their finalizers (body or query); Background adds none', async () => {
    for (const name of ['orph', 'fore', 'back']) await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    const orphan = await h.http('/api/v1/namespaces/default/configmaps/orph', { method: 'DELETE', body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Orphan' } });
    assert.deepEqual(orphan.body.metadata.finalizers, ['orphan']);
    assert.ok(orphan.body.metadata.deletionTimestamp);
    const fore = await h.http('/api/v1/namespaces/default/configmaps/fore?propagationPolicy=Foreground', { method: 'DELETE' });
    assert.deepEqual(fore.body.metadata.finalizers, ['foregroundDeletion']);
    const back = await h.core.deleteNamespacedConfigMap({ name: 'back', namespace: 'default', propagationPolicy: 'Background' });
    assert.equal(back.status, 'Success');
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'accepted', finalizers: ['example.com/hold'] } } });
    const accepted = await h.http('/api/v1/namespaces/default/configmaps/accepted?orphanDependents=false', { method: 'DELETE' });
    assert.equal(accepted.status, 202);
    assert.ok(accepted.body.metadata.deletionTimestamp);
    const bad = await h.http('/api/v1/namespaces/default/configmaps/orph', { method: 'DELETE', body: { propagationPolicy: 'Sideways' } });
    assert.equal(bad.status, 422);
  });

  it('404 on a missing object; DELETED event carries the final state with the deletion revision', async () => {
    const missing = await h.http('/api/v1/namespaces/default/configmaps/nothing', { method: 'DELETE' });
    assert.deepEqual([missing.status, missing.body.message], [404, 'configmaps "nothing" not found']);
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'last' }, data: { final: 'state' } } });
    const events: StoreEvent[] = [];
    const unsubscribe = h.api.store.subscribe((e) => events.push(e));
    await h.core.deleteNamespacedConfigMap({ name: 'last', namespace: 'default' });
    unsubscribe();
    assert.equal(events.length, 1);
    assert.equal(events[0].type, 'DELETED');
    assert.deepEqual(events[0].object.data, { final: 'state' });
    assert.equal(events[0].object.metadata.resourceVersion, String(events[0].revision));
    assert.equal(events[0].revision, h.api.store.revision);
  });
});
