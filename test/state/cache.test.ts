import { after, before, describe, it } from 'node:test';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import assert from 'node:assert/strict';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';
import { ObjectCache, writerOfVersion, InvalidResourceVersionError, MissingIndexerError, ObjectTooLargeError, TRIMMED_ANNOTATION, untrimmedForWrite } from '../../lib/state/cache.ts';
import { CLAIM_REF_INDEX, PENDING_CLAIM_INDEX, RESYNC_INDEX, VOLUME_MATCH_INDEX, padBytes, pendingClaimPk, volumeMatchPk, claimRefPk } from '../../lib/state/schema.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { claim, PV, PVC, volume } from '../support/cache-objects.ts';

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

// The index table (which objects each index holds) is test/unit/kube/cache-index.test.ts, with the indexer.

describe('ObjectCache against dynalite', () => {
  let db: Dynalite;
  let cache: ObjectCache;
  let clock = Date.parse('2026-11-21T00:00:00Z');
  before(async () => {
    db = await startDynalite();
    cache = new ObjectCache(db.doc, db.tables.cache, { tombstoneTtlSeconds: 60, now: () => clock, indexer: indexAttributes });
  });
  after(() => db.stop());

  it('writes only forward, by integer comparison of resourceVersions', async () => {
    assert.equal(await cache.put('c1', PV, volume('fw', 9)), 'written');
    assert.equal(await cache.put('c1', PV, volume('fw', 10)), 'written'); // '10' > '9' as integers
    assert.equal(await cache.put('c1', PV, volume('fw', 10)), 'unchanged');
    assert.equal(await cache.put('c1', PV, volume('fw', 9)), 'stale');
    const hit = await cache.get('c1', PV, 'fw');
    assert.equal(hit?.rv, 10);
    assert.equal(hit?.uid, 'uid-fw');
    assert.equal(hit?.deleted, false);
    assert.equal(hit?.object.metadata?.resourceVersion, '10');
    assert.equal('managedFields' in (hit?.object.metadata ?? {}), false, 'managedFields stripped');
  });

  it('a write-back names the earlier versions its writer wrote in the same sync; a later write drops them', async () => {
    assert.equal(await cache.put('c1', PV, volume('twice', 22), { writer: 'binder', earlier: ['21'] }), 'written');
    const hit = await cache.get('c1', PV, 'twice');
    assert.deepEqual([hit?.rv, hit?.writer, hit?.writerRvs], [22, 'binder', [21]]);
    assert.deepEqual([20, 21, 22, 23].map((rv) => writerOfVersion(hit, rv)), [undefined, 'binder', 'binder', undefined]);
    assert.equal(await cache.put('c1', PV, volume('twice', 21)), 'stale', 'the forwarder\'s event of the earlier version');
    assert.equal(await cache.put('c1', PV, volume('twice', 23)), 'written');
    const next = await cache.get('c1', PV, 'twice');
    assert.deepEqual([next?.writer, next?.writerRvs, writerOfVersion(next, 21)], [undefined, undefined, undefined]);
    // Without a writer there is nobody to name them for.
    await cache.put('c1', PV, volume('untagged', 2), { earlier: ['1'] });
    assert.equal((await cache.get('c1', PV, 'untagged'))?.writerRvs, undefined);
  });

  it('writerOfVersion: the entry\'s writer for its own version and the ones it names, for entries and raw items', () => {
    const rows: Array<[string, Parameters<typeof writerOfVersion>[0], number, string | undefined]> = [
      ['own version', { rv: 5, writer: 'binder' }, 5, 'binder'],
      ['untagged', { rv: 5 }, 5, undefined],
      ['named earlier version', { rv: 5, writer: 'binder', writerRvs: [3, 4] }, 4, 'binder'],
      ['raw item: numbers as DynamoDB returns them', { rv: '5', writer: 'binder', writerRvs: ['4'] }, 4, 'binder'],
      ['earlier, not named', { rv: 5, writer: 'binder', writerRvs: [4] }, 2, undefined],
      ['named, but nobody\'s', { rv: 5, writerRvs: [4] }, 4, undefined],
      ['no entry', undefined, 4, undefined],
      ['not a version', { rv: 5, writer: 'binder' }, Number.NaN, undefined],
    ];
    for (const [name, entry, rv, want] of rows) assert.equal(writerOfVersion(entry, rv), want, name);
  });

  it('keeps clusters and kinds apart', async () => {
    await cache.put('c2', PV, volume('fw', 3));
    assert.equal((await cache.get('c2', PV, 'fw'))?.rv, 3);
    assert.equal((await cache.get('c1', PV, 'fw'))?.rv, 10);
    assert.equal(await cache.get('c1', 'Node', 'fw'), undefined);
  });

  it('tombstones block late events until they expire', async () => {
    await cache.put('c1', PV, volume('tomb', 20));
    assert.equal(await cache.remove('c1', PV, volume('tomb', 20), '25'), 'written');
    assert.equal(await cache.remove('c1', PV, volume('tomb', 20), '25'), 'unchanged');
    const stone = await cache.get('c1', PV, 'tomb');
    assert.equal(stone?.deleted, true);
    assert.equal(stone?.rv, 25);
    assert.equal(stone?.expiresAt, Math.floor(clock / 1000) + 60);
    assert.equal(await cache.put('c1', PV, volume('tomb', 22)), 'stale', 'a late MODIFIED cannot resurrect it');
    assert.equal(await cache.remove('c1', PV, volume('tomb', 20), '24'), 'stale');
    assert.deepEqual((await collect(cache.list('c1', PV))).map((e) => e.object.metadata?.name).includes('tomb'), false);
    assert.equal((await collect(cache.list('c1', PV, { includeDeleted: true }))).some((e) => e.deleted), true);
    // A re-created object (new uid, newer rv) replaces the tombstone at once.
    assert.equal(await cache.put('c1', PV, volume('tomb', 30, { uid: 'second' })), 'written');
    assert.equal((await cache.get('c1', PV, 'tomb'))?.uid, 'second');
  });

  it('an expired tombstone counts as absent', async () => {
    await cache.put('c1', PV, volume('exp', 40));
    await cache.remove('c1', PV, volume('exp', 40), 41);
    clock += 61_000;
    assert.equal(await cache.get('c1', PV, 'exp'), undefined);
    assert.equal(await cache.put('c1', PV, volume('exp', 39)), 'written');
    assert.equal((await cache.get('c1', PV, 'exp'))?.rv, 39);
  });

  it('rejects resourceVersions that are not integers', async () => {
    await assert.rejects(cache.put('c1', PV, { metadata: { name: 'bad', resourceVersion: 'abc' } }), InvalidResourceVersionError);
    await assert.rejects(cache.remove('c1', PV, volume('bad', 1), '99999999999999999'), InvalidResourceVersionError);
  });

  it('trims what no controller reads from objects too large for an item, and rejects the rest', async () => {
    const big = 'x'.repeat(200_000);
    const applied = { metadata: { name: 'fat', uid: 'u', resourceVersion: '80', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': big, keep: 'me' } }, status: { images: [{ names: [big] }], phase: 'Ready' } };
    assert.equal(await cache.put('c5', 'Node', applied), 'written');
    const hit = await cache.get('c5', 'Node', 'fat');
    assert.deepEqual(hit?.object.metadata?.annotations, { keep: 'me', [TRIMMED_ANNOTATION]: 'kubectl.kubernetes.io/last-applied-configuration' });
    assert.deepEqual(hit?.object.status, { phase: 'Ready' });
    const hopeless = { metadata: { name: 'obese', resourceVersion: '81', labels: {} }, spec: { data: 'y'.repeat(400_000) } };
    await assert.rejects(cache.put('c5', 'Node', hopeless), ObjectTooLargeError);
    assert.equal(await cache.get('c5', 'Node', 'obese'), undefined);
  });

  describe('untrimmedForWrite: a PUT of a trimmed copy keeps the live last-applied annotation', () => {
    const LAST = 'kubectl.kubernetes.io/last-applied-configuration';
    const object = (rv: string, annotations: Record<string, string>) => ({ metadata: { name: 'pv', resourceVersion: rv, annotations } });
    const rows: Array<{ name: string; object: ReturnType<typeof object>; live?: ReturnType<typeof object>; reads: number; want: Record<string, string> }> = [
      { name: 'not trimmed: as it is, no read', object: object('5', { keep: 'me' }), reads: 0, want: { keep: 'me' } },
      { name: 'trimmed, live at the same version: the annotation is back, the marker gone', object: object('5', { keep: 'me', [TRIMMED_ANNOTATION]: LAST }), live: object('5', { keep: 'me', [LAST]: '{"big":1}' }), reads: 1, want: { keep: 'me', [LAST]: '{"big":1}' } },
      { name: 'trimmed, live moved on: marker gone (the PUT gets its 409)', object: object('5', { [TRIMMED_ANNOTATION]: LAST }), live: object('6', { [LAST]: '{}' }), reads: 1, want: {} },
      { name: 'trimmed, live gone: marker gone (the PUT gets its 404)', object: object('5', { [TRIMMED_ANNOTATION]: LAST }), reads: 1, want: {} },
    ];
    for (const row of rows) {
      it(row.name, async () => {
        let reads = 0;
        const out = await untrimmedForWrite(row.object, async () => (reads++, row.live));
        assert.deepEqual(out.metadata.annotations, row.want);
        assert.equal(reads, row.reads);
      });
    }
  });

  it('lists a kind across pages, in key order', async () => {
    const names = Array.from({ length: 120 }, (_, i) => `node-${String(i).padStart(3, '0')}`);
    const big = 'x'.repeat(9000); // ~1 MB in total: Query pages at 1 MB
    for (const name of names) {
      assert.equal(await cache.put('c1', 'Node', { metadata: { name, uid: name, resourceVersion: '5', annotations: { big } } }), 'written');
    }
    const listed = await collect(cache.list('c1', 'Node'));
    assert.deepEqual(listed.map((e) => e.object.metadata?.name), names);
  });

  it('lists the live objects whose filter attribute matches, and those cached before it existed', async () => {
    const va = (name: string, rv: number, source?: string) => ({
      metadata: { name, uid: `uid-${name}`, resourceVersion: String(rv) },
      spec: { attacher: 'x', nodeName: 'n1', source: source ? { persistentVolumeName: source } : { inlineVolumeSpec: {} } },
    });
    for (const [name, source] of [['va-a', 'pv-a'], ['va-b', 'pv-b'], ['va-a2', 'pv-a'], ['va-inline', undefined], ['va-gone', 'pv-a']] as const) {
      assert.equal(await cache.put('c1', 'VolumeAttachment', va(name, 3, source)), 'written');
    }
    assert.equal(await cache.remove('c1', 'VolumeAttachment', va('va-gone', 3, 'pv-a'), 4), 'written');
    // An attachment cached by a version before the attribute existed: the item has no vaSource.
    await db.doc.send(new PutCommand({
      TableName: db.tables.cache,
      Item: { pk: 'c1#VolumeAttachment', sk: 'va-old', rv: 2, uid: 'uid-va-old', obj: JSON.stringify(va('va-old', 2, 'pv-b')), deleted: false },
    }));
    // And one with no tombstone flag at all (no writer leaves one so; it counts as live, as get() reads it).
    await db.doc.send(new PutCommand({
      TableName: db.tables.cache,
      Item: { pk: 'c1#VolumeAttachment', sk: 'va-unflagged', rv: 2, uid: 'uid-va-unflagged', obj: JSON.stringify(va('va-unflagged', 2, 'pv-a')), vaSource: 'pv-a' },
    }));
    const names = async (pv: string) => (await collect(cache.listWhere('c1', 'VolumeAttachment', 'vaSource', pv))).map((e) => e.object.metadata?.name);
    assert.deepEqual(await names('pv-a'), ['va-a', 'va-a2', 'va-old', 'va-unflagged'], 'its own, the unattributed one; not the tombstone, not another PV\'s');
    assert.deepEqual(await names('pv-c'), ['va-old']);
    assert.deepEqual((await collect(cache.list('c1', 'VolumeAttachment'))).length, 6, 'list still returns every live attachment');
  });

  it('a filtered list follows every page, the empty ones too, to a match on the last', async () => {
    const big = 'x'.repeat(9000); // ~1 MB in total: Query pages at 1 MB, and the filter empties the first
    for (let i = 0; i < 120; i++) {
      const name = `va-page-${String(i).padStart(3, '0')}`;
      const source = i === 119 ? 'pv-last' : `pv-page-${i}`;
      const va = { metadata: { name, uid: name, resourceVersion: '5', annotations: { big } }, spec: { attacher: 'x', nodeName: 'n1', source: { persistentVolumeName: source } } };
      assert.equal(await cache.put('c2', 'VolumeAttachment', va), 'written');
    }
    const found = await collect(cache.listWhere('c2', 'VolumeAttachment', 'vaSource', 'pv-last'));
    assert.deepEqual(found.map((e) => e.object.metadata?.name), ['va-page-119']);
  });

  it('keeps a source entry per attachment that names a PV: written before the entry, removed after its tombstone', async () => {
    const va = (name: string, rv: number, source?: string) => ({
      metadata: { name, uid: `uid-${name}`, resourceVersion: String(rv) },
      spec: { attacher: 'x', nodeName: 'n1', source: source ? { persistentVolumeName: source } : { inlineVolumeSpec: {} } },
    });
    const sent: string[] = [];
    const spy = new ObjectCache(
      new Proxy(db.doc, { get: (t, p, r) => (p === 'send' ? (c: { constructor: { name: string }; input: { Key?: { pk?: string }; Item?: { pk?: string } } }, ...rest: unknown[]) => (sent.push(`${c.constructor.name} ${c.input.Item?.pk ?? c.input.Key?.pk ?? ''}`), (t.send as (...a: unknown[]) => unknown)(c, ...rest)) : Reflect.get(t, p, r)) }),
      db.tables.cache,
      { tombstoneTtlSeconds: 60, now: () => clock, indexer: indexAttributes },
    );
    assert.equal(await spy.put('s1', 'VolumeAttachment', va('va-1', 3, 'pv-1')), 'written');
    assert.deepEqual(sent, ['PutCommand s1#VolumeAttachment#bySource', 'PutCommand s1#VolumeAttachment'], 'the source entry first');
    for (const [name, source] of [['va-2', 'pv-1'], ['va-3', 'pv-10'], ['va-inline', undefined]] as const) await cache.put('s1', 'VolumeAttachment', va(name, 3, source));
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-1'), ['va-1', 'va-2'], 'not pv-10\'s, not the inline volume\'s');
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-10'), ['va-3']);
    assert.deepEqual(await cache.attachmentsNaming('s2', 'pv-1'), [], 'clusters apart');
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv'), [], 'a prefix of a name is not the name');
    // Other kinds keep none.
    await cache.put('s1', PV, volume('pv-1', 3));
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-1'), ['va-1', 'va-2']);

    // A stale removal (the entry moved past it) leaves the source entry; the deletion removes it after its tombstone.
    await cache.put('s1', 'VolumeAttachment', va('va-1', 5, 'pv-1'));
    assert.equal(await cache.remove('s1', 'VolumeAttachment', va('va-1', 5, 'pv-1'), 4), 'stale');
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-1'), ['va-1', 'va-2']);
    sent.length = 0;
    assert.equal(await spy.remove('s1', 'VolumeAttachment', va('va-1', 5, 'pv-1'), 6), 'written');
    assert.deepEqual(sent, ['PutCommand s1#VolumeAttachment', 'DeleteCommand s1#VolumeAttachment#bySource'], 'the tombstone first');
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-1'), ['va-2']);

    // A retried removal (its tombstone already written) still removes the source entry.
    await db.doc.send(new PutCommand({ TableName: db.tables.cache, Item: { pk: 's1#VolumeAttachment#bySource', sk: 'pv-1#va-1', rv: 5 } }));
    assert.equal(await cache.remove('s1', 'VolumeAttachment', va('va-1', 5, 'pv-1'), 6), 'unchanged');
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-1'), ['va-2']);

    // The attachment created again under the same name: its source entry comes back with it, and a late
    // removal of the earlier one does not take it away.
    assert.equal(await cache.put('s1', 'VolumeAttachment', va('va-1', 9, 'pv-1')), 'written');
    assert.equal(await cache.remove('s1', 'VolumeAttachment', va('va-1', 5, 'pv-1'), 6), 'stale');
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-1'), ['va-1', 'va-2']);
    // A source entry newer than a tombstone written meanwhile stays (conditional on its version).
    await db.doc.send(new PutCommand({ TableName: db.tables.cache, Item: { pk: 's1#VolumeAttachment#bySource', sk: 'pv-1#va-2', rv: 20 } }));
    assert.equal(await cache.remove('s1', 'VolumeAttachment', va('va-2', 3, 'pv-1'), 7), 'written');
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-1'), ['va-1', 'va-2']);

    // putSourceEntry: for an entry cached before source entries (the forwarder's LIST calls it).
    await db.doc.send(new PutCommand({
      TableName: db.tables.cache,
      Item: { pk: 's1#VolumeAttachment', sk: 'va-old', rv: 2, uid: 'uid-va-old', obj: JSON.stringify(va('va-old', 2, 'pv-7')), deleted: false, vaSource: 'pv-7' },
    }));
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-7'), []);
    await cache.putSourceEntry('s1', 'VolumeAttachment', va('va-old', 2, 'pv-7'));
    await cache.putSourceEntry('s1', PV, volume('pv-7', 2));
    await cache.putSourceEntry('s1', 'VolumeAttachment', va('va-inline-2', 2));
    assert.deepEqual(await cache.attachmentsNaming('s1', 'pv-7'), ['va-old']);
    assert.deepEqual((await collect(cache.list('s1', 'VolumeAttachment'))).map((e) => e.object.metadata?.name).sort(), ['va-1', 'va-3', 'va-inline', 'va-old'], 'source entries are no entries of the kind');
  });

  it('writes no attachment entry whose source entry failed', async () => {
    const failing = new ObjectCache(
      new Proxy(db.doc, {
        get: (t, p, r) =>
          p === 'send'
            ? (c: { input: { Item?: { pk?: string } } }, ...rest: unknown[]) =>
                c.input.Item?.pk?.endsWith('#bySource') ? Promise.reject(Object.assign(new Error('throttled'), { name: 'ThrottlingException' })) : (t.send as (...a: unknown[]) => unknown)(c, ...rest)
            : Reflect.get(t, p, r),
      }),
      db.tables.cache,
      { indexer: indexAttributes },
    );
    const va = { metadata: { name: 'va-f', uid: 'uid-va-f', resourceVersion: '3' }, spec: { attacher: 'x', nodeName: 'n1', source: { persistentVolumeName: 'pv-f' } } };
    await assert.rejects(failing.put('s3', 'VolumeAttachment', va), /throttled/);
    assert.equal(await cache.get('s3', 'VolumeAttachment', 'va-f'), undefined, 'no entry the guard could not find');
    assert.equal(await failing.put('s3', PV, volume('pv-f', 3)), 'written', 'other kinds write no source entry');
  });

  it('getMany answers several kinds and keys in one read, as get answers each', async () => {
    await cache.put('c7', PV, volume('many-live', 5, { cls: 'gold', size: '1Gi', phase: 'Available' }));
    await cache.put('c7', PVC, claim('many-claim', 6, { cls: 'gold', size: '1Gi' }));
    await cache.put('c7', PV, volume('many-gone', 7, { cls: 'gold', size: '1Gi' }));
    await cache.remove('c7', PV, volume('many-gone', 7, {}), 8);
    const refs = [
      { kind: PV, key: 'many-live' },
      { kind: PVC, key: 'ns/many-claim' },
      { kind: PV, key: 'many-gone' },
      { kind: PV, key: 'many-never' },
      { kind: PVC, key: 'many-live' }, // the same key under another kind is another entry
    ];
    const { entries, unread } = await cache.getMany('c7', refs);
    assert.equal(unread.size, 0);
    for (const ref of refs) {
      assert.deepEqual(entries.get(ObjectCache.refId(ref.kind, ref.key)), await cache.get('c7', ref.kind, ref.key), `${ref.kind} ${ref.key}`);
    }
    assert.equal(entries.get(ObjectCache.refId(PV, 'many-live'))?.object.metadata?.name, 'many-live');
    assert.equal(entries.get(ObjectCache.refId(PVC, 'ns/many-claim'))?.object.metadata?.name, 'many-claim');
    assert.equal(entries.get(ObjectCache.refId(PV, 'many-gone'))?.deleted, true, 'a tombstone is an entry, as get answers it');
    assert.equal(entries.has(ObjectCache.refId(PV, 'many-never')), false);
    assert.equal(entries.has(ObjectCache.refId(PVC, 'many-live')), false);
  });

  it('finds the smallest matching available volume through the match index', async () => {
    await cache.put('c3', PV, volume('small', 50, { cls: 'gold', size: '1Gi', phase: 'Available' }));
    await cache.put('c3', PV, volume('medium', 51, { cls: 'gold', size: '5Gi', phase: 'Available' }));
    await cache.put('c3', PV, volume('large', 52, { cls: 'gold', size: '10Gi', phase: 'Available' }));
    await cache.put('c3', PV, volume('other-class', 53, { cls: 'silver', size: '5Gi', phase: 'Available' }));
    const pk = volumeMatchPk('c3', 'gold', ['ReadWriteOnce']);
    const best = await collect(cache.queryIndex(VOLUME_MATCH_INDEX, pk, { from: padBytes(2n * 1073741824n), limit: 1 }));
    assert.deepEqual(best.map((e) => e.object.metadata?.name), ['medium']);
    const all = await collect(cache.queryIndex(VOLUME_MATCH_INDEX, pk));
    assert.deepEqual(all.map((e) => e.object.metadata?.name), ['small', 'medium', 'large']);

    // Binding moves the volume from the match index to the claimRef index; deletion drops it from both.
    await cache.put('c3', PV, volume('medium', 60, { cls: 'gold', size: '5Gi', phase: 'Bound', claim: 'data' }));
    assert.deepEqual((await collect(cache.queryIndex(VOLUME_MATCH_INDEX, pk))).map((e) => e.object.metadata?.name), ['small', 'large']);
    const bound = await collect(cache.queryIndex(CLAIM_REF_INDEX, claimRefPk('c3', 'ns', 'data')));
    assert.deepEqual(bound.map((e) => e.object.metadata?.name), ['medium']);
    await cache.remove('c3', PV, volume('medium', 60, { claim: 'data' }), 61);
    assert.deepEqual(await collect(cache.queryIndex(CLAIM_REF_INDEX, claimRefPk('c3', 'ns', 'data'))), []);
  });

  it('lists pending claims of a class smallest first', async () => {
    await cache.put('c4', PVC, claim('big', 70, { cls: 'gold', size: '8Gi' }));
    await cache.put('c4', PVC, claim('tiny', 71, { cls: 'gold', size: '100Mi' }));
    await cache.put('c4', PVC, claim('bound', 72, { cls: 'gold', volumeName: 'pv' }));
    const pending = await collect(cache.queryIndex(PENDING_CLAIM_INDEX, pendingClaimPk('c4', 'gold')));
    assert.deepEqual(pending.map((e) => e.object.metadata?.name), ['tiny', 'big']);
  });

  it('takes its index attributes from the indexer it was given, and drops them when the object stops qualifying', async () => {
    const seen: string[] = [];
    const flagged = new ObjectCache(db.doc, db.tables.cache, {
      indexer: (cluster, kind, object) => {
        seen.push(`${cluster} ${kind} ${object.metadata?.name}`);
        return object.metadata?.labels?.pending === 'yes' ? { resyncPk: `${cluster}#${kind}` } : {};
      },
    });
    assert.equal(await flagged.put('c6', 'Widget', { metadata: { name: 'w1', resourceVersion: '1', labels: { pending: 'yes' }, managedFields: [{}] } }), 'written');
    assert.deepEqual(seen, ['c6 Widget w1'], 'called once per put');
    const keys = await collect(flagged.queryIndex(RESYNC_INDEX, 'c6#Widget'));
    assert.deepEqual(keys.map((e) => e.object.metadata?.name), ['w1']);
    assert.equal(await flagged.put('c6', 'Widget', { metadata: { name: 'w1', resourceVersion: '2', labels: { pending: 'no' } } }), 'written');
    assert.deepEqual(await collect(flagged.queryIndex(RESYNC_INDEX, 'c6#Widget')), []);
  });

  it('without an indexer it reads and writes tombstones but refuses to put an object (which would leave every index)', async () => {
    const reader = new ObjectCache(db.doc, db.tables.cache);
    assert.equal((await reader.get('c1', PV, 'fw'))?.rv, 10);
    await assert.rejects(reader.put('c7', PV, volume('no-index', 1, { phase: 'Available' })), MissingIndexerError);
    await assert.rejects(reader.putDetailed('c7', PV, volume('no-index', 1), { writer: 'binder' }), MissingIndexerError);
    assert.equal(await cache.get('c7', PV, 'no-index'), undefined, 'nothing was written');
    await cache.put('c7', PV, volume('gone', 1, { phase: 'Available' }));
    assert.equal((await collect(cache.queryIndex(VOLUME_MATCH_INDEX, volumeMatchPk('c7', '', ['ReadWriteOnce'])))).length, 1);
    assert.equal(await reader.remove('c7', PV, volume('gone', 1), 2), 'written');
    assert.deepEqual(await collect(cache.queryIndex(VOLUME_MATCH_INDEX, volumeMatchPk('c7', '', ['ReadWriteOnce']))), [], 'a tombstone carries no index attribute');
  });
});

describe('ObjectCache: the entry that won comes with the refused write', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
  });
  after(() => db.stop());
  // Bound (a claimRef): in no registered index, so the commands counted are the entry's own.
  const object = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-won', uid: 'u', resourceVersion: '7' }, spec: { claimRef: { namespace: 'ns', name: 'c' } } };

  /** The cache over `doc`, with the names of the commands it sends and their inputs. */
  const counting = (doc: { send: (command: never) => Promise<unknown> }) => {
    const sent: string[] = [];
    const inputs: Array<Record<string, unknown>> = [];
    const wrapped = {
      send: (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
        sent.push(command.constructor.name);
        inputs.push(command.input);
        return doc.send(command as never);
      },
    };
    return { cache: new ObjectCache(wrapped as never, db.tables.cache, { indexer: indexAttributes }), sent, inputs };
  };

  it('classifies from the returned entry without a read (ReturnValuesOnConditionCheckFailure, as DynamoDB answers it)', async () => {
    const writer = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
    assert.equal(await writer.put('c1', 'PersistentVolume', object, { writer: 'binder' }), 'written');
    const same = counting(db.doc);
    assert.deepEqual(await same.cache.putDetailed('c1', 'PersistentVolume', object), { result: 'unchanged', writer: 'binder' });
    assert.deepEqual(same.sent, ['PutCommand'], 'no GetItem after the refusal');
    assert.equal(same.inputs[0].ReturnValuesOnConditionCheckFailure, 'ALL_OLD');
    assert.equal(await writer.put('c1', 'PersistentVolume', { ...object, metadata: { ...object.metadata, resourceVersion: '9' } }), 'written');
    const older = counting(db.doc);
    assert.deepEqual(await older.cache.putDetailed('c1', 'PersistentVolume', object), { result: 'stale' });
    assert.deepEqual(older.sent, ['PutCommand']);
  });

  it('reads what won when the refusal carries no entry (an endpoint without ReturnValuesOnConditionCheckFailure)', async () => {
    const sent: string[] = [];
    const doc = {
      send: async (command: { constructor: { name: string } }) => {
        sent.push(command.constructor.name);
        if (command.constructor.name === 'PutCommand') throw Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });
        return { Item: { rv: 7, writer: 'provisioner' } };
      },
    };
    const bare = new ObjectCache(doc as never, 'cache', { indexer: indexAttributes });
    assert.deepEqual(await bare.putDetailed('c1', 'PersistentVolume', object), { result: 'unchanged', writer: 'provisioner' });
    assert.deepEqual(sent, ['PutCommand', 'GetCommand']);
  });
});

