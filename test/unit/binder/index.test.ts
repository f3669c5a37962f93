/**
 * Ported from upstream `index_test.go`: findBestMatchForClaim over the access-mode index —
 * TestMatchVolume's scenario table, TestMatchingWithBoundVolumes, TestAllPossibleAccessModes,
 * TestFindingVolumeWithDifferentAccessModes and TestFindingPreboundVolumes (the newer upstream
 * volumes carry phase Available, which unbound volumes need to match).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  allPossibleMatchingAccessModes,
  findBestMatchForClaim,
  InvalidSelectorError,
  type PersistentVolume,
  type PersistentVolumeClaim,
} from '../../../lib/binder/index.ts';

const RWO = 'ReadWriteOnce';
const ROX = 'ReadOnlyMany';
const RWX = 'ReadWriteMany';
const RWOP = 'ReadWriteOncePod';

function makePVC(size: string, modfn?: (pvc: PersistentVolumeClaim) => void): PersistentVolumeClaim {
  const pvc: PersistentVolumeClaim = {
    metadata: { name: 'claim01', namespace: 'myns' },
    spec: { accessModes: [ROX, RWO], resources: { requests: { storage: size } } },
  };
  modfn?.(pvc);
  return pvc;
}

function pv(uid: string, name: string, size: string, modes: string[], extra: Partial<PersistentVolume['spec']> = {}, labels?: Record<string, string>): PersistentVolume {
  return {
    metadata: { uid, name, ...(labels ? { labels } : {}) },
    spec: { capacity: { storage: size }, accessModes: modes, ...extra },
    status: { phase: 'Available' },
  };
}

/** upstream `createTestVolumes` (deliberately out of order). */
function createTestVolumes(): PersistentVolume[] {
  return [
    pv('gce-pd-10', 'gce003', '10G', [RWO, ROX]),
    pv('gce-pd-20', 'gce004', '20G', [RWO, ROX], { claimRef: { uid: 'def456' } }),
    pv('nfs-5', 'nfs002', '5G', [RWO, ROX, RWX]),
    pv('gce-pd-1', 'gce001', '1G', [RWO, ROX], { claimRef: { uid: 'abc123' } }),
    pv('nfs-10', 'nfs003', '10G', [RWO, ROX, RWX]),
    pv('gce-pd-5', 'gce002', '5G', [RWO, ROX]),
    pv('nfs-1', 'nfs001', '1G', [RWO, ROX, RWX]),
    pv('gce-pd-2', 'gce0022', '20000G', [RWO], {}, { 'should-exist': 'true' }),
    pv('gce-pd-silver1', 'gce0023', '10000G', [RWO], { storageClassName: 'silver' }, { 'should-exist': 'true' }),
    pv('gce-pd-silver2', 'gce0024', '100G', [RWO], { storageClassName: 'silver' }),
    pv('gce-pd-gold', 'gce0025', '50G', [RWO], { storageClassName: 'gold' }),
    pv('gce-pd-block', 'gce0026', '30G', [RWO, RWX], { volumeMode: 'Block' }),
    pv('gce-pd-deleting', 'gce0027', '2G', [RWOP], {}),
  ];
}

