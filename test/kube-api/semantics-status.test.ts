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
