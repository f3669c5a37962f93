import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isBoundClaim, isUnprovisioned, isUnreleased, isUnshared, messageAttributes, messageDeduplicationId, MESSAGE_VERSION, type ClusterEvent } from '../../../lib/runtime/message.ts';
import { triggerFor } from '../../../lib/shared-volume/triggers.ts';
import { planVolumeSync } from '../../../lib/provisioner/volume.ts';

const event = (partial: Partial<ClusterEvent>): ClusterEvent => ({
  v: MESSAGE_VERSION,
  cluster: 'east',
  kind: 'PersistentVolume',
  type: 'MODIFIED',
  key: 'pv-1',
  uid: 'u-1',
  resourceVersion: '7',
  observedAt: '2026-01-01T00:00:00.000Z',
  ...partial,
});

describe('messageDeduplicationId', () => {
  const differ: Array<[string, ClusterEvent, ClusterEvent]> = [
    ['two clusters, empty uid, same key', event({ uid: '', cluster: 'east' }), event({ uid: '', cluster: 'west' })],
    ['two clusters, same uid (a restored backup)', event({ cluster: 'east' }), event({ cluster: 'west' })],
    ['two clusters, REQUEUE with the same nonce', event({ uid: '', type: 'REQUEUE', cluster: 'east', controller: 'binder' }), event({ uid: '', type: 'REQUEUE', cluster: 'west', controller: 'binder' })],
    ['same object, another resourceVersion', event({ resourceVersion: '7' }), event({ resourceVersion: '8' })],
    ['same observation, another type', event({ type: 'MODIFIED' }), event({ type: 'SYNC' })],
  ];
  for (const [name, a, b] of differ) {
    test(`differs: ${name}`, () => assert.notEqual(messageDeduplicationId(a, 'n'), messageDeduplicationId(b, 'n')));
  }

  test('a replay of the same observation collapses (same id), whatever its observedAt', () => {
    assert.equal(messageDeduplicationId(event({})), messageDeduplicationId(event({ observedAt: '2026-01-02T00:00:00.000Z' })));
  });

  test('stays within the FIFO limits for the longest cluster and key', () => {
    const id = messageDeduplicationId(event({ cluster: 'c'.repeat(40), uid: '', key: `${'n'.repeat(63)}/${'x'.repeat(253)}`, type: 'REQUEUE', controller: 'provisioner' }), 'nonce');
    assert.ok(id.length <= 128);
    assert.match(id, /^[\x21-\x7e]+$/);
  });
});

