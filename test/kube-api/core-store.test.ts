// The store's revision and write pipeline over HTTP through @kubernetes/client-node (generic fixture kinds).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';
import { StatusError } from '../../infra/local/kube-api/types.ts';

describe('kube-api store: revisions and writes', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.api.stop(); });

  it('uses one global monotonically increasing resourceVersion across kinds, and a list RV ≥ every item', async () => {
    const a = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'rv-a' }, data: { x: '1' } } });
    const pv = await h.core.createPersistentVolume({ body: { metadata: { name: 'rv-pv' }, spec: { capacity: { storage: '1Gi' } } } });
    const b = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'rv-b' } } });
    const rvs = [a, pv, b].map((o) => Number(o.metadata!.resourceVersion));
    assert.ok(rvs[0] < rvs[1] && rvs[1] < rvs[2], `revisions increase across kinds: ${rvs}`);
    const list = await h.core.listNamespacedConfigMap({ namespace: 'default' });
    assert.ok(Number(list.metadata!.resourceVersion) >= rvs[2]);
    for (const item of list.items) assert.ok(Number(list.metadata!.resourceVersion) >= Number(item.metadata!.resourceVersion));
  });

  it('sets uid, creationTimestamp (RFC 3339 seconds) and wipes client-set system fields on create; no generation', async () => {
    const cm = await h.core.createNamespacedConfigMap({ namespace: 'default', body: {
      metadata: { name: 'meta', uid: 'client-uid', deletionTimestamp: new Date(0) as any, resourceVersion: '999' },
    } });
    const { body } = await h.http('/api/v1/namespaces/default/configmaps/meta');
    assert.match(body.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.notEqual(body.metadata.uid, 'client-uid');
    assert.match(body.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(body.metadata.deletionTimestamp, undefined);
    assert.equal(body.metadata.generation, undefined);
    assert.notEqual(cm.metadata!.resourceVersion, '999');
    assert.equal(body.kind, 'ConfigMap');
    assert.equal(body.apiVersion, 'v1');
  });

  it('generateName: base + 5 characters of the upstream alphabet', async () => {
    const cm = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { generateName: 'gen-' } } });
    assert.match(cm.metadata!.name!, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const long = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { generateName: 'x'.repeat(70) } } });
    assert.equal(long.metadata!.name!.length, 63);
  });

  it('answers 409 AlreadyExists and 404 NotFound with upstream texts (group-qualified names)', async () => {
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } });
    const dup = await rejection(h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } }));
    assert.deepEqual([dup.code, dup.reason, dup.message], [409, 'AlreadyExists', 'configmaps "dup" already exists']);
    const nf = await rejection(h.storage.readStorageClass({ name: 'nope' }));
    assert.deepEqual([nf.code, nf.reason, nf.message], [404, 'NotFound', 'storageclasses.storage.k8s.io "nope" not found']);
    assert.deepEqual(nf.details, { name: 'nope', group: 'storage.k8s.io', kind: 'storageclasses' });
  });

  it('PUT with a stale resourceVersion is 409 Conflict with the upstream text; an empty one is unconditional', async () => {
    const cm = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'occ' }, data: { v: '1' } } });
    const updated = await h.core.replaceNamespacedConfigMap({ name: 'occ', namespace: 'default', body: { ...cm, data: { v: '2' } } });
    const stale = await rejection(h.core.replaceNamespacedConfigMap({ name: 'occ', namespace: 'default', body: { ...cm, data: { v: '3' } } }));
    assert.equal(stale.code, 409);
    assert.equal(stale.reason, 'Conflict');
    assert.equal(stale.message, 'Operation cannot be fulfilled on configmaps "occ": the object has been modified; please apply your changes to the latest version and try again');
    const blind = await h.core.replaceNamespacedConfigMap({ name: 'occ', namespace: 'default', body: { metadata: { name: 'occ' }, data: { v: '4' } } });
    assert.ok(Number(blind.metadata!.resourceVersion) > Number(updated.metadata!.resourceVersion));
    assert.equal(blind.metadata!.uid, cm.metadata!.uid);
    assert.equal(blind.metadata!.creationTimestamp!.getTime(), cm.metadata!.creationTimestamp!.getTime());
  });

  it('a no-op update keeps the resourceVersion and emits no watch event', async () => {
    const cm = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'noop', labels: { a: 'b' } }, data: { k: 'v' } } });
    let events = 0;
    const unsubscribe = h.api.store.subscribe(() => { events++; });
    const before = h.api.store.revision;
    const same = await h.core.replaceNamespacedConfigMap({ name: 'noop', namespace: 'default', body: cm });
    const patched = await h.http('/api/v1/namespaces/default/configmaps/noop', { method: 'PATCH', contentType: 'application/merge-patch+json', body: { data: { k: 'v' } } });
    unsubscribe();
    assert.equal(same.metadata!.resourceVersion, cm.metadata!.resourceVersion);
    assert.equal(patched.body.metadata.resourceVersion, cm.metadata!.resourceVersion);
    assert.equal(h.api.store.revision, before);
    assert.equal(events, 0);
  });

  it('of N concurrent PUTs carrying the same resourceVersion exactly one succeeds', async () => {
    const cm = await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'race' }, data: { n: '0' } } });
    const results = await Promise.allSettled(Array.from({ length: 16 }, (_, i) =>
      h.core.replaceNamespacedConfigMap({ name: 'race', namespace: 'default', body: { ...cm, data: { n: String(i + 1) } } })));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const conflicts = results.filter((r) => r.status === 'rejected' && (r.reason as { code: number }).code === 409);
    assert.equal(ok.length, 1);
    assert.equal(conflicts.length, 15);
  });

  it('Lease: PUT without resourceVersion is 422, PUT of a missing Lease creates it (201)', async () => {
    const created = await h.http('/apis/coordination.k8s.io/v1/namespaces/default/leases/l1', { method: 'PUT', body: { metadata: { name: 'l1' }, spec: { holderIdentity: 'a' } } });
    assert.equal(created.status, 201);
    const blind = await h.http('/apis/coordination.k8s.io/v1/namespaces/default/leases/l1', { method: 'PUT', body: { metadata: { name: 'l1' }, spec: { holderIdentity: 'b' } } });
    assert.equal(blind.status, 422);
    assert.equal(blind.body.message, 'Lease.coordination.k8s.io "l1" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
    assert.deepEqual(blind.body.details.causes, [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion' }]);
    const missing = await rejection(h.core.replaceNamespacedConfigMap({ name: 'ghost', namespace: 'default', body: { metadata: { name: 'ghost' } } }));
    assert.equal(missing.code, 404);
  });

  it('422 Invalid: message and causes in upstream format', async () => {
    const res = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { metadata: {}, spec: { invalid: 'x' } } });
    assert.equal(res.status, 422);
    assert.equal(res.body.reason, 'Invalid');
    assert.equal(res.body.message, 'ConfigMap "" is invalid: [metadata.name: Required value: name or generateName is required, spec.invalid: Invalid value: "x": must not be set]');
    assert.deepEqual(res.body.details.causes[1], { reason: 'FieldValueInvalid', message: 'Invalid value: "x": must not be set', field: 'spec.invalid' });
  });

  it('status subresource: a main-resource PUT ignores status, a /status PUT ignores spec; create resets status', async () => {
    const pvc = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: {
      metadata: { name: 'split' }, spec: { volumeName: '' }, status: { phase: 'Bound' },
    } });
    assert.equal(pvc.status!.phase, 'Pending');
    const main = await h.core.replaceNamespacedPersistentVolumeClaim({ name: 'split', namespace: 'default', body: { ...pvc, spec: { volumeName: 'pv1' }, status: { phase: 'Bound' } } });
    assert.equal(main.spec!.volumeName, 'pv1');
    assert.equal(main.status!.phase, 'Pending');
    const status = await h.core.replaceNamespacedPersistentVolumeClaimStatus({ name: 'split', namespace: 'default', body: { ...main, spec: { volumeName: 'other' }, status: { phase: 'Bound' } } });
    assert.equal(status.spec!.volumeName, 'pv1');
    assert.equal(status.status!.phase, 'Bound');
  });

  it('namespace from the URL; mismatches are 400; PUT name ≠ URL name is 400; malformed JSON 400; YAML accepted', async () => {
    const mismatch = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { metadata: { name: 'x', namespace: 'kube-system' } } });
    assert.deepEqual([mismatch.status, mismatch.body.reason, mismatch.body.message], [400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request']);
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'named' } } });
    const rename = await h.http('/api/v1/namespaces/default/configmaps/named', { method: 'PUT', body: { metadata: { name: 'other' } } });
    assert.deepEqual([rename.status, rename.body.message], [400, 'the name of the object (other) does not match the name on the URL (named)']);
    const bad = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: '{"metadata":' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.reason, 'BadRequest');
    const yaml = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', contentType: 'application/yaml', body: 'metadata:\n  name: from-yaml\ndata:\n  k: v\n' });
    assert.equal(yaml.status, 201);
    assert.equal(yaml.body.data.k, 'v');
    const badYaml = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', contentType: 'application/yaml', body: 'metadata: [\n' });
    assert.equal(badYaml.status, 400);
    const wrongGroup = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { apiVersion: 'storage.k8s.io/v1', kind: 'ConfigMap', metadata: { name: 'wrong' } } });
    assert.deepEqual([wrongGroup.status, wrongGroup.body.message], [400, 'the API version in the data (storage.k8s.io/v1) does not match the expected API version (v1)']);
    const wrongKind = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'wrong' } } });
    assert.equal(wrongKind.status, 400);
  });

  it('the in-process Store API runs the same pipeline, throws the same StatusErrors and hands out copies', async () => {
    const store = h.api.store;
    const created = store.create('/configmaps', { metadata: { name: 'inproc', namespace: 'default' }, data: { a: '1' } });
    created.data.a = 'mutated';
    assert.equal(store.get({ resource: '/configmaps', namespace: 'default', name: 'inproc' })!.data.a, '1');
    const read = store.get({ resource: '/configmaps', namespace: 'default', name: 'inproc' })!;
    read.data.a = 'local';
    assert.equal(store.list('/configmaps', 'default').find((o) => o.metadata.name === 'inproc')!.data.a, '1');
    store.update('/configmaps', { ...read, data: { a: '2' } });
    assert.throws(() => store.update('/configmaps', { ...read, data: { a: '3' } }), (e: unknown) => e instanceof StatusError && e.code === 409 && e.reason === 'Conflict');
    assert.throws(() => store.create('/configmaps', { metadata: { name: 'inproc', namespace: 'default' } }), (e: unknown) => e instanceof StatusError && e.code === 409 && e.reason === 'AlreadyExists');
    assert.throws(() => store.delete({ resource: '/configmaps', namespace: 'default', name: 'absent' }), (e: unknown) => e instanceof StatusError && e.code === 404);
    const viaHttp = await h.core.readNamespacedConfigMap({ name: 'inproc', namespace: 'default' });
    assert.equal(viaHttp.data!.a, '2');
    assert.deepEqual(store.delete({ resource: '/configmaps', namespace: 'default', name: 'inproc' }).deleted, true);
  });

  it('strategy warnings become Warning: 299 headers on writes', async () => {
    const created = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { metadata: { name: 'warned' }, data: { deprecated: 'x' } } });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('warning'), '299 - "data.deprecated is deprecated; use data.current"');
    const clean = await h.http('/api/v1/namespaces/default/configmaps', { method: 'POST', body: { metadata: { name: 'unwarned' } } });
    assert.equal(clean.headers.get('warning'), null);
  });

  it('405 MethodNotAllowed and 404 for unknown paths', async () => {
    const post = await h.http('/api/v1/namespaces/default/configmaps/x', { method: 'POST', body: {} });
    assert.deepEqual([post.status, post.body.reason], [405, 'MethodNotAllowed']);
    const unknown = await h.http('/api/v1/widgets');
    assert.deepEqual([unknown.status, unknown.body.reason, unknown.body.message], [404, 'NotFound', 'the server could not find the requested resource']);
    const clusterPathForNamespaced = await h.http('/api/v1/configmaps/x');
    assert.equal(clusterPathForNamespaced.status, 404);
  });

  it('serves the Namespace object itself and its status subresource at /api/v1/namespaces/{name}', async () => {
    const ns = await h.core.readNamespace({ name: 'kube-node-lease' });
    assert.equal(ns.metadata!.name, 'kube-node-lease');
    const names = (await h.core.listNamespace()).items.map((n) => n.metadata!.name);
    assert.deepEqual(names, ['default', 'kube-node-lease', 'kube-public', 'kube-system']);
  });
});
