/**
 * Test support in the style of upstream's `framework_test.go`: tiny constructors with modifiers, an
 * in-memory "reactor" that applies the core's writes as an API server would (resourceVersion checks,
 * +1 per write, spec and status written separately), and the two runners: one sync (`runSyncTests`)
 * and sync-until-stable (`runMultisyncTests`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_STORAGE_PROVISIONER,
  applyActions,
  syncClaim,
  syncVolume,
  type BinderEvent,
  type BinderWrite,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
  type SyncResult,
} from '../../../lib/binder/index.ts';

export const MOCK_PLUGIN = 'kubernetes.io/mock-volume';
export const NS = 'default';

/** upstream `newVolume(name, capacity, boundToClaimUID, boundToClaimName, phase, policy, class, anns...)`. */
export function newVolume(
  name: string,
  capacity: string,
  boundToClaimUID: string,
  boundToClaimName: string,
  phase: string,
  reclaimPolicy: string,
  storageClass: string,
  ...annotations: string[]
): PersistentVolume {
  const volume: PersistentVolume = {
    metadata: { name, resourceVersion: '1', uid: name },
    spec: {
      capacity: { storage: capacity },
      gcePersistentDisk: {},
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      persistentVolumeReclaimPolicy: reclaimPolicy,
      storageClassName: storageClass,
      volumeMode: 'Filesystem',
    },
    status: { phase },
  };
  if (boundToClaimName !== '') {
    volume.spec.claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', uid: boundToClaimUID, namespace: NS, name: boundToClaimName };
  }
  if (annotations.length > 0) {
    volume.metadata.annotations = {};
    for (const a of annotations) volume.metadata.annotations[a] = a === ANN_DYNAMICALLY_PROVISIONED ? MOCK_PLUGIN : 'yes';
  }
  return volume;
}

/** upstream `newClaim(name, claimUID, capacity, boundToVolume, phase, class, anns...)`. */
export function newClaim(
  name: string,
  claimUID: string,
  capacity: string,
  boundToVolume: string,
  phase: string,
  storageClass: string | undefined,
  ...annotations: string[]
): PersistentVolumeClaim {
  const claim: PersistentVolumeClaim = {
    metadata: { name, namespace: NS, uid: claimUID, resourceVersion: '1' },
    spec: {
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      resources: { requests: { storage: capacity } },
      volumeName: boundToVolume,
      volumeMode: 'Filesystem',
    },
    status: { phase },
  };
  if (storageClass !== undefined) claim.spec.storageClassName = storageClass;
  if (annotations.length > 0) {
    claim.metadata.annotations = {};
    for (const a of annotations) {
      claim.metadata.annotations[a] = a === ANN_STORAGE_PROVISIONER || a === ANN_BETA_STORAGE_PROVISIONER ? MOCK_PLUGIN : 'yes';
    }
  }
  if (phase === 'Bound') {
    claim.status!.accessModes = [...claim.spec.accessModes!];
    claim.status!.capacity = { storage: capacity };
  }
  return claim;
}

export const newVolumeArray = (...args: Parameters<typeof newVolume>): PersistentVolume[] => [newVolume(...args)];
export const newClaimArray = (...args: Parameters<typeof newClaim>): PersistentVolumeClaim[] => [newClaim(...args)];

