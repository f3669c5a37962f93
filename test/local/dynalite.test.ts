/**
 * The local DynamoDB (infra/local/dynalite.ts): dynalite, plus `ReturnValuesOnConditionCheckFailure` as
 * DynamoDB answers it, on each single-item write; and stopping it (`stopDynalite`) while a request is under
 * way: the request is answered and the server closes. Cutting its connection first left dynalite reading its
 * closed database, and it threw that where nothing catches it (the soak's "Database is closed").
 */
import { after, before, describe, it, test } from 'node:test';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { ConditionalCheckFailedException, DeleteItemCommand, DynamoDBClient, ListTablesCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { listenDynalite, stopDynalite } from '../../infra/local/dynalite.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

describe('local dynalite: ReturnValuesOnConditionCheckFailure', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
    await db.client.send(new PutItemCommand({ TableName: db.tables.control, Item: { pk: { S: 'held' }, holder: { S: 'a' }, n: { N: '3' } } }));
  });
  after(() => db.stop());

  const refused = async (send: () => Promise<unknown>): Promise<ConditionalCheckFailedException> => {
    try {
      await send();
    } catch (error) {
      assert.ok(error instanceof ConditionalCheckFailedException, `expected a ConditionalCheckFailedException, got ${String(error)}`);
      return error;
    }
    assert.fail('the write was not refused');
  };
  const held = { pk: { S: 'held' }, holder: { S: 'a' }, n: { N: '3' } };
  const notMine = { ConditionExpression: 'holder = :me', ExpressionAttributeValues: { ':me': { S: 'b' } } };

  it('ALL_OLD returns the item that refused a PutItem, an UpdateItem and a DeleteItem', async () => {
    const table = db.tables.control;
    const put = await refused(() => db.client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'held' } }, ...notMine, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })));
    assert.deepEqual(put.Item, held);
    const update = await refused(() =>
      db.client.send(new UpdateItemCommand({ TableName: table, Key: { pk: { S: 'held' } }, UpdateExpression: 'SET n = :n', ...notMine, ExpressionAttributeValues: { ...notMine.ExpressionAttributeValues, ':n': { N: '4' } }, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })),
    );
    assert.deepEqual(update.Item, held);
    const remove = await refused(() => db.client.send(new DeleteItemCommand({ TableName: table, Key: { pk: { S: 'held' } }, ...notMine, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })));
    assert.deepEqual(remove.Item, held);
  });

  it('without it, with NONE, or with no item there, the refusal carries no item', async () => {
    const table = db.tables.control;
    const plain = await refused(() => db.client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'held' } }, ...notMine })));
    assert.equal(plain.Item, undefined);
    const none = await refused(() => db.client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'held' } }, ...notMine, ReturnValuesOnConditionCheckFailure: 'NONE' })));
    assert.equal(none.Item, undefined);
    const absent = await refused(() =>
      db.client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'absent' } }, ConditionExpression: 'attribute_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })),
    );
    assert.equal(absent.Item, undefined);
  });

  it('rejects a value DynamoDB rejects', async () => {
    await assert.rejects(
      db.client.send(new PutItemCommand({ TableName: db.tables.control, Item: { pk: { S: 'x' } }, ReturnValuesOnConditionCheckFailure: 'ALL_NEW' as never })),
      (error: Error) => error.name === 'ValidationException',
    );
  });
});

test('a request under way when dynalite stops is answered, and nothing is thrown after', async () => {
  const server = await listenDynalite();
  const uncaught: Error[] = [];
  const onUncaught = (error: Error) => uncaught.push(error);
  process.on('uncaughtException', onUncaught);
  let stopping: Promise<void> | undefined;
  // Stop the moment dynalite has the whole request and has started on it.
  server.prependListener('request', (request) => request.once('end', () => (stopping ??= stopDynalite(server))));
  const client = new DynamoDBClient({ endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, region: 'us-east-1', credentials: { accessKeyId: 'l', secretAccessKey: 'l' }, maxAttempts: 1 });
  try {
    const answer = await client.send(new ListTablesCommand({}));
    assert.deepEqual(answer.TableNames, []);
    assert.ok(stopping, 'the stop began while the request was being answered');
    await stopping;
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(uncaught.map((e) => e.message), []);
    assert.equal(server.listening, false);
  } finally {
    process.off('uncaughtException', onUncaught);
    client.destroy();
  }
});
