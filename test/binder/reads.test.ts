/**
 * What one binder reconcile reads from the cache, counted on the real stand-ins (the emulator over HTTP,
 * dynalite): each read is a request, and the benches count them per bind.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createBinderController, reconcileBinder } from '../../lib/binder/controller.ts';
import { prefetchKey, type PrefetchedItems } from '../../lib/state/key-state.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { startBinderShell, type BinderShell } from './shell.ts';
import { loadVolumeSnapshot } from '../../lib/binder/snapshot.ts';
import type { BinderApi } from '../../lib/binder/api.ts';
import type { PersistentVolume } from '../../lib/binder/types.ts';
import type { CachedObject } from '../../lib/state/cache.ts';

const CLUSTER = 'reads';
const json = <T>(o: unknown): T => JSON.parse(JSON.stringify(o)) as T;

/** A cache over the shell's tables whose every DynamoDB request is named in `commands`, in order. */
function countingCache(shell: BinderShell): { cache: ObjectCache; commands: string[] } {
  const commands: string[] = [];
  const doc = {
    send: (command: { constructor: { name: string } }) => {
      commands.push(command.constructor.name);
      return (shell.db.doc.send as (c: unknown) => Promise<unknown>)(command);
    },
  } as unknown as DocumentClient;
  return { cache: new ObjectCache(doc, shell.db.tables.cache, { indexer: indexAttributes }), commands };
}

