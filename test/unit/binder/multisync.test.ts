/**
 * Multi-step sequences after upstream's TestMultiSync (10-x) and TestControllerSync: the core's
 * writes applied by the in-memory reactor with resourceVersion checks, re-synced until stable.
 * Also the cases the serverless shell must survive: a crash between the PV and the PVC write,
 * injected conflicts and server errors, stale snapshots racing for the same volumes, and the
 * external-provisioner round trip.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ANN_BIND_COMPLETED as bindCompleted,
  ANN_BOUND_BY_CONTROLLER as boundByController,
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_STORAGE_PROVISIONER,
  applyActions,
  syncClaim,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
} from '../../../lib/binder/index.ts';
import { ConflictError, ct, multisync, newClaim, newClaimArray, newVolume, newVolumeArray, noevents, normalize, Reactor, runMultisyncTests } from './framework.ts';

const RETAIN = 'Retain';

runMultisyncTests([
  ct('10-1 - successful bind',
    newVolumeArray('volume10-1', '1Gi', '', '', 'Pending', RETAIN, ''),
    newVolumeArray('volume10-1', '1Gi', 'uid10-1', 'claim10-1', 'Bound', RETAIN, '', boundByController),
    newClaimArray('claim10-1', 'uid10-1', '1Gi', '', 'Pending', undefined),
    newClaimArray('claim10-1', 'uid10-1', '1Gi', 'volume10-1', 'Bound', undefined, boundByController, bindCompleted),
    noevents, false, 'syncClaim'),
  ct('10-2 - bind PV race',
    [
      newVolume('volume10-2-1', '1Gi', 'uid10-2', 'claim10-2', 'Bound', RETAIN, '', boundByController),
      newVolume('volume10-2-2', '1Gi', 'uid10-2', 'claim10-2', 'Bound', RETAIN, '', boundByController),
    ],
    [
      newVolume('volume10-2-1', '1Gi', 'uid10-2', 'claim10-2', 'Bound', RETAIN, '', boundByController),
      newVolume('volume10-2-2', '1Gi', '', '', 'Available', RETAIN, ''),
    ],
    newClaimArray('claim10-2', 'uid10-2', '1Gi', 'volume10-2-1', 'Bound', undefined, boundByController, bindCompleted),
    newClaimArray('claim10-2', 'uid10-2', '1Gi', 'volume10-2-1', 'Bound', undefined, boundByController, bindCompleted),
    noevents, false, 'syncClaim'),
  ct('10-3 - a deleted claim releases its Retain volume',
    newVolumeArray('volume10-3', '1Gi', 'uid10-3', 'claim10-3', 'Bound', RETAIN, '', boundByController),
    newVolumeArray('volume10-3', '1Gi', 'uid10-3', 'claim10-3', 'Released', RETAIN, '', boundByController),
    [], [],
    noevents, false, 'syncVolume'),
]);

test('bind makes upstream\'s four writes, in order, each on the version the previous write returned', async () => {
  const reactor = new Reactor([newVolume('v', '1Gi', '', '', 'Available', RETAIN, '')], [newClaim('c', 'uid-c', '1Gi', '', 'Pending', undefined)]);
  const result = syncClaim(reactor.claimSnapshot('default/c', [], []));
  const writes = result.actions.filter((a) => a.action === 'write');
  assert.deepEqual(writes.map((w) => `${w.kind} ${w.verb} ${w.purpose} chained=${w.chained}`), [
    'PersistentVolume update bindVolumeToClaim chained=false',
    'PersistentVolume updateStatus updateVolumePhase chained=true',
    'PersistentVolumeClaim update bindClaimToVolume chained=false',
    'PersistentVolumeClaim updateStatus updateClaimStatus chained=true',
  ]);
  assert.equal(await reactor.apply(result), undefined);
  assert.equal(reactor.writes, 4);
  assert.equal(reactor.volumes.get('v')!.metadata.resourceVersion, '3');
  assert.equal(reactor.claims.get('default/c')!.metadata.resourceVersion, '3');
  // The volume's claimRef records the claim version the bind was computed from.
  assert.equal(reactor.volumes.get('v')!.spec.claimRef!.resourceVersion, '1');
});

test('a crash between the PV writes and the PVC writes is healed by the next sync', async () => {
  const reactor = new Reactor([newVolume('v', '1Gi', '', '', 'Available', RETAIN, '')], [newClaim('c', 'uid-c', '1Gi', '', 'Pending', undefined)]);
  reactor.injectedErrors = [undefined, undefined, new Error('function timed out')];
  const error = await reactor.syncClaim('default/c', []);
  assert.match(error!.message, /timed out/);
  assert.equal(reactor.volumes.get('v')!.status!.phase, 'Bound');
  assert.equal(reactor.claims.get('default/c')!.spec.volumeName, '');
  // Next sync: the volume is pre-bound to the claim, so it is chosen again and the claim side completes.
  assert.equal(await reactor.syncClaim('default/c', []), undefined);
  assert.deepEqual(normalize(reactor.claims.get('default/c')!), normalize(newClaim('c', 'uid-c', '1Gi', 'v', 'Bound', undefined, boundByController, bindCompleted)));
  assert.deepEqual(normalize(reactor.volumes.get('v')!), normalize(newVolume('v', '1Gi', 'uid-c', 'c', 'Bound', RETAIN, '', boundByController)));
});

test('a 409 stops the sync before any later write or event; the retry converges', async () => {
  const reactor = new Reactor([newVolume('v', '1Gi', '', '', 'Available', RETAIN, '')], [newClaim('c', 'uid-c', '1Gi', '', 'Pending', undefined)]);
  reactor.injectedErrors = [new ConflictError('conflict')];
  const error = await reactor.syncClaim('default/c', []);
  assert.ok(error instanceof ConflictError);
  assert.equal(reactor.writes, 0);
  reactor.injectedErrors = [undefined, new Error('500 Internal Server Error')];
  assert.match((await reactor.syncClaim('default/c', []))!.message, /500/);
  assert.equal(reactor.writes, 1);
  await multisync(reactor, { kind: 'syncClaim', key: 'default/c' });
  assert.equal(reactor.claims.get('default/c')!.status!.phase, 'Bound');
  assert.equal(reactor.volumes.get('v')!.status!.phase, 'Bound');
});

test('a write computed from a stale object is rejected, never applied blindly', async () => {
  const reactor = new Reactor([newVolume('v', '1Gi', '', '', 'Available', RETAIN, '')], [newClaim('c', 'uid-c', '1Gi', '', 'Pending', undefined)]);
  const stale = syncClaim(reactor.claimSnapshot('default/c', [], []));
  // Someone else changes the volume after the snapshot was taken.
  const v = reactor.volumes.get('v')!;
  v.metadata.resourceVersion = '7';
  v.metadata.labels = { owner: 'admin' };
  const outcome = await applyActions(stale, { write: (w) => reactor.write(w), event: () => {}, enqueue: () => {} });
  assert.ok(outcome.error instanceof ConflictError);
  assert.equal(outcome.writeFailed, true);
  assert.deepEqual(reactor.volumes.get('v')!.metadata.labels, { owner: 'admin' });
  assert.equal(reactor.volumes.get('v')!.spec.claimRef, undefined);
});

/**
 * Stale snapshots racing: every claim decides from the same state, the results are applied in a
 * shuffled order (as concurrent invocations would), conflicts are dropped, and rounds repeat.
 */