describe('boundClaim: the provisioner\u2019s subscription leaves out changes of claims bound to a volume', () => {
  const claim = (phase: string | undefined, volumeName: string | undefined, deleting = false) => ({
    metadata: { name: 'c', namespace: 'ns', ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec: { ...(volumeName !== undefined ? { volumeName } : {}) },
    ...(phase ? { status: { phase } } : {}),
  });
  const pvc = (partial: Partial<ClusterEvent>) => event({ kind: 'PersistentVolumeClaim', key: 'ns/c', ...partial });
  const table: Array<[string, ClusterEvent, boolean]> = [
    ['a Bound claim changed', pvc({ object: claim('Bound', 'pv-1') }), true],
    ['a Bound claim added (relist, restore)', pvc({ type: 'ADDED', object: claim('Bound', 'pv-1') }), true],
    ['a Bound claim seen on a relist', pvc({ type: 'SYNC', object: claim('Bound', 'pv-1') }), true],
    ['the binder\u2019s bind, still Pending (spec.volumeName set)', pvc({ object: claim('Pending', 'pv-1') }), true],
    ['a claim created pre-bound to a volume', pvc({ type: 'ADDED', object: claim(undefined, 'pv-static') }), true],
    ['a Lost claim (its volume gone)', pvc({ object: claim('Lost', 'pv-1') }), true],
    ['a Pending claim', pvc({ object: claim('Pending', undefined) }), false],
    ['a Pending claim with an empty volumeName', pvc({ object: claim('Pending', '') }), false],
    ['a claim with no status yet', pvc({ object: claim(undefined, undefined) }), false],
    ['a Bound claim being deleted (its DELETED does the in-progress cleanup)', pvc({ object: claim('Bound', 'pv-1', true) }), true],
    ['a Pending claim being deleted', pvc({ object: claim('Pending', undefined, true) }), false],
    ['a Bound claim deleted', pvc({ type: 'DELETED', object: claim('Bound', 'pv-1') }), false],
    ['a requeue', pvc({ type: 'REQUEUE', object: claim('Bound', 'pv-1') }), false],
    ['a message without its object (too large)', pvc({}), false],
    ['a Bound volume', event({ object: { metadata: { name: 'pv-1' }, spec: { claimRef: { name: 'c' } }, status: { phase: 'Bound' } } }), false],
  ];
  for (const [name, e, bound] of table) {
    test(name, () => {
      assert.equal(isBoundClaim(e), bound);
      assert.equal(messageAttributes(e).boundClaim?.StringValue, bound ? 'true' : undefined);
    });
  }
});

describe('unprovisioned: the provisioner\u2019s subscription leaves out static claims and volumes, and volumes deleting without its finalizer', () => {
  const claim = (annotations?: Record<string, string>) => ({ metadata: { name: 'c', namespace: 'ns', ...(annotations ? { annotations } : {}) }, spec: {} });
  const volume = (annotations?: Record<string, string>, csi = false) => ({
    metadata: { name: 'pv-1', ...(annotations ? { annotations } : {}) },
    spec: csi ? { csi: { driver: 'csi.storageos.com', volumeHandle: 'v' } } : { hostPath: { path: '/x' } },
  });
  const pvc = (partial: Partial<ClusterEvent>) => event({ kind: 'PersistentVolumeClaim', key: 'ns/c', ...partial });
  const pv = (partial: Partial<ClusterEvent>) => event({ kind: 'PersistentVolume', key: 'pv-1', ...partial });
  const table: Array<[string, ClusterEvent, boolean]> = [
    ['a claim no provisioner was asked for', pvc({ object: claim() }), true],
    ['... added, or seen on a relist', pvc({ type: 'ADDED', object: claim({ other: 'x' }) }), true],
    ['... on a relist', pvc({ type: 'SYNC', object: claim() }), true],
    ['a claim handed to a provisioner', pvc({ object: claim({ 'volume.kubernetes.io/storage-provisioner': 'storageos' }) }), false],
    ['... by the beta annotation', pvc({ object: claim({ 'volume.beta.kubernetes.io/storage-provisioner': 'storageos' }) }), false],
    ['... even an empty one (the provisioner decides)', pvc({ object: claim({ 'volume.kubernetes.io/storage-provisioner': '' }) }), false],
    ['a static claim deleted', pvc({ type: 'DELETED', object: claim() }), false],
    ['a requeue', pvc({ type: 'REQUEUE', object: claim() }), false],
    ['a claim message without its object (too large)', pvc({}), false],
    ['a static volume', pv({ object: volume() }), true],
    ['a provisioned volume', pv({ object: volume({ 'pv.kubernetes.io/provisioned-by': 'storageos' }) }), false],
    ['a migrated volume', pv({ object: volume({ 'pv.kubernetes.io/migrated-to': 'csi.storageos.com' }) }), false],
    ['a static CSI volume (its driver may be ours)', pv({ object: volume(undefined, true) }), false],
    ['a static volume deleted', pv({ type: 'DELETED', object: volume() }), false],
    ['a provisioned volume being deleted (the provisioner\'s own DELETE coming back)',
      pv({ object: { ...volume({ 'pv.kubernetes.io/provisioned-by': 'storageos' }), metadata: { name: 'pv-1', annotations: { 'pv.kubernetes.io/provisioned-by': 'storageos' }, deletionTimestamp: 'now', finalizers: ['kubernetes.io/pv-protection'] } } }), true],
    ['... still carrying the provisioner\'s finalizer (it removes it)',
      pv({ object: { ...volume({ 'pv.kubernetes.io/provisioned-by': 'storageos' }), metadata: { name: 'pv-1', annotations: { 'pv.kubernetes.io/provisioned-by': 'storageos' }, deletionTimestamp: 'now', finalizers: ['external-provisioner.volume.kubernetes.io/finalizer'] } } }), false],
    ['... gone', pv({ type: 'DELETED', object: { ...volume({ 'pv.kubernetes.io/provisioned-by': 'storageos' }), metadata: { name: 'pv-1', annotations: { 'pv.kubernetes.io/provisioned-by': 'storageos' }, deletionTimestamp: 'now' } } }), false],
    ['a StorageClass', event({ kind: 'StorageClass', key: 'fast', object: { metadata: { name: 'fast' } } }), false],
  ];
  for (const [name, e, unprovisioned] of table) {
    test(name, () => {
      assert.equal(isUnprovisioned(e), unprovisioned);
      assert.equal(messageAttributes(e).unprovisioned?.StringValue, unprovisioned ? 'true' : undefined);
    });
  }
});

describe('unshared: the shared-volume subscription leaves out what its controller does nothing for', () => {
  const claim = (modes?: string[]) => ({ metadata: { name: 'c', namespace: 'ns' }, spec: modes ? { accessModes: modes } : {} });
  const pvc = (partial: Partial<ClusterEvent>) => event({ kind: 'PersistentVolumeClaim', key: 'ns/c', ...partial });
  const of = (kind: ClusterEvent['kind'], type: ClusterEvent['type'], object?: Record<string, unknown>) => event({ kind, key: 'ns/x', type, ...(object ? { object } : {}) });
  const table: Array<[string, ClusterEvent, boolean]> = [
    ['a ReadWriteOnce claim changed', pvc({ object: claim(['ReadWriteOnce']) }), true],
    ['... added', pvc({ type: 'ADDED', object: claim(['ReadWriteOnce', 'ReadOnlyMany']) }), true],
    ['... relisted', pvc({ type: 'SYNC', object: claim(['ReadWriteOnce']) }), true],
    ['a ReadWriteMany claim changed', pvc({ object: claim(['ReadWriteMany']) }), false],
    ['... among other modes', pvc({ type: 'ADDED', object: claim(['ReadWriteOnce', 'ReadWriteMany']) }), false],
    ['a claim whose modes the message does not say', pvc({ object: claim() }), false],
    ['a claim message without its object (too large)', pvc({}), false],
    ['a claim deleted', pvc({ type: 'DELETED', object: claim(['ReadWriteMany']) }), true],
    ['a claim requeued', pvc({ type: 'REQUEUE' }), false],
    ['a Service added (its own write)', of('Service', 'ADDED', { metadata: { name: 'x' } }), true],
    ['an Endpoints changed', of('Endpoints', 'MODIFIED', { metadata: { name: 'x' } }), true],
    ['a Service deleted (recreate it)', of('Service', 'DELETED', { metadata: { name: 'x' } }), false],
    ['an Endpoints relisted', of('Endpoints', 'SYNC', { metadata: { name: 'x' } }), false],
    ['a VolumeAttachment added', of('VolumeAttachment', 'ADDED', { metadata: { name: 'x' }, spec: { source: { persistentVolumeName: 'pv' } } }), false],
    ['a VolumeAttachment deleted', of('VolumeAttachment', 'DELETED', { metadata: { name: 'x' } }), true],
    ['a volume (not its kind)', of('PersistentVolume', 'MODIFIED', { metadata: { name: 'x' } }), false],
  ];
  for (const [name, e, unshared] of table) {
    test(name, () => {
      assert.equal(isUnshared(e), unshared);
      assert.equal(messageAttributes(e).unshared?.StringValue, unshared ? 'true' : undefined);
      // Safe by construction: whatever is left out, the controller would have done nothing for.
      if (unshared) assert.equal(triggerFor({ cluster: e.cluster, kind: e.kind, key: e.key, event: e } as never), undefined);
    });
  }
});

describe('unreleased: the provisioner\u2019s subscription (AddFinalizer off) leaves out volume changes it does nothing for', () => {
  const FINALIZER = 'external-provisioner.volume.kubernetes.io/finalizer';
  const volume = (phase: string | undefined, extra: { finalizers?: string[]; deleting?: boolean; policy?: string } = {}) => ({
    metadata: {
      name: 'pv-1',
      annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' },
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
      ...(extra.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { persistentVolumeReclaimPolicy: extra.policy ?? 'Delete', claimRef: { namespace: 'ns', name: 'c', uid: 'u' } },
    ...(phase ? { status: { phase } } : {}),
  });
  const pv = (partial: Partial<ClusterEvent>) => event({ kind: 'PersistentVolume', key: 'pv-1', ...partial });
  const table: Array<[string, ClusterEvent, boolean]> = [
    ['created, no status yet', pv({ type: 'ADDED', object: volume(undefined) }), true],
    ['Pending', pv({ object: volume('Pending') }), true],
    ['Available', pv({ object: volume('Available') }), true],
    ['Bound (the binder\u2019s status write)', pv({ object: volume('Bound') }), true],
    ['Bound, Retain', pv({ object: volume('Bound', { policy: 'Retain' }) }), true],
    ['Failed', pv({ object: volume('Failed') }), true],
    ['Bound, seen on a relist', pv({ type: 'SYNC', object: volume('Bound') }), true],
    ['Released: to be deleted', pv({ object: volume('Released') }), false],
    ['Released, Retain', pv({ object: volume('Released', { policy: 'Retain' }) }), false],
    ['Bound with our finalizer (to be removed with AddFinalizer off)', pv({ object: volume('Bound', { finalizers: [FINALIZER] }) }), false],
    ['being deleted', pv({ object: volume('Bound', { deleting: true }) }), false],
    ['deleted', pv({ type: 'DELETED', object: volume('Bound') }), false],
    ['a requeue', pv({ type: 'REQUEUE', object: volume('Bound') }), false],
    ['a message without its object (too large)', pv({}), false],
    ['a Pending claim', event({ kind: 'PersistentVolumeClaim', key: 'ns/c', object: { metadata: { name: 'c' }, spec: {}, status: { phase: 'Pending' } } }), false],
  ];
  const off = { provisionerName: 'example.com/p', additionalProvisionerNames: [], addFinalizer: false };
  const on = { ...off, addFinalizer: true };
  const provisioner = { provision: async () => ({ state: 'Finished' as const }), delete: async () => {} };
  for (const [name, e, unreleased] of table) {
    test(name, () => {
      assert.equal(isUnreleased(e), unreleased);
      assert.equal(messageAttributes(e).unreleased?.StringValue, unreleased ? 'true' : undefined);
      if (!unreleased) return;
      // Safe by construction: with AddFinalizer off, the provisioner's volume sync plans nothing for it.
      const plan = planVolumeSync(off, provisioner as never, { signal: new AbortController().signal } as never, e.object as never);
      assert.deepEqual([plan.finalizers, plan.delete], [undefined, false]);
    });
  }
  test('with AddFinalizer on, a Bound volume it marks needs the finalizer: that is why the filter is off then', () => {
    const plan = planVolumeSync(on, provisioner as never, { signal: new AbortController().signal } as never, volume('Bound') as never);
    assert.deepEqual(plan.finalizers, [FINALIZER]);
    assert.equal(isUnreleased(pv({ object: volume('Bound') })), true);
  });
});
