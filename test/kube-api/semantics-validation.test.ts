// Per-kind semantics over HTTP through @kubernetes/client-node against the real kinds: validation 422s
// with causes, canonical quantities, 400 on undecodable bodies, the status split, Lease RV rules,
// unsupported field selectors and server-side Tables (apiserver-semantics.md §2, §4.1, §5, §13).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';

const pvcBody = (name: string, spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  metadata: { name },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: '', ...spec },
  ...extra,
}) as any;
const pvBody = (name: string, spec: Record<string, unknown> = {}) => ({
  metadata: { name },
  spec: { accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, csi: { driver: 'csi.example.com', volumeHandle: name }, ...spec },
}) as any;

describe('kube-api semantics: validation, quantities, status split', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined }); });
  after(async () => { await h.api.stop(); });

  it('stores quantities in canonical form (1.5Gi → 1536Mi, 1024Mi → 1Gi, bare numbers accepted)', async () => {
    const a = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('q1', { resources: { requests: { storage: '1.5Gi' } } }) });
    assert.equal(a.spec!.resources!.requests!.storage, '1536Mi');
    await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('q2', { resources: { requests: { storage: '1024Mi' } } }) });
    const raw = await h.http('/api/v1/namespaces/default/persistentvolumeclaims', { method: 'POST', body: pvcBody('q3', { resources: { requests: { storage: 1073741824 } } }) });
    assert.equal(raw.status, 201);
    assert.equal(raw.body.spec.resources.requests.storage, '1073741824');
    const { body } = await h.http('/api/v1/namespaces/default/persistentvolumeclaims/q2');
    assert.equal(body.spec.resources.requests.storage, '1Gi');
  });

  it('rejects an unparseable quantity with 400 BadRequest, not 422', async () => {
    const res = await h.http('/api/v1/namespaces/default/persistentvolumeclaims', { method: 'POST', body: pvcBody('q-bad', { resources: { requests: { storage: '20Gx' } } }) });
    assert.equal(res.status, 400);
    assert.equal(res.body.reason, 'BadRequest');
    assert.equal(res.body.message, 'PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'');
  });

  it('answers 422 Invalid with one cause per field error', async () => {
    const st = await rejection(h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('v1', { accessModes: [], resources: { requests: {} } }) }));
    assert.equal(st.code, 422);
    assert.equal(st.reason, 'Invalid');
    assert.equal(st.message, 'PersistentVolumeClaim "v1" is invalid: [spec.accessModes: Required value: at least 1 access mode is required, spec.resources[storage]: Required value]');
    assert.deepEqual(st.details.causes, [
      { reason: 'FieldValueRequired', message: 'Required value: at least 1 access mode is required', field: 'spec.accessModes' },
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.resources[storage]' },
    ]);
    const name = await rejection(h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('Bad_Name') }));
    assert.equal(name.details.causes[0].field, 'metadata.name');
    assert.match(name.details.causes[0].message, /^Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of/);
  });

  it('PVC spec is immutable after creation except volumeName once and storage growth when Bound', async () => {
    const created = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('imm') });
    const grow = await rejection(h.core.replaceNamespacedPersistentVolumeClaim({ name: 'imm', namespace: 'default',
      body: { ...created, spec: { ...created.spec, resources: { requests: { storage: '2Gi' } } } } }));
    assert.equal(grow.code, 422);
    assert.equal(grow.details.causes[0].field, 'spec');
    assert.match(grow.details.causes[0].message, /^Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims/);
    const bound = await h.core.replaceNamespacedPersistentVolumeClaim({ name: 'imm', namespace: 'default',
      body: { ...created, spec: { ...created.spec, volumeName: 'pv-imm' } } });
    assert.equal(bound.spec!.volumeName, 'pv-imm');
    const again = await rejection(h.core.replaceNamespacedPersistentVolumeClaim({ name: 'imm', namespace: 'default',
      body: { ...bound, spec: { ...bound.spec, volumeName: 'pv-other' } } }));
    assert.equal(again.code, 422);
    const status = await h.core.replaceNamespacedPersistentVolumeClaimStatus({ name: 'imm', namespace: 'default',
      body: { ...bound, status: { phase: 'Bound', capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] } } });
    // PersistentVolumeClaimResize: a claim without an expandable class cannot grow even when Bound.
    const noClass = await rejection(h.core.replaceNamespacedPersistentVolumeClaim({ name: 'imm', namespace: 'default',
      body: { ...status, spec: { ...status.spec, resources: { requests: { storage: '2Gi' } } } } }));
    assert.deepEqual([noClass.code, noClass.reason, noClass.message], [403, 'Forbidden',
      'persistentvolumeclaims "imm" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize']);
  });

  it('a Bound claim of a class with allowVolumeExpansion may grow, never shrink below status.capacity', async () => {
    await h.storage.createStorageClass({ body: { metadata: { name: 'expandable' }, provisioner: 'csi.example.com', allowVolumeExpansion: true } });
    const c = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('grow', { storageClassName: 'expandable' }) });
    const st = await h.core.replaceNamespacedPersistentVolumeClaimStatus({ name: 'grow', namespace: 'default',
      body: { ...c, status: { phase: 'Bound', capacity: { storage: '1Gi' } } } });
    const grown = await h.core.replaceNamespacedPersistentVolumeClaim({ name: 'grow', namespace: 'default',
      body: { ...st, spec: { ...st.spec, resources: { requests: { storage: '2Gi' } } } } });
    assert.equal(grown.spec!.resources!.requests!.storage, '2Gi');
    const shrink = await rejection(h.core.replaceNamespacedPersistentVolumeClaim({ name: 'grow', namespace: 'default',
      body: { ...grown, spec: { ...grown.spec, resources: { requests: { storage: '1Gi' } } } } }));
    assert.equal(shrink.message, 'PersistentVolumeClaim "grow" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity');
  });

  it('main-resource PUT ignores status; /status ignores spec; create resets status to Pending (divergence 1)', async () => {
    const pvc = await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('split', {}, { status: { phase: 'Bound' } }) });
    assert.equal(pvc.status!.phase, 'Pending');
    const pv = await h.core.createPersistentVolume({ body: { ...pvBody('pv-split'), status: { phase: 'Bound' } } });
    assert.equal(pv.status!.phase, 'Pending');
    assert.ok(pv.status!.lastPhaseTransitionTime, 'lastPhaseTransitionTime set on create');
    // The binder's "bind in one PUT" mistake: spec and status together through the main resource.
    const put = await h.core.replaceNamespacedPersistentVolumeClaim({ name: 'split', namespace: 'default',
      body: { ...pvc, spec: { ...pvc.spec, volumeName: 'pv-split' }, status: { phase: 'Bound' } } });
    assert.deepEqual([put.spec!.volumeName, put.status!.phase], ['pv-split', 'Pending']);
    const st = await h.core.replaceNamespacedPersistentVolumeClaimStatus({ name: 'split', namespace: 'default',
      body: { ...put, spec: { ...put.spec, volumeName: 'ignored' }, status: { phase: 'Bound' } } });
    assert.deepEqual([st.spec!.volumeName, st.status!.phase], ['pv-split', 'Bound']);
    const pvSt = await h.core.replacePersistentVolumeStatus({ name: 'pv-split', body: { ...pv, status: { phase: 'Available' } } });
    assert.equal(pvSt.status!.phase, 'Available');
    assert.ok(pvSt.status!.lastPhaseTransitionTime);
  });

  it('PV needs exactly one volume source; local needs nodeAffinity; Recycle draws a Warning', async () => {
    const none = await rejection(h.core.createPersistentVolume({ body: pvBody('pv-none', { csi: undefined }) }));
    assert.equal(none.message, 'PersistentVolume "pv-none" is invalid: spec: Required value: must specify a volume type');
    const two = await rejection(h.core.createPersistentVolume({ body: pvBody('pv-two', { hostPath: { path: '/tmp' } }) }));
    assert.equal(two.message, 'PersistentVolume "pv-two" is invalid: spec.csi: Forbidden: may not specify more than 1 volume type');
    const local = await rejection(h.core.createPersistentVolume({ body: pvBody('pv-local', { csi: undefined, local: { path: '/mnt' } }) }));
    assert.equal(local.details.causes[0].field, 'spec.nodeAffinity');
    const res = await h.http('/api/v1/persistentvolumes', { method: 'POST', body: pvBody('pv-recycle', { persistentVolumeReclaimPolicy: 'Recycle' }) });
    assert.equal(res.status, 201);
    assert.match(res.headers.get('warning') ?? '', /The Recycle reclaim policy is deprecated/);
  });

  it('StorageClass parameters and provisioner are immutable; defaults are applied', async () => {
    const sc = await h.storage.createStorageClass({ body: { metadata: { name: 'imm-sc' }, provisioner: 'csi.example.com', parameters: { tier: 'gold' } } });
    assert.deepEqual([sc.reclaimPolicy, sc.volumeBindingMode], ['Delete', 'Immediate']);
    const st = await rejection(h.storage.replaceStorageClass({ name: 'imm-sc', body: { ...sc, parameters: { tier: 'silver' } } }));
    assert.equal(st.message, 'StorageClass.storage.k8s.io "imm-sc" is invalid: parameters: Forbidden: updates to parameters are forbidden.');
    const ok = await h.storage.replaceStorageClass({ name: 'imm-sc', body: { ...sc, allowVolumeExpansion: true } });
    assert.equal(ok.allowVolumeExpansion, true);
  });

  it('Lease: PUT without resourceVersion is 422, PUT of a missing Lease creates it (divergence 2)', async () => {
    const lease = await h.coordination.replaceNamespacedLease({ name: 'l1', namespace: 'default', body: { metadata: { name: 'l1' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } } });
    assert.equal(lease.spec!.holderIdentity, 'a');
    const st = await rejection(h.coordination.replaceNamespacedLease({ name: 'l1', namespace: 'default', body: { metadata: { name: 'l1' }, spec: { holderIdentity: 'b' } } }));
    assert.equal(st.code, 422);
    const bad = await rejection(h.coordination.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'l2' }, spec: { leaseDurationSeconds: 0 } } }));
    assert.equal(bad.details.causes[0].message, 'Invalid value: 0: must be greater than 0');
  });

  it('field selectors outside the upstream sets are 400 (divergence 8)', async () => {
    const st = await rejection(h.core.listNamespacedPersistentVolumeClaim({ namespace: 'default', fieldSelector: 'spec.volumeName=pv1' }));
    assert.equal(st.code, 400);
    const svc = await h.core.listServiceForAllNamespaces({ fieldSelector: 'spec.type=ClusterIP' });
    assert.ok(Array.isArray(svc.items));
    const nodes = await h.core.listNode({ fieldSelector: 'spec.unschedulable=false' });
    assert.ok(Array.isArray(nodes.items));
    const nsPhase = await h.core.listNamespace({ fieldSelector: 'status.phase=Active' });
    assert.ok(nsPhase.items.some((n) => n.metadata!.name === 'default'));
  });

  it('serves kubectl Tables with upstream columns', async () => {
    await h.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: pvcBody('tbl') });
    const res = await h.http('/api/v1/namespaces/default/persistentvolumeclaims?fieldSelector=metadata.name%3Dtbl', { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    assert.equal(res.body.kind, 'Table');
    assert.deepEqual(res.body.columnDefinitions.map((c: { name: string }) => c.name),
      ['Name', 'Status', 'Volume', 'Capacity', 'Access Modes', 'StorageClass', 'VolumeAttributesClass', 'Age', 'VolumeMode']);
    const cells = res.body.rows[0].cells;
    assert.deepEqual(cells.slice(0, 7), ['tbl', 'Pending', '', '', '', '', '<unset>']);
    assert.match(cells[7], /^\d+s$/);
  });
});
