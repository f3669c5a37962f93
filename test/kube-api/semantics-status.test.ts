// Status subresource splits of Node, Namespace, Pod and VolumeAttachment over HTTP (registry strategies,
// apiserver-semantics.md §4.1): what create keeps, what the main resource and /status ignore.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../../infra/local/kube-api/testing/client.ts';

describe('kube-api semantics: status subresources of Node, Namespace, Pod, VolumeAttachment', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined }); });
  after(async () => { await h.api.stop(); });

  it('Node: status is kept on create; main PUT ignores status, /status ignores spec; capacity is canonical', async () => {
    const node = await h.core.createNode({ body: { metadata: { name: 'node-1', labels: { zone: 'a' } }, spec: { podCIDR: '10.244.0.0/24' },
      status: { conditions: [{ type: 'Ready', status: 'True' } as any], capacity: { storage: '1024Mi' } } } });
    assert.deepEqual([node.status!.conditions![0].type, node.status!.capacity!.storage], ['Ready', '1Gi']);
    const put = await h.core.replaceNode({ name: 'node-1', body: { ...node, spec: { ...node.spec, unschedulable: true },
      status: { conditions: [{ type: 'Ready', status: 'False' } as any] } } });
    assert.deepEqual([put.spec!.unschedulable, put.status!.conditions![0].status], [true, 'True']);
    const st = await h.core.replaceNodeStatus({ name: 'node-1', body: { ...put, spec: { ...put.spec, unschedulable: false },
      status: { ...put.status, conditions: [{ type: 'Ready', status: 'False' } as any] } } });
    assert.deepEqual([st.spec!.unschedulable, st.status!.conditions![0].status], [true, 'False']);
    const cidr = await h.http('/api/v1/nodes/node-1', { method: 'PUT', body: { ...st, spec: { ...st.spec, podCIDR: '10.245.0.0/24', podCIDRs: ['10.245.0.0/24'] } } });
    assert.equal(cidr.status, 422);
    assert.equal(cidr.body.details.causes[0].message, 'Forbidden: node updates may not change podCIDR except from "" to valid');
  });

  it('Namespace: the main resource cannot change status or spec.finalizers; /status cannot change spec', async () => {
    const ns = await h.core.createNamespace({ body: { metadata: { name: 'st-ns' }, status: { phase: 'Terminating' } } });
    assert.equal(ns.status!.phase, 'Active');
    const put = await h.core.replaceNamespace({ name: 'st-ns', body: { ...ns, spec: { finalizers: [] }, status: { phase: 'Terminating' } } });
    assert.deepEqual([put.spec!.finalizers, put.status!.phase], [['kubernetes'], 'Active']);
    const st = await h.core.replaceNamespaceStatus({ name: 'st-ns', body: { ...put, spec: { finalizers: [] }, status: { phase: 'Active', conditions: [] } } });
    assert.deepEqual(st.spec!.finalizers, ['kubernetes']);
    const early = await h.http('/api/v1/namespaces/st-ns/status', { method: 'PUT', body: { ...st, status: { phase: 'Terminating' } } });
    assert.equal(early.status, 422);
    assert.equal(early.body.details.causes[0].message, 'Invalid value: "Terminating": may only be \'Active\' if `deletionTimestamp` is empty');
  });

  it('Pod: created Pending whatever the body says; main PUT keeps status', async () => {
    const pod = await h.core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'p1' },
      spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] }, status: { phase: 'Running' } } });
    assert.equal(pod.status!.phase, 'Pending');
    const st = await h.core.replaceNamespacedPodStatus({ name: 'p1', namespace: 'default', body: { ...pod, status: { phase: 'Running' } } });
    assert.equal(st.status!.phase, 'Running');
    const put = await h.core.replaceNamespacedPod({ name: 'p1', namespace: 'default', body: { ...st, status: { phase: 'Failed' } } });
    assert.equal(put.status!.phase, 'Running');
    const running = await h.core.listPodForAllNamespaces({ fieldSelector: 'status.phase=Running,spec.nodeName=' });
    assert.deepEqual(running.items.map((p) => p.metadata!.name), ['p1']);
  });

  it('VolumeAttachment: status only through /status; spec immutable', async () => {
    const va = await h.storage.createVolumeAttachment({ body: { metadata: { name: 'va-1' },
      spec: { attacher: 'csi.example.com', nodeName: 'node-1', source: { persistentVolumeName: 'pv-1' } }, status: { attached: true } } });
    assert.equal(va.status?.attached, undefined);
    const st = await h.storage.replaceVolumeAttachmentStatus({ name: 'va-1', body: { ...va, status: { attached: true } } });
    assert.equal(st.status!.attached, true);
    const moved = await h.http('/apis/storage.k8s.io/v1/volumeattachments/va-1', { method: 'PUT', body: { ...st, spec: { ...st.spec, nodeName: 'node-2' } } });
    assert.equal(moved.status, 422);
    assert.equal(moved.body.details.causes[0].field, 'spec');
  });
});