// Modifiers: each returns the same array with every element changed, like upstream's.
export function withLabels<T extends PersistentVolume>(labels: Record<string, string>, volumes: T[]): T[] {
  for (const v of volumes) v.metadata.labels = { ...labels };
  return volumes;
}
export function withLabelSelector(labels: Record<string, string>, claims: PersistentVolumeClaim[]): PersistentVolumeClaim[] {
  for (const c of claims) c.spec.selector = { matchLabels: { ...labels } };
  return claims;
}
export function withExpectedCapacity(capacity: string, claims: PersistentVolumeClaim[]): PersistentVolumeClaim[] {
  for (const c of claims) c.status!.capacity = { storage: capacity };
  return claims;
}
export function withMessage(message: string, volumes: PersistentVolume[]): PersistentVolume[] {
  for (const v of volumes) v.status!.message = message;
  return volumes;
}
export function withVolumeVolumeMode(mode: string | undefined, volumes: PersistentVolume[]): PersistentVolume[] {
  for (const v of volumes) {
    if (mode === undefined) delete v.spec.volumeMode;
    else v.spec.volumeMode = mode;
  }
  return volumes;
}
export function withClaimVolumeMode(mode: string | undefined, claims: PersistentVolumeClaim[]): PersistentVolumeClaim[] {
  for (const c of claims) {
    if (mode === undefined) delete c.spec.volumeMode;
    else c.spec.volumeMode = mode;
  }
  return claims;
}
export function claimWithAccessMode(modes: string[], claims: PersistentVolumeClaim[]): PersistentVolumeClaim[] {
  for (const c of claims) c.spec.accessModes = [...modes];
  return claims;
}
export function volumeWithAccessModes(modes: string[], volumes: PersistentVolume[]): PersistentVolume[] {
  for (const v of volumes) v.spec.accessModes = [...modes];
  return volumes;
}
export function claimWithAnnotation(key: string, value: string, claims: PersistentVolumeClaim[]): PersistentVolumeClaim[] {
  for (const c of claims) c.metadata.annotations = { ...(c.metadata.annotations ?? {}), [key]: value };
  return claims;
}
export function volumeWithAnnotation(key: string, value: string, volumes: PersistentVolume[]): PersistentVolume[] {
  for (const v of volumes) v.metadata.annotations = { ...(v.metadata.annotations ?? {}), [key]: value };
  return volumes;
}
export function claimWithoutClass(claims: PersistentVolumeClaim[]): PersistentVolumeClaim[] {
  for (const c of claims) delete c.spec.storageClassName;
  return claims;
}
export function withDeletionTimestamp<T extends { metadata: { deletionTimestamp?: string } }>(objects: T[]): T[] {
  for (const o of objects) o.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  return objects;
}
export function withFinalizers(finalizers: string[], volumes: PersistentVolume[]): PersistentVolume[] {
  for (const v of volumes) v.metadata.finalizers = [...finalizers];
  return volumes;
}
/** upstream `newExternalProvisionedVolume`: a CSI source and provisioned-by = the driver. */
export function externalProvisioned(driver: string, volumes: PersistentVolume[]): PersistentVolume[] {
  for (const v of volumes) {
    delete v.spec.gcePersistentDisk;
    v.spec.csi = { driver, volumeHandle: '527b55dc-c7db-4574-9226-2e33318b06a3', fsType: 'ext4', volumeAttributes: { 'Test-Key': 'Test-Value' } };
    v.metadata.annotations = { ...(v.metadata.annotations ?? {}), [ANN_DYNAMICALLY_PROVISIONED]: driver };
  }
  return volumes;
}

export const novolumes: PersistentVolume[] = [];
export const noclaims: PersistentVolumeClaim[] = [];
export const noevents: string[] = [];

export class ConflictError extends Error {
  readonly code = 409;
  constructor(message: string) {
    super(message);
    this.name = 'ConflictError';
  }
}

/**
 * The fake API server: objects by kind and key, resourceVersion check on every write, +1 per write,
 * `update` keeps the stored status and `updateStatus` keeps the stored spec and metadata (as the real
 * API server's status subresource does).
 */
export class Reactor {
  readonly volumes = new Map<string, PersistentVolume>();
  readonly claims = new Map<string, PersistentVolumeClaim>();
  readonly events: BinderEvent[] = [];
  readonly enqueued: string[] = [];
  readonly changed = new Set<string>();
  writes = 0;
  /** Errors to inject, one per write, in order (`undefined` = no error). */
  injectedErrors: Array<Error | undefined> = [];

  constructor(volumes: readonly PersistentVolume[], claims: readonly PersistentVolumeClaim[]) {
    for (const v of volumes) this.volumes.set(v.metadata.name, structuredClone(v));
    for (const c of claims) this.claims.set(`${c.metadata.namespace}/${c.metadata.name}`, structuredClone(c));
  }

