// The cache's index table (moved from test/state/cache.test.ts with the indexer, expectations unchanged),
// and the storage-class precedence the pending-claim and volume-match indexes follow (upstream's
// GetPersistentVolumeClaimClass / GetPersistentVolumeClass: the beta annotation first).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { indexAttributes } from '../../../lib/kube/cache-index.ts';
import { getPersistentVolumeClaimClass } from '../../../lib/kube/objects.ts';
import type { CacheableObject } from '../../../lib/state/cache.ts';
import { padBytes } from '../../../lib/state/schema.ts';
import { claim, PV, PVC, volume } from '../../support/cache-objects.ts';

describe('indexAttributes', () => {
  const GiB = 1073741824n;
  const table: Array<{ name: string; kind: string; object: CacheableObject; expected: Record<string, string> }> = [
    { name: 'available PV', kind: PV, object: volume('pv1', 1, { cls: 'gold', phase: 'Available', modes: ['ReadWriteOnce', 'ReadOnlyMany'] }),
      expected: { matchPk: 'c1#gold#ReadOnlyMany,ReadWriteOnce', matchSk: `${padBytes(GiB)}#pv1` } },
    { name: 'pending PV without class', kind: PV, object: volume('pv2', 1, { phase: 'Pending', size: '500M' }),
      expected: { matchPk: 'c1##ReadWriteOnce', matchSk: `${padBytes(500000000n)}#pv2` } },
    { name: 'PV with unset phase', kind: PV, object: volume('pv3', 1), expected: { matchPk: 'c1##ReadWriteOnce', matchSk: `${padBytes(GiB)}#pv3` } },
    { name: 'released PV', kind: PV, object: volume('pv4', 1, { phase: 'Released' }), expected: { resyncPk: 'c1#PersistentVolume' } },
    { name: 'failed PV still naming its claim', kind: PV, object: volume('pv8', 1, { phase: 'Failed', claim: 'c' }),
      expected: { claimRefPk: 'c1#ns/c', resyncPk: 'c1#PersistentVolume' } },
    { name: 'deleting PV', kind: PV, object: volume('pv5', 1, { phase: 'Available', deleting: true }), expected: {} },
    { name: 'bound PV', kind: PV, object: volume('pv6', 1, { phase: 'Bound', claim: 'c' }), expected: { claimRefPk: 'c1#ns/c' } },
    { name: 'available PV naming its claim\'s uid (a bind whose status write failed): the resync revisits it', kind: PV, object: volume('pv7', 1, { phase: 'Available', claim: 'c' }),
      expected: { claimRefPk: 'c1#ns/c', resyncPk: 'c1#PersistentVolume' } },
    { name: 'pre-bound available PV, by name only (waiting for its claim)', kind: PV,
      object: { ...volume('pv7b', 1, { phase: 'Available' }), spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], claimRef: { namespace: 'ns', name: 'c' } } },
      expected: { claimRefPk: 'c1#ns/c' } },
    { name: 'bound PV without claimRef (an unbind whose status write failed): the resync revisits it', kind: PV, object: volume('pv11', 1, { phase: 'Bound' }),
      expected: { resyncPk: 'c1#PersistentVolume' } },
    { name: 'claimed PV not Bound yet (its claim may be gone): the resync revisits it', kind: PV, object: volume('pv9', 1, { phase: 'Pending', claim: 'c' }),
      expected: { claimRefPk: 'c1#ns/c', resyncPk: 'c1#PersistentVolume' } },
    { name: 'claimed PV with unset phase', kind: PV, object: volume('pv10', 1, { claim: 'c' }), expected: { claimRefPk: 'c1#ns/c', resyncPk: 'c1#PersistentVolume' } },
    { name: 'unbound claim', kind: PVC, object: claim('a', 1, { cls: 'gold', size: '2Gi' }),
      expected: { pendingPk: 'c1#gold', pendingSk: `${padBytes(2n * GiB)}#ns/a`, resyncPk: 'c1#PersistentVolumeClaim' } },
    { name: 'claim with beta annotation', kind: PVC, object: claim('b', 1, { beta: 'silver', cls: 'gold' }),
      expected: { pendingPk: 'c1#silver', pendingSk: `${padBytes(GiB)}#ns/b`, resyncPk: 'c1#PersistentVolumeClaim' } },
    { name: 'claim without class', kind: PVC, object: claim('c', 1), expected: { pendingPk: 'c1#', pendingSk: `${padBytes(GiB)}#ns/c`, resyncPk: 'c1#PersistentVolumeClaim' } },
    { name: 'pre-bound claim, still Pending', kind: PVC, object: claim('d', 1, { volumeName: 'pv1' }), expected: { resyncPk: 'c1#PersistentVolumeClaim' } },
    { name: 'bound claim', kind: PVC, object: { ...claim('d2', 1, { volumeName: 'pv1' }), status: { phase: 'Bound' } }, expected: {} },
    { name: 'lost claim', kind: PVC, object: { ...claim('d3', 1, { volumeName: 'pv1' }), status: { phase: 'Lost' } }, expected: {} },
    { name: 'deleting pending claim', kind: PVC, object: claim('e', 1, { deleting: true }), expected: { resyncPk: 'c1#PersistentVolumeClaim' } },
    { name: 'node', kind: 'Node', object: { metadata: { name: 'n1', resourceVersion: '1' } }, expected: {} },
    { name: 'attachment of a PV: filtered by its source', kind: 'VolumeAttachment',
      object: { metadata: { name: 'csi-1', resourceVersion: '1' }, spec: { attacher: 'x', nodeName: 'n1', source: { persistentVolumeName: 'pv1' } } },
      expected: { vaSource: 'pv1' } },
    { name: 'attachment of an inline volume: a source no PV has', kind: 'VolumeAttachment',
      object: { metadata: { name: 'csi-2', resourceVersion: '1' }, spec: { attacher: 'x', nodeName: 'n1', source: { inlineVolumeSpec: {} } } },
      expected: { vaSource: '#none' } },
    { name: 'attachment with no spec', kind: 'VolumeAttachment', object: { metadata: { name: 'csi-3', resourceVersion: '1' } }, expected: { vaSource: '#none' } },
  ];
  for (const row of table) {
    it(row.name, () => assert.deepEqual(indexAttributes('c1', row.kind, row.object), row.expected));
  }
});

