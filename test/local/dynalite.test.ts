/**
 * The local DynamoDB (infra/local/dynalite.ts): dynalite, plus `ReturnValuesOnConditionCheckFailure` as
 * DynamoDB answers it, on each single-item write; and stopping it (`stopDynalite`) while a request is under
 * way: the request is answered and the server closes. Cutting its connection first left dynalite reading its
 * closed database, and it threw that where nothing catches it (the soak's "Database is closed").
 */
import { after, before, describe, it, test } from 'node:test';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { type AttributeValue, ConditionalCheckFailedException, CreateTableCommand, DeleteItemCommand, DynamoDBClient, GetItemCommand, ListTablesCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expressionParses, listenDynalite, stopDynalite } from '../../infra/local/dynalite.ts';
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

describe('local dynalite: each expression parsed once', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
  });
  after(() => db.stop());

  const table = () => db.tables.control;
  const item = async (pk: string) => (await db.client.send(new GetItemCommand({ TableName: table(), Key: { pk: { S: pk } }, ConsistentRead: true }))).Item;
  const rejected = async (send: Promise<unknown>, name: string, message: RegExp) => {
    await assert.rejects(send, (error: Error) => (assert.equal(error.name, name), assert.match(error.message, message), true));
  };
  const parses = () => ({ ...expressionParses });
  const since = (before: { parsed: number; reused: number }) => ({ parsed: expressionParses.parsed - before.parsed, reused: expressionParses.reused - before.reused });

  it('a repeated condition and update are parsed once, and each request is judged and written by its own values', async () => {
    const write = (pk: string, rv: number, by: string) =>
      db.client.send(
        new UpdateItemCommand({
          TableName: table(),
          Key: { pk: { S: pk } },
          UpdateExpression: 'SET #rv = :rv, #by = :by ADD #n :one',
          ConditionExpression: 'attribute_not_exists(pk) OR (#rv < :rv AND #by <> :by)',
          ExpressionAttributeNames: { '#rv': 'rv', '#by': 'by', '#n': 'n' },
          ExpressionAttributeValues: { ':rv': { N: String(rv) }, ':by': { S: by }, ':one': { N: '1' } },
        }),
      );
    await write('memo-1', 1, 'a');
    const first = parses();
    await write('memo-1', 2, 'b');
    await write('memo-2', 7, 'c');
    await rejected(write('memo-1', 2, 'c'), 'ConditionalCheckFailedException', /conditional request failed/);
    await rejected(write('memo-1', 3, 'b'), 'ConditionalCheckFailedException', /conditional request failed/);
    await write('memo-1', 3, 'c');
    assert.deepEqual(since(first), { parsed: 0, reused: 10 }, 'five requests, two expressions each, none parsed again');
    assert.deepEqual(await item('memo-1'), { pk: { S: 'memo-1' }, rv: { N: '3' }, by: { S: 'c' }, n: { N: '3' } });
    assert.deepEqual(await item('memo-2'), { pk: { S: 'memo-2' }, rv: { N: '7' }, by: { S: 'c' }, n: { N: '1' } });
  });

  it('a name or value left unused is still refused, after the same expression was kept', async () => {
    const put = (values: Record<string, { S: string }>, names?: Record<string, string>) =>
      db.client.send(new PutItemCommand({ TableName: table(), Item: { pk: { S: 'unused' } }, ConditionExpression: 'attribute_not_exists(pk) OR holder <> :me', ExpressionAttributeValues: values, ExpressionAttributeNames: names }));
    await put({ ':me': { S: 'a' } });
    await put({ ':me': { S: 'b' } });
    await rejected(put({ ':me': { S: 'a' }, ':other': { S: 'x' } }), 'ValidationException', /ExpressionAttributeValues unused in expressions: keys: \{:other\}/);
    await rejected(put({ ':me': { S: 'a' } }, { '#h': 'holder' }), 'ValidationException', /ExpressionAttributeNames unused in expressions: keys: \{#h\}/);
  });

  it("a value of another type is parsed again and its type checked; BETWEEN and attribute_type are parsed every time", async () => {
    const starts = (value: AttributeValue) =>
      db.client.send(new PutItemCommand({ TableName: table(), Item: { pk: { S: `typed-${JSON.stringify(value)}` } }, ConditionExpression: 'attribute_not_exists(pk) OR begins_with(holder, :p)', ExpressionAttributeValues: { ':p': value } }));
    const first = parses();
    await starts({ S: 'a' });
    await starts({ S: 'b' });
    assert.equal(since(first).reused, 1);
    await rejected(starts({ N: '1' }), 'ValidationException', /Incorrect operand type for operator or function; operator or function: begins_with, operand type: N/);
    const between = (low: string, high: string) =>
      db.client.send(new PutItemCommand({ TableName: table(), Item: { pk: { S: 'between' } }, ConditionExpression: 'attribute_not_exists(pk) OR n BETWEEN :low AND :high', ExpressionAttributeValues: { ':low': { N: low }, ':high': { N: high } } }));
    const before = parses();
    await between('1', '2');
    await rejected(between('3', '2'), 'ValidationException', /BETWEEN operator requires upper bound to be greater than or equal to lower bound/);
    const typed = (type: string) =>
      db.client.send(new PutItemCommand({ TableName: table(), Item: { pk: { S: 'type' } }, ConditionExpression: 'attribute_not_exists(pk) OR attribute_type(holder, :t)', ExpressionAttributeValues: { ':t': { S: type } } }));
    await typed('S');
    await rejected(typed('Q'), 'ValidationException', /Invalid attribute type name found; type: Q/);
    assert.deepEqual(since(before), { parsed: 4, reused: 0 });
  });

  it('a syntax error is parsed again every time; a semantic error is kept, and answers the same', async () => {
    const bad = () => db.client.send(new PutItemCommand({ TableName: table(), Item: { pk: { S: 'bad' } }, ConditionExpression: 'attribute_not_exists(pk) OR' }));
    const before = parses();
    await rejected(bad(), 'ValidationException', /Invalid ConditionExpression: Syntax error/);
    await rejected(bad(), 'ValidationException', /Invalid ConditionExpression: Syntax error/);
    assert.deepEqual(since(before), { parsed: 2, reused: 0 });
    const reserved = () => db.client.send(new PutItemCommand({ TableName: table(), Item: { pk: { S: 'reserved' } }, ConditionExpression: 'attribute_not_exists(size)' }));
    const middle = parses();
    await rejected(reserved(), 'ValidationException', /Attribute name is a reserved keyword; reserved keyword: size/);
    await rejected(reserved(), 'ValidationException', /Attribute name is a reserved keyword; reserved keyword: size/);
    assert.deepEqual(since(middle), { parsed: 1, reused: 1 });
  });

  it("a kept parse's maps keep their null prototype: a key attribute named like an Object method is still a key", async () => {
    // `constructor` as a table's hash key: a path map with Object's prototype would find it everywhere.
    const TableName = `proto-${Date.now()}`;
    await db.client.send(new CreateTableCommand({ TableName, KeySchema: [{ AttributeName: 'constructor', KeyType: 'HASH' }], AttributeDefinitions: [{ AttributeName: 'constructor', AttributeType: 'S' }], BillingMode: 'PAY_PER_REQUEST' }));
    const query = () => db.client.send(new QueryCommand({ TableName, KeyConditionExpression: '#k = :k', FilterExpression: 'attribute_exists(#o)', ExpressionAttributeNames: { '#k': 'constructor', '#o': 'colour' }, ExpressionAttributeValues: { ':k': { S: 'x' } } }));
    await db.client.send(new PutItemCommand({ TableName, Item: { constructor: { S: 'x' }, colour: { S: 'y' } } }));
    for (let i = 0; i < 2; i++) assert.equal((await query()).Count, 1, `query ${i + 1}`);
  });
});

