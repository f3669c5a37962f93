/**
 * Upstream's `TestController` table (sig-storage-lib-external-provisioner `controller/controller_test.go`),
 * ported row by row against the pure core: one pass of every claim and every volume through
 * `syncClaim`/`syncVolume`, then the PVs, claims, in-progress set, parked PVs and metrics compared.
 * Rows whose upstream expectation relied on the v9–v12 Node lookup ("no node exists") follow v13, which
 * no longer reads Nodes: the selected node is kept.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { annBetaStorageProvisioner, annMigratedTo, annSelectedNode, annDynamicallyProvisioned } from '../../../lib/provisioner/constants.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../../lib/kube/objects.ts';
import type { Provisioner } from '../../../lib/provisioner/types.ts';
import {
  config, countMetrics, ExtProvisioner, finalizerPV, IgnoredProvisioner, newBadTestProvisioner, newClaim, newClaimWithVolumeMode,
  newCSIVolume, newNoChangeTestProvisioner, newProvisionedVolume, newRescheduleTestProvisioner, newStorageClass,
  newStorageClassWithReclaimPolicy, newStorageClassWithVolumeBindingMode, newTemporaryTestProvisioner, newVolume, runOnce,
  TestProvisioner, timestamp, World, type Reaction, type TestMetrics,
} from './fixtures.ts';

interface Row {
  name: string;
  objs: Array<StorageClass | PersistentVolumeClaim | PersistentVolume>;
  claimsInProgress?: PersistentVolumeClaim[];
  enqueueClaim?: PersistentVolumeClaim;
  provisionerName: string;
  additionalProvisionerNames?: string[];
  provisioner: Provisioner;
  reactions?: Reaction[];
  expectedVolumes?: PersistentVolume[];
  expectedClaims?: PersistentVolumeClaim[];
  expectedClaimsInProgress?: string[];
  volumeQueueStore?: boolean;
  expectedStoredVolumes?: PersistentVolume[];
  expectedMetrics: TestMetrics;
  expectedEvents?: string[];
  addFinalizer?: boolean;
}

const fb = 'foo.bar/baz';
const class1 = () => newStorageClass('class-1', fb);
const claim1 = () => newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null);
const failCreate: Reaction[] = [{ verb: 'create', fail: () => true }];
const failDelete: Reaction[] = [{ verb: 'delete', fail: () => true }];
const wfc = () => newStorageClassWithVolumeBindingMode('class-1', fb, 'WaitForFirstConsumer');
const wfcClaim = (node: string) => newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', { [annBetaStorageProvisioner]: fb, [annSelectedNode]: node });
const keptClaim = (node?: string) => newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', node ? { [annBetaStorageProvisioner]: fb, [annSelectedNode]: node } : { [annBetaStorageProvisioner]: fb });
const released = (policy: 'Delete' | 'Retain', ann: Record<string, string>, finalizers: string[] | null = null, ts: string | null = null) =>
  newVolume('volume-1', 'Released', policy, ann, finalizers, ts);
const byFb = { [annDynamicallyProvisioned]: fb };

const rows: Row[] = [
  {
    name: "provision for claim-1 but not claim-2",
    objs: [class1(), newStorageClass('class-2', 'abc.def/ghi'), claim1(), newClaim('claim-2', 'uid-1-2', 'class-2', 'abc.def/ghi', '', null)],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
    expectedEvents: [
      'Normal Provisioning External provisioner is provisioning volume for claim "default/claim-1"',
      'Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-1-1',
    ],
  },
  {
    name: "don't provision, volume already exists",
    objs: [class1(), claim1(), newProvisionedVolume(class1(), claim1(), null)],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
    expectedEvents: [],
  },
  {
    name: "don't provision, provisioner does not support raw block",
    objs: [class1(), newClaimWithVolumeMode('claim-1', 'uid-1-1', 'class-1', fb, '', null, 'Block')],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
    expectedEvents: ['Warning ProvisioningFailed foo.bar/baz does not support block volume provisioning'],
  },
  {
    name: 'provision for claim-1 with storage class provisioner name distinct from controller provisioner name',
    objs: [class1(), claim1()],
    provisionerName: 'csi.com/mock-csi', additionalProvisionerNames: [fb, 'foo.xyz/baz'], provisioner: new TestProvisioner(),
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
  },
  {
    name: 'delete volume-1 but not volume-2',
    objs: [released('Delete', byFb), newVolume('volume-2', 'Released', 'Delete', { [annDynamicallyProvisioned]: 'abc.def/ghi' }, null, null)],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newVolume('volume-2', 'Released', 'Delete', { [annDynamicallyProvisioned]: 'abc.def/ghi' }, null, null)],
    expectedMetrics: { deleted: { '': { success: 1 } } },
  },
  {
    name: "don't provision for claim-1 because it's already bound",
    objs: [newClaim('claim-1', 'uid-1-1', 'class-1', fb, 'volume-1', null)],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [],
    expectedMetrics: {},
  },
  {
    name: "don't provision for claim-1 because its class doesn't exist",
    objs: [claim1()],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
    expectedEvents: [],
  },
  {
    name: "don't delete volume-1 because it's still bound",
    objs: [newVolume('volume-1', 'Bound', 'Delete', byFb, null, null)],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newVolume('volume-1', 'Bound', 'Delete', byFb, null, null)],
    expectedMetrics: {},
  },
  {
    name: "don't delete volume-1 because its reclaim policy is not delete",
    objs: [released('Retain', byFb)],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [released('Retain', byFb)],
    expectedMetrics: {},
  },
  {
    name: 'provisioner fails to provision for claim-1: no pv is created',
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: newBadTestProvisioner(),
    expectedVolumes: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
    expectedEvents: [
      'Normal Provisioning External provisioner is provisioning volume for claim "default/claim-1"',
      'Warning ProvisioningFailed fake final error',
    ],
  },
  {
    name: 'provisioner fails to delete volume-1: pv is not deleted',
    objs: [released('Delete', byFb)],
    provisionerName: fb, provisioner: newBadTestProvisioner(),
    expectedVolumes: [released('Delete', byFb)],
    expectedMetrics: { deleted: { '': { failed: 1 } } },
    expectedEvents: ['Warning VolumeFailedDelete fake error'],
  },
  {
    name: 'try to provision for claim-1 but fail to save the pv object',
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: new TestProvisioner(), reactions: failCreate,
    expectedVolumes: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
    expectedEvents: [
      'Normal Provisioning External provisioner is provisioning volume for claim "default/claim-1"',
      'Warning ProvisioningFailed Error creating provisioned PV object for claim default/claim-1: fake error. Deleting the volume.',
    ],
  },
  {
    name: 'try to delete volume-1 but fail to delete the pv object',
    objs: [released('Delete', byFb)],
    provisionerName: fb, provisioner: new TestProvisioner(), reactions: failDelete,
    expectedVolumes: [released('Delete', byFb)],
    expectedMetrics: { deleted: { '': { failed: 1 } } },
    expectedEvents: [],
  },
  {
    name: "don't provision, because it is ignored",
    objs: [class1(), newClaim('claim-2', 'uid-1-1', 'class-1', fb, '', null)],
    provisionerName: fb, provisioner: new IgnoredProvisioner(),
    expectedVolumes: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
    expectedEvents: ['Normal Provisioning External provisioner is provisioning volume for claim "default/claim-2"'],
  },
  {
    name: 'provision for claim-1 but not claim-2, because it is ignored',
    objs: [class1(), claim1(), newClaim('claim-2', 'uid-1-2', 'class-1', fb, '', null)],
    provisionerName: fb, provisioner: new IgnoredProvisioner(),
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { success: 1, failed: 1 } } },
  },
  {
    name: 'provision with Retain reclaim policy',
    objs: [newStorageClassWithReclaimPolicy('class-1', fb, 'Retain'), claim1()],
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newProvisionedVolume(newStorageClassWithReclaimPolicy('class-1', fb, 'Retain'), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
  },
  {
    name: 'provision for ext provisioner',
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'Finished'),
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
  },
  {
    name: 'ext provisioner: final error does not mark claim as in progress',
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'Finished', new Error('mock error')),
    expectedClaimsInProgress: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'ext provisioner: provisional error marks claim as in progress',
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'InBackground', new Error('mock error')),
    expectedClaimsInProgress: ['uid-1-1'],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'ext provisioner: NoChange error does not mark claim as in progress',
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'NoChange', new Error('mock error')),
    expectedClaimsInProgress: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'ext provisioner: final error removes claim from in progress',
    objs: [class1(), claim1()], claimsInProgress: [claim1()],
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'Finished', new Error('mock error')),
    expectedClaimsInProgress: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'ext provisioner: provisional error does not remove claim from in progress',
    objs: [class1(), claim1()], claimsInProgress: [claim1()],
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'InBackground', new Error('mock error')),
    expectedClaimsInProgress: ['uid-1-1'],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'ext provisioner: NoChange error does not remove claim from in progress',
    objs: [class1(), claim1()], claimsInProgress: [claim1()],
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'NoChange', new Error('mock error')),
    expectedClaimsInProgress: ['uid-1-1'],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'ext provisioner: claimsInProgress is used for deleted PVCs',
    objs: [class1()], claimsInProgress: [claim1()], enqueueClaim: claim1(),
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'Finished'),
    expectedClaimsInProgress: [],
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
  },
  {
    name: "PV save backoff: provision a PV and fail to save it -> it's in the queue",
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: new TestProvisioner(), reactions: failCreate,
    expectedVolumes: [], volumeQueueStore: true,
    expectedStoredVolumes: [newProvisionedVolume(class1(), claim1(), null)],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
  },
  {
    name: "PV save backoff: provision a PV and fail to save it two times -> it's removed from the queue",
    objs: [class1(), claim1()],
    provisionerName: fb, provisioner: new TestProvisioner(), reactions: [{ verb: 'create', fail: (n) => n <= 2 }],
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)], volumeQueueStore: true,
    expectedStoredVolumes: [],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
    expectedEvents: [
      'Normal Provisioning External provisioner is provisioning volume for claim "default/claim-1"',
      'Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-1-1',
    ],
  },
  {
    name: 'remove selectedNode and claim on reschedule',
    objs: [wfc(), wfcClaim('node-1')],
    provisionerName: fb, provisioner: newRescheduleTestProvisioner(),
    expectedClaims: [keptClaim()],
    expectedClaimsInProgress: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
    expectedEvents: [
      'Normal Provisioning External provisioner is provisioning volume for claim "default/claim-1"',
      'Warning ProvisioningFailed fake error, reschedule',
    ],
  },
  {
    name: 'do not remove selectedNode after final error, only the claim',
    objs: [wfc(), wfcClaim('node-1')],
    provisionerName: fb, provisioner: newBadTestProvisioner(),
    expectedClaims: [keptClaim('node-1')],
    expectedClaimsInProgress: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'v13: keep selectedNode after a final error even if no such node exists (no Node lookup)',
    objs: [wfc(), wfcClaim('node-wrong')],
    provisionerName: fb, provisioner: newBadTestProvisioner(),
    expectedClaims: [keptClaim('node-wrong')],
    expectedClaimsInProgress: [],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'do not remove selectedNode if nothing changes',
    objs: [wfc(), wfcClaim('node-1')],
    provisionerName: fb, provisioner: newNoChangeTestProvisioner(),
    expectedClaims: [keptClaim('node-1')],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'v13: keep selectedNode if nothing changes, even if no such node exists',
    objs: [wfc(), wfcClaim('node-wrong')],
    provisionerName: fb, provisioner: newNoChangeTestProvisioner(),
    expectedClaims: [keptClaim('node-wrong')],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'do not remove selectedNode while in progress',
    objs: [wfc(), wfcClaim('node-1')],
    provisionerName: fb, provisioner: newTemporaryTestProvisioner(),
    expectedClaims: [keptClaim('node-1')],
    expectedClaimsInProgress: ['uid-1-1'],
    expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } },
  },
  {
    name: 'provision for ext provisioner with finalizer',
    objs: [class1(), claim1()], addFinalizer: true,
    provisionerName: fb, provisioner: new ExtProvisioner('pvc-uid-1-1', 'Finished'),
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), [finalizerPV])],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
  },
  {
    name: 'ensure finalizer is removed if the addFinalizer config option is false',
    objs: [newVolume('volume-1', 'Bound', 'Delete', byFb, [finalizerPV], null)], addFinalizer: false,
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newVolume('volume-1', 'Bound', 'Delete', byFb, null, null)],
    expectedMetrics: {},
  },
  {
    name: 'ensure finalizer is removed if the reclaim policy is Retain or Recycle with addFinalizer enabled',
    objs: [newVolume('volume-1', 'Bound', 'Retain', byFb, [finalizerPV], null)], addFinalizer: true,
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newVolume('volume-1', 'Bound', 'Retain', byFb, null, null)],
    expectedMetrics: {},
  },
  {
    name: 'ensure finalizer is not added if the volume is under deletion, also ensures that volume is not deleted',
    objs: [released('Delete', byFb, null, timestamp)], addFinalizer: true,
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [released('Delete', byFb, null, timestamp)],
    expectedMetrics: {},
  },
  {
    name: 'ensure volume with finalizer is deleted if it is in a Released state and reclaim policy is Delete',
    objs: [released('Delete', byFb, [finalizerPV])], addFinalizer: true,
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [],
    expectedMetrics: { deleted: { '': { success: 1 } } },
  },
  {
    name: 'ensure volume with finalizer is deleted if it is in a Released state and reclaim policy is Delete and already under deletion',
    objs: [released('Delete', byFb, [finalizerPV], timestamp)], addFinalizer: true,
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [],
    expectedMetrics: { deleted: { '': { success: 1 } } },
  },
  {
    name: 'provisioner fails to delete the volume with finalizer, the pv is not deleted',
    objs: [released('Delete', byFb, [finalizerPV])], addFinalizer: true,
    provisionerName: fb, provisioner: newBadTestProvisioner(),
    expectedVolumes: [released('Delete', byFb, [finalizerPV])],
    expectedMetrics: { deleted: { '': { failed: 1 } } },
  },
  {
    name: 'volume deletion succeeds but the pv deletion fails, the pv still exists',
    objs: [released('Delete', byFb, [finalizerPV])], addFinalizer: true,
    provisionerName: fb, provisioner: new TestProvisioner(), reactions: failDelete,
    expectedVolumes: [released('Delete', byFb, [finalizerPV])],
    expectedMetrics: { deleted: { '': { failed: 1 } } },
  },
  {
    name: 'ensure finalizer is added on statically provisioned, migrated, in-tree volumes',
    objs: [newVolume('volume-1', 'Bound', 'Delete', { [annMigratedTo]: fb }, null, null)], addFinalizer: true,
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newVolume('volume-1', 'Bound', 'Delete', { [annMigratedTo]: fb }, [finalizerPV], null)],
    expectedMetrics: {},
  },
  {
    name: 'ensure finalizer is added on statically provisioned CSI volumes if it is in a Bound state',
    objs: [newCSIVolume('volume-1', 'Bound', 'Delete', null, null, null, fb)], addFinalizer: true,
    provisionerName: fb, provisioner: new TestProvisioner(),
    expectedVolumes: [newCSIVolume('volume-1', 'Bound', 'Delete', null, [finalizerPV], null, fb)],
    expectedMetrics: {},
  },
];

describe('TestController (upstream table)', () => {
  for (const row of rows) {
    it(row.name, async () => {
      const world = new World(row.objs);
      world.reactions = row.reactions ?? [];
      for (const c of row.claimsInProgress ?? []) world.inProgress.set(c.metadata.uid!, structuredClone(c));
      await runOnce(world, {
        config: config(row.provisionerName, { additionalProvisionerNames: row.additionalProvisionerNames ?? [], addFinalizer: row.addFinalizer ?? false }),
        provisioner: row.provisioner,
        queueStore: row.volumeQueueStore,
        enqueueClaim: row.enqueueClaim,
      });
      if (row.expectedVolumes) assert.deepEqual([...world.volumes.values()], row.expectedVolumes, 'volumes');
      assert.deepEqual([...world.inProgress.keys()].sort(), (row.expectedClaimsInProgress ?? []).sort(), 'claimsInProgress');
      if (row.volumeQueueStore) assert.deepEqual([...world.pending.values()], row.expectedStoredVolumes ?? [], 'stored volumes');
      assert.deepEqual(countMetrics(world.metrics), row.expectedMetrics, 'metrics');
      if (row.expectedClaims) assert.deepEqual([...world.claims.values()], row.expectedClaims, 'claims');
      if (row.expectedEvents) assert.deepEqual(world.events.map((e) => `${e.type} ${e.reason} ${e.message}`), row.expectedEvents, 'events');
    });
  }
});