// What a /status write does with metadata, kind by kind, as each upstream status strategy's PrepareForUpdate:
// only VolumeAttachment calls metav1.ResetObjectMetaForStatus (labels, annotations, finalizers, ownerReferences
// kept); Pod keeps ownerReferences ("don't allow the pods/status endpoint to touch owner references"),
// Deployment keeps labels; PV, PVC, Node, Namespace, Service and ReplicaSet copy only the spec and so apply
// the body's metadata. The main resource applies all four everywhere.
describe('kube-api semantics: metadata in status writes (PUT and PATCH .../status)', () => {
  type MetaField = 'labels' | 'annotations' | 'finalizers' | 'ownerReferences';
  const FIELDS: MetaField[] = ['labels', 'annotations', 'finalizers', 'ownerReferences'];
  const owner = (name: string, uid: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', name, uid });
  const template = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } };
  const workload = { selector: { matchLabels: { app: 'web' } }, template };
  // [kind, collection path, spec of the created object, the status the /status PUT writes, metadata the /status write keeps]
  const table: Array<[string, string, Record<string, unknown> | undefined, Record<string, unknown>, MetaField[]]> = [
    ['PersistentVolume', '/api/v1/persistentvolumes',
      { accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, csi: { driver: 'csi.example.com', volumeHandle: 'h' } }, { phase: 'Available' }, []],
    ['PersistentVolumeClaim', '/api/v1/namespaces/default/persistentvolumeclaims',
      { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: '' }, { phase: 'Bound' }, []],
    ['Node', '/api/v1/nodes', {}, { conditions: [{ type: 'Ready', status: 'True' }] }, []],
    ['Namespace', '/api/v1/namespaces', undefined, { phase: 'Active', conditions: [{ type: 'NamespaceDeletionDiscoveryFailure', status: 'False' }] }, []],
    ['Service', '/api/v1/namespaces/default/services', { type: 'LoadBalancer', ports: [{ port: 80 }] }, { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } }, []],
    ['Pod', '/api/v1/namespaces/default/pods', { containers: [{ name: 'c', image: 'busybox:1.36' }] }, { phase: 'Running' }, ['ownerReferences']],
    ['VolumeAttachment', '/apis/storage.k8s.io/v1/volumeattachments',
      { attacher: 'csi.example.com', nodeName: 'node-1', source: { persistentVolumeName: 'pv-1' } }, { attached: true }, FIELDS],
    ['Deployment', '/apis/apps/v1/namespaces/default/deployments', workload, { observedGeneration: 1, replicas: 1 }, ['labels']],
    ['ReplicaSet', '/apis/apps/v1/namespaces/default/replicasets', workload, { observedGeneration: 1, replicas: 1 }, []],
  ];

  let h: Harness;
  before(async () => {
    // no controller may write the objects between the test's reads and writes (protection finalizers, GC of the made-up owners)
    h = await startHarness({ kinds: undefined, disableControllers: ['garbage-collector', 'pvc-protection', 'pv-protection'] });
  });
  after(async () => { await h.api.stop(); });

  const pick = (o: any): Record<MetaField, unknown> => Object.fromEntries(FIELDS.map((f) => [f, o.metadata[f]])) as Record<MetaField, unknown>;
  const changed = (o: any, tag: string) => ({
    ...o.metadata,
    labels: { ...o.metadata.labels, tier: tag, [`${tag}-label`]: 'yes' },
    annotations: { ...o.metadata.annotations, 'example.com/note': tag },
    finalizers: [...(o.metadata.finalizers ?? []), `example.com/${tag}`],
    ownerReferences: [owner(`owner-${tag}`, `00000000-0000-4000-8000-${tag === 'status' ? '000000000002' : '000000000003'}`)],
  });

  for (const [kind, collection, spec, status, keeps] of table) {
    it(`${kind}: /status ${keeps.length ? `keeps ${keeps.join(', ')}` : 'applies labels, annotations, finalizers, ownerReferences'}; the main PUT applies them all`, async () => {
      const name = `meta-${kind.toLowerCase()}`;
      const path = `${collection}/${name}`;
      const create = await h.http(collection, { method: 'POST', body: {
        metadata: { name, labels: { tier: 'old' }, annotations: { 'example.com/note': 'old' }, finalizers: ['example.com/keep'],
          ownerReferences: [owner('owner-old', '00000000-0000-4000-8000-000000000001')] },
        ...(spec ? { spec } : {}),
      } });
      assert.equal(create.status, 201, JSON.stringify(create.body));
      const created = create.body;

      // PUT .../status with new metadata and a new status
      const body = { ...created, metadata: changed(created, 'status'), status: { ...created.status, ...status } };
      const put = await h.http(`${path}/status`, { method: 'PUT', body });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      const expected = Object.fromEntries(FIELDS.map((f) => [f, keeps.includes(f) ? created.metadata[f] : body.metadata[f]]));
      assert.deepEqual(pick(put.body), expected, 'the response');
      assert.deepEqual(pick((await h.http(path)).body), expected, 'a following GET');
      for (const [k, v] of Object.entries(status)) assert.deepEqual(put.body.status[k], v, `status.${k} written`);
      assert.ok(Number(put.body.metadata.resourceVersion) > Number(created.metadata.resourceVersion), 'resourceVersion moved');

      // the resourceVersion precondition still holds: the same body again is stale
      const stale = await h.http(`${path}/status`, { method: 'PUT', body });
      assert.deepEqual([stale.status, stale.body.reason], [409, 'Conflict']);

      // PATCH .../status goes the same way
      const patch = await h.http(`${path}/status`, { method: 'PATCH', contentType: 'application/merge-patch+json',
        body: { metadata: { labels: { patched: 'yes' }, annotations: { 'example.com/patched': 'yes' } } } });
      assert.equal(patch.status, 200, JSON.stringify(patch.body));
      assert.equal(patch.body.metadata.labels?.patched, keeps.includes('labels') ? undefined : 'yes', 'patched label');
      assert.equal(patch.body.metadata.annotations?.['example.com/patched'], keeps.includes('annotations') ? undefined : 'yes', 'patched annotation');

      // the main resource applies every metadata change
      const current = patch.body;
      const main = { ...current, metadata: changed(current, 'main') };
      const mainPut = await h.http(path, { method: 'PUT', body: main });
      assert.equal(mainPut.status, 200, JSON.stringify(mainPut.body));
      assert.deepEqual(pick(mainPut.body), pick(main), 'the main PUT applies labels, annotations, finalizers, ownerReferences');
      assert.deepEqual(pick((await h.http(path)).body), pick(main));
    });
  }
});