test('300 claims racing for 100 volumes from stale snapshots: exactly 100 bound, no volume bound twice', async () => {
  const volumes: PersistentVolume[] = [];
  const claims: PersistentVolumeClaim[] = [];
  for (let i = 0; i < 100; i++) volumes.push(newVolume(`pv-${i}`, `${1 + (i % 10)}Gi`, '', '', 'Available', RETAIN, ''));
  for (let i = 0; i < 300; i++) claims.push(newClaim(`claim-${i}`, `uid-${i}`, `${1 + (i % 10)}Gi`, '', 'Pending', undefined));
  const reactor = new Reactor(volumes, claims);
  let seed = 42;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let round = 0; round < 40; round++) {
    const keys = [...reactor.claims.keys()];
    const results = keys.map((key) => syncClaim(reactor.claimSnapshot(key, [], [])));
    const order = results.map((r, i) => ({ r, k: random(), i })).sort((a, b) => a.k - b.k);
    for (const { r } of order) await reactor.apply(r);
    for (const name of [...reactor.volumes.keys()]) await reactor.syncVolume(name);
    const quiet = reactor.changed.size === 0;
    reactor.changed.clear();
    reactor.enqueued.splice(0);
    if (quiet) break;
  }
  const bound = [...reactor.claims.values()].filter((c) => c.status?.phase === 'Bound');
  assert.equal(bound.length, 100);
  const owners = new Map<string, string>();
  for (const c of bound) {
    const v = reactor.volumes.get(c.spec.volumeName!)!;
    assert.equal(v.spec.claimRef?.uid, c.metadata.uid, `${c.spec.volumeName} points back to ${c.metadata.name}`);
    assert.equal(owners.has(v.metadata.name), false, `${v.metadata.name} bound twice`);
    owners.set(v.metadata.name, c.metadata.name);
  }
  for (const v of reactor.volumes.values()) assert.equal(v.status?.phase, 'Bound');
  const pending = [...reactor.claims.values()].filter((c) => c.status?.phase !== 'Bound');
  assert.equal(pending.length, 200);
  assert.ok(pending.every((c) => c.status?.phase === 'Pending' && !c.spec.volumeName));
  assert.ok(reactor.events.some((e) => e.reason === 'FailedBinding'));
});