const scenarios: Array<{ name: string; expectedMatch: string; claim: PersistentVolumeClaim }> = [
  { name: 'successful-match-gce-10', expectedMatch: 'gce-pd-10', claim: makePVC('8G') },
  { name: 'successful-match-nfs-5', expectedMatch: 'nfs-5', claim: makePVC('5G', (c) => (c.spec.accessModes = [ROX, RWO, RWX])) },
  { name: 'successful-skip-1g-bound-volume', expectedMatch: 'gce-pd-5', claim: makePVC('1G') },
  { name: 'successful-no-match', expectedMatch: '', claim: makePVC('999G') },
  {
    name: 'successful-no-match-due-to-label',
    expectedMatch: '',
    claim: makePVC('999G', (c) => (c.spec.selector = { matchLabels: { 'should-not-exist': 'true' } })),
  },
  {
    name: 'successful-no-match-due-to-size-constraint-with-label-selector',
    expectedMatch: '',
    claim: makePVC('20000G', (c) => {
      c.spec.selector = { matchLabels: { 'should-exist': 'true' } };
      c.spec.accessModes = [ROX, RWO];
    }),
  },
  {
    name: 'successful-match-due-with-constraint-and-label-selector',
    expectedMatch: 'gce-pd-2',
    claim: makePVC('20000G', (c) => {
      c.spec.selector = { matchLabels: { 'should-exist': 'true' } };
      c.spec.accessModes = [RWO];
    }),
  },
  {
    name: 'successful-match-with-class',
    expectedMatch: 'gce-pd-silver1',
    claim: makePVC('1G', (c) => {
      c.spec.selector = { matchLabels: { 'should-exist': 'true' } };
      c.spec.accessModes = [RWO];
      c.spec.storageClassName = 'silver';
    }),
  },
  {
    name: 'successful-match-with-class-and-labels',
    expectedMatch: 'gce-pd-silver2',
    claim: makePVC('1G', (c) => {
      c.spec.accessModes = [RWO];
      c.spec.storageClassName = 'silver';
    }),
  },
  {
    name: 'successful-match-with-expression-selector',
    expectedMatch: 'gce-pd-silver1',
    claim: makePVC('1G', (c) => {
      c.spec.selector = { matchExpressions: [{ key: 'should-exist', operator: 'In', values: ['true', 'yes'] }] };
      c.spec.accessModes = [RWO];
      c.spec.storageClassName = 'silver';
    }),
  },
  {
    name: 'successful-no-match-with-does-not-exist-selector',
    expectedMatch: '',
    claim: makePVC('200G', (c) => {
      c.spec.selector = { matchExpressions: [{ key: 'should-exist', operator: 'DoesNotExist' }] };
      c.spec.accessModes = [RWO];
      c.spec.storageClassName = 'silver';
    }),
  },
  {
    name: 'successful-match-block',
    expectedMatch: 'gce-pd-block',
    claim: makePVC('1G', (c) => {
      c.spec.accessModes = [RWX];
      c.spec.volumeMode = 'Block';
    }),
  },
  {
    name: 'successful-no-match-block-volume-for-filesystem-claim',
    expectedMatch: 'nfs-10',
    claim: makePVC('6G', (c) => (c.spec.accessModes = [RWX])),
  },
];

for (const s of scenarios) {
  test(`TestMatchVolume/${s.name}`, () => {
    const volume = findBestMatchForClaim(s.claim, createTestVolumes(), false);
    assert.equal(volume?.metadata.uid ?? '', s.expectedMatch);
  });
}

test('TestMatchVolume/deleting volumes never match', () => {
  const volumes = createTestVolumes();
  const claim = makePVC('1G', (c) => (c.spec.accessModes = [RWOP]));
  assert.equal(findBestMatchForClaim(claim, volumes, false)?.metadata.uid, 'gce-pd-deleting');
  volumes.find((v) => v.metadata.uid === 'gce-pd-deleting')!.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  assert.equal(findBestMatchForClaim(claim, volumes, false), undefined);
});

test('TestMatchVolume/delayed binding matches no unbound volume', () => {
  assert.equal(findBestMatchForClaim(makePVC('8G'), createTestVolumes(), true), undefined);
});

test('TestMatchVolume/an unparsable selector is an error', () => {
  const claim = makePVC('1G', (c) => (c.spec.selector = { matchExpressions: [{ key: 'a', operator: 'Near' }] }));
  assert.throws(() => findBestMatchForClaim(claim, createTestVolumes(), false), InvalidSelectorError);
});

test('TestMatchingWithBoundVolumes', () => {
  const pv1 = pv('gce-pd-1', 'gce001', '1G', [RWO, ROX], { claimRef: { uid: 'abc123' } });
  const pv2 = pv('gce-pd-2', 'gce002', '1G', [RWO, ROX]);
  const volume = findBestMatchForClaim(makePVC('1G'), [pv1, pv2], false);
  assert.equal(volume?.metadata.name, 'gce002');
});

test('TestAllPossibleAccessModes', () => {
  const volumes = createTestVolumes();
  const rwo = allPossibleMatchingAccessModes(makePVC('1G', (c) => (c.spec.accessModes = [RWO])), volumes);
  // The mock volumes carry RWO+ROX, RWO+ROX+RWX, RWO, RWO+RWX and RWOP.
  assert.deepEqual(rwo.map((g) => g.key), ['ReadWriteOnce', 'ReadWriteOnce,ReadOnlyMany', 'ReadWriteOnce,ReadWriteMany', 'ReadWriteOnce,ReadOnlyMany,ReadWriteMany']);
  const rwx = allPossibleMatchingAccessModes(makePVC('1G', (c) => (c.spec.accessModes = [RWX])), volumes);
  assert.deepEqual(rwx.map((g) => g.key), ['ReadWriteOnce,ReadWriteMany', 'ReadWriteOnce,ReadOnlyMany,ReadWriteMany']);
});

