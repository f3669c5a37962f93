/**
 * BatchGetReader (lib/state/batch-get.ts) against dynalite: reads asked for at the same moment go out as
 * one BatchGetItem, each caller gets its own keys back, and nothing is kept between moments.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BatchGetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { BatchGetReader, itemId, MAX_BATCH_GET_KEYS, possibleKey, type ItemKey } from '../../lib/state/batch-get.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

type Send = (command: BatchGetCommand) => Promise<unknown>;

describe('BatchGetReader: the reads of one moment in one request', () => {
  let db: Dynalite;
  /** Keys per BatchGetItem sent, in order. */
  let sent: number[];
  /** Stands in for DynamoDB's answer when set (throttling, an outage); else dynalite answers. */
  let answer: ((command: BatchGetCommand, real: Send) => Promise<unknown>) | undefined;
  let doc: DocumentClient;
  const control = (pk: string): ItemKey => ({ table: db.tables.control, key: { pk } });
  const cache = (pk: string, sk: string): ItemKey => ({ table: db.tables.cache, key: { pk, sk } });
  const ids = (read: { items: Map<string, Record<string, unknown>> }) => [...read.items.values()].map((item) => `${String(item.pk)}${item.sk ? `/${String(item.sk)}` : ''}`).sort();

  before(async () => {
    db = await startDynalite();
    const real = db.doc.send.bind(db.doc) as unknown as Send;
    doc = {
      send: (command: BatchGetCommand) => {
        const keys = Object.values(command.input.RequestItems ?? {}).reduce((n, t) => n + (t.Keys?.length ?? 0), 0);
        sent.push(keys);
        return answer ? answer(command, real) : real(command);
      },
    } as unknown as DocumentClient;
    for (const pk of ['a', 'b', 'c']) await db.doc.send(new PutCommand({ TableName: db.tables.control, Item: { pk, v: pk } }));
    await db.doc.send(new PutCommand({ TableName: db.tables.cache, Item: { pk: 'c1#PersistentVolume', sk: 'pv-1', rv: 3 } }));
  });
  after(() => db.stop());

  test('the table', async () => {
    const cases: Array<{ name: string; asks: ItemKey[][]; sent: number[]; found: string[][]; unprocessed?: number[] }> = [
      {
        name: 'three callers at once: one request; each gets its own keys, found or not',
        asks: [[control('a'), control('missing')], [control('b'), cache('c1#PersistentVolume', 'pv-1')], [control('c')]],
        sent: [5],
        found: [['a'], ['b', 'c1#PersistentVolume/pv-1'], ['c']],
      },
      {
        name: 'a key two callers (and one caller twice) ask for is read once, and each gets it',
        asks: [[control('a'), control('a')], [control('a'), control('b')]],
        sent: [2],
        found: [['a'], ['a', 'b']],
      },
      {
        name: 'past 100 keys: one request per 100',
        asks: [Array.from({ length: 120 }, (_, i) => control(`k${i}`)).concat(control('a')), Array.from({ length: 60 }, (_, i) => control(`j${i}`))],
        sent: [MAX_BATCH_GET_KEYS, 81],
        found: [['a'], []],
      },
    ];
    for (const c of cases) {
      sent = [];
      const reader = new BatchGetReader(doc);
      const reads = await Promise.all(c.asks.map((keys) => reader.read(keys)));
      assert.deepEqual(sent, c.sent, `${c.name}: requests`);
      assert.deepEqual(reads.map(ids), c.found, `${c.name}: items`);
      assert.deepEqual(reads.map((r) => r.unprocessed.length), c.asks.map(() => 0), `${c.name}: nothing unprocessed`);
    }
  });

  test('reads one after another are requests of their own, and see what was written between them', async () => {
    sent = [];
    const reader = new BatchGetReader(doc);
    assert.equal((await reader.read([control('later')])).items.size, 0);
    await db.doc.send(new PutCommand({ TableName: db.tables.control, Item: { pk: 'later' } }));
    assert.deepEqual(ids(await reader.read([control('later')])), ['later']);
    assert.deepEqual(sent, [1, 1]);
  });

  test('keys DynamoDB leaves unprocessed go back to the callers that asked for them, and only those', async () => {
    sent = [];
    answer = async (command, real) => {
      const out = (await real(command)) as { Responses: Record<string, Array<Record<string, unknown>>> };
      const table = db.tables.control;
      // DynamoDB throttled "b": not answered, handed back as unprocessed.
      out.Responses[table] = out.Responses[table]!.filter((item) => item.pk !== 'b');
      return { ...out, UnprocessedKeys: { [table]: { Keys: [{ pk: 'b' }] } } };
    };
    try {
      const reader = new BatchGetReader(doc);
      const [first, second] = await Promise.all([reader.read([control('a'), control('b')]), reader.read([control('c')])]);
      assert.deepEqual(sent, [3]);
      assert.deepEqual(ids(first), ['a']);
      assert.deepEqual(first.unprocessed, [control('b')]);
      assert.deepEqual(ids(second), ['c']);
      assert.deepEqual(second.unprocessed, []);
    } finally {
      answer = undefined;
    }
  });

  test('a failed request fails every caller in it; the next moment reads again', async () => {
    sent = [];
    answer = async () => {
      throw Object.assign(new Error('throughput exceeded'), { name: 'ProvisionedThroughputExceededException' });
    };
    const reader = new BatchGetReader(doc);
    try {
      const reads = await Promise.allSettled([reader.read([control('a')]), reader.read([control('b')])]);
      assert.deepEqual(reads.map((r) => r.status), ['rejected', 'rejected']);
      assert.deepEqual(reads.map((r) => (r.status === 'rejected' ? (r.reason as Error).name : '')), ['ProvisionedThroughputExceededException', 'ProvisionedThroughputExceededException']);
    } finally {
      answer = undefined;
    }
    assert.deepEqual(ids(await reader.read([control('a')])), ['a']);
    assert.deepEqual(sent, [2, 1]);
  });

  test('a key DynamoDB cannot hold reads as absent without being asked for; the others of its moment are read', async () => {
    sent = [];
    const reader = new BatchGetReader(doc);
    const long = cache('c1#StorageClass', 'x'.repeat(1100)); // a class name from an annotation of any length
    const [odd, other] = await Promise.all([reader.read([long, control('a')]), reader.read([control('b'), cache('c1#PersistentVolume', 'pv-1')])]);
    assert.deepEqual(sent, [3], 'one request, without the long key');
    assert.deepEqual(ids(odd), ['a']);
    assert.deepEqual(ids(other), ['b', 'c1#PersistentVolume/pv-1']);
    assert.equal(possibleKey({ pk: 'p', sk: 'x'.repeat(1024) }), true);
    assert.equal(possibleKey({ pk: 'p', sk: 'é'.repeat(513) }), false, 'bytes, not characters');
    assert.equal(possibleKey({ pk: 'x'.repeat(2049) }), false);
    assert.equal(possibleKey({ pk: '' }), false);
  });

  test('a request refused as invalid is asked again key by key: only the refused key’s caller gets the error', async () => {
    sent = [];
    answer = async (command, real) => {
      const keys = Object.values(command.input.RequestItems ?? {}).flatMap((t) => t.Keys ?? []);
      if (keys.some((k) => k.pk === 'refused')) throw Object.assign(new Error('One or more parameter values were invalid'), { name: 'ValidationException' });
      return real(command);
    };
    try {
      const reader = new BatchGetReader(doc);
      const reads = await Promise.allSettled([reader.read([control('refused'), control('a')]), reader.read([control('b')])]);
      assert.equal(reads[0]!.status, 'rejected');
      assert.equal(((reads[0] as PromiseRejectedResult).reason as Error).name, 'ValidationException');
      assert.equal(reads[1]!.status, 'fulfilled');
      assert.deepEqual(ids((reads[1] as PromiseFulfilledResult<{ items: Map<string, Record<string, unknown>> }>).value), ['b']);
      assert.deepEqual(sent, [3, 1, 1, 1], 'the request, then each key alone');
      // Refused as invalid on its own: the caller's error, as its own request's would have been.
      sent = [];
      await assert.rejects(reader.read([control('refused')]), { name: 'ValidationException' });
      assert.deepEqual(sent, [1]);
    } finally {
      answer = undefined;
    }
  });

  test('itemId names an item by table and key, as the keys asked for', () => {
    assert.equal(itemId('t', { pk: 'p', sk: 's', other: 1 }), itemId('t', { pk: 'p', sk: 's' }));
    assert.notEqual(itemId('t', { pk: 'p' }), itemId('u', { pk: 'p' }));
  });
});
