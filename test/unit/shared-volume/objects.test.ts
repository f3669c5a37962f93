/**
 * The decision core against api-manager's cases (reference storageos.md §1.3–§1.7): qualification,
 * the Service and Endpoints shapes, equivalence, update shapes and the published frontend.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Endpoints, V1Service } from '@kubernetes/client-node';
import { toSharedVolume } from '../../../lib/storage/shared-volume.ts';
import type { SharedVolume, Volume } from '../../../lib/storage/types.ts';
import {
  claimOwnerReference,
  desiredEndpoints,
  desiredService,
  endpointsIsEqual,
  endpointsUpdate,
  frontend,
  needsPublish,
  serviceIsEqual,
  serviceUpdate,
  sharedVolumeIsEqual,
} from '../../../lib/shared-volume/objects.ts';
import { triggerFor } from '../../../lib/shared-volume/triggers.ts';
import type { ReconcileRequest } from '../../../lib/runtime/reconcile.ts';

const newVolume = (...mods: ((v: Volume) => void)[]): Volume => {
  const v: Volume = {
    id: 'vol-1',
    name: 'pvc-123',
    namespaceID: 'ns-1',
    namespace: 'default',
    description: '',
    sizeBytes: 1 << 30,
    fsType: 'ext4',
    labels: { 'csi.storage.k8s.io/pv/name': 'pvc-123', 'csi.storage.k8s.io/pvc/name': 'data', 'csi.storage.k8s.io/pvc/namespace': 'app' },
    attachmentType: 'nfs',
    attachedOn: 'node-1',
    nfsServiceEndpoint: '10.0.0.1:25805',
    masterNodeID: 'node-1',
    version: 'NQ',
    createdAt: '',
    updatedAt: '',
  };
  for (const m of mods) m(v);
  return v;
};
const withLabels = (labels: Record<string, string | undefined>) => (v: Volume) => {
  for (const [k, val] of Object.entries(labels)) {
    if (val === undefined) delete v.labels[k];
    else v.labels[k] = val;
  }
};
const withEndpoint = (e: string | null) => (v: Volume) => {
  v.nfsServiceEndpoint = e;
};

const shared = (endpoint = '10.0.0.1:25805', external = ''): SharedVolume => ({
  id: 'vol-1',
  namespaceID: 'ns-1',
  serviceName: 'pvc-123',
  pvcName: 'data',
  namespace: 'app',
  internalEndpoint: endpoint,
  externalEndpoint: external,
  version: 'NQ',
});

describe('qualification (toSharedVolume)', () => {
  const cases: { name: string; volume: Volume; want: boolean }[] = [
    { name: 'all labels and host:port', volume: newVolume(), want: true },
    { name: 'pv/name missing → not kubernetes', volume: newVolume(withLabels({ 'csi.storage.k8s.io/pv/name': undefined })), want: false },
    { name: 'pvc/name empty → not kubernetes', volume: newVolume(withLabels({ 'csi.storage.k8s.io/pvc/name': '' })), want: false },
    { name: 'pvc/namespace missing → not kubernetes', volume: newVolume(withLabels({ 'csi.storage.k8s.io/pvc/namespace': undefined })), want: false },
    { name: 'no serviceEndpoint → not shared', volume: newVolume(withEndpoint(null)), want: false },
    { name: 'empty serviceEndpoint is present but unparseable', volume: newVolume(withEndpoint('')), want: false },
    { name: 'no port', volume: newVolume(withEndpoint('10.0.0.1')), want: false },
    { name: 'non-numeric port', volume: newVolume(withEndpoint('10.0.0.1:nfs')), want: false },
    { name: '[v6]:port', volume: newVolume(withEndpoint('[::1]:2049')), want: true },
    { name: ':port', volume: newVolume(withEndpoint(':2049')), want: true },
    { name: 'no port range check', volume: newVolume(withEndpoint('10.0.0.1:99999')), want: true },
    { name: 'attachmentType not checked', volume: newVolume((v) => (v.attachmentType = 'host')), want: true },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(toSharedVolume(c.volume) !== undefined, c.want));
  }
  it('maps labels and the mount endpoint', () => {
    const v = toSharedVolume(newVolume(withLabels({ 'storageos.com/nfs/mount-endpoint': '10.96.0.10:2049' })));
    assert.deepEqual(v, shared('10.0.0.1:25805', '10.96.0.10:2049'));
  });
});

describe('desired objects', () => {
  const owner = claimOwnerReference({ metadata: { name: 'data', uid: 'uid-1' } });
  it('Service: selector-less ClusterIP named after the PV, nfs 2049/TCP → server port, volume-id label, owned by the claim', () => {
    assert.deepEqual(desiredService(shared(), owner), {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'pvc-123',
        namespace: 'app',
        labels: { 'storageos.com/volume-id': 'vol-1' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data', uid: 'uid-1' }],
      },
      spec: { type: 'ClusterIP', ports: [{ name: 'nfs', port: 2049, protocol: 'TCP', targetPort: 25805 }] },
    });
  });
  it('Endpoints: same name, no owners, the server address', () => {
    assert.deepEqual(desiredEndpoints(shared()), {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'pvc-123', namespace: 'app', labels: { 'storageos.com/volume-id': 'vol-1' } },
      subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ name: 'nfs', port: 25805, protocol: 'TCP' }] }],
    });
  });
  it('Endpoints from an IPv6 endpoint carry the unbracketed ip', () => {
    assert.equal(desiredEndpoints(shared('[fd00::1]:2049')).subsets?.[0]?.addresses?.[0]?.ip, 'fd00::1');
  });
});

const svc = (spec: V1Service['spec']): V1Service => ({ metadata: { name: 'pvc-123', namespace: 'app', resourceVersion: '7' }, spec });
const nfsPort = { name: 'nfs', port: 2049, protocol: 'TCP', targetPort: 25805 };

describe('ServiceIsEqual / ServiceUpdate', () => {
  const cases: { name: string; service: V1Service; equal: boolean; wantPorts?: unknown[] }[] = [
    { name: 'desired shape', service: svc({ type: 'ClusterIP', clusterIP: '10.96.0.10', ports: [nfsPort] }), equal: true },
    {
      name: 'labels, selector and clusterIP are ignored',
      service: { ...svc({ type: 'ClusterIP', clusterIP: '10.96.1.1', selector: { a: 'b' }, ports: [nfsPort] }), metadata: { labels: {} } },
      equal: true,
    },
    {
      name: 'other target port → only targetPort set',
      service: svc({ type: 'ClusterIP', ports: [{ ...nfsPort, targetPort: 1 }] }),
      equal: false,
      wantPorts: [nfsPort],
    },
    {
      name: 'named targetPort counts as 0',
      service: svc({ type: 'ClusterIP', ports: [{ ...nfsPort, targetPort: 'nfs' }] }),
      equal: false,
      wantPorts: [nfsPort],
    },
    {
      name: 'two ports → replaced by the desired port',
      service: svc({ type: 'ClusterIP', ports: [nfsPort, { name: 'x', port: 1, protocol: 'TCP' }] }),
      equal: false,
      wantPorts: [nfsPort],
    },
    { name: 'no ports → the desired port', service: svc({ type: 'ClusterIP' }), equal: false, wantPorts: [nfsPort] },
    {
      name: 'wrong name is not fixed (upstream quirk)',
      service: svc({ type: 'ClusterIP', ports: [{ ...nfsPort, name: 'other', targetPort: 1 }] }),
      equal: false,
      wantPorts: [{ ...nfsPort, name: 'other' }],
    },
    {
      name: 'wrong port is not fixed',
      service: svc({ type: 'ClusterIP', ports: [{ ...nfsPort, port: 111 }] }),
      equal: false,
      wantPorts: [{ ...nfsPort, port: 111 }],
    },
    { name: 'NodePort type is unequal and not fixed', service: svc({ type: 'NodePort', ports: [nfsPort] }), equal: false, wantPorts: [nfsPort] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(serviceIsEqual(shared(), c.service), c.equal);
      if (c.wantPorts) {
        const updated = serviceUpdate(shared(), c.service);
        assert.deepEqual(updated.spec?.ports, c.wantPorts);
        assert.equal(updated.spec?.type, c.service.spec?.type);
        assert.equal(updated.spec?.clusterIP, c.service.spec?.clusterIP);
        assert.equal(updated.metadata?.resourceVersion, c.service.metadata?.resourceVersion);
      }
    });
  }
  it('failover: a new server port only changes the target port, never the ClusterIP', () => {
    const current = svc({ type: 'ClusterIP', clusterIP: '10.96.0.10', ports: [nfsPort] });
    const moved = shared('10.0.0.2:30000');
    assert.equal(serviceIsEqual(moved, current), false);
    const updated = serviceUpdate(moved, current);
    assert.equal(updated.spec?.clusterIP, '10.96.0.10');
    assert.deepEqual(updated.spec?.ports, [{ ...nfsPort, targetPort: 30000 }]);
    assert.equal(frontend(updated), frontend(current));
  });
});

const ep = (subsets: V1Endpoints['subsets']): V1Endpoints => ({ metadata: { name: 'pvc-123', namespace: 'app', resourceVersion: '9' }, subsets });
const nfsSubset = { addresses: [{ ip: '10.0.0.1' }], ports: [{ name: 'nfs', port: 25805, protocol: 'TCP' }] };

describe('EndpointsIsEqual / EndpointsUpdate', () => {
  const cases: { name: string; endpoints: V1Endpoints; equal: boolean; want?: V1Endpoints['subsets'] }[] = [
    { name: 'desired shape', endpoints: ep([nfsSubset]), equal: true },
    {
      name: 'extra addresses and ports after index 0 are ignored',
      endpoints: ep([{ addresses: [{ ip: '10.0.0.1' }, { ip: '10.9.9.9' }], ports: [...nfsSubset.ports, { name: 'x', port: 1, protocol: 'TCP' }] }]),
      equal: true,
    },
    { name: 'no subsets → rebuilt', endpoints: ep(undefined), equal: false, want: [nfsSubset] },
    { name: 'two subsets → rebuilt', endpoints: ep([nfsSubset, nfsSubset]), equal: false, want: [nfsSubset] },
    {
      name: 'other ip → only addresses[0].ip set',
      endpoints: ep([{ addresses: [{ ip: '10.0.0.7', nodeName: 'n1' }], ports: [{ name: 'nfs', port: 25805, protocol: 'TCP' }] }]),
      equal: false,
      want: [{ addresses: [{ ip: '10.0.0.1', nodeName: 'n1' }], ports: [{ name: 'nfs', port: 25805, protocol: 'TCP' }] }],
    },
    {
      name: 'other port → only ports[0].port set',
      endpoints: ep([{ addresses: [{ ip: '10.0.0.1' }], ports: [{ name: 'nfs', port: 1, protocol: 'TCP' }] }]),
      equal: false,
      want: [nfsSubset],
    },
    {
      name: 'wrong port name is unequal and not fixed (upstream quirk)',
      endpoints: ep([{ addresses: [{ ip: '10.0.0.1' }], ports: [{ name: 'x', port: 25805, protocol: 'TCP' }] }]),
      equal: false,
      want: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ name: 'x', port: 25805, protocol: 'TCP' }] }],
    },
    {
      name: 'two addresses and a wrong ip → whole subset rebuilt',
      endpoints: ep([{ addresses: [{ ip: '10.0.0.7' }, { ip: '10.0.0.8' }], ports: nfsSubset.ports }]),
      equal: false,
      want: [nfsSubset],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(endpointsIsEqual(shared(), c.endpoints), c.equal);
      if (c.want) {
        const updated = endpointsUpdate(shared(), c.endpoints);
        assert.deepEqual(updated.subsets, c.want);
        assert.equal(updated.metadata?.resourceVersion, '9');
      }
    });
  }
});

describe('frontend and publishing', () => {
  it('<clusterIP>:<port> with exactly one port', () => {
    assert.equal(frontend(svc({ type: 'ClusterIP', clusterIP: '10.96.0.10', ports: [nfsPort] })), '10.96.0.10:2049');
  });
  it('"" with no port or two ports', () => {
    assert.equal(frontend(svc({ clusterIP: '10.96.0.10', ports: [] })), '');
    assert.equal(frontend(svc({ clusterIP: '10.96.0.10', ports: [nfsPort, nfsPort] })), '');
  });
  it('IPv6 is not bracketed', () => {
    assert.equal(frontend(svc({ clusterIP: 'fd00::10', ports: [nfsPort] })), 'fd00::10:2049');
  });
  it('publishes only when the endpoint differs from the label', () => {
    assert.equal(needsPublish(shared(), '10.96.0.10:2049'), true);
    assert.equal(needsPublish(shared(undefined, '10.96.0.10:2049'), '10.96.0.10:2049'), false);
    assert.equal(needsPublish(shared(undefined, '10.96.0.10:2049'), ''), true);
  });
});

describe('IsEqual (cache comparison)', () => {
  const base = shared('10.0.0.1:25805', '10.96.0.10:2049');
  const cases: { name: string; other: SharedVolume; equal: boolean }[] = [
    { name: 'same content', other: { ...base }, equal: true },
    { name: 'id and version are not compared', other: { ...base, id: 'other', version: 'Mg' }, equal: true },
    { name: 'failover changes the internal endpoint', other: { ...base, internalEndpoint: '10.0.0.2:1' }, equal: false },
    { name: 'edited mount endpoint label', other: { ...base, externalEndpoint: '' }, equal: false },
    { name: 'service name', other: { ...base, serviceName: 'x' }, equal: false },
    { name: 'pvc name', other: { ...base, pvcName: 'x' }, equal: false },
    { name: 'namespace', other: { ...base, namespace: 'x' }, equal: false },
  ];
  for (const c of cases) it(c.name, () => assert.equal(sharedVolumeIsEqual(base, c.other), c.equal));
});

describe('event triggers', () => {
  const request = (kind: ReconcileRequest['kind'], type: ReconcileRequest['event']['type'], key: string, object?: Record<string, unknown>): ReconcileRequest => ({
    cluster: 'local',
    kind,
    key,
    event: { v: 1, cluster: 'local', kind, type, key, uid: 'u', resourceVersion: '1', observedAt: new Date(0).toISOString(), ...(object ? { object } : {}) },
  });
  const selects = (r: ReconcileRequest, v: SharedVolume): boolean | 'all' | 'none' => {
    const t = triggerFor(r);
    if (t === undefined) return 'none';
    return t.all ? 'all' : t.select(v);
  };
  const cases: { name: string; request: ReconcileRequest; want: boolean | 'all' | 'none' }[] = [
    { name: 'RWX claim of the volume', request: request('PersistentVolumeClaim', 'MODIFIED', 'app/data', { spec: { accessModes: ['ReadWriteMany'] } }), want: true },
    { name: 'another claim', request: request('PersistentVolumeClaim', 'ADDED', 'app/other'), want: false },
    { name: 'RWO claim', request: request('PersistentVolumeClaim', 'ADDED', 'app/data', { spec: { accessModes: ['ReadWriteOnce'] } }), want: 'none' },
    { name: 'claim deleted (GC owns it)', request: request('PersistentVolumeClaim', 'DELETED', 'app/data'), want: 'none' },
    { name: 'attachment of the PV', request: request('VolumeAttachment', 'ADDED', 'csi-1', { spec: { source: { persistentVolumeName: 'pvc-123' } } }), want: true },
    { name: 'attachment without object', request: request('VolumeAttachment', 'MODIFIED', 'csi-1'), want: 'all' },
    { name: 'Service deleted', request: request('Service', 'DELETED', 'app/pvc-123'), want: true },
    { name: 'Endpoints deleted, by volume-id label', request: request('Endpoints', 'DELETED', 'app/renamed', { metadata: { labels: { 'storageos.com/volume-id': 'vol-1' } } }), want: true },
    { name: 'our own Service create is ignored', request: request('Service', 'ADDED', 'app/pvc-123'), want: 'none' },
    { name: 'Service relist', request: request('Service', 'SYNC', 'app/pvc-123'), want: true },
  ];
  for (const c of cases) it(c.name, () => assert.equal(selects(c.request, shared()), c.want));
});