test('external provisioner round trip: hand-off, then the provisioned PV binds', async () => {
  const classes: StorageClass[] = [{ metadata: { name: 'ext' }, provisioner: 'vendor.com/my-volume', volumeBindingMode: 'Immediate' }];
  const reactor = new Reactor([], [newClaim('c', 'uid-c', '1Gi', '', 'Pending', 'ext')]);
  await multisync(reactor, { kind: 'syncClaim', key: 'default/c' }, classes);
  const claim = reactor.claims.get('default/c')!;
  assert.equal(claim.metadata.annotations![ANN_STORAGE_PROVISIONER], 'vendor.com/my-volume');
  assert.equal(claim.status!.phase, 'Pending');
  assert.equal(reactor.events.filter((e) => e.reason === 'ExternalProvisioning').length >= 2, true, 'emitted on every sync');
  // The provisioner creates the PV pointing at the claim (the API server resets its status to Pending).
  const pv = newVolume('pvc-uid-c', '1Gi', 'uid-c', 'c', 'Pending', 'Delete', 'ext');
  pv.metadata.annotations = { [ANN_DYNAMICALLY_PROVISIONED]: 'vendor.com/my-volume' };
  reactor.volumes.set(pv.metadata.name, pv);
  await multisync(reactor, { kind: 'syncVolume', key: pv.metadata.name }, classes);
  const bound = reactor.claims.get('default/c')!;
  assert.equal(bound.status!.phase, 'Bound');
  assert.equal(bound.spec.volumeName, 'pvc-uid-c');
  assert.equal(reactor.volumes.get('pvc-uid-c')!.status!.phase, 'Bound');
  // Already bound to the claim: no bound-by-controller on the volume.
  assert.equal(reactor.volumes.get('pvc-uid-c')!.metadata.annotations![boundByController], undefined);
});

test('the core never mutates its snapshot (frozen inputs)', async () => {
  const { syncVolume } = await import('../../../lib/binder/index.ts');
  const freeze = <T>(o: T): T => {
    if (o && typeof o === 'object') {
      for (const v of Object.values(o)) freeze(v);
      Object.freeze(o);
    }
    return o;
  };
  const volumes = freeze([
    newVolume('a', '1Gi', '', '', 'Available', RETAIN, ''),
    newVolume('b', '1Gi', 'uid-x', 'x', 'Bound', 'Delete', '', boundByController),
  ]);
  const claim = freeze(newClaim('c', 'uid-c', '1Gi', '', 'Pending', undefined));
  const bound = freeze(newClaim('x', 'uid-x', '1Gi', 'other', 'Bound', undefined, bindCompleted));
  assert.equal(syncClaim({ claim, volumes, classes: [] }).actions.filter((a) => a.action === 'write').length, 4);
  assert.equal(syncClaim({ claim: bound, volumes, classes: [] }).actions.length, 2);
  assert.equal(syncVolume({ volume: volumes[1], claim: bound }).actions.length, 2);
  assert.equal(syncVolume({ volume: volumes[1] }).actions.length, 3);
});
