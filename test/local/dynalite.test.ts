/**
 * The local DynamoDB (infra/local/dynalite.ts): dynalite, plus `ReturnValuesOnConditionCheckFailure` as
 * DynamoDB answers it, on each single-item write.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConditionalCheckFailedException, DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
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
