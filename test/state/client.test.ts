/**
 * The AWS SDK clients claimflow builds skip the SDK logger's redacted copies of every request and response
 * (lib/runtime/sdk-logger.ts): the copy walks a whole DynamoDB item against the operation's schema on each
 * call, to hand to a logger that drops it. A plain client is the control that shows the probe sees copies.
 * They send through undici (lib/runtime/sdk-client.ts), not `node:http`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, type DocumentClient } from '../../lib/state/client.ts';
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
