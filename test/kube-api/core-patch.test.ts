// PATCH over HTTP through @kubernetes/client-node: the type comes only from Content-Type (generic fixture kinds).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

describe('kube-api PATCH', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.api.stop(); });

  const make = (name: string, extra: Record<string, unknown> = {}) => h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name, ...extra }, data: { a: '1', b: '2' } } });

  it('client-node default (json-patch Content-Type) with an object body is 400, never sniffed as a merge patch', async () => {
    await make('sniff');
    const err = await rejection(h.core.patchNamespacedConfigMap({ name: 'sniff', namespace: 'default', body: { data: { a: 'x' } } }));
    assert.deepEqual([err.code, err.reason, err.message], [400, 'BadRequest', 'json: cannot unmarshal object into Go value of type jsonpatch.Patch']);
    const unchanged = await h.core.readNamespacedConfigMap({ name: 'sniff', namespace: 'default' });
    assert.equal(unchanged.data!.a, '1');
  });

  it('json-patch applies ops; a failing test op is 422 and changes nothing', async () => {
    const cm = await make('jp');
    const out = await h.core.patchNamespacedConfigMap({ name: 'jp', namespace: 'default', body: [
      { op: 'test', path: '/metadata/resourceVersion', value: cm.metadata!.resourceVersion },
      { op: 'replace', path: '/data/a', value: 'z' },
      { op: 'remove', path: '/data/b' },
    ] });
    assert.deepEqual(out.data, { a: 'z' });
    const err = await rejection(h.core.patchNamespacedConfigMap({ name: 'jp', namespace: 'default', body: [
      { op: 'test', path: '/metadata/resourceVersion', value: cm.metadata!.resourceVersion }, { op: 'replace', path: '/data/a', value: 'y' },
    ] }));
    assert.equal(err.code, 422);
  });

  it('merge-patch (RFC 7386): null deletes, lists are replaced wholesale', async () => {
    await make('mp', { finalizers: ['a.io/x', 'b.io/y'] });
    const out = await h.core.patchNamespacedConfigMap({ name: 'mp', namespace: 'default', body: { data: { b: null, c: '3' }, metadata: { finalizers: ['c.io/z'] } } }, merge);
    assert.deepEqual(out.data, { a: '1', c: '3' });
    assert.deepEqual(out.metadata!.finalizers, ['c.io/z']);
  });

  it('strategic merge: finalizers are unioned, $deleteFromPrimitiveList removes, ownerReferences merge by uid', async () => {
    await make('smp', { finalizers: ['a.io/x'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o1', uid: 'u1' }] });
    const added = await h.core.patchNamespacedConfigMap({ name: 'smp', namespace: 'default', body: {
      metadata: { finalizers: ['b.io/y'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o2', uid: 'u2' }, { apiVersion: 'v1', kind: 'ConfigMap', name: 'renamed', uid: 'u1' }] },
    } }, strategic);
    assert.deepEqual(added.metadata!.finalizers, ['a.io/x', 'b.io/y']);
    assert.deepEqual(added.metadata!.ownerReferences!.map((r) => [r.uid, r.name]), [['u1', 'renamed'], ['u2', 'o2']]);
    const removed = await h.core.patchNamespacedConfigMap({ name: 'smp', namespace: 'default', body: {
      metadata: { $deleteFromPrimitiveList: undefined, '$deleteFromPrimitiveList/finalizers': ['a.io/x'], '$setElementOrder/finalizers': ['b.io/y'], ownerReferences: [{ uid: 'u2', $patch: 'delete' }] },
    } }, strategic);
    assert.deepEqual(removed.metadata!.finalizers, ['b.io/y']);
    assert.deepEqual(removed.metadata!.ownerReferences!.map((r) => r.uid), ['u1']);
  });

  it('strategic merge: status.conditions merge by type; other lists are atomic; $patch: replace and delete on maps', async () => {
    const pvc = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name: 'cond' }, spec: { accessModes: ['ReadWriteOnce', 'ReadOnlyMany'] } } });
    await h.core.patchNamespacedPersistentVolumeClaimStatus({ name: 'cond', namespace: 'default', body: { status: { conditions: [{ type: 'Resizing', status: 'True' }, { type: 'FileSystemResizePending', status: 'False' }] } } }, strategic);
    const out = await h.core.patchNamespacedPersistentVolumeClaimStatus({ name: 'cond', namespace: 'default', body: { status: { conditions: [{ type: 'Resizing', status: 'False' }] } } }, strategic);
    assert.deepEqual(out.status!.conditions!.map((c) => [c.type, c.status]), [['Resizing', 'False'], ['FileSystemResizePending', 'False']]);
    const atomic = await h.core.patchNamespacedPersistentVolumeClaim({ name: 'cond', namespace: 'default', body: { spec: { accessModes: ['ReadWriteMany'] } } }, strategic);
    assert.deepEqual(atomic.spec!.accessModes, ['ReadWriteMany']);
    assert.ok(pvc.metadata!.uid);
    await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { metadata: { name: 'dirs', labels: { a: '1', b: '2' }, annotations: { x: 'y' } } } });
    const replaced = await h.http('/api/v1/namespaces/default/configmaps/dirs', { method: 'PATCH', contentType: 'application/strategic-merge-patch+json',
      body: { metadata: { labels: { $patch: 'replace', c: '3' }, annotations: { $patch: 'delete' } } } });
    assert.equal(replaced.status, 200);
    assert.deepEqual(replaced.body.metadata.labels, { c: '3' });
    assert.equal(replaced.body.metadata.annotations, undefined);
  });

  it('a resourceVersion inside the patch is a precondition (409 when stale)', async () => {
    const cm = await make('pre');
    await h.core.patchNamespacedConfigMap({ name: 'pre', namespace: 'default', body: { data: { a: 'changed' } } }, merge);
    const err = await rejection(h.core.patchNamespacedConfigMap({ name: 'pre', namespace: 'default', body: { metadata: { resourceVersion: cm.metadata!.resourceVersion }, data: { a: 'again' } } }, merge));
    assert.equal(err.code, 409);
    assert.equal(err.reason, 'Conflict');
  });

  it('415 for an unsupported patch Content-Type, 404 on a missing object', async () => {
    await make('ct');
    const res = await h.http('/api/v1/namespaces/default/configmaps/ct', { method: 'PATCH', contentType: 'application/json', body: { data: { a: 'x' } } });
    assert.deepEqual([res.status, res.body.reason], [415, 'UnsupportedMediaType']);
    assert.match(res.body.message, /^the body of the request was in an unknown format - accepted media types include: application\/json-patch\+json, application\/merge-patch\+json, application\/strategic-merge-patch\+json/);
    const missing = await rejection(h.core.patchNamespacedConfigMap({ name: 'absent', namespace: 'default', body: { data: {} } }, merge));
    assert.equal(missing.code, 404);
  });
});
