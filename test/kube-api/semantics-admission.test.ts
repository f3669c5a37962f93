// Admission and the controllers behind it, over HTTP through @kubernetes/client-node: DefaultStorageClass
// (incl. "" and the beta annotation), the protection finalizers and their removers, NamespaceLifecycle
// and namespace deletion (apiserver-semantics.md §6, §10; divergences 3 and 4).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';

const DEFAULT = 'storageclass.kubernetes.io/is-default-class';

/** Polls `probe` until it returns a value other than undefined, or fails after `ms`. */
async function eventually<T>(probe: () => Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const pvc = (name: string, spec: Record<string, unknown> = {}, annotations?: Record<string, string>) => ({
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
}) as any;

describe('kube-api semantics: DefaultStorageClass', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined }); });
  after(async () => { await h.api.stop(); });

  it('without a default class a nil class stays nil', async () => {
    const c = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('nodef') });
    assert.equal(c.spec!.storageClassName, undefined);
  });

  it('nil gets the default; "" and the beta annotation are left alone; only on create', async () => {
    await h.storage.createStorageClass({ body: { metadata: { name: 'gold', annotations: { [DEFAULT]: 'true' } }, provisioner: 'csi.example.com' } });
    const nil = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('nil') });
    assert.equal(nil.spec!.storageClassName, 'gold');
    const empty = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('empty', { storageClassName: '' }) });
    assert.equal(empty.spec!.storageClassName, '');
    const beta = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default',
      body: pvc('beta', {}, { 'volume.beta.kubernetes.io/storage-class': 'silver' }) });
    assert.equal(beta.spec!.storageClassName, undefined);
    const before = await h.core.readNamespacedPersistentVolumeClaim({ name: 'nodef', namespace: 'default' });
    const updated = await h.core.replaceNamespacedPersistentVolumeClaim({ name: 'nodef', namespace: 'default',
      body: { ...before, metadata: { ...before.metadata, labels: { touched: 'yes' } } } });
    assert.equal(updated.spec!.storageClassName, undefined, 'updates are not defaulted');
  });

  it('several defaults: the newest wins, a tie goes to the lowest name', async () => {
    // Same-second creation timestamps tie; "alpha" < "gold" < "zulu".
    await h.storage.createStorageClass({ body: { metadata: { name: 'zulu', annotations: { [DEFAULT]: 'true' } }, provisioner: 'csi.example.com' } });
    await h.storage.createStorageClass({ body: { metadata: { name: 'alpha', annotations: { [DEFAULT]: 'true' } }, provisioner: 'csi.example.com' } });
    const classes = (await h.storage.listStorageClass()).items.filter((c) => c.metadata!.annotations?.[DEFAULT] === 'true');
    const newest = Math.max(...classes.map((c) => new Date(c.metadata!.creationTimestamp!).getTime()));
    const want = classes.filter((c) => new Date(c.metadata!.creationTimestamp!).getTime() === newest).map((c) => c.metadata!.name!).sort()[0];
    const c = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('multi') });
    assert.equal(c.spec!.storageClassName, want);
  });
});

