// The garbage collector over HTTP: Background, Foreground (blockOwnerDeletion) and Orphan propagation,
// owner identity by uid, cross-namespace and cluster-scoped rules, mixed owners, and the
// PVC → Service → Endpoints cleanup chain (apiserver-semantics.md §7.3; divergence 10).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../../infra/local/kube-api/testing/client.ts';

async function eventually<T>(probe: () => Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
const settle = () => new Promise((r) => setTimeout(r, 100));

describe('kube-api semantics: garbage collector', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ kinds: undefined });
    await h.core.createNamespace({ body: { metadata: { name: 'other' } } });
  });
  after(async () => { await h.api.stop(); });

  const status = async (path: string) => (await h.http(path)).status;
  const goneEventually = (path: string) => eventually(async () => ((await status(path)) === 404 ? true : undefined), `${path} to be deleted`);
  const owner = async (name: string, namespace = 'default') => {
    const o = await h.core.createNamespacedConfigMap({ namespace, body: { metadata: { name } } });
    return { apiVersion: 'v1', kind: 'ConfigMap', name, uid: o.metadata!.uid! };
  };
  const dependent = (name: string, refs: object[], extra: Record<string, unknown> = {}, namespace = 'default') =>
    h.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, ownerReferences: refs as any, ...extra } } });

  it('Background: dependents are deleted after the owner is gone', async () => {
    const ref = await owner('bg-owner');
    await dependent('bg-dep', [ref]);
    await h.core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'bg-svc', ownerReferences: [ref] }, spec: { ports: [{ port: 80 }] } } });
    await h.core.deleteNamespacedConfigMap({ name: 'bg-owner', namespace: 'default', propagationPolicy: 'Background' });
    assert.equal(await status('/api/v1/namespaces/default/configmaps/bg-owner'), 404, 'the owner goes at once');
    await goneEventually('/api/v1/namespaces/default/configmaps/bg-dep');
    await goneEventually('/api/v1/namespaces/default/services/bg-svc');
  });

  it('Foreground: the owner stays until every blockOwnerDeletion dependent is gone', async () => {
    const ref = await owner('fg-owner');
    await dependent('fg-dep', [{ ...ref, blockOwnerDeletion: true }], { finalizers: ['example.com/hold'] });
    await h.core.deleteNamespacedConfigMap({ name: 'fg-owner', namespace: 'default', propagationPolicy: 'Foreground' });
    const dep = await eventually(async () => {
      const d = await h.core.readNamespacedConfigMap({ name: 'fg-dep', namespace: 'default' });
      return d.metadata!.deletionTimestamp ? d : undefined;
    }, 'the dependent to be deleting');
    const o = await h.core.readNamespacedConfigMap({ name: 'fg-owner', namespace: 'default' });
    assert.ok(o.metadata!.deletionTimestamp);
    assert.deepEqual(o.metadata!.finalizers, ['foregroundDeletion']);
    await settle();
    assert.equal(await status('/api/v1/namespaces/default/configmaps/fg-owner'), 200, 'blocked by the dependent');
    await h.core.replaceNamespacedConfigMap({ name: 'fg-dep', namespace: 'default', body: { ...dep, metadata: { ...dep.metadata, finalizers: [] } } });
    await goneEventually('/api/v1/namespaces/default/configmaps/fg-owner');
  });

  it('Foreground: a dependent without blockOwnerDeletion does not hold the owner', async () => {
    const ref = await owner('fg2-owner');
    await dependent('fg2-dep', [ref], { finalizers: ['example.com/hold'] });
    await h.core.deleteNamespacedConfigMap({ name: 'fg2-owner', namespace: 'default', propagationPolicy: 'Foreground' });
    await goneEventually('/api/v1/namespaces/default/configmaps/fg2-owner');
    const dep = await h.core.readNamespacedConfigMap({ name: 'fg2-dep', namespace: 'default' });
    assert.ok(dep.metadata!.deletionTimestamp, 'the dependent is still deleted');
    await h.core.replaceNamespacedConfigMap({ name: 'fg2-dep', namespace: 'default', body: { ...dep, metadata: { ...dep.metadata, finalizers: [] } } });
  });

  it('Orphan: dependents stay with the ownerReference removed', async () => {
    const ref = await owner('or-owner');
    const other = await owner('or-other');
    await dependent('or-dep', [ref, other]);
    await h.core.deleteNamespacedConfigMap({ name: 'or-owner', namespace: 'default', propagationPolicy: 'Orphan' });
    await goneEventually('/api/v1/namespaces/default/configmaps/or-owner');
    const dep = await h.core.readNamespacedConfigMap({ name: 'or-dep', namespace: 'default' });
    assert.deepEqual(dep.metadata!.ownerReferences!.map((r) => r.name), ['or-other']);
    assert.equal(dep.metadata!.deletionTimestamp, undefined);
  });

  it('owner identity is the uid: a reference with the right name and a stale uid is collected', async () => {
    await owner('uid-owner');
    await dependent('uid-dep', [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'uid-owner', uid: '00000000-0000-0000-0000-000000000000' }]);
    await goneEventually('/api/v1/namespaces/default/configmaps/uid-dep');
    assert.equal(await status('/api/v1/namespaces/default/configmaps/uid-owner'), 200);
  });

  it('a namespaced owner in another namespace counts as absent', async () => {
    const ref = await owner('xns-owner', 'default');
    await dependent('xns-dep', [ref], {}, 'other');
    await goneEventually('/api/v1/namespaces/other/configmaps/xns-dep');
  });

  it('a cluster-scoped dependent with a namespaced owner is never collected', async () => {
    const ref = await owner('cl-owner');
    await h.core.createPersistentVolume({ body: { metadata: { name: 'pv-owned', ownerReferences: [ref] as any }, spec: {
      accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, csi: { driver: 'csi.example.com', volumeHandle: 'o' } } } });
    await h.core.deleteNamespacedConfigMap({ name: 'cl-owner', namespace: 'default' });
    await settle();
    assert.equal(await status('/api/v1/persistentvolumes/pv-owned'), 200);
  });

  it('with one owner left the dependent stays and the dangling reference is dropped', async () => {
    const gone = await owner('mix-gone');
    const kept = await owner('mix-kept');
    await dependent('mix-dep', [gone, kept]);
    await h.core.deleteNamespacedConfigMap({ name: 'mix-gone', namespace: 'default' });
    const dep = await eventually(async () => {
      const d = await h.core.readNamespacedConfigMap({ name: 'mix-dep', namespace: 'default' });
      return d.metadata!.ownerReferences!.length === 1 ? d : undefined;
    }, 'the dangling reference to be dropped');
    assert.equal(dep.metadata!.ownerReferences![0].uid, kept.uid);
  });

  it('PVC → Service → Endpoints: deleting the claim cleans up the shared-volume Service and its Endpoints', async () => {
    const pvc = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name: 'shared-claim' },
      spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '1Gi' } }, storageClassName: '' } } });
    const ref = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'shared-claim', uid: pvc.metadata!.uid!, controller: true, blockOwnerDeletion: true };
    await h.core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'pvc-shared', ownerReferences: [ref] }, spec: { ports: [{ port: 2049 }] } } });
    await h.core.createNamespacedEndpoints({ namespace: 'default', body: { metadata: { name: 'pvc-shared' },
      subsets: [{ addresses: [{ ip: '10.2.0.1' }], ports: [{ port: 2049 }] }] } });
    await h.core.deleteNamespacedPersistentVolumeClaim({ name: 'shared-claim', namespace: 'default' });
    await goneEventually('/api/v1/namespaces/default/persistentvolumeclaims/shared-claim');
    await goneEventually('/api/v1/namespaces/default/services/pvc-shared');
    await goneEventually('/api/v1/namespaces/default/endpoints/pvc-shared');
  });

  it('switched off, dependents outlive their owner', async () => {
    const off = await startHarness({ kinds: undefined, disableControllers: ['garbage-collector'] });
    try {
      const o = await off.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'o' } } });
      await off.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'd',
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: o.metadata!.uid! }] } } });
      await off.core.deleteNamespacedConfigMap({ name: 'o', namespace: 'default' });
      await settle();
      assert.equal((await off.http('/api/v1/namespaces/default/configmaps/d')).status, 200);
    } finally {
      await off.api.stop();
    }
  });
});
