/**
 * The last look before publishing (lib/forwarder/review.ts), against dynalite: a controller's write-back
 * found before the event goes out (whether or not the forwarder wrote the version first), and what the
 * look leaves the publisher to write.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createEventReview, type ReviewedEvent, type ReviewOutcome } from '../../lib/forwarder/review.ts';
import { MESSAGE_VERSION, type ClusterEvent } from '../../lib/runtime/message.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

const pv = (name: string, rv: number) => ({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name, uid: `uid-${name}`, resourceVersion: String(rv) }, spec: {} });
const event = (kind: ClusterEvent['kind'], key: string, rv: number, extra: Partial<ClusterEvent> = {}): ClusterEvent => ({
  v: MESSAGE_VERSION,
  cluster: 'c1',
  kind,
  type: 'MODIFIED',
  key,
  uid: `uid-${key}`,
  resourceVersion: String(rv),
  observedAt: '2026-11-24T12:00:00.000Z', // fixed: an expected event built a millisecond later must still equal
  ...extra,
});

describe('forwarder review: retag own writes that lost the race', () => {
  let db: Dynalite;
  let cache: ObjectCache;
  before(async () => {
    db = await startDynalite();
    cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
  });
  after(() => db.stop());

  test('a write-back that lost the race to the forwarder still tags the version, and the review finds it', async () => {
    assert.equal(await cache.put('c1', 'PersistentVolume', pv('raced', 5)), 'written', 'the forwarder cached it first');
    assert.equal(await cache.put('c1', 'PersistentVolume', pv('raced', 5), { writer: 'binder', classify: false }), 'written', 'the write-back tags it');
    assert.equal((await cache.putDetailed('c1', 'PersistentVolume', pv('raced', 5))).writer, 'binder');
    // A write-back never overwrites another writer's tag, nor moves a version back.
    assert.equal(await cache.put('c1', 'PersistentVolume', pv('raced', 5), { writer: 'provisioner', classify: false }), 'stale');
    assert.equal(await cache.put('c1', 'PersistentVolume', pv('raced', 4), { writer: 'provisioner', classify: false }), 'stale');
    assert.equal((await cache.putDetailed('c1', 'PersistentVolume', pv('raced', 5))).writer, 'binder');
  });

  test('the table of outcomes', async () => {
    await cache.put('c1', 'PersistentVolume', pv('mine', 10), { writer: 'binder' });
    await cache.put('c1', 'PersistentVolume', pv('user', 20));
    await cache.put('c1', 'PersistentVolume', pv('moved-on', 31));
    await cache.put('c1', 'PersistentVolume', pv('moved-on-by-binder', 41), { writer: 'binder' });
    // The binder wrote 71 and then 72 in one sync, and wrote back only 72, naming 71 among its own.
    await cache.put('c1', 'PersistentVolume', pv('written-twice', 72), { writer: 'binder', earlier: ['71'] });
    await cache.put('c1', 'PersistentVolume', pv('gone', 50));
    await cache.remove('c1', 'PersistentVolume', pv('gone', 50), 51);
    const outcomes: Array<[string, ReviewOutcome]> = [];
    const review = createEventReview({ doc: db.doc, table: db.tables.cache, onOutcome: (e, o) => outcomes.push([e.key, o]) });
    // `held`: the cache holds this very version (or a newer one) untagged, so its writer's tag may still come
    // (the publisher may hold a MODIFIED one for it); every other outcome is final.
    const cases: Array<{ name: string; in: ClusterEvent; out: ClusterEvent; held?: true }> = [
      { name: 'own write, same version', in: event('PersistentVolume', 'mine', 10), out: event('PersistentVolume', 'mine', 10, { writer: 'binder' }) },
      { name: 'a user’s write (or a write-back still to come)', in: event('PersistentVolume', 'user', 20), out: event('PersistentVolume', 'user', 20), held: true },
      { name: 'an ADDED: never looked at (no controller writes back what it creates), even when its version is cached tagged', in: event('PersistentVolume', 'mine', 10, { type: 'ADDED' }), out: event('PersistentVolume', 'mine', 10, { type: 'ADDED' }) },
      { name: 'the same, the object being deleted: never held (a deletion’s and finalizers’ versions)', in: event('PersistentVolume', 'user', 20, { object: { metadata: { name: 'user', deletionTimestamp: '2026-11-24T12:00:00Z' } } }), out: event('PersistentVolume', 'user', 20, { object: { metadata: { name: 'user', deletionTimestamp: '2026-11-24T12:00:00Z' } } }) },
      { name: 'the same, a relist’s SYNC: never held', in: event('PersistentVolume', 'user', 20, { type: 'SYNC' }), out: event('PersistentVolume', 'user', 20, { type: 'SYNC' }) },
      { name: 'a newer version is cached untagged: held (its write-back may still name this one); every version is still delivered', in: event('PersistentVolume', 'moved-on', 30), out: event('PersistentVolume', 'moved-on', 30), held: true },
      { name: 'a newer version by a controller: kept (the writer must still see this one)', in: event('PersistentVolume', 'moved-on-by-binder', 40), out: event('PersistentVolume', 'moved-on-by-binder', 40) },
      { name: 'an earlier version the writer named with its write-back: own write', in: event('PersistentVolume', 'written-twice', 71), out: event('PersistentVolume', 'written-twice', 71, { writer: 'binder' }) },
      { name: 'the write-back’s own version: own write', in: event('PersistentVolume', 'written-twice', 72), out: event('PersistentVolume', 'written-twice', 72, { writer: 'binder' }) },
      { name: 'an earlier version it did not name: kept', in: event('PersistentVolume', 'written-twice', 70), out: event('PersistentVolume', 'written-twice', 70) },
      { name: 'superseded by a deletion: kept', in: event('PersistentVolume', 'gone', 50), out: event('PersistentVolume', 'gone', 50) },
      { name: 'not cached', in: event('PersistentVolume', 'unknown', 60), out: event('PersistentVolume', 'unknown', 60) },
      { name: 'DELETED is never reviewed', in: event('PersistentVolume', 'mine', 10, { type: 'DELETED' }), out: event('PersistentVolume', 'mine', 10, { type: 'DELETED' }) },
      { name: 'REQUEUE is never reviewed', in: event('PersistentVolume', 'moved-on', 30, { type: 'REQUEUE' }), out: event('PersistentVolume', 'moved-on', 30, { type: 'REQUEUE' }) },
      { name: 'already tagged', in: event('PersistentVolume', 'moved-on', 30, { writer: 'provisioner' }), out: event('PersistentVolume', 'moved-on', 30, { writer: 'provisioner' }) },
      { name: 'a kind no controller writes back', in: event('Node', 'moved-on', 30), out: event('Node', 'moved-on', 30) },
      { name: 'a claim’s ADDED: never a controller’s own (none creates claims)', in: event('PersistentVolumeClaim', 'ns/fresh', 80, { type: 'ADDED' }), out: event('PersistentVolumeClaim', 'ns/fresh', 80, { type: 'ADDED' }) },
    ];
    const reviewed = await review(cases.map((c) => c.in));
    for (const [index, c] of cases.entries()) assert.deepEqual(reviewed[index], c.held ? { event: c.out, untagged: true } : { event: c.out }, c.name);
    assert.deepEqual(outcomes, [['mine', 'own-write'], ['written-twice', 'own-write'], ['written-twice', 'own-write']]);
  });

  test('the table of outcomes for events not yet cached (the reflector left them to the publisher)', async () => {
    const now = Date.now();
    const tombstoned = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes, tombstoneTtlSeconds: 60, now: () => now - 3_600_000 });
    await cache.put('c1', 'PersistentVolume', pv('u-mine', 110), { writer: 'binder' });
    await cache.put('c1', 'PersistentVolume', pv('u-twice', 122), { writer: 'binder', earlier: ['121'] });
    await cache.put('c1', 'PersistentVolume', pv('u-older', 130));
    await cache.put('c1', 'PersistentVolume', pv('u-newer', 141), { writer: 'provisioner' });
    await cache.put('c1', 'PersistentVolume', pv('u-newer-untagged', 151));
    await cache.put('c1', 'PersistentVolume', pv('u-relisted', 160));
    await cache.put('c1', 'PersistentVolume', pv('u-gone', 170));
    await cache.remove('c1', 'PersistentVolume', pv('u-gone', 170), 172);
    // Deleted and created again under its name: the new object (another uid) is cached.
    await cache.put('c1', 'PersistentVolume', { ...pv('u-recreated', 176), metadata: { name: 'u-recreated', uid: 'uid-new', resourceVersion: '176' } });
    // A tombstone written an hour ago with a minute to live: expired, as if absent.
    await tombstoned.put('c1', 'PersistentVolume', pv('u-expired', 180));
    await tombstoned.remove('c1', 'PersistentVolume', pv('u-expired', 180), 182);
    const outcomes: Array<[string, ReviewOutcome]> = [];
    const review = createEventReview({ doc: db.doc, table: db.tables.cache, onOutcome: (e, o) => outcomes.push([e.key, o]) });
    const deleting = { object: { metadata: { name: 'u-older', deletionTimestamp: '2026-11-29T09:00:00Z' } } };
    const cases: Array<{ name: string; in: ClusterEvent; out: ReviewedEvent | undefined }> = [
      { name: 'written back by its writer: tagged, nothing to write', in: event('PersistentVolume', 'u-mine', 110), out: { event: event('PersistentVolume', 'u-mine', 110, { writer: 'binder' }) } },
      { name: 'named by its writer’s later write-back: tagged, nothing to write', in: event('PersistentVolume', 'u-twice', 121), out: { event: event('PersistentVolume', 'u-twice', 121, { writer: 'binder' }) } },
      { name: 'an older version cached: held, still to write', in: event('PersistentVolume', 'u-older', 131), out: { event: event('PersistentVolume', 'u-older', 131), untagged: true, unwritten: true } },
      { name: 'not cached at all: held, still to write', in: event('PersistentVolume', 'u-unknown', 135), out: { event: event('PersistentVolume', 'u-unknown', 135), untagged: true, unwritten: true } },
      { name: 'an ADDED: not looked at, still to write (the reflector writes ADDEDs itself; the review leaves one as given)', in: event('PersistentVolume', 'u-mine', 110, { type: 'ADDED' }), out: { event: event('PersistentVolume', 'u-mine', 110, { type: 'ADDED' }), unwritten: true } },
      { name: 'the same, being deleted: never held, still to write', in: event('PersistentVolume', 'u-older', 131, deleting), out: { event: event('PersistentVolume', 'u-older', 131, deleting), unwritten: true } },
      { name: 'a newer version cached by a controller, not naming it: dropped (superseded)', in: event('PersistentVolume', 'u-newer', 140), out: undefined },
      { name: 'a newer version cached untagged: dropped (superseded)', in: event('PersistentVolume', 'u-newer-untagged', 150), out: undefined },
      { name: 'this very version cached untagged (a relist): written, held for its writer', in: event('PersistentVolume', 'u-relisted', 160), out: { event: event('PersistentVolume', 'u-relisted', 160), untagged: true } },
      { name: 'a newer tombstone: sent as it is, nothing to write', in: event('PersistentVolume', 'u-gone', 171), out: { event: event('PersistentVolume', 'u-gone', 171) } },
      { name: 'a newer object of its name (another uid): sent as it is, nothing to write', in: event('PersistentVolume', 'u-recreated', 174), out: { event: event('PersistentVolume', 'u-recreated', 174) } },
      { name: 'an expired tombstone: as if absent', in: event('PersistentVolume', 'u-expired', 181), out: { event: event('PersistentVolume', 'u-expired', 181), untagged: true, unwritten: true } },
      { name: 'a kind no controller writes back, unwritten: left to the write', in: event('Node', 'u-node', 190), out: { event: event('Node', 'u-node', 190), unwritten: true } },
      { name: 'a written event beside them: answered as before', in: event('PersistentVolume', 'u-mine', 110), out: { event: event('PersistentVolume', 'u-mine', 110, { writer: 'binder' }) } },
    ];
    const unwritten = new Set(cases.flatMap((c, index) => (index === cases.length - 1 ? [] : [index])));
    const reviewed = await review(
      cases.map((c) => c.in),
      unwritten,
    );
    for (const [index, c] of cases.entries()) assert.deepEqual(reviewed[index], c.out, c.name);
    assert.deepEqual(outcomes, [['u-mine', 'own-write'], ['u-twice', 'own-write'], ['u-newer', 'superseded'], ['u-newer-untagged', 'superseded'], ['u-mine', 'own-write']]);
  });

  test('looks asked for together, or while a read is out, share one BatchGetItem; each gets its own answer', async () => {
    await cache.put('c1', 'PersistentVolume', pv('s-mine', 10), { writer: 'binder' });
    await cache.put('c1', 'PersistentVolume', pv('s-user', 20));
    const reads: number[] = [];
    let failNext = false;
    const doc = {
      send: (c: { input: { RequestItems: Record<string, { Keys: unknown[] }> } }) => {
        reads.push(Object.values(c.input.RequestItems)[0].Keys.length);
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error('throttled'));
        }
        return (db.doc.send as (x: unknown) => Promise<unknown>)(c);
      },
    } as unknown as typeof db.doc;
    const review = createEventReview({ doc, table: db.tables.cache });

    // Five looks in one turn (the holds' shared tick): one read of their five keys.
    const names = ['s-mine', 's-user', 's-a', 's-b', 's-c'];
    const answers = await Promise.all(names.map((name, i) => review([event('PersistentVolume', name, 10 * (i + 1))])));
    assert.deepEqual(reads, [5]);
    assert.deepEqual(answers[0], [{ event: event('PersistentVolume', 's-mine', 10, { writer: 'binder' }) }], 'its own entry: tagged');
    assert.deepEqual(answers[1], [{ event: event('PersistentVolume', 's-user', 20), untagged: true }], 'held');
    for (const [i, name] of names.entries()) if (i >= 2) assert.deepEqual(answers[i], [{ event: event('PersistentVolume', name, 10 * (i + 1)) }], 'not cached');

    // One look, then three while its read is out: two reads, the second carrying the three.
    reads.length = 0;
    const first = review([event('PersistentVolume', 's-mine', 10)]);
    while (reads.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const later = ['s-user', 's-a', 's-mine'].map((name) => review([event('PersistentVolume', name, name === 's-mine' ? 10 : 20)]));
    await Promise.all([first, ...later]);
    assert.deepEqual(reads, [1, 3]);
    assert.equal((await later[2])[0]?.event.writer, 'binder');

    // More keys than one BatchGetItem takes: read in parts of 100.
    reads.length = 0;
    const many = await review(Array.from({ length: 150 }, (_, i) => event('PersistentVolume', i === 0 ? 's-mine' : `s-many-${i}`, 10)));
    assert.deepEqual(reads.sort((a, b) => a - b), [50, 100]);
    assert.equal(many[0]?.event.writer, 'binder');
    assert.equal(many.length, 150);

    // A failed read fails each look it carried; the next look reads again.
    reads.length = 0;
    failNext = true;
    const failed = await Promise.allSettled([review([event('PersistentVolume', 's-a', 1)]), review([event('PersistentVolume', 's-b', 1)])]);
    assert.deepEqual(failed.map((r) => r.status), ['rejected', 'rejected']);
    assert.deepEqual(await review([event('PersistentVolume', 's-mine', 10)]), [{ event: event('PersistentVolume', 's-mine', 10, { writer: 'binder' }) }]);
    assert.deepEqual(reads, [2, 1]);
  });

  test('a read that hangs fails its looks after readTimeoutMs, and the looks behind it read again', async () => {
    await cache.put('c1', 'PersistentVolume', pv('t-mine', 10), { writer: 'binder' });
    let hang = true;
    const doc = {
      send: (c: unknown, options?: { abortSignal?: AbortSignal }) => {
        if (!hang) return (db.doc.send as (x: unknown) => Promise<unknown>)(c);
        hang = false;
        // Never answered; only the abort ends it.
        return new Promise((_, reject) => options?.abortSignal?.addEventListener('abort', () => reject(options.abortSignal!.reason)));
      },
    } as unknown as typeof db.doc;
    const review = createEventReview({ doc, table: db.tables.cache, readTimeoutMs: 50 });
    const stuck = review([event('PersistentVolume', 't-a', 1)]);
    while (hang) await new Promise((resolve) => setImmediate(resolve));
    const behind = review([event('PersistentVolume', 't-mine', 10)]);
    await assert.rejects(stuck, (error: Error) => error.name === 'TimeoutError');
    assert.deepEqual(await behind, [{ event: event('PersistentVolume', 't-mine', 10, { writer: 'binder' }) }], 'answered by the next read');
  });

  test('a batch without candidates reads nothing', async () => {
    let reads = 0;
    const doc = { send: (c: unknown) => { reads++; return (db.doc.send as (x: unknown) => Promise<unknown>)(c); } } as unknown as typeof db.doc;
    const review = createEventReview({ doc, table: db.tables.cache });
    const events = [event('Node', 'n1', 1), event('PersistentVolume', 'x', 2, { type: 'DELETED' }), event('PersistentVolumeClaim', 'ns/new', 3, { type: 'ADDED' })];
    assert.deepEqual(await review(events), events.map((e) => ({ event: e })));
    assert.equal(reads, 0);
  });
});
