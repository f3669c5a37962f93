/**
 * lib/forwarder/cache-probe.ts against dynalite:
 * - its answer is the forwarder's own conditional write's, entry by entry (absent, older, same version
 *   untagged and tagged, newer, live and expired tombstones): where it answers, the write refuses with that
 *   very answer; where it does not, the write goes through;
 * - the looks asked for together are one BatchGetItem, and those asked while it is out the next one;
 *   a lone look and a batch not worth its read cost no request;
 * - the share of hits decides: after misses a small batch is no longer read (but one in eight is), after
 *   hits it is again;
 * - while a read is out, a look it would not read anyway (alone) is answered at once, not after it;
 * - a failed read, or keys it left unread, answer nothing (those events are then written) and say so; a
 *   counter that throws keeps no look from its answer;
 * - what it covers: a volume's or claim's MODIFIED, a volume's ADDED; never a claim's ADDED, a DELETED or
 *   another kind.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CacheProbe, type ProbeOutcome } from '../../lib/forwarder/cache-probe.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { createDocumentClient, type DocumentClient } from '../../lib/state/client.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynalite, type Dynalite } from '../support/dynalite.ts';

const CLUSTER = 'c1';
const KIND = 'PersistentVolume';

const volume = (name: string, rv: number) => ({
  apiVersion: 'v1',
  kind: KIND,
  metadata: { name, uid: `uid-${name}`, resourceVersion: String(rv) },
  spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'fast' },
  status: { phase: 'Available' },
});

describe('the cache probe', () => {
  let dynalite: Dynalite;
  let doc: DocumentClient;
  let cache: ObjectCache;
  /** DynamoDB operations sent through `doc`, in order. */
  const sent: string[] = [];
  /** Run (and awaited) before the next BatchGetItem goes out, once. */
  let onRead: (() => void | Promise<void>) | undefined;

  before(async () => {
    dynalite = await startDynalite();
    doc = createDocumentClient({ endpoint: dynalite.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(String(context.commandName));
        if (context.commandName === 'BatchGetItemCommand' && onRead) {
          const run = onRead;
          onRead = undefined;
          await run();
        }
        return next(args);
      },
      { step: 'initialize', name: 'countRequests' },
    );
    cache = new ObjectCache(dynalite.doc, dynalite.tables.cache, { indexer: indexAttributes });
  });
  after(async () => {
    doc.destroy();
    await dynalite.stop();
  });

  const newProbe = (outcomes: Array<[ProbeOutcome, number]> = [], table = dynalite.tables.cache) =>
    new CacheProbe({ doc, table, onOutcome: (outcome, events) => outcomes.push([outcome, events]) });

  it('answers as the conditional write refuses, and leaves to the write what it would let through', async () => {
    const past = new ObjectCache(dynalite.doc, dynalite.tables.cache, { indexer: indexAttributes, tombstoneTtlSeconds: 1, now: () => Date.now() - 3_600_000 });
    // [name, what the cache holds, the event's version]
    const cases: Array<[string, () => Promise<unknown>, number]> = [
      ['absent', async () => {}, 10],
      ['older', () => cache.put(CLUSTER, KIND, volume('older', 10)), 11],
      ['same, untagged', () => cache.put(CLUSTER, KIND, volume('same-untagged', 10)), 10],
      ['same, written back', () => cache.putDetailed(CLUSTER, KIND, volume('same-tagged', 10), { writer: 'binder' }), 10],
      ['newer', () => cache.put(CLUSTER, KIND, volume('newer', 12)), 10],
      ['newer, written back', () => cache.putDetailed(CLUSTER, KIND, volume('newer-tagged', 12), { writer: 'binder' }), 10],
      ['live tombstone, newer', async () => (await cache.put(CLUSTER, KIND, volume('tombstone-newer', 10)), cache.remove(CLUSTER, KIND, volume('tombstone-newer', 10), 12)), 11],
      ['live tombstone, same', async () => (await cache.put(CLUSTER, KIND, volume('tombstone-same', 9)), cache.remove(CLUSTER, KIND, volume('tombstone-same', 9), 10)), 10],
      ['expired tombstone, newer', async () => (await past.put(CLUSTER, KIND, volume('tombstone-expired', 10)), past.remove(CLUSTER, KIND, volume('tombstone-expired', 10), 12)), 11],
    ];
    const names = ['absent', 'older', 'same-untagged', 'same-tagged', 'newer', 'newer-tagged', 'tombstone-newer', 'tombstone-same', 'tombstone-expired'];
    for (const [, seed] of cases) await seed();
    const outcomes: Array<[ProbeOutcome, number]> = [];
    const probe = newProbe(outcomes);
    sent.length = 0;
    const answers = await Promise.all(cases.map(([, , rv], i) => probe.look(CLUSTER, KIND, names[i]!, rv)));
    assert.deepEqual(sent, ['BatchGetItemCommand'], 'one read for all the looks');
    assert.deepEqual(
      answers,
      [undefined, undefined, { result: 'unchanged' }, { result: 'unchanged', writer: 'binder' }, { result: 'stale' }, { result: 'stale' }, { result: 'stale' }, { result: 'unchanged' }, undefined],
    );
    assert.deepEqual(outcomes, [['hit', 6], ['miss', 3]]);
    for (const [i, [what, , rv]] of cases.entries()) {
      const written = await cache.putDetailed(CLUSTER, KIND, volume(names[i]!, rv));
      assert.deepEqual(written, answers[i] ?? { result: 'written' }, what);
    }
  });

  it('reads the looks asked while a read is out in the next read; a lone look costs nothing', async () => {
    await cache.put(CLUSTER, KIND, volume('batch-a', 5));
    await cache.put(CLUSTER, KIND, volume('batch-b', 5));
    const outcomes: Array<[ProbeOutcome, number]> = [];
    const probe = newProbe(outcomes);
    sent.length = 0;
    let later: Array<Promise<unknown>> = [];
    onRead = () => {
      later = [probe.look(CLUSTER, KIND, 'batch-a', 5), probe.look(CLUSTER, KIND, 'batch-b', 6), probe.look(CLUSTER, KIND, 'batch-c', 1)];
    };
    const first = await Promise.all([probe.look(CLUSTER, KIND, 'batch-a', 4), probe.look(CLUSTER, KIND, 'batch-b', 5), probe.look(CLUSTER, KIND, 'batch-x', 1)]);
    assert.deepEqual(first, [{ result: 'stale' }, { result: 'unchanged' }, undefined]);
    assert.equal(later.length, 3, 'the second looks were asked while the first read was out');
    assert.deepEqual(await Promise.all(later), [{ result: 'unchanged' }, undefined, undefined]);
    assert.deepEqual(sent, ['BatchGetItemCommand', 'BatchGetItemCommand']);

    sent.length = 0;
    assert.equal(await probe.look(CLUSTER, KIND, 'batch-a', 5), undefined, 'alone: left to the write');
    assert.deepEqual(sent, []);
    assert.deepEqual(outcomes.at(-1), ['skipped', 1]);
    assert.equal(await probe.look(CLUSTER, KIND, 'batch-a', Number.NaN), undefined, 'no version: left to the write');
  });

  it('answers a lone look asked while a read is out at once, without waiting for the read', async () => {
    await cache.put(CLUSTER, KIND, volume('slow-a', 1));
    const outcomes: Array<[ProbeOutcome, number]> = [];
    const probe = newProbe(outcomes);
    let lone: unknown = 'unanswered';
    // The read waits until the lone look is answered: were it queued behind the read, this would never end.
    onRead = async () => {
      lone = await probe.look(CLUSTER, KIND, 'slow-a', 1);
    };
    const answers = await Promise.all(['slow-a', 'slow-b', 'slow-c'].map((n) => probe.look(CLUSTER, KIND, n, 1)));
    assert.deepEqual(answers, [{ result: 'unchanged' }, undefined, undefined]);
    assert.equal(lone, undefined, 'left to its write');
    assert.deepEqual(outcomes, [['skipped', 1], ['hit', 1], ['miss', 2]]);
  });

  it('stops reading small batches after misses, reads one in eight still, and reads again after hits', async () => {
    const outcomes: Array<[ProbeOutcome, number]> = [];
    const probe = newProbe(outcomes);
    const lookAll = (names: string[], rv: number) => Promise.all(names.map((n) => probe.look(CLUSTER, KIND, n, rv)));
    // Misses: nothing cached under these names.
    for (let i = 0; i < 4; i++) await lookAll([`miss-${i}-a`, `miss-${i}-b`, `miss-${i}-c`, `miss-${i}-d`, `miss-${i}-e`], 1);
    assert.ok(probe.hitShare < 1 / 3, `share of hits after 20 misses: ${probe.hitShare}`);
    sent.length = 0;
    outcomes.length = 0;
    for (let i = 0; i < 8; i++) await lookAll([`small-${i}-a`, `small-${i}-b`, `small-${i}-c`], 1);
    assert.equal(sent.length, 1, 'one batch of three in eight is read');
    assert.deepEqual(outcomes.filter(([o]) => o === 'skipped').length, 7);
    // Hits bring the reads back.
    for (const n of ['hot-a', 'hot-b', 'hot-c']) await cache.put(CLUSTER, KIND, volume(n, 3));
    for (let i = 0; i < 40 && probe.hitShare <= 1 / 3; i++) await lookAll(['hot-a', 'hot-b', 'hot-c', 'hot-a', 'hot-b', 'hot-c', 'hot-a', 'hot-b', 'hot-c'], 3);
    assert.ok(probe.hitShare > 1 / 3, `share of hits after hits: ${probe.hitShare}`);
    sent.length = 0;
    assert.deepEqual(await lookAll(['hot-a', 'hot-b', 'hot-c'], 3), [{ result: 'unchanged' }, { result: 'unchanged' }, { result: 'unchanged' }]);
    assert.deepEqual(sent, ['BatchGetItemCommand']);
  });

  it('answers nothing when the read fails, and says so', async () => {
    const outcomes: Array<[ProbeOutcome, number]> = [];
    const probe = newProbe(outcomes, 'no-such-table');
    const answers = await Promise.all(['f-a', 'f-b', 'f-c'].map((n) => probe.look(CLUSTER, KIND, n, 1)));
    assert.deepEqual(answers, [undefined, undefined, undefined]);
    assert.deepEqual(outcomes, [['failed', 3]]);
    // The probe goes on after a failure.
    await cache.put(CLUSTER, KIND, volume('after-failure', 2));
    const working = newProbe();
    assert.deepEqual(await Promise.all([working.look(CLUSTER, KIND, 'after-failure', 2), working.look(CLUSTER, KIND, 'after-failure', 1), working.look(CLUSTER, KIND, 'x', 1)]), [
      { result: 'unchanged' },
      { result: 'stale' },
      undefined,
    ]);
  });

  it('leaves keys the read did not process to their writes, and answers every look though a counter throws', async () => {
    const unprocessed = {
      send: async (command: { input: { RequestItems: Record<string, { Keys: unknown[] }> } }) => ({
        Responses: { [dynalite.tables.cache]: [] },
        UnprocessedKeys: { [dynalite.tables.cache]: { Keys: command.input.RequestItems[dynalite.tables.cache]!.Keys } },
      }),
    } as unknown as DocumentClient;
    const outcomes: Array<[ProbeOutcome, number]> = [];
    const throttled = new CacheProbe({ doc: unprocessed, table: dynalite.tables.cache, onOutcome: (o, n) => outcomes.push([o, n]) });
    assert.deepEqual(await Promise.all(['u-a', 'u-b', 'u-c'].map((n) => throttled.look(CLUSTER, KIND, n, 1))), [undefined, undefined, undefined]);
    assert.deepEqual(outcomes, [['failed', 3]]);

    await cache.put(CLUSTER, KIND, volume('counted', 4));
    const throwing = new CacheProbe({ doc, table: dynalite.tables.cache, onOutcome: () => { throw new Error('counter broke'); } });
    assert.deepEqual(await Promise.all([throwing.look(CLUSTER, KIND, 'counted', 4), throwing.look(CLUSTER, KIND, 'counted', 3), throwing.look(CLUSTER, KIND, 'x', 1)]), [
      { result: 'unchanged' },
      { result: 'stale' },
      undefined,
    ]);
    assert.equal(await throwing.look(CLUSTER, KIND, 'counted', 4), undefined, 'alone, after the throw: still answered');
  });

  it('covers the events a controller may have written back, and only those', () => {
    const probe = newProbe();
    assert.equal(probe.covers('MODIFIED', 'PersistentVolume'), true);
    assert.equal(probe.covers('MODIFIED', 'PersistentVolumeClaim'), true);
    assert.equal(probe.covers('ADDED', 'PersistentVolume'), true, 'the provisioner creates volumes and writes them back');
    assert.equal(probe.covers('ADDED', 'PersistentVolumeClaim'), false, 'no controller creates claims');
    assert.equal(probe.covers('DELETED', 'PersistentVolume'), false);
    assert.equal(probe.covers('MODIFIED', 'Node'), false);
    assert.equal(probe.covers('MODIFIED', 'StorageClass'), false);
  });
});
