/**
 * The AWS SDK clients claimflow builds skip the SDK logger's redacted copies of every request and response
 * (lib/runtime/sdk-logger.ts): the copy walks a whole DynamoDB item against the operation's schema on each
 * call, to hand to a logger that drops it. A plain client is the control that shows the probe sees copies.
 * They send through undici (lib/runtime/sdk-client.ts), not `node:http`, and their configuration is an
 * object V8 holds with fast properties (`withFastConfig`), which each request copies four times.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { batchGetItems, createDocumentClient, type DocumentClient } from '../../lib/state/client.ts';
import { withCachedHandlers } from '../../lib/runtime/sdk-client.ts';
import { createSqsClient } from '../../lib/runtime/sqs.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynalite, type Dynalite } from '../support/dynalite.ts';
import { countDispatcherRequests } from '../support/dispatcher.ts';

/** Counts the calls of the redaction functions the logger middleware would run for each request. */
function countRedactions(doc: DocumentClient): { count: number } {
  const seen = { count: 0 };
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const wrap = (key: 'inputFilterSensitiveLog' | 'outputFilterSensitiveLog') => {
        const original = context[key] as ((value: unknown) => unknown) | undefined;
        if (original) context[key] = (value: unknown) => (seen.count++, original(value));
      };
      wrap('inputFilterSensitiveLog');
      wrap('outputFilterSensitiveLog');
      return next(args);
    },
    { step: 'initialize', name: 'countRedactions', priority: 'high' },
  );
  return seen;
}

describe('AWS SDK clients: no log copies for a logger that drops them', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
  });
  after(() => db.stop());

  const item = {
    pk: 'c1/PersistentVolume/pv-1',
    sk: 'object',
    object: { metadata: { name: 'pv-1', labels: { a: 'b' } }, spec: { capacity: { storage: '10Gi' }, accessModes: ['ReadWriteOnce'] } },
  };

  async function putAndGet(doc: DocumentClient): Promise<unknown> {
    await doc.send(new PutCommand({ TableName: db.tables.cache, Item: item }));
    const got = await doc.send(new GetCommand({ TableName: db.tables.cache, Key: { pk: item.pk, sk: item.sk }, ConsistentRead: true }));
    return got.Item;
  }

  test('a plain client copies each request and response for its logger (the control)', async () => {
    const config = { endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
    const plain = DynamoDBDocumentClient.from(new DynamoDBClient(config));
    const seen = countRedactions(plain);
    assert.deepEqual(await putAndGet(plain), item);
    assert.ok(seen.count >= 4, `expected the logger middleware to redact input and output of 2 calls, saw ${seen.count}`);
    plain.destroy();
  });

  test("claimflow's document client makes no copy, and still reads and writes", async () => {
    const doc = createDocumentClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const seen = countRedactions(doc);
    assert.deepEqual(await putAndGet(doc), item);
    assert.equal(seen.count, 0);
    doc.destroy();
  });

  test("the SQS client gets the same logger unless the caller passes one", () => {
    const sqs = createSqsClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const logger = sqs.config.logger as unknown as Record<string, unknown>;
    assert.equal(logger.info, undefined);
    assert.equal(logger.error, undefined);
    assert.equal(typeof logger.debug, 'function');
    const own = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };
    assert.equal(createSqsClient({ region: LOCAL_REGION, logger: own }).config.logger, own);
    sqs.destroy();
  });

  test('requests go through undici, one dispatcher request per call (a plain client uses node:http)', async () => {
    const requests = countDispatcherRequests();
    const config = { endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
    const doc = createDocumentClient(config);
    const plain = DynamoDBDocumentClient.from(new DynamoDBClient(config));
    try {
      assert.deepEqual(await putAndGet(plain), item);
      assert.equal(requests.count, 0, 'the control: the default handler is node:http');
      assert.deepEqual(await putAndGet(doc), item);
      assert.equal(requests.count, 2);
      // A client's destroy() ends its own handler, not the pool the others share.
      const other = createDocumentClient(config);
      doc.destroy();
      assert.deepEqual(await putAndGet(other), item);
      other.destroy();
    } finally {
      requests.restore();
      doc.destroy();
      plain.destroy();
    }
  });
});