describe('binder: cache reads per reconcile', () => {
  let shell: BinderShell;
  before(async () => {
    shell = await startBinderShell(CLUSTER);
    await shell.core.createNamespace({ body: { metadata: { name: 'app' } } });
  });
  after(() => shell.stop());

  it('a Bound volume whose claim the cache saw deleted (a tombstone with the claimRef uid) reads nothing live; any other miss GETs the claim, as upstream', async () => {
    let live = 0;
    const sources = { cluster: CLUSTER, cache: shell.cache, api: { readClaim: async () => void live++ } as unknown as BinderApi };
    const volume = { metadata: { name: 'v1' }, spec: { claimRef: { namespace: 'app', name: 'gone', uid: 'uid-1' } }, status: { phase: 'Bound' } } as unknown as PersistentVolume;
    const read = (entry: CachedObject | null) => new Map([[prefetchKey('PersistentVolumeClaim', 'app/gone'), entry]]);
    const tombstone = (uid: string): CachedObject => ({ object: { metadata: { name: 'gone', namespace: 'app', uid } }, rv: 9, uid, deleted: true });
    assert.deepEqual(await loadVolumeSnapshot({ ...sources, prefetched: read(tombstone('uid-1')) }, volume), { volume });
    assert.equal(live, 0, 'seen deleted: gone for good');
    assert.deepEqual(await loadVolumeSnapshot({ ...sources, prefetched: read(tombstone('uid-0')) }, volume), { volume });
    assert.equal(live, 1, 'the tombstone of an older claim of that name says nothing of this one');
    await loadVolumeSnapshot({ ...sources, prefetched: read(null) }, volume);
    assert.equal(live, 2, 'not in the cache: maybe not synced yet');
  });

  it('a claim\'s match reads its candidates beside the Query for volumes pre-bound to it: one round trip, not two', async () => {
    await shell.storageV1.createStorageClass({ body: { metadata: { name: 'side' }, provisioner: 'kubernetes.io/no-provisioner' } });
    await shell.cache.put(CLUSTER, 'StorageClass', json(await shell.storageV1.readStorageClass({ name: 'side' })));
    const volume = await shell.core.createPersistentVolume({
      body: { metadata: { name: 'side-free' }, spec: { capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'side', hostPath: { path: '/tmp/side' } } },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolume', json(volume));
    await reconcileBinder({ kind: 'PersistentVolume', key: 'side-free', event: { v: 1, cluster: CLUSTER, kind: 'PersistentVolume', type: 'ADDED', key: 'side-free', uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } }, shell.deps);
    await shell.cache.put(CLUSTER, 'PersistentVolume', json(await shell.core.readPersistentVolume({ name: 'side-free' })));
    const claim = await shell.core.createNamespacedPersistentVolumeClaim({
      namespace: 'app',
      body: { metadata: { name: 'side' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'side' } },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolumeClaim', json(claim));
    // The pre-bound Query's answer is held until the candidates' Query has answered (for 2 s at most: when
    // that Query is only sent after the pre-bound one answers, the hold runs out and the order shows it).
    const log: string[] = [];
    let candidatesAnswered!: () => void;
    const candidatesIn = new Promise<void>((resolve) => (candidatesAnswered = resolve));
    const doc = {
      send: async (command: { constructor: { name: string }; input: { IndexName?: string } }) => {
        const index = command.input.IndexName;
        if (command.constructor.name !== 'QueryCommand' || !index) return (shell.db.doc.send as (c: unknown) => Promise<unknown>)(command);
        log.push(`sent ${index}`);
        const out = await (shell.db.doc.send as (c: unknown) => Promise<unknown>)(command);
        if (index === 'byClaimRef') await Promise.race([candidatesIn, new Promise((resolve) => setTimeout(resolve, 2_000))]);
        log.push(`answered ${index}`);
        if (index === 'byVolumeMatch') candidatesAnswered();
        return out;
      },
    } as unknown as DocumentClient;
    const deps = { ...shell.deps, cache: new ObjectCache(doc, shell.db.tables.cache, { indexer: indexAttributes }) };
    const event = { v: 1, cluster: CLUSTER, kind: 'PersistentVolumeClaim', type: 'ADDED', key: 'app/side', uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } as const;
    const outcome = await reconcileBinder({ kind: 'PersistentVolumeClaim', key: 'app/side', event }, deps);
    assert.equal((await shell.core.readNamespacedPersistentVolumeClaim({ namespace: 'app', name: 'side' })).spec?.volumeName, 'side-free');
    assert.deepEqual(log, ['sent byVolumeMatch', 'sent byClaimRef', 'answered byVolumeMatch', 'answered byClaimRef']);
    assert.equal(outcome.stats.queries, 4, 'own entry, classes, byClaimRef, one page of candidates: none spent');
  });

  it('a volume pre-bound to an unbound claim reads the claim once and requeues it at the version read (upstream\'s path)', async () => {
    const claim = await shell.core.createNamespacedPersistentVolumeClaim({
      namespace: 'app',
      body: { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'fast' } },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolumeClaim', json(claim));
    const volume = await shell.core.createPersistentVolume({
      body: {
        metadata: { name: 'provisioned' },
        spec: {
          capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete', storageClassName: 'fast', hostPath: { path: '/tmp/p' },
          claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'app', name: 'data', uid: claim.metadata!.uid },
        },
      },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolume', json(volume));
    const gets: string[] = [];
    const doc = {
      send: (command: { constructor: { name: string }; input: { Key?: { pk: string; sk: string } } }) => {
        if (command.constructor.name === 'GetCommand') gets.push(`${command.input.Key?.pk} ${command.input.Key?.sk}`);
        return (shell.db.doc.send as (c: unknown) => Promise<unknown>)(command);
      },
    } as unknown as DocumentClient;
    const requeued: Array<{ key: string; resourceVersion: string }> = [];
    const deps = {
      ...shell.deps,
      inlineBind: false,
      cache: new ObjectCache(doc, shell.db.tables.cache, { indexer: indexAttributes }),
      enqueue: async (_kind: string, key: string, _uid: string, resourceVersion: string) => void requeued.push({ key, resourceVersion }),
    };
    const event = { v: 1, cluster: CLUSTER, kind: 'PersistentVolume', type: 'ADDED', key: 'provisioned', uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } as const;
    await reconcileBinder({ kind: 'PersistentVolume', key: 'provisioned', event }, deps);
    assert.deepEqual(requeued, [{ key: 'app/data', resourceVersion: claim.metadata!.resourceVersion }], 'the claim requeued at the version read');
    assert.equal(gets.filter((g) => g === `${CLUSTER}#PersistentVolumeClaim app/data`).length, 1, `claim read once: ${gets.join(', ')}`);
  });

  it('a provisioned volume binds its claim in its own reconcile; with the claim and class read with it, the cache is only written, once per object', async () => {
    await shell.storageV1.createStorageClass({ body: { metadata: { name: 'gold' }, provisioner: 'ext.example.com', volumeBindingMode: 'Immediate' } });
    await shell.cache.put(CLUSTER, 'StorageClass', json(await shell.storageV1.readStorageClass({ name: 'gold' })));
    const claim = await shell.core.createNamespacedPersistentVolumeClaim({
      namespace: 'app',
      body: { metadata: { name: 'data2' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'gold' } },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolumeClaim', json(claim));
    const volume = await shell.core.createPersistentVolume({
      body: {
        metadata: { name: 'provisioned2', annotations: { 'pv.kubernetes.io/provisioned-by': 'ext.example.com' } },
        spec: {
          capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete', storageClassName: 'gold', hostPath: { path: '/tmp/p2' },
          claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'app', name: 'data2', uid: claim.metadata!.uid },
        },
      },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolume', json(volume));
    // What the runtime reads with the volume's entry, in its one BatchGetItem (the binder's prefetch names it).
    const controller = createBinderController();
    const event = { v: 1, cluster: CLUSTER, kind: 'PersistentVolume', type: 'ADDED', key: 'provisioned2', uid: volume.metadata!.uid!, resourceVersion: volume.metadata!.resourceVersion!, observedAt: new Date().toISOString(), object: json<Record<string, unknown>>(volume) } as const;
    const named = controller.prefetch!({ cluster: CLUSTER, kind: 'PersistentVolume', key: 'provisioned2', event } as never);
    assert.deepEqual(named.cache, [{ kind: 'PersistentVolumeClaim', key: 'app/data2' }, { kind: 'StorageClass', key: 'gold' }]);
    const prefetched: PrefetchedItems = { cache: new Map(), control: new Map() };
    for (const { kind, key } of named.cache ?? []) prefetched.cache.set(prefetchKey(kind, key), (await shell.cache.get(CLUSTER, kind, key)) ?? null);
    const { cache, commands } = countingCache(shell);
    const requeued: string[] = [];
    const deps = {
      ...shell.deps,
      cache,
      enqueue: async (_kind: string, key: string) => void requeued.push(key),
      writeBackDeferMs: 60_000, // however slow the claim's second write, its first waits for it
    };
    const cached = (await shell.cache.get(CLUSTER, 'PersistentVolume', 'provisioned2')) ?? null; // the runtime's read of the entry itself
    const outcome = await reconcileBinder({ kind: 'PersistentVolume', key: 'provisioned2', event, cached, prefetched }, deps);
    assert.equal(outcome.inlineBound, 'app/data2');
    assert.deepEqual(requeued, [], 'no requeue: no second message for the claim');
    const bound = await shell.core.readNamespacedPersistentVolumeClaim({ namespace: 'app', name: 'data2' });
    assert.equal(bound.status?.phase, 'Bound');
    assert.equal(bound.spec?.volumeName, 'provisioned2');
    assert.deepEqual(commands, ['PutCommand', 'PutCommand'], 'one write-back per object, nothing read');
    // The claim's update and then its status: the second written back, naming the first among the binder's.
    const entry = await shell.cache.get(CLUSTER, 'PersistentVolumeClaim', 'app/data2');
    assert.equal(entry?.rv, Number(bound.metadata!.resourceVersion));
    assert.equal(entry?.writer, 'binder');
    assert.equal(entry?.writerRvs?.length, 1, 'the update\'s version named');
    assert.ok(entry!.writerRvs![0]! > Number(claim.metadata!.resourceVersion) && entry!.writerRvs![0]! < entry!.rv, `between the claim read and its status: ${entry?.writerRvs}`);
  });

  it('a bound claim\'s deletion reads its volume with its own entry; the volume\'s deletion, its claim: neither reads the cache again', async () => {
    // data2 and provisioned2, bound by the test before: the claim is deleted.
    const claim = json<Record<string, any>>(await shell.core.readNamespacedPersistentVolumeClaim({ namespace: 'app', name: 'data2' }));
    assert.equal(claim.spec.volumeName, 'provisioned2');
    await shell.cache.put(CLUSTER, 'PersistentVolume', json(await shell.core.readPersistentVolume({ name: 'provisioned2' })));
    await shell.core.deleteNamespacedPersistentVolumeClaim({ namespace: 'app', name: 'data2' });
    const deletedRv = Number(claim.metadata.resourceVersion) + 1; // the delete, before the release's writes
    await shell.cache.remove(CLUSTER, 'PersistentVolumeClaim', claim, deletedRv);
    const controller = createBinderController();
    const runtimeReads = async (kind: 'PersistentVolume' | 'PersistentVolumeClaim', key: string, object: Record<string, any>) => {
      const event = { v: 1, cluster: CLUSTER, kind, type: 'DELETED', key, uid: object.metadata.uid, resourceVersion: String(deletedRv), observedAt: new Date().toISOString(), object } as const;
      const named = controller.prefetch!({ cluster: CLUSTER, kind, key, event } as never);
      const prefetched: PrefetchedItems = { cache: new Map(), control: new Map() };
      for (const e of named.cache ?? []) prefetched.cache.set(prefetchKey(e.kind, e.key), (await shell.cache.get(CLUSTER, e.kind, e.key)) ?? null);
      return { event, named: named.cache, prefetched, cached: (await shell.cache.get(CLUSTER, kind, key)) ?? null };
    };
    const { cache, commands } = countingCache(shell);
    const requeued: string[] = [];
    const deps = {
      ...shell.deps,
      cache,
      enqueue: async (kind: string, key: string) => void requeued.push(`${kind} ${key}`),
    };

    const claimGone = await runtimeReads('PersistentVolumeClaim', 'app/data2', claim);
    assert.deepEqual(claimGone.named, [{ kind: 'StorageClass', key: 'gold' }, { kind: 'PersistentVolume', key: 'provisioned2' }]);
    await reconcileBinder({ kind: 'PersistentVolumeClaim', key: 'app/data2', event: claimGone.event, cached: claimGone.cached, prefetched: claimGone.prefetched }, deps);
    const released = await shell.core.readPersistentVolume({ name: 'provisioned2' });
    assert.equal(released.status?.phase, 'Released', 'released in the deletion\'s own reconcile');
    assert.deepEqual(commands.filter((c) => c === 'GetCommand'), [], `the volume came with the claim's entry: ${commands.join(', ')}`);

    // The volume goes too, while a new claim of the same name exists: it is requeued (Lost is for it to decide).
    const again = await shell.core.createNamespacedPersistentVolumeClaim({
      namespace: 'app',
      body: { metadata: { name: 'data2' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'gold', volumeName: 'provisioned2' } },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolumeClaim', json(again));
    const volume = json<Record<string, any>>(released);
    volume.spec.claimRef.uid = again.metadata!.uid;
    await shell.cache.remove(CLUSTER, 'PersistentVolume', volume, deletedRv + 1000);
    commands.length = 0;
    const volumeGone = await runtimeReads('PersistentVolume', 'provisioned2', volume);
    assert.deepEqual(volumeGone.named, [{ kind: 'PersistentVolumeClaim', key: 'app/data2' }, { kind: 'StorageClass', key: 'gold' }]);
    await reconcileBinder({ kind: 'PersistentVolume', key: 'provisioned2', event: volumeGone.event, cached: volumeGone.cached, prefetched: volumeGone.prefetched }, deps);
    assert.deepEqual(requeued, ['PersistentVolumeClaim app/data2']);
    assert.deepEqual(commands.filter((c) => c === 'GetCommand'), [], `the claim came with the volume's entry: ${commands.join(', ')}`);
  });
});