describe('kube-api semantics: protection finalizers and their controllers', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined }); });
  after(async () => { await h.api.stop(); });

  it('adds kubernetes.io/pvc-protection and kubernetes.io/pv-protection on create', async () => {
    const c = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('prot', { storageClassName: '' }) });
    assert.deepEqual(c.metadata!.finalizers, ['kubernetes.io/pvc-protection']);
    const v = await h.core.createPersistentVolume({ body: { metadata: { name: 'pv-prot' }, spec: { accessModes: ['ReadWriteOnce'],
      capacity: { storage: '1Gi' }, csi: { driver: 'csi.example.com', volumeHandle: 'h' } } } });
    assert.deepEqual(v.metadata!.finalizers, ['kubernetes.io/pv-protection']);
  });

  it('a PVC used by a scheduled Pod lingers with a deletionTimestamp until the Pod is gone (divergence 3)', async () => {
    await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('used', { storageClassName: '' }) });
    await h.core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'user' }, spec: { nodeName: 'node-1',
      containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'used' } }] } } });
    const deleted = await h.core.deleteNamespacedPersistentVolumeClaim({ name: 'used', namespace: 'default' });
    assert.ok(deleted.metadata!.deletionTimestamp);
    await new Promise((r) => setTimeout(r, 100));
    const still = await h.core.readNamespacedPersistentVolumeClaim({ name: 'used', namespace: 'default' });
    assert.deepEqual(still.metadata!.finalizers, ['kubernetes.io/pvc-protection']);
    await h.core.deleteNamespacedPod({ name: 'user', namespace: 'default', gracePeriodSeconds: 0 });
    const gone = await eventually(async () => {
      const r = await h.http('/api/v1/namespaces/default/persistentvolumeclaims/used');
      return r.status === 404 ? r : undefined;
    }, 'the PVC to go');
    assert.equal(gone.body.reason, 'NotFound');
  });

  it('an unused PVC goes right after its finalizer is removed by the controller', async () => {
    await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('unused', { storageClassName: '' }) });
    await h.core.deleteNamespacedPersistentVolumeClaim({ name: 'unused', namespace: 'default' });
    await eventually(async () => ((await h.http('/api/v1/namespaces/default/persistentvolumeclaims/unused')).status === 404 ? true : undefined), 'the PVC to go');
  });

  it('a Bound PV lingers until its phase leaves Bound', async () => {
    const pv = await h.core.createPersistentVolume({ body: { metadata: { name: 'pv-bound' }, spec: { accessModes: ['ReadWriteOnce'],
      capacity: { storage: '1Gi' }, csi: { driver: 'csi.example.com', volumeHandle: 'b' } } } });
    const bound = await h.core.replacePersistentVolumeStatus({ name: 'pv-bound', body: { ...pv, status: { phase: 'Bound' } } });
    await h.core.deletePersistentVolume({ name: 'pv-bound' });
    await new Promise((r) => setTimeout(r, 100));
    const still = await h.core.readPersistentVolume({ name: 'pv-bound' });
    assert.ok(still.metadata!.deletionTimestamp);
    assert.deepEqual(still.metadata!.finalizers, ['kubernetes.io/pv-protection']);
    await h.core.replacePersistentVolumeStatus({ name: 'pv-bound', body: { ...still, status: { ...bound.status, phase: 'Released' } } });
    await eventually(async () => ((await h.http('/api/v1/persistentvolumes/pv-bound')).status === 404 ? true : undefined), 'the PV to go');
  });

  it('with the controllers switched off the finalizers stay for a test to drive by hand', async () => {
    const off = await startHarness({ kinds: undefined, disableControllers: ['pvc-protection', 'pv-protection'] });
    try {
      await off.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvc('manual', { storageClassName: '' }) });
      await off.core.deleteNamespacedPersistentVolumeClaim({ name: 'manual', namespace: 'default' });
      await new Promise((r) => setTimeout(r, 100));
      const c = await off.core.readNamespacedPersistentVolumeClaim({ name: 'manual', namespace: 'default' });
      assert.deepEqual(c.metadata!.finalizers, ['kubernetes.io/pvc-protection']);
    } finally {
      await off.api.stop();
    }
  });
});

describe('kube-api semantics: NamespaceLifecycle and namespace deletion', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined }); });
  after(async () => { await h.api.stop(); });

  it('creating in a missing namespace is 404 for the namespace', async () => {
    const st = await rejection(h.core.createNamespacedConfigMap({ namespace: 'nowhere', body: { metadata: { name: 'x' } } }));
    assert.deepEqual([st.code, st.reason, st.message], [404, 'NotFound', 'namespaces "nowhere" not found']);
  });

  it('default, kube-system and kube-public may not be deleted', async () => {
    for (const name of ['default', 'kube-system', 'kube-public']) {
      const st = await rejection(h.core.deleteNamespace({ name }));
      assert.deepEqual([st.code, st.reason, st.message], [403, 'Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`]);
    }
  });

  it('a namespace gets its label, phase and the kubernetes spec finalizer', async () => {
    const ns = await h.core.createNamespace({ body: { metadata: { name: 'fresh' } } });
    assert.deepEqual([ns.metadata!.labels, ns.status!.phase, ns.spec!.finalizers],
      [{ 'kubernetes.io/metadata.name': 'fresh' }, 'Active', ['kubernetes']]);
  });

  it('a deleting namespace is Terminating, refuses new content with the NamespaceTerminating cause, then empties and goes', async () => {
    await h.core.createNamespace({ body: { metadata: { name: 'doomed' } } });
    await h.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'held', finalizers: ['example.com/hold'] } } });
    await h.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'free' } } });
    await h.core.deleteNamespace({ name: 'doomed' });
    const ns = await h.core.readNamespace({ name: 'doomed' });
    assert.equal(ns.status!.phase, 'Terminating');
    const st = await rejection(h.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'late' } } }));
    assert.equal(st.code, 403);
    assert.equal(st.message, 'configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated');
    assert.deepEqual(st.details.causes, [{ reason: 'NamespaceTerminating', message: 'namespace doomed is being terminated', field: 'metadata.namespace' }]);
    await eventually(async () => ((await h.http('/api/v1/namespaces/doomed/configmaps/free')).status === 404 ? true : undefined), 'free content deleted');
    const held = await h.core.readNamespacedConfigMap({ name: 'held', namespace: 'doomed' });
    assert.ok(held.metadata!.deletionTimestamp, 'content with a finalizer is deleting');
    assert.equal((await h.http('/api/v1/namespaces/doomed')).status, 200, 'the namespace waits for its content');
    await h.core.replaceNamespacedConfigMap({ name: 'held', namespace: 'doomed', body: { ...held, metadata: { ...held.metadata, finalizers: [] } } });
    await eventually(async () => ((await h.http('/api/v1/namespaces/doomed')).status === 404 ? true : undefined), 'the namespace to go');
  });
});
