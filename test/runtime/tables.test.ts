import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { CLAIM_REF_INDEX, DUE_INDEX, PENDING_CLAIM_INDEX, RESYNC_INDEX, VOLUME_MATCH_INDEX } from '../../lib/state/schema.ts';
import { createTables } from '../../lib/state/tables.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

let db: Dynalite;
before(async () => {
  db = await startDynalite();
});
after(() => db.stop());

test('test/support/dynalite creates both tables with the indexes schema.ts names', async () => {
  const cache = (await db.client.send(new DescribeTableCommand({ TableName: db.tables.cache }))).Table;
  const control = (await db.client.send(new DescribeTableCommand({ TableName: db.tables.control }))).Table;
  assert.deepEqual(cache?.KeySchema?.map((k) => `${k.AttributeName}:${k.KeyType}`), ['pk:HASH', 'sk:RANGE']);
  assert.deepEqual(control?.KeySchema?.map((k) => `${k.AttributeName}:${k.KeyType}`), ['pk:HASH']);
  const indexes = (t: typeof cache) =>
    Object.fromEntries((t?.GlobalSecondaryIndexes ?? []).map((i) => [i.IndexName, i.KeySchema?.map((k) => k.AttributeName).join(',')]));
  assert.deepEqual(indexes(cache), {
    [VOLUME_MATCH_INDEX]: 'matchPk,matchSk',
    [CLAIM_REF_INDEX]: 'claimRefPk,sk',
    [PENDING_CLAIM_INDEX]: 'pendingPk,pendingSk',
    [RESYNC_INDEX]: 'resyncPk,sk',
  });
  assert.deepEqual(indexes(control), { [DUE_INDEX]: 'dueShard,dueAt' });
});

test('sparse indexes answer queries; createTables is idempotent', async () => {
  await db.doc.send(new PutCommand({ TableName: db.tables.cache, Item: { pk: 'c1#PersistentVolume', sk: 'pv-1', matchPk: 'c1#gold#RWO', matchSk: '0001#pv-1' } }));
  await db.doc.send(new PutCommand({ TableName: db.tables.cache, Item: { pk: 'c1#PersistentVolume', sk: 'pv-2' } }));
  const found = await db.doc.send(
    new QueryCommand({ TableName: db.tables.cache, IndexName: VOLUME_MATCH_INDEX, KeyConditionExpression: 'matchPk = :p', ExpressionAttributeValues: { ':p': 'c1#gold#RWO' } }),
  );
  assert.deepEqual(found.Items?.map((i) => i.sk), ['pv-1']);
  await createTables(db.client, db.tables);
  const again = await db.doc.send(
    new QueryCommand({ TableName: db.tables.cache, IndexName: VOLUME_MATCH_INDEX, KeyConditionExpression: 'matchPk = :p', ExpressionAttributeValues: { ':p': 'c1#gold#RWO' } }),
  );
  assert.equal(again.Items?.length, 1, 'existing tables and data are left alone');
});

test('serverless.yml declares the same keys, attributes and indexes as lib/state/tables.ts', async () => {
  const { readFile } = await import('node:fs/promises');
  const YAML = (await import('yaml')).default;
  const { cacheTableDefinition, controlTableDefinition } = await import('../../lib/state/tables.ts');
  const template = YAML.parse(await readFile(new URL('../../serverless.yml', import.meta.url), 'utf8'), { logLevel: 'silent' });
  const resources = template.resources.Resources;
  const shape = (t: { AttributeDefinitions?: unknown; KeySchema?: unknown; GlobalSecondaryIndexes?: unknown; BillingMode?: unknown }) =>
    JSON.parse(JSON.stringify({ AttributeDefinitions: t.AttributeDefinitions, KeySchema: t.KeySchema, GlobalSecondaryIndexes: t.GlobalSecondaryIndexes, BillingMode: t.BillingMode }));
  assert.deepEqual(shape(resources.CacheTable.Properties), shape(cacheTableDefinition('x')));
  assert.deepEqual(shape(resources.ControlTable.Properties), shape(controlTableDefinition('x')));
});