test('TestFindingVolumeWithDifferentAccessModes', () => {
  const gce = pv('001', 'gce', '10G', [RWO, ROX]);
  const ebs = pv('002', 'ebs', '10G', [RWO]);
  const nfs = pv('003', 'nfs', '10G', [RWO, ROX, RWX]);
  const volumes = [gce, ebs, nfs];
  const claim = makePVC('1G', (c) => (c.spec.accessModes = [RWO]));
  const steps: Array<[string[], string, () => void]> = [
    [[RWO], 'ebs', () => {}],
    [[RWO, ROX], 'gce', () => {}],
    // order of the requested modes should not matter
    [[RWX, RWO, ROX], 'nfs', () => {}],
    // fewer modes requested should still match
    [[RWX], 'nfs', () => {}],
    // pretend the exact match is bound: should get the next level up of modes
    [[RWO], 'gce', () => (ebs.spec.claimRef = {})],
    // continue up the levels of modes
    [[RWO], 'nfs', () => (gce.spec.claimRef = {})],
    // partial mode request
    [[ROX], 'gce', () => delete gce.spec.claimRef],
  ];
  for (const [modes, expected, mutate] of steps) {
    mutate();
    claim.spec.accessModes = modes;
    assert.equal(findBestMatchForClaim(claim, volumes, false)?.metadata.name, expected, `modes ${modes}`);
  }
});

test('TestFindingPreboundVolumes', () => {
  const claim = makePVC('1Gi', (c) => (c.spec.accessModes = [RWO]));
  const claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'myns', name: 'claim01' };
  const testVolume = (name: string, size: string): PersistentVolume => pv(name, name, size, [RWO]);
  const pv1 = testVolume('pv1', '1Gi');
  const pv5 = testVolume('pv5', '5Gi');
  const pv8 = testVolume('pv8', '8Gi');
  const pvBadSize = testVolume('pvBadSize', '1Mi');
  const pvBadMode = testVolume('pvBadMode', '1Gi');
  pvBadMode.spec.accessModes = [ROX];
  const volumes = [pv1, pv5, pv8, pvBadSize, pvBadMode];
  const best = () => findBestMatchForClaim(claim, volumes, false)?.metadata.name;

  // expected exact match on size
  assert.equal(best(), 'pv1');
  // pretend the exact match is pre-bound: should get the next size up
  pv1.spec.claimRef = { name: 'foo', namespace: 'bar' };
  assert.equal(best(), 'pv5');
  // the exact match is available but the largest volume is pre-bound to the claim
  delete pv1.spec.claimRef;
  pv8.spec.claimRef = { ...claimRef };
  assert.equal(best(), 'pv8');
  // a pre-bound volume that is too small does not match: the exact match does
  delete pv8.spec.claimRef;
  pvBadSize.spec.claimRef = { ...claimRef };
  assert.equal(best(), 'pv1');
  // a pre-bound volume without the right access mode does not match: the exact match does
  delete pvBadSize.spec.claimRef;
  pvBadMode.spec.claimRef = { ...claimRef };
  assert.equal(best(), 'pv1');
  // a pre-bound volume ignores phase and class, but not volumeMode
  delete pvBadMode.spec.claimRef;
  pv8.spec.claimRef = { ...claimRef };
  pv8.status = { phase: 'Released' };
  pv8.spec.storageClassName = 'other';
  assert.equal(best(), 'pv8');
  pv8.spec.volumeMode = 'Block';
  assert.equal(best(), 'pv1');
});

// Found by the soak (issue #13): claims created together all chose the first of a pool of equal volumes,
// so every sync but one lost with 409 Conflict and the losers' backoff grew to minutes.
test('claims spread over equally small volumes, each keeping its own choice', () => {
  const pool = Array.from({ length: 20 }, (_, i) => pv(`pv-uid-${i}`, `pool-${i}`, '1G', [RWO]));
  const claims = Array.from({ length: 20 }, (_, i) =>
    makePVC('1G', (c) => {
      c.metadata.name = `claim-${i}`;
      c.metadata.uid = `claim-uid-${i}`;
      c.spec.accessModes = [RWO];
    }),
  );
  const chosen = claims.map((c) => findBestMatchForClaim(c, pool, false)?.metadata.name);
  assert.ok(chosen.every((name) => name !== undefined));
  // 20 uniform picks from 20 volumes hit ~12.8 distinct ones on average; the first-in-list rule hits 1
  assert.ok(new Set(chosen).size >= 8, `claims chose only ${new Set(chosen).size} distinct volumes: ${chosen.join(', ')}`);
  // the choice is the claim's own: a reordered list gives the same volume
  const reversed = [...pool].reverse();
  assert.deepEqual(claims.map((c) => findBestMatchForClaim(c, reversed, false)?.metadata.name), chosen);
  // and never at the cost of size: one smaller volume wins for every claim
  const withSmaller = [...pool, pv('pv-uid-small', 'small', '900M', [RWO])];
  const small = makePVC('800M', (c) => {
    c.metadata.uid = 'claim-uid-small';
    c.spec.accessModes = [RWO];
  });
  assert.equal(findBestMatchForClaim(small, withSmaller, false)?.metadata.name, 'small');
});