  write(w: BinderWrite): PersistentVolume | PersistentVolumeClaim {
    const injected = this.injectedErrors.shift();
    if (injected) throw injected;
    const store: Map<string, PersistentVolume | PersistentVolumeClaim> = w.kind === 'PersistentVolume' ? this.volumes : this.claims;
    const key = w.kind === 'PersistentVolume' ? w.object.metadata.name : `${w.object.metadata.namespace}/${w.object.metadata.name}`;
    const stored = store.get(key);
    if (!stored) throw new Error(`${w.kind} "${key}" not found`);
    if (stored.metadata.resourceVersion !== w.object.metadata.resourceVersion) {
      throw new ConflictError(`Operation cannot be fulfilled on ${w.kind} "${key}": the object has been modified`);
    }
    const next = structuredClone(w.object) as PersistentVolume & PersistentVolumeClaim;
    if (w.verb === 'update') next.status = structuredClone(stored.status);
    else {
      next.metadata = structuredClone(stored.metadata);
      next.spec = structuredClone(stored.spec) as PersistentVolume['spec'] & PersistentVolumeClaim['spec'];
    }
    next.metadata.resourceVersion = String(Number(stored.metadata.resourceVersion ?? '0') + 1);
    if (JSON.stringify(normalize(next)) === JSON.stringify(normalize(stored))) {
      // An API server does not bump the version of a no-op update either.
      next.metadata.resourceVersion = stored.metadata.resourceVersion;
    } else {
      this.changed.add(`${w.kind}:${key}`);
    }
    store.set(key, next);
    this.writes++;
    return structuredClone(next);
  }

  /** Applies one sync result; returns the error the controller would return. */
  async apply(result: SyncResult): Promise<Error | undefined> {
    const outcome = await applyActions(result, {
      write: (w) => this.write(w),
      event: (e) => void this.events.push(e),
      enqueue: (q) => void this.enqueued.push(`${q.kind}:${q.key}`),
    });
    return outcome.error;
  }

  claimSnapshot(key: string, classes: readonly StorageClass[], pods: readonly Pod[]) {
    // The core never mutates its snapshot (the tests freeze nothing but rely on that), so no copies.
    return { claim: this.claims.get(key)!, volumes: [...this.volumes.values()], classes, pods };
  }

  volumeSnapshot(name: string) {
    const volume = structuredClone(this.volumes.get(name)!);
    const ref = volume.spec.claimRef;
    const claim = ref ? this.claims.get(`${ref.namespace}/${ref.name}`) : undefined;
    return { volume, claim: claim && structuredClone(claim) };
  }

  async syncClaim(key: string, classes: readonly StorageClass[], pods: readonly Pod[] = []): Promise<Error | undefined> {
    return this.apply(syncClaim(this.claimSnapshot(key, classes, pods)));
  }

  async syncVolume(name: string): Promise<Error | undefined> {
    return this.apply(syncVolume(this.volumeSnapshot(name)));
  }
}

/** Drops what upstream's comparison ignores (resourceVersions) and what JSON omits (empty maps). */
export function normalize<T>(obj: T): T {
  const copy = JSON.parse(JSON.stringify(obj));
  delete copy.metadata.resourceVersion;
  if (copy.spec?.claimRef) delete copy.spec.claimRef.resourceVersion;
  if (copy.spec?.claimRef && copy.spec.claimRef.uid === '') delete copy.spec.claimRef.uid;
  for (const field of ['annotations', 'labels']) {
    if (copy.metadata[field] && Object.keys(copy.metadata[field]).length === 0) delete copy.metadata[field];
  }
  if (copy.status?.message === '') delete copy.status.message;
  return copy;
}

export type TestCall = 'syncClaim' | 'syncVolume';

/** upstream's positional `controllerTest{name, initialVolumes, expectedVolumes, initialClaims, expectedClaims, expectedEvents, errors, test}`. */
export function ct(
  name: string,
  initialVolumes: PersistentVolume[],
  expectedVolumes: PersistentVolume[],
  initialClaims: PersistentVolumeClaim[],
  expectedClaims: PersistentVolumeClaim[],
  expectedEvents: string[],
  expectError: boolean | RegExp,
  call: TestCall,
  extra: Partial<ControllerTest> = {},
): ControllerTest {
  return { name, initialVolumes, expectedVolumes, initialClaims, expectedClaims, expectedEvents, expectError, test: call, ...extra };
}

/** One row of a table, as upstream's `controllerTest`. */
export interface ControllerTest {
  name: string;
  initialVolumes: PersistentVolume[];
  expectedVolumes: PersistentVolume[];
  initialClaims: PersistentVolumeClaim[];
  expectedClaims: PersistentVolumeClaim[];
  /** `"<type> <reason>"` prefixes of the first N recorded events (N = length); empty checks nothing. */
  expectedEvents: string[];
  /** Whether the sync must return an error (`testSyncClaimError`). */
  expectError?: boolean | RegExp;
  test: TestCall;
  /** Extra check of the recorded events' messages, in order. */
  expectedMessages?: string[];
  /** Compare the whole event list, not a prefix (for rows whose point is that no event is recorded). */
  exactEvents?: boolean;
  /** Requeues the sync must ask for (`Kind:key`). */
  expectedEnqueued?: string[];
}

