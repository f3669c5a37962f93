import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { InvalidResourceVersionError } from '../../lib/state/cache.ts';
import { BatchGetReader } from '../../lib/state/batch-get.ts';
import type { DocumentClient } from '../../lib/state/client.ts';

describe('SyncMarkers against dynalite', () => {
  let db: Dynalite;
  let sync: SyncMarkers;
  const at = Date.parse('2026-11-21T20:00:00.000Z');
  before(async () => {
    db = await startDynalite();
    sync = new SyncMarkers(db.doc, db.tables.control, { now: () => at });
  });
  after(() => db.stop());

  it('has no record before the forwarder writes one', async () => {
    assert.equal(await sync.getSync('c1', 'Node'), undefined);
    assert.equal(await sync.isListComplete('c1', ['Node']), false);
  });

  it('moves the bookmark forward only, comparing integers', async () => {
    assert.equal(await sync.saveBookmark('c1', 'Node', '9'), true);
    assert.deepEqual(await sync.getSync('c1', 'Node'), { rv: '9', listComplete: false, sourcesIndexed: false });
    assert.equal(await sync.saveBookmark('c1', 'Node', '10'), true);
    assert.equal(await sync.saveBookmark('c1', 'Node', '10'), false);
    assert.equal(await sync.saveBookmark('c1', 'Node', '8'), false);
    assert.equal((await sync.getSync('c1', 'Node'))?.rv, '10');
    await assert.rejects(sync.saveBookmark('c1', 'Node', 'x'), InvalidResourceVersionError);
  });

  it('marks a kind listed, setting the bookmark to the list resourceVersion even below the old one', async () => {
    await sync.markListComplete('c1', 'Node', '3');
    assert.deepEqual(await sync.getSync('c1', 'Node'), { rv: '3', listComplete: true, listCompletedAt: '2026-11-21T20:00:00.000Z', sourcesIndexed: false });
    assert.equal(await sync.saveBookmark('c1', 'Node', '4'), true);
    assert.deepEqual(await sync.getSync('c1', 'Node'), { rv: '4', listComplete: true, listCompletedAt: '2026-11-21T20:00:00.000Z', sourcesIndexed: false });
  });

  it('vouches for source entries from a LIST that wrote them, while every later bookmark keeps vouching', async () => {
    const kind = 'VolumeAttachment';
    // A bookmark never starts vouching: only a LIST by a forwarder that keeps source entries does.
    assert.equal(await sync.saveBookmark('c1', kind, '5', { sourcesIndexed: true }), true);
    assert.deepEqual(await sync.getSync('c1', kind), { rv: '5', listComplete: false, sourcesIndexed: false });
    await sync.markListComplete('c1', kind, '6', { sourcesIndexed: true });
    assert.deepEqual(await sync.getSync('c1', kind), { rv: '6', listComplete: true, listCompletedAt: '2026-11-21T20:00:00.000Z', sourcesIndexed: true });
    assert.equal(await sync.saveBookmark('c1', kind, '8', { sourcesIndexed: true }), true);
    assert.deepEqual(await sync.getSync('c1', kind), { rv: '8', listComplete: true, listCompletedAt: '2026-11-21T20:00:00.000Z', sourcesIndexed: true });
    // A refused save changes nothing.
    assert.equal(await sync.saveBookmark('c1', kind, '7', { sourcesIndexed: true }), false);
    assert.equal(await sync.saveBookmark('c1', kind, '7'), false);
    assert.equal((await sync.getSync('c1', kind))?.sourcesIndexed, true);
    // A forwarder from before source entries moves the bookmark alone: no longer vouched for, and a later
    // bookmark of one that keeps them (two forwarders overlapping) does not vouch again...
    assert.equal(await sync.saveBookmark('c1', kind, '9'), true);
    assert.equal((await sync.getSync('c1', kind))?.sourcesIndexed, false);
    assert.equal(await sync.saveBookmark('c1', kind, '10', { sourcesIndexed: true }), true);
    assert.deepEqual(await sync.getSync('c1', kind), { rv: '10', listComplete: true, listCompletedAt: '2026-11-21T20:00:00.000Z', sourcesIndexed: false });
    // ...nor the older one's LIST; a LIST by one that keeps them does.
    await sync.markListComplete('c1', kind, '11');
    assert.equal((await sync.getSync('c1', kind))?.sourcesIndexed, false);
    await sync.markListComplete('c1', kind, '12', { sourcesIndexed: true });
    assert.equal((await sync.getSync('c1', kind))?.sourcesIndexed, true);
  });

  it('reports list completion over several kinds and keeps clusters apart', async () => {
    assert.equal(await sync.isListComplete('c1', ['Node']), true);
    assert.equal(await sync.isListComplete('c1', ['Node', 'PersistentVolume']), false);
    await sync.markListComplete('c1', 'PersistentVolume', '5');
    assert.equal(await sync.isListComplete('c1', ['Node', 'PersistentVolume']), true);
    assert.equal(await sync.isListComplete('c2', ['Node']), false);
  });

  it('reads the markers of several kinds with one request', async () => {
    const sent: string[] = [];
    const counted = new SyncMarkers(db.doc, db.tables.control, { now: () => at });
    const name = `count-${Date.now()}`;
    db.doc.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(String(context.commandName));
        return next(args);
      },
      { step: 'initialize', name },
    );
    try {
      await counted.markListComplete('c3', 'StorageClass', '7');
      sent.length = 0;
      assert.equal(await counted.isListComplete('c3', ['StorageClass', 'Node', 'PersistentVolume']), false);
      await counted.markListComplete('c3', 'Node', '8');
      await counted.markListComplete('c3', 'PersistentVolume', '9');
      assert.equal(await counted.isListComplete('c3', ['StorageClass', 'Node', 'PersistentVolume']), true);
      assert.deepEqual(sent.filter((command) => command !== 'UpdateItemCommand'), ['BatchGetItemCommand', 'BatchGetItemCommand']);
    } finally {
      db.doc.middlewareStack.remove(name);
    }
  });
  it('with a reader, getSync shares the request of its moment; a record left unprocessed there is read on its own', async () => {
    await sync.markListComplete('c4', 'VolumeAttachment', '3', { sourcesIndexed: true });
    await sync.markListComplete('c5', 'VolumeAttachment', '4');
    const sent: string[] = [];
    let throttle = false;
    const doc = {
      send: async (command: { constructor: { name: string }; input: { RequestItems?: Record<string, { Keys: Array<{ pk: string }> }> } }) => {
        sent.push(command.constructor.name);
        const out = (await (db.doc.send as (c: unknown) => Promise<Record<string, any>>)(command));
        if (!throttle || !command.input.RequestItems) return out;
        // DynamoDB leaves every key of the shared request unprocessed.
        return { Responses: {}, UnprocessedKeys: command.input.RequestItems };
      },
    } as unknown as DocumentClient;
    const reader = new BatchGetReader(doc);
    const shared = new SyncMarkers(doc, db.tables.control, { now: () => at, reader });
    const [c4, c5, none] = await Promise.all([shared.getSync('c4', 'VolumeAttachment'), shared.getSync('c5', 'VolumeAttachment'), shared.getSync('c6', 'VolumeAttachment')]);
    assert.deepEqual(sent, ['BatchGetCommand'], 'three records, one request');
    assert.deepEqual(c4, { rv: '3', listComplete: true, listCompletedAt: '2026-11-21T20:00:00.000Z', sourcesIndexed: true });
    assert.equal(c5?.sourcesIndexed, false);
    assert.equal(none, undefined);
    sent.length = 0;
    throttle = true;
    assert.equal((await shared.getSync('c4', 'VolumeAttachment'))?.sourcesIndexed, true);
    assert.deepEqual(sent, ['BatchGetCommand', 'GetCommand']);
  });
});