describe('ObjectCache: partition lists of registered indexes', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
  });
  after(() => db.stop());

  /** A client that records each command's name (and refuses UpdateItem while `failUpdates`). */
  const recording = () => {
    const sent: string[] = [];
    const state = { failUpdates: false };
    const doc = {
      send: (command: { constructor: { name: string } }) => {
        sent.push(command.constructor.name);
        if (state.failUpdates && command.constructor.name === 'UpdateCommand') return Promise.reject(Object.assign(new Error('throttled'), { name: 'ThrottlingException' }));
        return (db.doc.send as (c: unknown) => Promise<unknown>)(command);
      },
    };
    return { cache: new ObjectCache(doc as never, db.tables.cache, { indexer: indexAttributes }), sent, state };
  };
  const free = (name: string, className: string, modes: string[]) => ({
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name, uid: `uid-${name}`, resourceVersion: '1' },
    spec: { capacity: { storage: '1Gi' }, accessModes: modes, storageClassName: className }, status: { phase: 'Available' },
  });

  it('registers an entry’s partition before writing it, once per client', async () => {
    const { cache, sent } = recording();
    await cache.put('p1', PV, free('a', 'gold', ['ReadWriteOnce']));
    assert.deepEqual(sent, ['UpdateCommand', 'PutCommand']);
    await cache.put('p1', PV, free('b', 'gold', ['ReadWriteOnce']));
    await cache.put('p1', PV, { ...free('bound', 'gold', ['ReadWriteOnce']), spec: { claimRef: { namespace: 'ns', name: 'c' } } });
    assert.deepEqual(sent, ['UpdateCommand', 'PutCommand', 'PutCommand', 'PutCommand'], 'same partition, and a bound volume in none');
    const list = await cache.partitions('p1', VOLUME_MATCH_INDEX);
    assert.deepEqual(list, { complete: false, pks: new Set([volumeMatchPk('p1', 'gold', ['ReadWriteOnce'])]) });
  });

  it('a registration that fails writes nothing, and the next write registers again', async () => {
    const { cache, sent, state } = recording();
    state.failUpdates = true;
    await assert.rejects(cache.put('p2', PV, free('a', 'silver', ['ReadWriteMany'])), /throttled/);
    assert.deepEqual(sent, ['UpdateCommand'], 'no entry written into an unregistered partition');
    assert.equal(await cache.get('p2', PV, 'a'), undefined);
    state.failUpdates = false;
    assert.equal(await cache.put('p2', PV, free('a', 'silver', ['ReadWriteMany'])), 'written');
    assert.ok((await cache.partitions('p2', VOLUME_MATCH_INDEX))?.pks.has(volumeMatchPk('p2', 'silver', ['ReadWriteMany'])));
  });

  it('a complete LIST completes the list with every listed object’s partition; other kinds send nothing', async () => {
    const { cache, sent } = recording();
    assert.equal(await cache.partitionsComplete('p3', PV), false);
    await cache.completePartitions('p3', PV, [free('x', 'gold', ['ReadOnlyMany']), free('y', '', ['ReadWriteOnce', 'ReadWriteMany']), { ...free('z', 'gold', ['ReadWriteOnce']), spec: { claimRef: { name: 'c' } } }]);
    assert.deepEqual(await cache.partitions('p3', VOLUME_MATCH_INDEX), {
      complete: true,
      pks: new Set([volumeMatchPk('p3', 'gold', ['ReadOnlyMany']), volumeMatchPk('p3', '', ['ReadWriteMany', 'ReadWriteOnce'])]),
    });
    assert.equal(await cache.partitionsComplete('p3', PV), true);
    sent.length = 0;
    await cache.completePartitions('p3', PVC, []);
    assert.equal(await cache.partitionsComplete('p3', PVC), true);
    assert.deepEqual(sent, [], 'claims feed no registered index');
    // An empty LIST still completes the list.
    await cache.completePartitions('p4', PV, []);
    assert.deepEqual(await cache.partitions('p4', VOLUME_MATCH_INDEX), { complete: true, pks: new Set() });
  });
});