function compareObjects(reactor: Reactor, t: ControllerTest): void {
  const byName = <T extends { metadata: { name: string } }>(xs: Iterable<T>) =>
    [...xs].map(normalize).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  assert.deepEqual(byName(reactor.volumes.values()), byName(t.expectedVolumes), `${t.name}: volumes`);
  assert.deepEqual(byName(reactor.claims.values()), byName(t.expectedClaims), `${t.name}: claims`);
}

function compareEvents(reactor: Reactor, t: ControllerTest): void {
  const got = reactor.events.map((e) => `${e.type} ${e.reason}`);
  assert.deepEqual(t.exactEvents ? got : got.slice(0, t.expectedEvents.length), t.expectedEvents, `${t.name}: events ${JSON.stringify(got)}`);
  if (t.expectedMessages) {
    assert.deepEqual(reactor.events.map((e) => e.message).slice(0, t.expectedMessages.length), t.expectedMessages, `${t.name}: messages`);
  }
}

const firstKey = (t: ControllerTest): string =>
  t.test === 'syncClaim' ? `${t.initialClaims[0].metadata.namespace}/${t.initialClaims[0].metadata.name}` : t.initialVolumes[0].metadata.name;

/** upstream `runSyncTests`: one call of the tested sync, then compare objects and events. */
export function runSyncTests(tests: ControllerTest[], classes: StorageClass[] = [], pods: Pod[] = []): void {
  for (const t of tests) {
    test(t.name, async () => {
      const reactor = new Reactor(t.initialVolumes, t.initialClaims);
      const error = t.test === 'syncClaim' ? await reactor.syncClaim(firstKey(t), classes, pods) : await reactor.syncVolume(firstKey(t));
      if (t.expectError) {
        assert.ok(error, `${t.name}: expected an error`);
        if (t.expectError instanceof RegExp) assert.match(error.message, t.expectError);
      } else {
        assert.equal(error, undefined, `${t.name}: unexpected error ${error?.message}`);
      }
      compareObjects(reactor, t);
      compareEvents(reactor, t);
      if (t.expectedEnqueued) assert.deepEqual(reactor.enqueued, t.expectedEnqueued, `${t.name}: enqueued`);
    });
  }
}

/**
 * upstream `runMultisyncTests`: the first call, then re-sync every changed or enqueued object until
 * nothing changes, then a full periodic sync (claims, then volumes); repeat until a full sync changes
 * nothing. Version conflicts are ignored (the next round retries).
 */
export async function multisync(reactor: Reactor, first: { kind: TestCall; key: string }, classes: StorageClass[] = [], pods: Pod[] = []): Promise<number> {
  const run = async (kind: TestCall, key: string): Promise<void> => {
    if (kind === 'syncClaim' ? !reactor.claims.has(key) : !reactor.volumes.has(key)) return;
    // Sync errors (conflicts included) are only logged upstream; the next round retries.
    if (kind === 'syncClaim') await reactor.syncClaim(key, classes, pods);
    else await reactor.syncVolume(key);
  };
  let calls = 0;
  await run(first.kind, first.key);
  for (let round = 0; round < 100; round++) {
    while (reactor.changed.size > 0 || reactor.enqueued.length > 0) {
      const pending = [...reactor.changed, ...reactor.enqueued.splice(0)];
      reactor.changed.clear();
      for (const id of new Set(pending)) {
        const [kind, key] = [id.slice(0, id.indexOf(':')), id.slice(id.indexOf(':') + 1)];
        await run(kind === 'PersistentVolume' ? 'syncVolume' : 'syncClaim', key);
        if (++calls > 1000) throw new Error('too many sync calls');
      }
    }
    for (const key of [...reactor.claims.keys()]) await run('syncClaim', key);
    for (const key of [...reactor.volumes.keys()]) await run('syncVolume', key);
    if (reactor.changed.size === 0 && reactor.enqueued.length === 0) return calls;
  }
  throw new Error('multisync did not converge');
}

export function runMultisyncTests(tests: ControllerTest[], classes: StorageClass[] = [], pods: Pod[] = []): void {
  for (const t of tests) {
    test(t.name, async () => {
      const reactor = new Reactor(t.initialVolumes, t.initialClaims);
      await multisync(reactor, { kind: t.test, key: firstKey(t) }, classes, pods);
      compareObjects(reactor, t);
      compareEvents(reactor, t);
    });
  }
}
