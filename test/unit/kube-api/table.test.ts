// kubectl's HumanDuration (apimachinery util/duration) and the printers' cells.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { humanDuration } from '../../../infra/local/kube-api/kinds/common/table.ts';
import { KINDS } from '../../../infra/local/kube-api/kinds/index.ts';

const s = 1000, m = 60 * s, h = 60 * m, d = 24 * h;

describe('kube-api tables', () => {
  const cases: Array<[number, string]> = [
    [-5 * s, '<invalid>'], [-1500, '0s'], [0, '0s'], [59 * s, '59s'], [119 * s, '119s'], [2 * m, '2m'], [3 * m + 20 * s, '3m20s'],
    [10 * m, '10m'], [179 * m, '179m'], [3 * h, '3h'], [4 * h + 5 * m, '4h5m'], [8 * h, '8h'], [47 * h, '47h'], [2 * d, '2d'],
    [3 * d + 2 * h, '3d2h'], [8 * d, '8d'], [400 * d, '400d'], [730 * d, '2y'], [740 * d, '2y10d'], [9 * 365 * d, '9y'],
  ];
  for (const [ms, want] of cases) it(`HumanDuration(${ms}ms) = ${want}`, () => assert.equal(humanDuration(ms), want));

  it('every printed kind has one cell per column', () => {
    const now = new Date('2026-01-01T00:10:00Z');
    for (const spec of KINDS) {
      if (!spec.table) continue;
      const row = spec.table.row({ metadata: { name: 'x', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' } }, now);
      assert.equal(row.length, spec.table.columns.length, spec.plural);
    }
  });

  it('prints PV, PVC, StorageClass and Service rows as kubectl does', () => {
    const now = new Date('2026-01-01T01:00:00Z');
    const created = '2026-01-01T00:00:00Z';
    const byPlural = (p: string) => KINDS.find((k) => k.plural === p && k.group !== 'events.k8s.io')!.table!;
    const pv = byPlural('persistentvolumes').row({ metadata: { name: 'pv1', creationTimestamp: created }, spec: {
      capacity: { storage: '1Gi' }, accessModes: ['ReadWriteMany', 'ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete',
      claimRef: { namespace: 'ns', name: 'c' }, storageClassName: 'fast', volumeMode: 'Filesystem' }, status: { phase: 'Bound' } }, now);
    assert.deepEqual(pv, ['pv1', '1Gi', 'RWO,RWX', 'Delete', 'Bound', 'ns/c', 'fast', '<unset>', '', '60m', 'Filesystem']);
    const pvc = byPlural('persistentvolumeclaims').row({ metadata: { name: 'c', creationTimestamp: created, deletionTimestamp: created },
      spec: { volumeName: 'pv1', storageClassName: 'fast' }, status: { phase: 'Bound', capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] } }, now);
    assert.deepEqual(pvc, ['c', 'Terminating', 'pv1', '1Gi', 'RWO', 'fast', '<unset>', '60m', '<unset>']);
    const sc = byPlural('storageclasses').row({ metadata: { name: 'std', creationTimestamp: created,
      annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }, provisioner: 'p.io' }, now);
    assert.deepEqual(sc, ['std (default)', 'p.io', 'Delete', 'Immediate', false, '60m']);
    const svc = byPlural('services').row({ metadata: { name: 's', creationTimestamp: created }, spec: { type: 'NodePort',
      clusterIPs: ['10.96.0.9'], ports: [{ port: 80, nodePort: 30080, protocol: 'TCP' }, { port: 53, protocol: 'UDP' }], selector: { b: '2', a: '1' } } }, now);
    assert.deepEqual(svc, ['s', 'NodePort', '10.96.0.9', '<none>', '80:30080/TCP,53/UDP', '60m', 'a=1,b=2']);
  });

  it('prints Endpoints, Node and Event rows as kubectl does', () => {
    const now = new Date('2026-01-01T01:00:00Z');
    const created = '2026-01-01T00:00:00Z';
    const byPlural = (p: string) => KINDS.find((k) => k.plural === p && k.group === '')!.table!;
    const ep = byPlural('endpoints');
    const meta = { name: 'e', creationTimestamp: created };
    assert.equal(ep.row({ metadata: meta }, now)[1], '<none>');
    assert.equal(ep.row({ metadata: meta, subsets: [{ ports: [{ port: 80 }] }] }, now)[1], '');
    assert.equal(ep.row({ metadata: meta, subsets: [{ addresses: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }], ports: [{ port: 80 }, { port: 443 }] }] }, now)[1],
      '10.0.0.1:80,[fd00::1]:80,10.0.0.1:443 + 1 more...');
    const node = byPlural('nodes');
    const n = (cond: string | undefined, unschedulable = false) => node.row({ metadata: { ...meta, labels: { 'node-role.kubernetes.io/control-plane': '', 'kubernetes.io/role': 'edge' } },
      spec: { unschedulable }, status: { ...(cond ? { conditions: [{ type: 'Ready', status: cond }] } : {}), nodeInfo: { kubeletVersion: 'v1.30.0' },
        addresses: [{ type: 'InternalIP', address: '192.168.1.5' }] } }, now);
    assert.deepEqual(n('True'), ['e', 'Ready', 'control-plane,edge', '60m', 'v1.30.0', '192.168.1.5', '<none>', '<unknown>', '<unknown>', '<unknown>']);
    assert.equal(n('Unknown', true)[1], 'NotReady,SchedulingDisabled');
    assert.equal(n(undefined)[1], 'Unknown');
    const ev = byPlural('events').row({ metadata: { name: 'pvc.1', creationTimestamp: created }, type: 'Warning', reason: 'ProvisioningFailed',
      involvedObject: { kind: 'PersistentVolumeClaim', name: 'c' }, message: ' no capacity ', firstTimestamp: '2026-01-01T00:30:00Z',
      lastTimestamp: '2026-01-01T00:59:00Z', count: 4, source: { component: 'provisioner', host: 'h1' } }, now);
    assert.deepEqual(ev, ['60s', 'Warning', 'ProvisioningFailed', 'persistentvolumeclaim/c', '', 'provisioner, h1', 'no capacity', '30m', 4, 'pvc.1']);
  });
});
