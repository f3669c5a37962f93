/**
 * readKeyState (lib/state/key-state.ts) against dynalite: the key's backoff record, its cache entry and a
 * controller's prefetch in one BatchGetItem.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BatchGetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { BackoffStore } from '../../lib/state/backoff.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { prefetchKey, readKeyState } from '../../lib/state/key-state.ts';
import { BatchGetReader } from '../../lib/state/batch-get.ts';
import { backoffPk } from '../../lib/state/schema.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

const obj = (kind: string, name: string, rv: number, namespace?: string) => ({
  apiVersion: 'v1',
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}), uid: `uid-${name}`, resourceVersion: String(rv) },
  spec: {},
});

describe('readKeyState: one request for the key and what the controller reads anyway', () => {
  let db: Dynalite;
  let counts: Record<string, number>;
  let doc: DocumentClient;
  let cache: ObjectCache;
  let backoff: BackoffStore;
  before(async () => {
    db = await startDynalite();
    counts = {};
    doc = {
      send: (command: { constructor: { name: string } }) => {
        counts[command.constructor.name] = (counts[command.constructor.name] ?? 0) + 1;
        return (db.doc.send as (c: unknown) => Promise<unknown>)(command);
      },
    } as unknown as DocumentClient;
    cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
    backoff = new BackoffStore({ doc: db.doc, table: db.tables.control });
  });
  after(() => db.stop());

  test('the table', async () => {
    const id = { controller: 'provisioner', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim' };
    await cache.put('c1', 'PersistentVolumeClaim', obj('PersistentVolumeClaim', 'claim', 5, 'ns'));
    await cache.put('c1', 'StorageClass', obj('StorageClass', 'gold', 2));
    await backoff.recordFailure(id, 'earlier');
    await db.doc.send(new PutCommand({ TableName: db.tables.control, Item: { pk: 'provision#c1#uid-claim', inProgress: '{}' } }));
    const sources = { doc, tables: db.tables, backoff, cache };
    const cases: Array<{ name: string; extra: Parameters<typeof readKeyState>[2]; cache: Record<string, boolean | null>; control: Record<string, boolean | null> }> = [
      { name: 'nothing extra', extra: undefined, cache: {}, control: {} },
      {
        name: 'a class and a record that exist, a class and a record that do not',
        extra: { cache: [{ kind: 'StorageClass', key: 'gold' }, { kind: 'StorageClass', key: 'missing' }], control: ['provision#c1#uid-claim', 'provision#c1#nobody'] },
        cache: { 'StorageClass/gold': true, 'StorageClass/missing': null },
        control: { 'provision#c1#uid-claim': true, 'provision#c1#nobody': null },
      },
      {
        name: 'an empty key is not asked for (DynamoDB refuses it); the key’s own entry asked again is read once',
        extra: { cache: [{ kind: 'StorageClass', key: '' }, { kind: 'PersistentVolumeClaim', key: 'ns/claim' }], control: ['', 'provision#c1#uid-claim'] },
        cache: { 'PersistentVolumeClaim/ns/claim': true },
        control: { 'provision#c1#uid-claim': true },
      },
    ];
    for (const c of cases) {
      counts = {};
      const state = await readKeyState(sources, id, c.extra);
      assert.deepEqual(counts, { BatchGetCommand: 1 }, `${c.name}: one request`);
      assert.equal(state.cached?.rv, 5, c.name);
      assert.equal(state.backoff?.failures, 1, c.name);
      assert.deepEqual(
        Object.fromEntries([...state.extra.cache].map(([k, v]) => [k, v === null ? null : Boolean(v)])),
        c.cache,
        `${c.name}: cache extras`,
      );
      assert.deepEqual(
        Object.fromEntries([...state.extra.control].map(([k, v]) => [k, v === null ? null : Boolean(v)])),
        c.control,
        `${c.name}: control extras`,
      );
    }
    assert.equal(prefetchKey('StorageClass', 'gold'), 'StorageClass/gold');
  });

  test('two keys’ reads on one reader share a request; a backoff record left unprocessed is asked for again, then read alone after three rounds', async () => {
    const ids = [1, 2].map((n) => ({ controller: 'provisioner', cluster: 'c1', kind: 'PersistentVolumeClaim', key: `ns/rounds-${n}` }));
    for (const id of ids) await backoff.recordFailure(id, `failure of ${id.key}`);
    await cache.put('c1', 'PersistentVolumeClaim', obj('PersistentVolumeClaim', 'rounds-1', 8, 'ns'));
    const throttled = backoffPk('provisioner', 'c1', 'PersistentVolumeClaim', 'ns/rounds-2');
    for (const rounds of [2, 3]) {
      // DynamoDB leaves the second key's backoff record unprocessed `rounds` times.
      let left = rounds;
      const sent: string[] = [];
      const throttling = {
        send: async (command: BatchGetCommand | { constructor: { name: string } }) => {
          if (!(command instanceof BatchGetCommand)) return (sent.push(command.constructor.name), (db.doc.send as (c: unknown) => Promise<unknown>)(command));
          const keys = Object.values(command.input.RequestItems ?? {}).flatMap((t) => t.Keys ?? []);
          sent.push(`BatchGet ${keys.length}`);
          const out = (await db.doc.send(command)) as { Responses?: Record<string, Array<Record<string, unknown>>> };
          if (left === 0 || !keys.some((k) => k.pk === throttled)) return out;
          left--;
          const control = db.tables.control;
          return { Responses: { ...out.Responses, [control]: (out.Responses?.[control] ?? []).filter((item) => item.pk !== throttled) }, UnprocessedKeys: { [control]: { Keys: [{ pk: throttled }] } } };
        },
      } as unknown as DocumentClient;
      const sources = { doc: throttling, tables: db.tables, backoff: new BackoffStore({ doc: throttling, table: db.tables.control }), cache: new ObjectCache(throttling, db.tables.cache, { indexer: indexAttributes }), reader: new BatchGetReader(throttling) };
      const [first, second] = await Promise.all(ids.map((id) => readKeyState(sources, id)));
      const expected = rounds === 2 ? ['BatchGet 4', 'BatchGet 1', 'BatchGet 1'] : ['BatchGet 4', 'BatchGet 1', 'BatchGet 1', 'GetCommand', 'GetCommand'];
      assert.deepEqual(sent, expected, `${rounds} rounds unprocessed: the requests`);
      assert.equal(first!.backoff?.lastError, 'failure of ns/rounds-1');
      assert.equal(first!.cached?.rv, 8);
      assert.equal(second!.backoff?.lastError, 'failure of ns/rounds-2', `${rounds} rounds unprocessed: still read`);
      assert.equal(second!.cached, undefined);
    }
  });
});
