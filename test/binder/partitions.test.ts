/**
 * The binder with the cluster's list of match-index partitions (lib/state/cache.ts `IndexPartitions`): a
 * complete list spares the Queries of access-mode sets that never held a volume, and changes no decision.
 * Against the real stand-ins (the emulator over HTTP, dynalite), with the list read as the runtime reads
 * it: in the backoff gate's one BatchGetItem (lib/state/key-state.ts), from what the binder prefetches.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { createBinderController, reconcileBinder, type BinderOutcome } from '../../lib/binder/controller.ts';
import type { ClusterEvent, WatchedKind } from '../../lib/runtime/message.ts';
import { BackoffStore } from '../../lib/state/backoff.ts';
import type { IndexPartitions } from '../../lib/state/cache.ts';
import { readKeyState, type PrefetchedItems } from '../../lib/state/key-state.ts';
import { VOLUME_MATCH_INDEX, volumeMatchPk } from '../../lib/state/schema.ts';
import { startBinderShell, type BinderShell } from './shell.ts';

const CLUSTER = 'parts';
const json = <T>(o: unknown): T => JSON.parse(JSON.stringify(o)) as T;

describe('binder: the match-index partition list', () => {
  let shell: BinderShell;
  let ns: string;
  let counter = 0;
  before(async () => {
    shell = await startBinderShell(CLUSTER);
  });
  after(() => shell.stop());
  beforeEach(async () => {
    ns = `parts${++counter}`;
    await shell.core.createNamespace({ body: { metadata: { name: ns } } });
  });

  const event = (kind: WatchedKind, key: string, object?: unknown): ClusterEvent => ({
    v: 1, cluster: CLUSTER, kind, type: 'MODIFIED', key, uid: '', resourceVersion: '0', observedAt: new Date().toISOString(), ...(object ? { object } : {}),
  } as ClusterEvent);
  const withList = (partitions: IndexPartitions | null): PrefetchedItems => ({ cache: new Map(), control: new Map(), partitions: new Map([[VOLUME_MATCH_INDEX, partitions]]) });
  const reconcileClaim = (name: string, prefetched?: PrefetchedItems): Promise<BinderOutcome> =>
    reconcileBinder({ kind: 'PersistentVolumeClaim', key: `${ns}/${name}`, event: event('PersistentVolumeClaim', `${ns}/${name}`), ...(prefetched ? { prefetched } : {}) }, shell.deps);

  /** A volume in the emulator and the cache (the forwarder's part), Available. */
  async function createPV(name: string, size: string, modes: string[], claimRef?: string): Promise<V1PersistentVolume> {
    const created = await shell.core.createPersistentVolume({
      body: {
        metadata: { name },
        spec: {
          capacity: { storage: size }, accessModes: modes, persistentVolumeReclaimPolicy: 'Retain', storageClassName: ns, hostPath: { path: `/tmp/${name}` },
          ...(claimRef ? { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: claimRef } } : {}),
        },
      },
    });
    const available = await shell.core.replacePersistentVolumeStatus({ name, body: { ...created, status: { phase: 'Available' } } });
    await shell.cache.put(CLUSTER, 'PersistentVolume', json(available));
    return available;
  }
  async function createPVC(name: string, size: string, modes = ['ReadWriteOnce']): Promise<void> {
    const created = await shell.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name }, spec: { accessModes: modes, resources: { requests: { storage: size } }, storageClassName: ns } },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolumeClaim', json(created));
  }
  const boundTo = async (claim: string) => (await shell.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: ns })).spec?.volumeName;
  const partition = (modes: string[]) => volumeMatchPk(CLUSTER, ns, modes);

  it('a complete list without the claim’s sets: only the pre-bound Query, no match Query, the claim waits', async () => {
    await createPVC('lonely', '1Gi');
    const without = await reconcileClaim('lonely');
    assert.equal(without.stats.queries, 3 + 8, 'own entry, classes, byClaimRef, then all eight access-mode sets containing RWO');
    const withEmpty = await reconcileClaim('lonely', withList({ complete: true, pks: new Set() }));
    assert.equal(withEmpty.stats.queries, 3, 'own entry, classes and byClaimRef only');
    assert.equal((await shell.core.readNamespacedPersistentVolumeClaim({ name: 'lonely', namespace: ns })).status?.phase, 'Pending');
  });

  it('a complete list: the listed set is read and the claim binds as without a list', async () => {
    await createPV(`${ns}-rwo-rwx`, '2Gi', ['ReadWriteOnce', 'ReadWriteMany']);
    await createPVC('fits', '1Gi');
    const outcome = await reconcileClaim('fits', withList({ complete: true, pks: new Set([partition(['ReadWriteOnce', 'ReadWriteMany'])]) }));
    assert.equal(outcome.stats.queries, 3 + 1, 'one match Query: the one set listed');
    assert.equal(await boundTo('fits'), `${ns}-rwo-rwx`);
  });

  it('an incomplete list (or none) is not trusted: every set is read', async () => {
    await createPV(`${ns}-unlisted`, '1Gi', ['ReadWriteOnce']);
    await createPVC('finds', '1Gi');
    const outcome = await reconcileClaim('finds', withList({ complete: false, pks: new Set() }));
    assert.ok(outcome.stats.queries >= 3 + 1, `${outcome.stats.queries} queries`);
    assert.equal(await boundTo('finds'), `${ns}-unlisted`);
  });

  it('a volume pre-bound to the claim in an unlisted set still binds (no Query for its set; the listed set\'s first page, read beside byClaimRef, goes unused)', async () => {
    await createPV(`${ns}-prebound`, '1Gi', ['ReadWriteOnce'], 'mine');
    await createPV(`${ns}-bigger-free`, '5Gi', ['ReadWriteOnce', 'ReadOnlyMany']);
    await createPVC('mine', '1Gi');
    const outcome = await reconcileClaim('mine', withList({ complete: true, pks: new Set([partition(['ReadWriteOnce', 'ReadOnlyMany'])]) }));
    // The listed set's first page was read beside byClaimRef (lib/binder/snapshot.ts), and went unused.
    assert.equal(outcome.stats.queries, 4, 'the pre-bound volume matched in its own set before any listed set was needed');
    assert.equal(await boundTo('mine'), `${ns}-prebound`);
  });

  it('a volume pre-bound to the claim is taken whatever its set\'s free volumes (no list needed; their first page, read beside byClaimRef, goes unused)', async () => {
    await createPV(`${ns}-prebound`, '1Gi', ['ReadWriteOnce'], 'requeued');
    await createPV(`${ns}-free`, '1Gi', ['ReadWriteOnce']);
    await createPVC('requeued', '1Gi');
    const outcome = await reconcileClaim('requeued');
    assert.equal(outcome.stats.queries, 4, 'own entry, classes, byClaimRef and, beside it, the set\'s first page (unused): the pre-bound volume decides its set');
    assert.equal(await boundTo('requeued'), `${ns}-prebound`);
  });

  it('the list as the cache keeps it and the runtime reads it: a volume written through the cache is found', async () => {
    // What the forwarder's LIST leaves: the list complete (no volume of this class yet).
    await shell.cache.completePartitions(CLUSTER, 'PersistentVolume', []);
    await createPVC('later', '3Gi', ['ReadWriteMany']);
    const controller = createBinderController({ sqs: undefined as never, queueUrl: 'unused' });
    const claim = json<Record<string, any>>(await shell.core.readNamespacedPersistentVolumeClaim({ name: 'later', namespace: ns }));
    const read = async () => {
      const request = { cluster: CLUSTER, kind: 'PersistentVolumeClaim' as const, key: `${ns}/later`, event: event('PersistentVolumeClaim', `${ns}/later`, claim) };
      const state = await readKeyState(
        { doc: shell.db.doc, tables: shell.db.tables, backoff: new BackoffStore({ doc: shell.db.doc, table: shell.db.tables.control }), cache: shell.cache },
        { controller: 'binder', ...request },
        controller.prefetch!(request),
      );
      return state.extra;
    };
    const empty = await read();
    assert.equal(empty.partitions?.get(VOLUME_MATCH_INDEX)?.complete, true);
    assert.equal((await reconcileClaim('later', empty)).stats.queries, 3, 'nothing listed for RWX of this class');
    // A volume arrives (the forwarder's cache write registers its set first).
    await createPV(`${ns}-late`, '4Gi', ['ReadWriteMany', 'ReadWriteOnce']);
    const listed = await read();
    assert.ok(listed.partitions?.get(VOLUME_MATCH_INDEX)?.pks.has(partition(['ReadWriteMany', 'ReadWriteOnce'])));
    await reconcileClaim('later', listed);
    assert.equal(await boundTo('later'), `${ns}-late`);
  });
});