describe("local dynalite: the legacy url.parse() warning is settled once", () => {
  // Node warns of url.parse() (DEP0169) once, for a call from outside node_modules; until then each call from
  // inside node_modules (dynalite's, one per request) walks the stack looking for one. After patchDynalite()
  // the warning counts as given: a later call from here warns no more. Each case in a process of its own.
  const { NODE_OPTIONS: _options, NODE_NO_WARNINGS: _noWarnings, ...childEnv } = process.env;
  const warningsAfter = async (patch: boolean): Promise<{ warnings: string[]; stderr: string }> => {
    const { execFile } = await import('node:child_process');
    const script = [
      patch ? `const { patchDynalite } = await import(${JSON.stringify(new URL('../../infra/local/dynalite.ts', import.meta.url).href)}); patchDynalite();` : '',
      "const warnings = []; process.on('warning', (w) => warnings.push(w.code ?? w.name));",
      "(await import('node:url')).parse('/a?b=c', true);",
      'setImmediate(() => console.log(JSON.stringify(warnings)));',
    ].join('\n');
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
      // without whatever NODE_OPTIONS or NODE_NO_WARNINGS the test run has: they decide what is printed
      execFile(process.execPath, ['--input-type=module', '-e', script], { env: childEnv }, (error, stdout, stderr) => (error ? reject(error) : resolve({ stdout, stderr }))),
    );
    return { warnings: JSON.parse(stdout) as string[], stderr };
  };

  it('warns without the patch, and not after it (nor prints anything while settling it)', async () => {
    const unpatched = await warningsAfter(false);
    assert.deepEqual(unpatched.warnings, ['DEP0169']);
    assert.match(unpatched.stderr, /DEP0169/);
    const patched = await warningsAfter(true);
    assert.deepEqual(patched.warnings, []);
    assert.doesNotMatch(patched.stderr, /DEP0169/);
  });
});