/**
 * Runs `body` (module code) in a child Node with V8's test hooks (`%HasFastProperties`), which a test
 * process cannot turn on for itself; returns what it printed, parsed.
 */
async function withNatives(body: string): Promise<Record<string, unknown>> {
  const root = new URL('../../', import.meta.url).href;
  const source = body.replaceAll('@root/', root);
  const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', '--input-type=module', '--eval', source], { timeout: 60_000, cwd: fileURLToPath(root) });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('AWS SDK clients: a configuration each request can copy cheaply', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
  });
  after(() => db.stop());

  test("claimflow's clients hold their configuration as a fast object (a plain client's is a dictionary), and still work", async () => {
    const config = JSON.stringify({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const seen = await withNatives(`
      import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
      import { SNSClient } from '@aws-sdk/client-sns';
      import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
      import { createDocumentClient } from '@root/lib/state/client.ts';
      import { createSqsClient } from '@root/lib/runtime/sqs.ts';
      import { sdkClientConfig, withFastConfig } from '@root/lib/runtime/sdk-client.ts';
      const config = ${config};
      const fast = (client) => %HasFastProperties(client.config);
      const plain = DynamoDBDocumentClient.from(new DynamoDBClient(config));
      const doc = createDocumentClient(config);
      const out = { plain: fast(plain), doc: fast(doc), sqs: fast(createSqsClient(config)), sns: fast(withFastConfig(new SNSClient({ ...sdkClientConfig(), ...config }))) };
      const Key = { pk: 'fast-config', sk: 'object' };
      await doc.send(new PutCommand({ TableName: '${db.tables.cache}', Item: { ...Key, n: 1 } }));
      out.read = (await doc.send(new GetCommand({ TableName: '${db.tables.cache}', Key, ConsistentRead: true }))).Item?.n;
      out.docAfterRequests = fast(doc);
      out.credentialsStillAnAccessor = typeof Object.getOwnPropertyDescriptor(doc.config, 'credentials')?.get === 'function';
      console.log(JSON.stringify(out));
      process.exit(0);
    `);
    assert.deepEqual(seen, { plain: false, doc: true, sqs: true, sns: true, read: 1, docAfterRequests: true, credentialsStillAnAccessor: true });
  });
});

/**
 * Counts how often a client builds its middleware chain: a middleware's factory runs once per chain built
 * from the stack, its returned function once per call.
 */
function countChains(client: { middlewareStack: { add(...args: never[]): void } }, name: string): { built: number; calls: number } {
  const seen = { built: 0, calls: 0 };
  (client.middlewareStack.add as (mw: unknown, options: unknown) => void)(
    (next: (args: unknown) => Promise<unknown>) => {
      seen.built++;
      return (args: unknown) => (seen.calls++, next(args));
    },
    { step: 'initialize', name },
  );
  return seen;
}

