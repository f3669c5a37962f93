/**
 * Issue #17, the claim path, against the pure core in the style of upstream's `TestController` table
 * (sig-storage-lib-external-provisioner `controller/controller_test.go`):
 *
 * - claimsInProgress is dropped whenever a claim sync ends without error, `shouldProvision == false`
 *   included (`processNextClaimWorkItem` deletes it after every nil sync), so a claim bound elsewhere is
 *   never provisioned later from its saved copy;
 * - the `Provisioning` event is recorded before `Provision` is called (`provisionClaimOperation`);
 * - the backoff store's PV save retries stop when the function's time would run out, and the unsaved PV
 *   is handed to the claim's durable record instead of being abandoned mid-wait.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { annBetaStorageProvisioner } from '../../../lib/provisioner/constants.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../../lib/kube/objects.ts';
import { BackoffStore, type PendingVolumes } from '../../../lib/provisioner/store.ts';
import { syncClaim } from '../../../lib/provisioner/sync-claim.ts';
import type { ProvisionContext, Provisioner, ProvisionerEvent, ProvisionResult } from '../../../lib/provisioner/types.ts';
import {
  config, countMetrics, ExtProvisioner, newClaim, newProvisionedVolume, newStorageClass, newTemporaryTestProvisioner, runOnce,
  TestProvisioner, World, type Reaction, type TestMetrics,
} from './fixtures.ts';

const fb = 'foo.bar/baz';
const class1 = (): StorageClass => newStorageClass('class-1', fb);
const claim1 = (): PersistentVolumeClaim => newClaim('claim-1', 'uid-1-1', 'class-1', fb, '', null);
const boundClaim1 = (): PersistentVolumeClaim => newClaim('claim-1', 'uid-1-1', 'class-1', fb, 'volume-1', null);
const line = (e: ProvisionerEvent): string => `${e.type} ${e.reason} ${e.message}`;
const provisioningEvent = 'Normal Provisioning External provisioner is provisioning volume for claim "default/claim-1"';

interface Row {
  name: string;
  objs: Array<StorageClass | PersistentVolumeClaim | PersistentVolume>;
  claimsInProgress?: PersistentVolumeClaim[];
  enqueueClaim?: PersistentVolumeClaim;
  provisioner: Provisioner;
  expectedVolumes: PersistentVolume[];
  expectedClaimsInProgress: string[];
  expectedMetrics: TestMetrics;
  expectedEvents: string[];
}

const rows: Row[] = [
  {
    name: 'claimsInProgress: a claim bound meanwhile is dropped from it (shouldProvision false ends the sync without error)',
    objs: [class1(), boundClaim1()], claimsInProgress: [claim1()],
    provisioner: new TestProvisioner(),
    expectedVolumes: [], expectedClaimsInProgress: [], expectedMetrics: {}, expectedEvents: [],
  },
  {
    name: 'claimsInProgress: a claim that now asks for another provisioner is dropped from it',
    objs: [class1(), newClaim('claim-1', 'uid-1-1', 'class-1', 'abc.def/ghi', '', { [annBetaStorageProvisioner]: 'abc.def/ghi' })],
    claimsInProgress: [claim1()],
    provisioner: new TestProvisioner(),
    expectedVolumes: [], expectedClaimsInProgress: [], expectedMetrics: {}, expectedEvents: [],
  },
  {
    name: 'claimsInProgress: a WaitForFirstConsumer claim whose selected node was removed is dropped from it',
    objs: [newStorageClass('class-1', fb, { volumeBindingMode: 'WaitForFirstConsumer' }), claim1()],
    claimsInProgress: [claim1()],
    provisioner: new TestProvisioner(),
    expectedVolumes: [], expectedClaimsInProgress: [], expectedMetrics: {}, expectedEvents: [],
  },
  {
    name: 'claimsInProgress: a missing class keeps it (the sync returns an error)',
    objs: [claim1()], claimsInProgress: [claim1()],
    provisioner: new TestProvisioner(),
    expectedVolumes: [], expectedClaimsInProgress: ['uid-1-1'], expectedMetrics: { provisioned: { 'class-1': { failed: 1 } } }, expectedEvents: [],
  },
  {
    name: 'claimsInProgress: a deleted claim still in progress is provisioned (unchanged)',
    objs: [class1()], claimsInProgress: [claim1()], enqueueClaim: claim1(),
    provisioner: new ExtProvisioner('pvc-uid-1-1', 'Finished'),
    expectedVolumes: [newProvisionedVolume(class1(), claim1(), null)], expectedClaimsInProgress: [],
    expectedMetrics: { provisioned: { 'class-1': { success: 1 } } },
    expectedEvents: [provisioningEvent, 'Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-1-1'],
  },
];

describe('claim fidelity (upstream table style)', () => {
  for (const row of rows) {
    it(row.name, async () => {
      const world = new World(row.objs);
      for (const c of row.claimsInProgress ?? []) world.inProgress.set(c.metadata.uid!, structuredClone(c));
      await runOnce(world, { config: config(fb), provisioner: row.provisioner, enqueueClaim: row.enqueueClaim });
      assert.deepEqual([...world.volumes.values()], row.expectedVolumes, 'volumes');
      assert.deepEqual([...world.inProgress.keys()], row.expectedClaimsInProgress, 'claimsInProgress');
      assert.deepEqual(countMetrics(world.metrics), row.expectedMetrics, 'metrics');
      assert.deepEqual(world.events.map(line), row.expectedEvents, 'events');
    });
  }

  it('InBackground, then bound elsewhere, then deleted: nothing is provisioned from the saved copy', async () => {
    const world = new World([class1(), claim1()]);
    await runOnce(world, { config: config(fb), provisioner: newTemporaryTestProvisioner() });
    assert.deepEqual([...world.inProgress.keys()], ['uid-1-1'], 'remembered while in the background');
    world.claims.set('uid-1-1', boundClaim1());
    const provisioner = new TestProvisioner();
    await runOnce(world, { config: config(fb), provisioner });
    assert.deepEqual([...world.inProgress.keys()], [], 'dropped once the claim is bound');
    world.claims.delete('uid-1-1');
    await runOnce(world, { config: config(fb), provisioner, enqueueClaim: claim1() });
    assert.equal(provisioner.calls.length, 0, 'no Provision call');
    assert.deepEqual([...world.volumes.values()], [], 'no PV');
  });
});

describe('Provisioning is recorded before the backend call', () => {
  it('the event goes through recordEvents before Provision, and is not returned again', async () => {
    const order: string[] = [];
    const provisioner = new TestProvisioner();
    const inner = provisioner.provision.bind(provisioner);
    provisioner.provision = async (ctx, options) => { order.push('provision'); return inner(ctx, options); };
    const world = new World([]);
    const outcome = await syncClaim({
      config: config(fb), provisioner, slowRetryPeriodMs: 300_000,
      store: new BackoffStore({ creator: world, provisioner, backoff: { durationMs: 0, factor: 1, steps: 1 } }),
      recordEvents: async (events) => { order.push(...events.map(line)); },
    }, { claim: claim1(), storageClass: class1(), now: 0 });
    assert.deepEqual(order, [provisioningEvent, 'provision']);
    assert.deepEqual(outcome.events.map(line), ['Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-1-1']);
  });

  it('a backend call that never returns (the function dies in it) already has the event recorded', async () => {
    const recorded: string[] = [];
    let called!: () => void;
    const inCall = new Promise<void>((resolve) => { called = resolve; });
    const hanging: Provisioner = {
      provision: async (): Promise<ProvisionResult> => { called(); return new Promise<ProvisionResult>(() => {}); },
      delete: async () => {},
    };
    void syncClaim({
      config: config(fb), provisioner: hanging, slowRetryPeriodMs: 300_000,
      store: new BackoffStore({ creator: new World([]), provisioner: hanging, backoff: { durationMs: 0, factor: 1, steps: 1 } }),
      recordEvents: async (events) => { recorded.push(...events.map(line)); },
    }, { claim: claim1(), storageClass: class1(), now: 0 });
    await inCall;
    assert.deepEqual(recorded, [provisioningEvent]);
  });

  it('without recordEvents the event stays in the outcome (pure callers)', async () => {
    const world = new World([class1(), claim1()]);
    await runOnce(world, { config: config(fb), provisioner: new TestProvisioner() });
    assert.equal(world.events.map(line)[0], provisioningEvent);
  });
});

/** A provisioner whose deletes are counted. */
class CountingDeletes extends TestProvisioner {
  failDeletes = false;
  override async delete(ctx: ProvisionContext, pv: PersistentVolume): Promise<void> {
    await super.delete(ctx, pv);
    if (this.failDeletes) throw new Error('fake delete error');
  }
}

