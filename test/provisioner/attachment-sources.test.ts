/**
 * The delete guard's read of one PV's VolumeAttachments (lib/provisioner/attachments.ts), against dynalite:
 * through the attachments' source entries while the VolumeAttachment sync record vouches for them — what
 * it reads follows the PV's own attachments, not the cluster's — and through the filtered Query of the
 * whole kind while it does not (before the forwarder's LIST with source entries, or after an older
 * forwarder wrote since), so an attachment cached without a source entry is never missed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { BatchGetReader } from '../../lib/state/batch-get.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { CachedVolumeAttachments, canDeleteVolume } from '../../lib/provisioner/attachments.ts';
import type { PersistentVolume } from '../../lib/kube/objects.ts';

const KIND = 'VolumeAttachment';
const va = (name: string, rv: number, pv: string, node = 'node-1') => ({
  metadata: { name, uid: `uid-${name}`, resourceVersion: String(rv) },
  spec: { attacher: 'attacher.claimflow.io', nodeName: node, source: { persistentVolumeName: pv } },
});
const volume = (name: string): PersistentVolume => ({ metadata: { name }, spec: {} }) as PersistentVolume;

describe('the delete guard reads one PV\'s attachments', () => {
  let db: Dynalite;
  let cache: ObjectCache;
  let sync: SyncMarkers;
  /** Requests the guard's cache and sync record sent, as `<command> <partition>`. */
  const sent: string[] = [];
  let guard: CachedVolumeAttachments;

  before(async () => {
    db = await startDynalite();
    cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
    sync = new SyncMarkers(db.doc, db.tables.control);
    type Sent = { constructor: { name: string }; input: { KeyConditionExpression?: string; ExpressionAttributeValues?: Record<string, unknown>; Key?: { pk?: string }; RequestItems?: Record<string, unknown> } };
    const counted = new Proxy(db.doc, {
      get: (target, prop, receiver) =>
        prop === 'send'
          ? (command: Sent, ...rest: unknown[]) => {
              const i = command.input;
              const where = i.RequestItems ? Object.keys(i.RequestItems).join('+') : String(i.ExpressionAttributeValues?.[':pk'] ?? i.Key?.pk ?? '');
              sent.push(`${command.constructor.name} ${where}`);
              return (target.send as (...a: unknown[]) => unknown)(command, ...rest);
            }
          : Reflect.get(target, prop, receiver),
    });
    guard = new CachedVolumeAttachments(new ObjectCache(counted, db.tables.cache, { indexer: indexAttributes }), 'c1', new SyncMarkers(counted, db.tables.control));
    // 200 attachments of other volumes, two of pv-a (one on each node), one of pv-a's that is gone.
    for (let i = 0; i < 200; i++) await cache.put('c1', KIND, va(`va-other-${i}`, 5, `pv-other-${i}`));
    await cache.put('c1', KIND, va('va-a1', 5, 'pv-a', 'node-1'));
    await cache.put('c1', KIND, va('va-a2', 5, 'pv-a', 'node-2'));
    await cache.put('c1', KIND, va('va-a-gone', 5, 'pv-a'));
    await cache.remove('c1', KIND, va('va-a-gone', 5, 'pv-a'), 6);
  });
  after(() => db.stop());

  const names = async (pv: string): Promise<string[]> => (await guard.list(pv)).map((a) => a.metadata.name ?? '');

  it('before the record vouches for source entries: the filtered Query of the kind, which finds an attachment cached without one', async () => {
    await sync.markListComplete('c1', KIND, '10'); // a forwarder from before source entries
    await db.doc.send(new PutCommand({
      TableName: db.tables.cache,
      Item: { pk: 'c1#VolumeAttachment', sk: 'va-a-legacy', rv: 4, uid: 'uid-va-a-legacy', obj: JSON.stringify(va('va-a-legacy', 4, 'pv-a', 'node-3')), deleted: false, vaSource: 'pv-a' },
    }));
    sent.length = 0;
    assert.deepEqual(await names('pv-a'), ['va-a-legacy', 'va-a1', 'va-a2']);
    assert.deepEqual(sent, [`GetCommand sync#c1#${KIND}`, 'QueryCommand c1#VolumeAttachment'], 'the record first; the kind\'s partition, not the source entries');
  });

  it('while it vouches: the source entries, then the named entries only; tombstones and absent entries do not count', async () => {
    // The LIST of a forwarder that keeps source entries writes the missing one, then vouches.
    await cache.putSourceEntry('c1', KIND, va('va-a-legacy', 4, 'pv-a', 'node-3'));
    await sync.markListComplete('c1', KIND, '11', { sourcesIndexed: true });
    // Source entries that outlived their attachment: one whose entry is a tombstone (its removal failed),
    // one whose entry is absent (and its tombstone expired).
    await db.doc.send(new PutCommand({ TableName: db.tables.cache, Item: { pk: 'c1#VolumeAttachment#bySource', sk: 'pv-a#va-a-gone', rv: 5 } }));
    await db.doc.send(new PutCommand({ TableName: db.tables.cache, Item: { pk: 'c1#VolumeAttachment#bySource', sk: 'pv-a#va-a-lost', rv: 3 } }));
    assert.deepEqual(await cache.attachmentsNaming('c1', 'pv-a'), ['va-a-gone', 'va-a-legacy', 'va-a-lost', 'va-a1', 'va-a2']);
    sent.length = 0;
    assert.deepEqual(await names('pv-a'), ['va-a-legacy', 'va-a1', 'va-a2']);
    assert.deepEqual(sent, [`GetCommand sync#c1#${KIND}`, 'QueryCommand c1#VolumeAttachment#bySource', `BatchGetCommand ${db.tables.cache}`], 'the record first; not the 200 other attachments');
    assert.equal(canDeleteVolume(volume('pv-a'), await guard.list('pv-a'))?.message, 'persistentvolume pv-a is still attached to node node-3');

    sent.length = 0;
    assert.deepEqual(await names('pv-free'), []);
    assert.deepEqual(sent, [`GetCommand sync#c1#${KIND}`, 'QueryCommand c1#VolumeAttachment#bySource'], 'nothing named: no entry read');
    assert.equal(canDeleteVolume(volume('pv-free'), await guard.list('pv-free')), undefined);
  });

  it('reads the named entries 100 at a time', async () => {
    for (let i = 0; i < 130; i++) await cache.put('c1', KIND, va(`va-many-${String(i).padStart(3, '0')}`, 7, 'pv-many', `node-${i}`));
    sent.length = 0;
    const found = await names('pv-many');
    assert.equal(found.length, 130);
    assert.equal(sent.filter((s) => s.startsWith('BatchGetCommand')).length, 2);
  });

  it('an older forwarder writing since: the filtered Query again, until a LIST vouches once more', async () => {
    await sync.saveBookmark('c1', KIND, '12'); // the older forwarder saves a bookmark: it wrote attachments without source entries
    await db.doc.send(new PutCommand({
      TableName: db.tables.cache,
      Item: { pk: 'c1#VolumeAttachment', sk: 'va-b-legacy', rv: 12, uid: 'uid-va-b-legacy', obj: JSON.stringify(va('va-b-legacy', 12, 'pv-b')), deleted: false, vaSource: 'pv-b' },
    }));
    assert.deepEqual(await names('pv-b'), ['va-b-legacy']);
    // A newer forwarder's bookmark (the two overlapping) does not vouch again; its LIST, which writes the source entries, does.
    await sync.saveBookmark('c1', KIND, '13', { sourcesIndexed: true });
    assert.deepEqual(await names('pv-b'), ['va-b-legacy']);
    await cache.putSourceEntry('c1', KIND, va('va-b-legacy', 12, 'pv-b'));
    await sync.markListComplete('c1', KIND, '14', { sourcesIndexed: true });
    assert.deepEqual(await names('pv-b'), ['va-b-legacy']);
    assert.equal((await sync.getSync('c1', KIND))?.sourcesIndexed, true);
  });

  it('no answer when a named entry stays unread (throttled): the deletion waits, it never proceeds on a guess', async () => {
    const throttled = new Proxy(db.doc, {
      get: (target, prop, receiver) =>
        prop === 'send'
          ? async (command: { constructor: { name: string }; input: { RequestItems?: Record<string, { Keys: unknown[] }> } }, ...rest: unknown[]) => {
              const out = (await (target.send as (...a: unknown[]) => Promise<Record<string, unknown>>)(command, ...rest));
              // Every key of every BatchGetItem left unprocessed, as DynamoDB does under throttling.
              return command.constructor.name === 'BatchGetCommand' ? { ...out, Responses: {}, UnprocessedKeys: command.input.RequestItems } : out;
            }
          : Reflect.get(target, prop, receiver),
    });
    const guarded = new CachedVolumeAttachments(new ObjectCache(throttled, db.tables.cache, { indexer: indexAttributes }), 'c1', new SyncMarkers(throttled, db.tables.control));
    await assert.rejects(guarded.list('pv-a'), /VolumeAttachment cache entries left unread/);
  });

  it('without a PV name, or without the sync record\'s reader: every attachment, or the filtered Query', async () => {
    assert.equal((await guard.list()).length, 200 + 3 + 130 + 1);
    const noSync = new CachedVolumeAttachments(cache, 'c1');
    assert.deepEqual((await noSync.list('pv-b')).map((a) => a.metadata.name), ['va-b-legacy']);
  });

  describe('two guards on the runtime’s shared reader (two deletions of one batch)', () => {
    /** Requests in the order sent, and `answered <command>` as each answer arrives. */
    const log: string[] = [];
    let failSyncRead = false;
    const guards = () => {
      const proxied = new Proxy(db.doc, {
        get: (target, prop, receiver) =>
          prop === 'send'
            ? (command: { constructor: { name: string }; input: { ExpressionAttributeValues?: Record<string, unknown>; RequestItems?: Record<string, { Keys: Array<{ pk: string }> }> } }, ...rest: unknown[]) => {
                const i = command.input;
                const where = i.RequestItems ? Object.values(i.RequestItems).flatMap((t) => t.Keys.map((k) => k.pk)).join('+') : String(i.ExpressionAttributeValues?.[':pk'] ?? '');
                const name = `${command.constructor.name} ${where}`;
                log.push(name);
                if (failSyncRead && where.startsWith('sync#')) return Promise.reject(Object.assign(new Error('unavailable'), { name: 'InternalServerError' }));
                return (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest).then((out) => (log.push(`answered ${name}`), out));
              }
            : Reflect.get(target, prop, receiver),
      });
      const reader = new BatchGetReader(proxied);
      const one = () => new CachedVolumeAttachments(new ObjectCache(proxied, db.tables.cache, { indexer: indexAttributes }), 'c1', new SyncMarkers(proxied, db.tables.control, { reader }));
      return [one(), one()] as const;
    };
    const record = `BatchGetCommand sync#c1#${KIND}`;

    it('while the record vouches: one read of it for both, answered before either Query is sent', async () => {
      await sync.markListComplete('c1', KIND, '20', { sourcesIndexed: true });
      const alone = await names('pv-a'); // the guard with a read of its own
      assert.ok(alone.includes('va-a1'));
      log.length = 0;
      const [g1, g2] = guards();
      const [a, free] = await Promise.all([g1.list('pv-a'), g2.list('pv-free')]);
      assert.deepEqual(a.map((x) => x.metadata.name), alone);
      assert.deepEqual(free, []);
      assert.deepEqual(log.filter((l) => l.includes('sync#')), [record, `answered ${record}`], 'the record read once');
      const firstQuery = log.findIndex((l) => l.startsWith('QueryCommand'));
      assert.ok(firstQuery > log.indexOf(`answered ${record}`), `no Query before the record answered: ${log.join(', ')}`);
      assert.deepEqual(log.filter((l) => l.startsWith('QueryCommand')), ['QueryCommand c1#VolumeAttachment#bySource', 'QueryCommand c1#VolumeAttachment#bySource']);
    });

    it('once it no longer vouches, the next read through the same reader sees that: both guards take the filtered Query of the kind', async () => {
      await sync.saveBookmark('c1', KIND, '21'); // an older forwarder wrote since
      log.length = 0;
      const [g1, g2] = guards();
      await Promise.all([g1.list('pv-a'), g2.list('pv-free')]);
      assert.deepEqual(log.filter((l) => l.startsWith('QueryCommand')), ['QueryCommand c1#VolumeAttachment', 'QueryCommand c1#VolumeAttachment']);
      await sync.markListComplete('c1', KIND, '22', { sourcesIndexed: true });
    });

    it('the shared read failing fails both guards: neither trusts the source entries nor answers “not attached”', async () => {
      failSyncRead = true;
      try {
        log.length = 0;
        const [g1, g2] = guards();
        const results = await Promise.allSettled([g1.list('pv-a'), g2.list('pv-free')]);
        assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
        assert.deepEqual(log.filter((l) => l.startsWith('QueryCommand')), []);
      } finally {
        failSyncRead = false;
      }
    });
  });
});