describe('AWS SDK clients: each command class builds its middleware chain once', () => {
  let db: Dynalite;
  let fauxqs: FauxqsServer;
  before(async () => {
    db = await startDynalite();
    fauxqs = await startFauxqs({ port: 0, logger: false, defaultRegion: LOCAL_REGION });
  });
  after(async () => {
    await db.stop();
    await fauxqs.stop();
  });

  test('the document client: built once per command class, every call sends and reads its own items', async () => {
    const doc = createDocumentClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const chains = countChains(doc, 'countChains');
    const keys = Array.from({ length: 40 }, (_, i) => ({ pk: `chain-${i}`, sk: 'object' }));
    // Concurrent calls of one class with different inputs: each writes and reads back its own item.
    await Promise.all(keys.map((Key, i) => doc.send(new PutCommand({ TableName: db.tables.cache, Item: { ...Key, n: i, nested: { list: [i, `s${i}`], big: 2 ** 40 + i } } }))));
    const got = await Promise.all(keys.map((Key) => doc.send(new GetCommand({ TableName: db.tables.cache, Key, ConsistentRead: true }))));
    assert.deepEqual(
      got.map((out) => out.Item),
      keys.map((Key, i) => ({ ...Key, n: i, nested: { list: [i, `s${i}`], big: 2 ** 40 + i } })),
    );
    const batch = await batchGetItems(doc, db.tables.cache, keys.slice(0, 5), { consistentRead: true });
    assert.deepEqual(batch.items.map((item) => item.n).sort(), [0, 1, 2, 3, 4]);
    const refused = await doc
      .send(new PutCommand({ TableName: db.tables.cache, Item: { ...keys[0]!, n: -1 }, ConditionExpression: 'attribute_not_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }))
      .then(() => undefined, (error: { name?: string; Item?: Record<string, unknown> }) => error);
    assert.equal(refused?.name, 'ConditionalCheckFailedException');
    assert.deepEqual(refused?.Item?.n, { N: '0' }, "a refused write's error carries the item as DynamoDB sent it");
    assert.equal(chains.calls, 40 + 40 + 1 + 1);
    assert.equal(chains.built, 3, 'one chain each for Put, Get and BatchGet');
    doc.destroy();
  });

  test('a middleware added after the first calls is in every later call; a call with options still works', async () => {
    const doc = createDocumentClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const Key = { pk: 'chain-late', sk: 'object' };
    await doc.send(new PutCommand({ TableName: db.tables.cache, Item: { ...Key, n: 1 } }));
    const late = countChains(doc, 'late');
    await doc.send(new PutCommand({ TableName: db.tables.cache, Item: { ...Key, n: 2 } }));
    const read = await doc.send(new GetCommand({ TableName: db.tables.cache, Key, ConsistentRead: true }), { abortSignal: AbortSignal.timeout(10_000) });
    assert.equal(read.Item?.n, 2);
    assert.deepEqual({ calls: late.calls, built: late.built }, { calls: 2, built: 2 }, 'the Put rebuilt after the change; the Get with options built its own');
    doc.middlewareStack.remove('late');
    await doc.send(new PutCommand({ TableName: db.tables.cache, Item: { ...Key, n: 3 } }));
    assert.equal(late.calls, 2, 'a removed middleware is not called');
    doc.destroy();
  });

  test('the SQS client: built once per command class, every message its own; a later middleware is called', async () => {
    const sqs = createSqsClient({ endpoint: `http://127.0.0.1:${fauxqs.port}`, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const chains = countChains(sqs, 'countChains');
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'chains' }));
    await Promise.all(Array.from({ length: 10 }, (_, i) => sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `m${i}` }))));
    const late = countChains(sqs, 'late');
    const bodies: string[] = [];
    let receives = 0;
    while (bodies.length < 10 && receives < 20) {
      receives++;
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      bodies.push(...Messages.map((m) => m.Body ?? ''));
    }
    assert.deepEqual(bodies.sort(), Array.from({ length: 10 }, (_, i) => `m${i}`).sort());
    assert.equal(chains.built, 3, 'one chain each for Create, Send and Receive');
    assert.equal(chains.calls, 1 + 10 + receives);
    assert.deepEqual({ calls: late.calls, built: late.built }, { calls: receives, built: 1 }, 'the middleware added later is in every Receive');
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'before' })); // the Send chain again, after the change
    const built = chains.built;
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'with-options' }), { abortSignal: AbortSignal.timeout(10_000) });
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'after' }));
    assert.equal(chains.built, built + 1, 'the call with options built a chain of its own and kept chains stayed (the SDK alone would drop them)');
    assert.throws(() => withCachedHandlers(new SQSClient({ region: LOCAL_REGION })), /cacheMiddleware: true/);
    sqs.destroy();
  });
});