/** The claim record's pending PV, or a record that cannot be written. */
class Pending implements PendingVolumes {
  volumes = new Map<string, PersistentVolume>();
  broken = false;
  async put(pv: PersistentVolume): Promise<void> {
    if (this.broken) throw new Error('dynamodb is down');
    this.volumes.set(pv.metadata.name!, structuredClone(pv));
  }
  async get(name: string): Promise<PersistentVolume | undefined> { return this.volumes.get(name); }
  async delete(name: string): Promise<void> { this.volumes.delete(name); }
}

describe('BackoffStore: PV save retries bounded by the time left', () => {
  const failCreate: Reaction[] = [{ verb: 'create', fail: () => true }];
  const pvOf = (): PersistentVolume => newProvisionedVolume(class1(), claim1(), null);
  const tenSecondsTimesFive = { durationMs: 10_000, factor: 1, steps: 5 };

  /** A store over a world that fails every PV create, with a fake clock advanced by its sleeps. */
  function storeWith(options: { timeLeftMs?: number; pending?: Pending; provisioner?: CountingDeletes; reactions?: Reaction[] }) {
    const world = new World([]);
    world.reactions = options.reactions ?? failCreate;
    const provisioner = options.provisioner ?? new CountingDeletes();
    const sleeps: number[] = [];
    let slept = 0;
    let creates = 0;
    const creator = { createVolume: async (pv: PersistentVolume) => { creates++; return world.createVolume(pv); } };
    const store = new BackoffStore({
      creator, provisioner, backoff: tenSecondsTimesFive,
      sleep: async (ms) => { sleeps.push(ms); slept += ms; },
      ...(options.timeLeftMs !== undefined ? { timeLeftMs: () => options.timeLeftMs! - slept } : {}),
      ...(options.pending ? { pending: options.pending } : {}),
    });
    return { store, world, provisioner, sleeps, creates: () => creates };
  }
  const ctx: ProvisionContext = { signal: new AbortController().signal };

  it('out of time after the first failed save: no wait, the PV goes to the claim record, the asset is kept, no event', async () => {
    const pending = new Pending();
    const { store, provisioner, sleeps, creates } = storeWith({ timeLeftMs: 3_000, pending });
    const result = await store.storeVolume(ctx, claim1(), pvOf());
    assert.deepEqual(result, { saved: true, queued: true, events: [] });
    assert.deepEqual(sleeps, [], 'no wait past the time left');
    assert.equal(creates(), 1);
    assert.deepEqual([...pending.volumes.values()], [pvOf()], 'the unsaved PV is in the claim record');
    assert.deepEqual(provisioner.deletes, [], 'the storage asset is not deleted');
  });

  it('time for two waits: three attempts, then the hand-over', async () => {
    const pending = new Pending();
    const { store, provisioner, sleeps, creates } = storeWith({ timeLeftMs: 25_000, pending });
    const result = await store.storeVolume(ctx, claim1(), pvOf());
    assert.equal(result.queued, true);
    assert.deepEqual(sleeps, [10_000, 10_000]);
    assert.equal(creates(), 3);
    assert.deepEqual(provisioner.deletes, []);
  });

  it('a save that succeeds before the time runs out is an ordinary success', async () => {
    const pending = new Pending();
    const { store, world, sleeps } = storeWith({ timeLeftMs: 25_000, pending, reactions: [{ verb: 'create', fail: (n) => n === 1 }] });
    const result = await store.storeVolume(ctx, claim1(), pvOf());
    assert.deepEqual(result.events.map(line), ['Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-1-1']);
    assert.equal(result.queued, undefined);
    assert.deepEqual(sleeps, [10_000]);
    assert.equal(pending.volumes.size, 0);
    assert.deepEqual([...world.volumes.keys()], ['pvc-uid-1-1']);
  });

  it("enough time: upstream's five attempts, then the asset is deleted with upstream's event (unchanged)", async () => {
    const pending = new Pending();
    const { store, provisioner, sleeps } = storeWith({ timeLeftMs: 600_000, pending });
    const result = await store.storeVolume(ctx, claim1(), pvOf());
    assert.equal(result.saved, false);
    assert.deepEqual(sleeps, [10_000, 10_000, 10_000, 10_000]);
    assert.deepEqual(result.events.map(line), ['Warning ProvisioningFailed Error creating provisioned PV object for claim default/claim-1: fake error. Deleting the volume.']);
    assert.deepEqual(provisioner.deletes, ['pvc-uid-1-1']);
    assert.equal(pending.volumes.size, 0);
  });

  it('the hand-over cannot be written: the asset is cleaned up as upstream, its retries bounded too', async () => {
    const pending = new Pending();
    pending.broken = true;
    const provisioner = new CountingDeletes();
    provisioner.failDeletes = true;
    const { store, sleeps } = storeWith({ timeLeftMs: 3_000, pending, provisioner });
    const result = await store.storeVolume(ctx, claim1(), pvOf());
    assert.equal(result.saved, false);
    assert.equal(result.error?.message, 'fake error');
    assert.deepEqual(sleeps, [], 'no wait past the time left, for the cleanup either');
    assert.deepEqual(provisioner.deletes, ['pvc-uid-1-1'], 'one delete attempt');
    assert.deepEqual(result.events.map(line), [
      'Warning ProvisioningFailed Error creating provisioned PV object for claim default/claim-1: fake error. Deleting the volume.',
      'Warning ProvisioningCleanupFailed Error cleaning provisioned volume for claim default/claim-1: fake delete error. Please delete manually.',
    ]);
  });

  it('no claim record to hand to (the pure core): out of time, the asset is cleaned up', async () => {
    const { store, provisioner, sleeps } = storeWith({ timeLeftMs: 3_000 });
    const result = await store.storeVolume(ctx, claim1(), pvOf());
    assert.equal(result.saved, false);
    assert.deepEqual(sleeps, []);
    assert.deepEqual(provisioner.deletes, ['pvc-uid-1-1']);
  });

  it('through syncClaim: a hand-over counts as provisioned (as the queue store) and ends the in-progress record', async () => {
    const pending = new Pending();
    const { store } = storeWith({ timeLeftMs: 3_000, pending });
    const outcome = await syncClaim({ config: config(fb), provisioner: new TestProvisioner(), store, slowRetryPeriodMs: 300_000, clock: () => 0 },
      { claim: claim1(), storageClass: class1(), now: 0 });
    assert.equal(outcome.result, 'done');
    assert.equal(outcome.inProgress, 'delete');
    assert.deepEqual(countMetrics(outcome.metrics), { provisioned: { 'class-1': { success: 1 } } });
    assert.deepEqual(outcome.events.map(line), [provisioningEvent]);
  });
});