describe('storage class precedence in the indexes', () => {
  const GiB = padBytes(1073741824n);
  it('a present beta annotation wins over spec.storageClassName, even empty', () => {
    assert.deepEqual(indexAttributes('c1', PVC, claim('f', 1, { beta: '', cls: 'gold' })),
      { pendingPk: 'c1#', pendingSk: `${GiB}#ns/f`, resyncPk: 'c1#PersistentVolumeClaim' });
    assert.equal(getPersistentVolumeClaimClass({ metadata: { annotations: { 'volume.beta.kubernetes.io/storage-class': '' } }, spec: { storageClassName: 'gold' } }), '');
  });
  it('the annotation alone names the class', () => {
    assert.equal(indexAttributes('c1', PVC, claim('g', 1, { beta: 'silver' })).pendingPk, 'c1#silver');
  });
  it('a claim or volume missing spec or metadata still indexes, classless', () => {
    assert.equal(getPersistentVolumeClaimClass({}), '');
    assert.deepEqual(indexAttributes('c1', PVC, { metadata: { name: 'h', namespace: 'ns', resourceVersion: '1' } }),
      { pendingPk: 'c1#', pendingSk: `${padBytes(0n)}#ns/h`, resyncPk: 'c1#PersistentVolumeClaim' });
    assert.deepEqual(indexAttributes('c1', PV, { spec: { capacity: { storage: 'bogus' } } }), { matchPk: 'c1##', matchSk: `${padBytes(0n)}#` });
  });
  it('a volume’s beta annotation wins over its spec.storageClassName', () => {
    const pv = volume('pv11', 1, { cls: 'gold', phase: 'Available' });
    pv.metadata = { ...pv.metadata, annotations: { 'volume.beta.kubernetes.io/storage-class': 'silver' } };
    assert.equal(indexAttributes('c1', PV, pv).matchPk, 'c1#silver#ReadWriteOnce');
  });
});
