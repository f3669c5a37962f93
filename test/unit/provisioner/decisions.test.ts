/**
 * Upstream's small decision tables (`TestShouldProvision`, `TestShouldDelete`, `TestIsProvisionerForVolume`,
 * `TestShouldDeleteWithFinalizer`, `TestRemoveFinalizer`, `TestAddFinalizer`, `TestCanProvision`,
 * `TestTopologyParams`, `TestInfeasibleRetry`) ported against the pure core, plus rows for the quirks the
 * reference lists (GA annotation shadows beta, beta class annotation, DeletionGuard, Reschedule without
 * a selected node, store cleanup).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  afterProvision, canProvision, isProvisioningCandidate, planClaimSync, shouldProvision, type ClaimPlan,
} from '../../../lib/provisioner/claim.ts';
import { annAlphaSelectedNode, annBetaStorageProvisioner, annDynamicallyProvisioned, annMigratedTo, annSelectedNode, annStorageClass, annStorageProvisioner } from '../../../lib/provisioner/constants.ts';
import { DelayRetryError, InfeasibleError, StorageClassNotFoundError } from '../../../lib/provisioner/errors.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../../lib/kube/objects.ts';
import { BackoffStore, withBackoff } from '../../../lib/provisioner/store.ts';
import { syncClaim } from '../../../lib/provisioner/sync-claim.ts';
import type { Provisioner } from '../../../lib/provisioner/types.ts';
import { addFinalizer, isProvisionerForVolume, removeFinalizer, shouldDelete } from '../../../lib/provisioner/volume.ts';
import {
  config, finalizerPV, newClaim, newClaimWithVolumeMode, newCSIVolume, newStorageClass, newStorageClassWithVolumeBindingMode, newVolume,
  StateProvisioner, TestBlockProvisioner, TestGuardedProvisioner, TestProvisioner, TestQualifiedProvisioner, timestamp, World,
} from './fixtures.ts';

const ctx = { signal: new AbortController().signal };
const fb = 'foo.bar/baz';

describe('TestShouldProvision', () => {
  const rows: Array<{ name: string; provisionerName: string; additional?: string[]; provisioner?: Provisioner; cls?: StorageClass; claim: PersistentVolumeClaim; should: boolean; error?: boolean }> = [
    { name: 'should provision based on provisionerName', provisionerName: fb, cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', null), should: true },
    { name: 'should provision based on additionalProvisionerNames', provisionerName: 'csi.com/mock-csi', additional: [fb, 'foo.xyz/baz'], cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', null), should: true },
    { name: 'claim already bound', provisionerName: fb, cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', fb, 'foo', null), should: false },
    { name: 'no such class', provisionerName: fb, cls: undefined, claim: newClaim('claim-1', '1-1', 'class-2', '', '', null), should: false },
    { name: "not this provisioner's job", provisionerName: fb, cls: newStorageClass('class-1', 'abc.def/ghi'), claim: newClaim('claim-1', '1-1', 'class-1', 'abc.def/ghi', '', null), should: false },
    { name: 'unknown provisioner annotation 1.5', provisionerName: fb, cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [annBetaStorageProvisioner]: 'abc.def/ghi' }), should: false },
    { name: 'no provisioner annotation 1.5', provisionerName: fb, cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', '', '', null), should: false },
    { name: 'unknown provisioner annotation 1.23', provisionerName: fb, cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [annStorageProvisioner]: 'abc.def/ghi' }), should: false },
    { name: 'qualifier says no', provisionerName: fb, provisioner: new TestQualifiedProvisioner(false), cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', null), should: false },
    { name: 'qualifier says yes, should provision', provisionerName: fb, provisioner: new TestQualifiedProvisioner(true), cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', null), should: true },
    { name: 'if PVC is in delay binding mode, should not provision if annSelectedNode is not set', provisionerName: fb, cls: newStorageClassWithVolumeBindingMode('class-1', fb, 'WaitForFirstConsumer'), claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [annBetaStorageProvisioner]: fb }), should: false },
    { name: 'if PVC is in delay binding mode, should provision if annSelectedNode is set', provisionerName: fb, cls: newStorageClassWithVolumeBindingMode('class-1', fb, 'WaitForFirstConsumer'), claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [annBetaStorageProvisioner]: fb, [annSelectedNode]: 'node1' }), should: true },
    { name: 'if PVC is in delay binding mode, should provision if annSelectedNode is set with annStorageProvisioner', provisionerName: fb, cls: newStorageClassWithVolumeBindingMode('class-1', fb, 'WaitForFirstConsumer'), claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [annStorageProvisioner]: fb, [annSelectedNode]: 'node1' }), should: true },
    // Quirks from the reference (§4.3, §14).
    { name: 'GA annotation shadows the beta one (GA other, beta ours)', provisionerName: fb, cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', { [annStorageProvisioner]: 'other' }), should: false },
    { name: 'GA annotation present but empty still shadows beta', provisionerName: fb, cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', { [annStorageProvisioner]: '' }), should: false },
    { name: 'class missing from the cache is an error (retried)', provisionerName: fb, cls: undefined, claim: newClaim('claim-1', '1-1', 'class-1', fb, '', null), should: false, error: true },
    { name: 'WaitForFirstConsumer with an empty selected node', provisionerName: fb, cls: newStorageClassWithVolumeBindingMode('class-1', fb, 'WaitForFirstConsumer'), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', { [annSelectedNode]: '' }), should: false },
    { name: 'WaitForFirstConsumer does not consult the alpha selected-node key', provisionerName: fb, cls: newStorageClassWithVolumeBindingMode('class-1', fb, 'WaitForFirstConsumer'), claim: newClaim('claim-1', '1-1', 'class-1', fb, '', { [annAlphaSelectedNode]: 'node1' }), should: false },
  ];
  for (const row of rows) {
    it(row.name, () => {
      if (!isProvisioningCandidate(config(row.provisionerName, { additionalProvisionerNames: row.additional ?? [] }), row.claim)) {
        assert.equal(row.should, false, 'a claim that is not a candidate is never provisioned');
      }
      const got = shouldProvision(config(row.provisionerName, { additionalProvisionerNames: row.additional ?? [] }), row.provisioner ?? new TestProvisioner(), ctx, row.claim, row.cls);
      assert.equal(got.should, row.should);
      assert.equal(got.error !== undefined, row.error ?? false);
      if (got.error) assert.ok(got.error instanceof StorageClassNotFoundError && got.error.message === 'storageClass "class-1" not found');
    });
  }
});

describe('TestShouldDelete', () => {
  const rows: Array<{ name: string; provisionerName: string; volume: PersistentVolume; deletionTimestamp?: string; should: boolean; provisioner?: Provisioner }> = [
    { name: 'should delete', provisionerName: fb, volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: true },
    { name: "failed: shouldn't delete", provisionerName: fb, volume: newVolume('volume-1', 'Failed', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: false },
    { name: 'volume still bound', provisionerName: fb, volume: newVolume('volume-1', 'Bound', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: false },
    { name: 'non-delete reclaim policy', provisionerName: fb, volume: newVolume('volume-1', 'Released', 'Retain', { [annDynamicallyProvisioned]: fb }, null, null), should: false },
    { name: 'non-nil deletion timestamp', provisionerName: fb, volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), deletionTimestamp: timestamp, should: false },
    { name: 'nil deletion timestamp', provisionerName: fb, volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: true },
    { name: 'migrated to', provisionerName: 'csi.driver', volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb, [annMigratedTo]: 'csi.driver' }, null, null), should: true },
    { name: 'DeletionGuard says no', provisionerName: fb, provisioner: new TestGuardedProvisioner(false), volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: false },
    { name: 'DeletionGuard says yes', provisionerName: fb, provisioner: new TestGuardedProvisioner(true), volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: true },
  ];
  for (const row of rows) {
    it(row.name, () => {
      if (row.deletionTimestamp) row.volume.metadata.deletionTimestamp = row.deletionTimestamp;
      assert.equal(shouldDelete(config(row.provisionerName), row.provisioner ?? new TestProvisioner(), ctx, row.volume), row.should);
    });
  }
});

describe('TestIsProvisionerForVolume', () => {
  const rows: Array<{ name: string; provisionerName: string; volume: PersistentVolume; should: boolean }> = [
    { name: 'known dynamically provisioned in-tree volume', provisionerName: fb, volume: newVolume('volume-1', 'Available', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: true },
    { name: 'known dynamically provisioned in-tree migrated volume', provisionerName: fb, volume: newVolume('volume-1', 'Available', 'Delete', { [annDynamicallyProvisioned]: fb, [annMigratedTo]: fb }, null, null), should: true },
    { name: 'unknown dynamically provisioned in-tree volume', provisionerName: 'foo.bar1/baz1', volume: newVolume('volume-1', 'Available', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), should: false },
    { name: 'unknown dynamically provisioned in-tree migrated volume', provisionerName: 'foo.bar1/baz1', volume: newVolume('volume-1', 'Available', 'Delete', { [annDynamicallyProvisioned]: fb, [annMigratedTo]: fb }, null, null), should: false },
    { name: 'known dynamically provisioned csi volume', provisionerName: fb, volume: newCSIVolume('volume-1', 'Bound', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null, fb), should: true },
    { name: 'unknown dynamically provisioned csi volume', provisionerName: 'foo.bar1/baz1', volume: newCSIVolume('volume-1', 'Bound', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null, fb), should: false },
    { name: 'known statically provisioned csi volume', provisionerName: fb, volume: newCSIVolume('volume-1', 'Bound', 'Delete', null, null, null, fb), should: true },
    { name: 'unknown statically provisioned csi volume', provisionerName: 'foo.bar1/baz1', volume: newCSIVolume('volume-1', 'Bound', 'Delete', null, null, null, fb), should: false },
    { name: 'statically provisioned in-tree volume always return false', provisionerName: fb, volume: newVolume('volume-1', 'Available', 'Delete', null, null, null), should: false },
    { name: 'known statically provisioned in-tree migrate volume', provisionerName: fb, volume: newVolume('volume-1', 'Available', 'Delete', { [annMigratedTo]: fb }, null, null), should: true },
    { name: 'unknown statically provisioned in-tree migrate volume', provisionerName: 'foo.bar1/baz1', volume: newVolume('volume-1', 'Available', 'Delete', { [annMigratedTo]: fb }, null, null), should: false },
  ];
  for (const row of rows) {
    it(row.name, () => assert.equal(isProvisionerForVolume(config(row.provisionerName), row.volume), row.should));
  }
});

describe('TestShouldDeleteWithFinalizer', () => {
  const rows: Array<{ name: string; volume: PersistentVolume; deletionTimestamp?: string; should: boolean }> = [
    { name: 'should delete with finalizer present and no deletionTimestamp', volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, [finalizerPV], null), should: true },
    { name: 'should delete with finalizer present and with deletionTimestamp', volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, [finalizerPV], null), deletionTimestamp: timestamp, should: true },
    { name: 'should not delete when volume still bound and the finalizer exists with no deletionTimestamp', volume: newVolume('volume-1', 'Bound', 'Delete', { [annDynamicallyProvisioned]: fb }, [finalizerPV], null), should: false },
    { name: 'should not delete for non-delete reclaim policy', volume: newVolume('volume-1', 'Released', 'Retain', { [annDynamicallyProvisioned]: fb }, [], null), should: false },
    { name: 'should not delete a Terminating volume whose finalizer is gone', volume: newVolume('volume-1', 'Released', 'Delete', { [annDynamicallyProvisioned]: fb }, null, null), deletionTimestamp: timestamp, should: false },
  ];
  for (const row of rows) {
    it(row.name, () => {
      if (row.deletionTimestamp) row.volume.metadata.deletionTimestamp = row.deletionTimestamp;
      assert.equal(shouldDelete(config(fb, { addFinalizer: true }), new TestProvisioner(), ctx, row.volume), row.should);
    });
  }
});

describe('TestRemoveFinalizer', () => {
  const rows: Array<{ name: string; finalizers: string[] | undefined; expected: string[] | undefined; modified: boolean }> = [
    { name: 'ensure the finalizer removal returns nil finalizers and modified', finalizers: [finalizerPV], expected: undefined, modified: true },
    { name: 'if finalizer does not exist then it should not be modified', finalizers: ['dummy'], expected: ['dummy'], modified: false },
    { name: 'remove only the finalizerToAdd from multiple finalizers', finalizers: ['dummy', finalizerPV], expected: ['dummy'], modified: true },
    { name: 'no modified if the original finalizer is empty', finalizers: [], expected: undefined, modified: false },
    { name: 'remove from nil finalizer', finalizers: undefined, expected: undefined, modified: false },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const original = row.finalizers && [...row.finalizers];
      const got = removeFinalizer(row.finalizers, finalizerPV);
      assert.equal(got.modified, row.modified);
      assert.deepEqual(got.finalizers, row.expected);
      assert.deepEqual(row.finalizers, original, 'the input is not mutated');
    });
  }
});

describe('TestAddFinalizer', () => {
  const rows: Array<{ name: string; finalizers: string[] | undefined; expected: string[]; modified: boolean }> = [
    { name: 'if finalizer already exists then no modification needed', finalizers: [finalizerPV], expected: [finalizerPV], modified: false },
    { name: 'if original finalizer is nil then return with finalizer to add', finalizers: undefined, expected: [finalizerPV], modified: true },
    { name: 'if original finalizer is empty then return with finalizer to add', finalizers: [], expected: [finalizerPV], modified: true },
    { name: 'ensure finalizers are appended to existing finalizer', finalizers: ['dummy'], expected: ['dummy', finalizerPV], modified: true },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const got = addFinalizer(row.finalizers, finalizerPV);
      assert.equal(got.modified, row.modified);
      assert.deepEqual(got.finalizers, row.expected);
    });
  }
});

describe('TestCanProvision', () => {
  const blockErr = `${fb} does not support block volume provisioning`;
  const rows: Array<{ name: string; provisioner: Provisioner; mode?: 'Filesystem' | 'Block'; expected?: string }> = [
    { name: 'Undefined volumeMode PV request to provisioner w/o BlockProvisoner I/F', provisioner: new TestProvisioner() },
    { name: 'FileSystem volumeMode PV request to provisioner w/o BlockProvisoner I/F', provisioner: new TestProvisioner(), mode: 'Filesystem' },
    { name: 'Block volumeMode PV request to provisioner w/o BlockProvisoner I/F', provisioner: new TestProvisioner(), mode: 'Block', expected: blockErr },
    { name: 'Undefined volumeMode PV request to BlockProvisoner that returns false', provisioner: new TestBlockProvisioner(false) },
    { name: 'FileSystem volumeMode PV request to BlockProvisoner that returns false', provisioner: new TestBlockProvisioner(false), mode: 'Filesystem' },
    { name: 'Block volumeMode PV request to BlockProvisoner that returns false', provisioner: new TestBlockProvisioner(false), mode: 'Block', expected: blockErr },
    { name: 'Undefined volumeMode PV request to BlockProvisoner that returns true', provisioner: new TestBlockProvisioner(true) },
    { name: 'FileSystem volumeMode PV request to BlockProvisoner that returns true', provisioner: new TestBlockProvisioner(true), mode: 'Filesystem' },
    { name: 'Block volumeMode PV request to BlockProvisioner that returns true', provisioner: new TestBlockProvisioner(true), mode: 'Block' },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const claim = row.mode ? newClaimWithVolumeMode('claim-1', '1-1', 'class-1', fb, '', null, row.mode) : newClaim('claim-1', '1-1', 'class-1', fb, '', null);
      assert.equal(canProvision(config(fb), row.provisioner, ctx, claim)?.message, row.expected);
    });
  }
});

describe('TestTopologyParams (v13: SelectedNodeName, class passed through)', () => {
  const topology = [{ matchLabelExpressions: [{ key: 'failure-domain.beta.kubernetes.io/zone', values: ['zone1'] }] }];
  const rows: Array<{ name: string; cls: StorageClass; claim: PersistentVolumeClaim; expected?: { selectedNodeName: string; allowedTopologies?: unknown[] } }> = [
    { name: 'provision without topology information', cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null), expected: { selectedNodeName: '' } },
    { name: 'provision with AllowedTopologies', cls: newStorageClass('class-1', fb, { allowedTopologies: topology }), claim: newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null), expected: { selectedNodeName: '', allowedTopologies: topology } },
    { name: 'provision with selected node', cls: newStorageClassWithVolumeBindingMode('class-1', fb, 'WaitForFirstConsumer'), claim: newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', { [annSelectedNode]: 'node-1' }), expected: { selectedNodeName: 'node-1' } },
    { name: 'provision with AllowedTopologies and selected node', cls: newStorageClass('class-1', fb, { volumeBindingMode: 'WaitForFirstConsumer', allowedTopologies: topology }), claim: newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', { [annSelectedNode]: 'node-1' }), expected: { selectedNodeName: 'node-1', allowedTopologies: topology } },
    { name: 'selected node falls back to the alpha key', cls: newStorageClass('class-1', fb), claim: newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', { [annAlphaSelectedNode]: 'node-2' }), expected: { selectedNodeName: 'node-2' } },
  ];
  for (const row of rows) {
    it(row.name, async () => {
      const provisioner = new TestProvisioner();
      const world = new World([row.cls, row.claim]);
      await syncClaim({ config: config(fb), provisioner, store: new BackoffStore({ creator: world, provisioner, backoff: { durationMs: 0, factor: 1, steps: 1 } }), slowRetryPeriodMs: 300_000 }, { claim: row.claim, storageClass: row.cls, now: 0 });
      assert.equal(provisioner.calls.length, row.expected ? 1 : 0);
      assert.equal(provisioner.calls[0].selectedNodeName, row.expected!.selectedNodeName);
      assert.deepEqual(provisioner.calls[0].storageClass.allowedTopologies, row.expected!.allowedTopologies);
      assert.equal(provisioner.calls[0].pvName, 'pvc-uid-1-1');
    });
  }
});

describe('TestInfeasibleRetry', () => {
  const cls = newStorageClass('class-1', fb);
  const claim = newClaim('test-claim', 'uid-1-1', 'class-1', fb, '', null);
  const rows: Array<{ name: string; error: Error; calls: number; expire: boolean; recreateClass?: boolean }> = [
    { name: 'Should retry non-infeasible error normally', error: new Error('fake non-infeasible error'), calls: 2, expire: false },
    { name: 'Should NOT retry infeasible error normally', error: new InfeasibleError('fake infeasible error'), calls: 1, expire: false },
    { name: 'Should EVENTUALLY retry infeasible error', error: new InfeasibleError('fake infeasible error'), calls: 2, expire: true },
    { name: 'a re-created StorageClass ends the slow-retry window', error: new InfeasibleError('fake infeasible error'), calls: 2, expire: false, recreateClass: true },
  ];
  for (const row of rows) {
    it(row.name, async () => {
      const provisioner = new TestProvisioner();
      provisioner.returnError = row.error;
      const world = new World([cls, claim]);
      let now = 1_000;
      const deps = { config: config(fb), provisioner, store: new BackoffStore({ creator: world, provisioner, backoff: { durationMs: 0, factor: 1, steps: 1 } }), slowRetryPeriodMs: 300_000, clock: () => now };
      const first = await syncClaim(deps, { claim, storageClass: cls, now });
      assert.equal(first.result, 'requeue');
      assert.equal(first.error, row.error);
      const slow = first.slowRetry && first.slowRetry !== 'drop' ? first.slowRetry.add : undefined;
      assert.equal(slow !== undefined, row.error instanceof InfeasibleError);
      if (slow) {
        assert.deepEqual(slow, { classUid: 'uid-class-1', until: 301_000 });
        assert.equal(first.events.at(-1)?.message, 'Volume provisioning failed with infeasible error. Retries will be delayed. fake infeasible error');
      }
      const secondClass = row.recreateClass ? { ...cls, metadata: { ...cls.metadata, uid: 'uid-class-1-new' } } : cls;
      now = row.expire ? 301_000 : 2_000;
      const second = await syncClaim(deps, { claim, storageClass: secondClass, slowRetry: slow, now });
      if (row.calls === 1) {
        assert.ok(second.error instanceof DelayRetryError);
        assert.equal(second.error.message, 'skipping volume provisioning for pvc uid-1-1, because provisioning previously failed with infeasible error');
        assert.deepEqual(second.metrics, [], 'no metric for a delayed retry');
        assert.deepEqual(second.events, [], 'no event for a delayed retry');
      } else {
        assert.equal(second.error, row.error);
      }
      assert.equal(provisioner.calls.length, row.calls);
    });
  }
});

describe('claimsInProgress and the slow-retry gate (upstream syncClaim order)', () => {
  const cls = newStorageClass('class-1', fb);
  const rows: Array<{ name: string; claim: PersistentVolumeClaim; storageClass?: StorageClass; slowRetry?: { classUid: string; until: number }; result: string; inProgress: string; error?: RegExp }> = [
    { name: 'not ours: done, the in-progress record is dropped (a nil sync deletes claimsInProgress)', claim: newClaim('claim-1', 'uid-1', 'class-1', 'other/x', '', null), storageClass: cls, result: 'done', inProgress: 'delete' },
    { name: 'already bound: done, record dropped', claim: newClaim('claim-1', 'uid-1', 'class-1', fb, 'pv-1', null), storageClass: cls, result: 'done', inProgress: 'delete' },
    { name: 'class missing: retried, record left alone', claim: newClaim('claim-1', 'uid-1', 'class-1', fb, '', null), result: 'requeue', inProgress: 'keep', error: /storageClass "class-1" not found/ },
    { name: 'in the slow-retry window: delayed, no metric', claim: newClaim('claim-1', 'uid-1', 'class-1', fb, '', null), storageClass: cls, slowRetry: { classUid: 'uid-class-1', until: 10 }, result: 'requeue', inProgress: 'keep', error: /previously failed with infeasible error/ },
    { name: 'slow-retry gate is skipped when the class cannot be read', claim: newClaim('claim-1', 'uid-1', 'class-1', fb, '', null), slowRetry: { classUid: 'uid-class-1', until: 10 }, result: 'requeue', inProgress: 'keep', error: /storageClass "class-1" not found/ },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const plan = planClaimSync(config(fb), new TestProvisioner(), ctx, { claim: row.claim, storageClass: row.storageClass, slowRetry: row.slowRetry, now: 0 });
      assert.equal(plan.action, 'finish');
      const outcome = (plan as Extract<ClaimPlan, { action: 'finish' }>).outcome;
      assert.equal(outcome.result, row.result);
      assert.equal(outcome.inProgress, row.inProgress);
      if (row.error) assert.match(outcome.error!.message, row.error);
      if (row.slowRetry && row.storageClass) assert.deepEqual(outcome.metrics, []);
    });
  }
});

describe('ProvisioningState handling (reference §5)', () => {
  const cls = newStorageClass('class-1', fb);
  const plan = (claim: PersistentVolumeClaim) => planClaimSync(config(fb), new TestProvisioner(), ctx, { claim, storageClass: cls, now: 0 }) as Extract<ClaimPlan, { action: 'provision' }>;
  it('Reschedule without a selected node is treated as Finished: retried, no claim update', () => {
    const claim = newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null);
    const out = afterProvision(config(fb), plan(claim), { state: 'Reschedule', error: new Error('boom') }, 0, 300_000);
    assert.equal(out.result, 'requeue');
    assert.equal(out.updateClaim, undefined);
    assert.equal(out.inProgress, 'delete');
  });
  it('Reschedule removes only the GA selected-node key and stops; the original error is kept for a failed update', () => {
    const claim = newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', { [annSelectedNode]: 'n1', other: 'x' });
    const err = new Error('boom');
    const out = afterProvision(config(fb), plan(claim), { state: 'Reschedule', error: err }, 0, 300_000);
    assert.equal(out.result, 'stop');
    assert.deepEqual(out.updateClaim?.metadata.annotations, { [annBetaStorageProvisioner]: fb, other: 'x' });
    assert.equal(out.rescheduleError, err);
    assert.equal(claim.metadata.annotations?.[annSelectedNode], 'n1', 'the input claim is not mutated');
  });
  it('the PV gets claimRef, provisioned-by = the class provisioner, the beta-annotated class name, and keeps provisioner annotations', () => {
    const claim = newClaim('claim-1', 'uid-1-1', 'spec-class', fb, '', { [annStorageClass]: 'class-1' });
    claim.metadata.resourceVersion = '42';
    const p = planClaimSync(config('primary', { additionalProvisionerNames: [fb] }), new TestProvisioner(), ctx, { claim, storageClass: cls, now: 0 }) as Extract<ClaimPlan, { action: 'provision' }>;
    const pv: PersistentVolume = { metadata: { name: 'pvc-uid-1-1', annotations: { mine: 'yes', [annDynamicallyProvisioned]: 'wrong' } }, spec: { claimRef: { name: 'wrong' } } };
    const out = afterProvision(config('primary', { additionalProvisionerNames: [fb] }), p, { state: 'Finished', pv }, 0, 300_000);
    assert.deepEqual(out.saveVolume, {
      metadata: { name: 'pvc-uid-1-1', annotations: { mine: 'yes', [annDynamicallyProvisioned]: fb } },
      spec: { claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'claim-1', uid: 'uid-1-1', apiVersion: 'v1', resourceVersion: '42' }, storageClassName: 'class-1' },
    });
  });
  it('a class naming another provisioner stops without an event', () => {
    const claim = newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null);
    const got = planClaimSync(config(fb), new TestProvisioner(), ctx, { claim, storageClass: newStorageClass('class-1', 'other'), now: 0 });
    assert.equal(got.action, 'finish');
    assert.equal(got.action === 'finish' && got.outcome.result, 'stop');
    assert.deepEqual(got.action === 'finish' && got.outcome.events, []);
  });
  it('metric labels use spec.storageClassName and the data source kind', () => {
    const claim = newClaim('claim-1', 'uid-1-1', 'spec-class', fb, '', { [annStorageClass]: 'class-1' });
    claim.spec.dataSource = { kind: 'VolumeSnapshot', name: 's' };
    const out = afterProvision(config(fb), plan(claim), { state: 'Finished', error: new Error('x') }, 0, 300_000);
    assert.deepEqual(out.metrics, [{ op: 'provision', outcome: 'failed', class: 'spec-class', source: 'VolumeSnapshot' }]);
  });
});

describe('BackoffStore', () => {
  it('retries Create with the backoff, then deletes the asset and records the cleanup failure', async () => {
    const sleeps: number[] = [];
    const claim = newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null);
    const world = new World([]);
    world.reactions = [{ verb: 'create', fail: () => true }];
    const provisioner = new StateProvisioner('Finished', 'unused');
    const store = new BackoffStore({ creator: world, provisioner, backoff: { durationMs: 10_000, factor: 1, steps: 5 }, sleep: async (ms) => { sleeps.push(ms); } });
    const got = await store.storeVolume(ctx, claim, { metadata: { name: 'pvc-uid-1-1' }, spec: {} });
    assert.equal(got.saved, false);
    assert.equal(got.error?.message, 'fake error');
    assert.deepEqual(sleeps, [10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000], '4 sleeps for the save, 4 for the delete');
    assert.deepEqual(got.events.map((e) => `${e.type} ${e.reason} ${e.message}`), [
      'Warning ProvisioningFailed Error creating provisioned PV object for claim default/claim-1: fake error. Deleting the volume.',
      'Warning ProvisioningCleanupFailed Error cleaning provisioned volume for claim default/claim-1: fake error. Please delete manually.',
    ]);
  });
  it('withBackoff grows exponentially and honours the cap', async () => {
    const sleeps: number[] = [];
    let n = 0;
    const err = await withBackoff({ durationMs: 100, factor: 2, steps: 5, capMs: 500 }, async () => { n++; throw new Error(`e${n}`); }, async (ms) => { sleeps.push(ms); });
    assert.equal(err?.message, 'e5');
    assert.deepEqual(sleeps, [100, 200, 400, 500]);
  });
});

describe('volume already in the cache', () => {
  it('stops without calling the provisioner', async () => {
    const provisioner = new TestProvisioner();
    const claim = newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null);
    const out = await syncClaim({ config: config(fb), provisioner, store: new BackoffStore({ creator: new World([]), provisioner, backoff: { durationMs: 0, factor: 1, steps: 1 } }), slowRetryPeriodMs: 1 },
      { claim, storageClass: newStorageClass('class-1', fb), existingVolume: { metadata: { name: 'pvc-uid-1-1' }, spec: {} }, now: 0 });
    assert.equal(out.result, 'stop');
    assert.equal(provisioner.calls.length, 0);
  });
});

