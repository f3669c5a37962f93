/**
 * The fault proxy (infra/local/fault-proxy) in front of fauxqs and dynalite, seen by the SDK v3 clients the
 * functions and the forwarder use: each fault arrives as the error type the real service sends (SQS over
 * JSON 1.0 with its query-compatible code, SNS over query XML, DynamoDB over JSON 1.0), is retried as the
 * SDK's standard retry strategy retries it (a fault on fewer requests than the attempts is not seen at all;
 * on every request, the error after 3 attempts), and is filtered by service and operation.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DynamoDBClient, GetItemCommand, InternalServerError, ProvisionedThroughputExceededException, CreateTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateTopicCommand, InternalErrorException, PublishCommand, SNSClient, ThrottledException } from '@aws-sdk/client-sns';
import { CreateQueueCommand, ReceiveMessageCommand, RequestThrottled, SendMessageCommand, SQSClient, SQSServiceException } from '@aws-sdk/client-sqs';
import { classify, startFaultProxy, type FaultProxy } from '../../infra/local/fault-proxy/proxy.ts';
import { startAwsStandIns, type AwsStandIns } from '../../infra/local/fault-proxy/stand-ins.ts';
import { LOCAL_CREDENTIALS } from '../../infra/local/stack/stack.ts';

const REGION = 'eu-west-1';

describe('fault proxy: request classification', () => {
  const auth = (service: string) => `AWS4-HMAC-SHA256 Credential=local/20240613/${REGION}/${service}/aws4_request, SignedHeaders=host, Signature=x`;
  const rows: [string, Record<string, string>, string, ReturnType<typeof classify>][] = [
    ['DynamoDB by target', { 'x-amz-target': 'DynamoDB_20120810.PutItem' }, '{}', { service: 'dynamodb', operation: 'PutItem', protocol: 'json' }],
    ['SQS JSON by target', { 'x-amz-target': 'AmazonSQS.ReceiveMessage' }, '{}', { service: 'sqs', operation: 'ReceiveMessage', protocol: 'json' }],
    ['SNS query by Version', {}, 'Action=Publish&Version=2010-03-31&TopicArn=x', { service: 'sns', operation: 'Publish', protocol: 'query' }],
    ['SQS query by Version', {}, 'Action=SendMessage&Version=2012-11-05', { service: 'sqs', operation: 'SendMessage', protocol: 'query' }],
    ['the credential scope first', { authorization: auth('sns'), 'x-amz-target': 'AmazonSQS.X' }, '', { service: 'sns', operation: 'X', protocol: 'json' }],
    ['unknown', {}, 'Action=Nope', { service: undefined, operation: 'Nope', protocol: 'query' }],
  ];
  for (const [name, headers, body, want] of rows) it(name, () => assert.deepEqual(classify(headers, body), want));
});

describe('fault proxy: the SDK v3 clients see AWS errors and retry them as the SDK does', () => {
  let aws: AwsStandIns;
  let proxy: FaultProxy;
  let sqs: SQSClient;
  let sns: SNSClient;
  let dynamodb: DynamoDBClient;
  let queueUrl: string;
  let topicArn: string;
  const config = { region: REGION, credentials: LOCAL_CREDENTIALS };

  before(async () => {
    aws = await startAwsStandIns({ region: REGION });
    proxy = await startFaultProxy({ upstreams: aws.upstreams, seed: 7 });
    sqs = new SQSClient({ ...config, endpoint: proxy.url });
    sns = new SNSClient({ ...config, endpoint: proxy.url });
    dynamodb = new DynamoDBClient({ ...config, endpoint: proxy.url });
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'proxied' }))).QueueUrl!;
    topicArn = (await sns.send(new CreateTopicCommand({ Name: 'proxied' }))).TopicArn!;
    await dynamodb.send(
      new CreateTableCommand({
        TableName: 'ttt',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  });

  after(async () => {
    for (const c of [sqs, sns, dynamodb]) c?.destroy();
    await proxy?.stop();
    await aws?.stop();
  });

  /** Runs `send` and returns what it threw (fails when it did not). */
  const thrown = async (send: () => Promise<unknown>): Promise<Error & { $metadata: { attempts?: number; httpStatusCode?: number }; $fault?: string; $retryable?: { throttling?: boolean } }> => {
    try {
      await send();
    } catch (error) {
      return error as never;
    }
    assert.fail('expected an error');
  };
  const count = (key: string) => proxy.requests[key] ?? 0;

  it('SQS (JSON 1.0, query compatible): RequestThrottled, retried; thrown as RequestThrottled after 3 attempts', async () => {
    const before = count('sqs SendMessage');
    proxy.faults.add({ service: 'sqs', operations: ['SendMessage'], kind: 'throttle', times: 2 });
    const out = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'a' }));
    assert.ok(out.MessageId);
    assert.equal(out.$metadata.attempts, 3, 'two throttled attempts, then through');
    assert.equal(count('sqs SendMessage') - before, 3);

    proxy.faults.add({ service: 'sqs', operations: ['SendMessage'], kind: 'throttle', times: 3 });
    const error = await thrown(() => sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'b' })));
    assert.ok(error instanceof RequestThrottled, `${error.name}: ${error.message}`);
    assert.equal(error.$metadata.attempts, 3);
    assert.equal(proxy.faults.rules.length, 0, 'rules with times are used up');
  });

  it('SQS: InternalError (500), retried, then thrown as a server fault; other operations untouched', async () => {
    proxy.faults.add({ service: 'sqs', operations: ['ReceiveMessage'], kind: 'internal' });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'c' }));
    const error = await thrown(() => sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl })));
    proxy.faults.clear();
    assert.ok(error instanceof SQSServiceException);
    assert.equal(error.name, 'InternalError');
    assert.equal(error.$fault, 'server');
    assert.deepEqual([error.$metadata.httpStatusCode, error.$metadata.attempts], [500, 3]);
  });

  it('SNS (query XML): ThrottledException (429) and InternalErrorException (500)', async () => {
    proxy.faults.add({ service: 'sns', operations: ['Publish'], kind: 'throttle', times: 1 });
    const out = await sns.send(new PublishCommand({ TopicArn: topicArn, Message: 'x' }));
    assert.equal(out.$metadata.attempts, 2);
    proxy.faults.add({ service: 'sns', kind: 'throttle', times: 3 });
    const throttled = await thrown(() => sns.send(new PublishCommand({ TopicArn: topicArn, Message: 'x' })));
    assert.ok(throttled instanceof ThrottledException, `${throttled.name}: ${throttled.message}`);
    assert.equal(throttled.$metadata.httpStatusCode, 429);
    proxy.faults.add({ service: 'sns', kind: 'internal', times: 3 });
    const internal = await thrown(() => sns.send(new PublishCommand({ TopicArn: topicArn, Message: 'x' })));
    assert.ok(internal instanceof InternalErrorException, `${internal.name}: ${internal.message}`);
    assert.equal(internal.$metadata.attempts, 3);
  });

  it('DynamoDB (JSON 1.0): ProvisionedThroughputExceededException, ThrottlingException, InternalServerError (4 attempts: its client\'s default)', async () => {
    const attempts = await dynamodb.config.maxAttempts();
    assert.equal(attempts, 4, 'the DynamoDB client makes one attempt more than SQS and SNS');
    proxy.faults.add({ service: 'dynamodb', operations: ['PutItem'], kind: 'throttle', times: 2 });
    const put = await dynamodb.send(new PutItemCommand({ TableName: 'ttt', Item: { pk: { S: 'a' } } }));
    assert.equal(put.$metadata.attempts, 3);

    proxy.faults.add({ service: 'dynamodb', operations: ['GetItem'], kind: 'throttle', times: attempts });
    const provisioned = await thrown(() => dynamodb.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } })));
    assert.ok(provisioned instanceof ProvisionedThroughputExceededException, `${provisioned.name}: ${provisioned.message}`);
    assert.equal(provisioned.$metadata.attempts, attempts);

    proxy.faults.add({ service: 'dynamodb', kind: 'throttle', code: 'ThrottlingException', times: attempts });
    const throttling = await thrown(() => dynamodb.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } })));
    assert.equal(throttling.name, 'ThrottlingException');
    assert.equal(throttling.$metadata.attempts, attempts, 'retried as throttling');

    proxy.faults.add({ service: 'dynamodb', kind: 'internal', times: attempts });
    const internal = await thrown(() => dynamodb.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } })));
    assert.ok(internal instanceof InternalServerError, `${internal.name}: ${internal.message}`);
    assert.deepEqual([internal.$metadata.httpStatusCode, internal.$metadata.attempts], [500, attempts]);
  });

  it('latency delays the request; a dropped connection is retried (ECONNRESET), or thrown without retries', async () => {
    proxy.faults.add({ service: 'dynamodb', operations: ['GetItem'], kind: 'latency', latencyMs: 400, times: 1 });
    const started = Date.now();
    const got = await dynamodb.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } }));
    // A 400 ms timer may end a millisecond or so before Date.now() has moved 400 ms (libuv rounds its clock).
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 390, `delayed ${elapsed} ms`);
    assert.equal(got.Item?.pk.S, 'a');

    proxy.faults.add({ service: 'dynamodb', operations: ['GetItem'], kind: 'drop', times: 1 });
    const after = await dynamodb.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } }));
    assert.equal(after.$metadata.attempts, 2);

    const once = new DynamoDBClient({ ...config, endpoint: proxy.url, maxAttempts: 1 });
    try {
      proxy.faults.add({ service: 'dynamodb', operations: ['GetItem'], kind: 'drop', times: 1 });
      const error = await thrown(() => once.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } })));
      assert.equal((error as unknown as { code: string }).code, 'ECONNRESET', `${error.name}: ${error.message}`);
    } finally {
      once.destroy();
    }
  });

  it('a lost response: the write happened, the client retried it', async () => {
    const writes = count('dynamodb PutItem');
    proxy.faults.add({ service: 'dynamodb', operations: ['PutItem'], kind: 'lose-response', times: 1 });
    const put = await dynamodb.send(new PutItemCommand({ TableName: 'ttt', Item: { pk: { S: 'lost' } } }));
    assert.equal(put.$metadata.attempts, 2);
    assert.equal(count('dynamodb PutItem') - writes, 2, 'done once upstream, then again by the retry');
    proxy.faults.add({ service: 'dynamodb', operations: ['PutItem'], kind: 'lose-response', times: 1 });
    const error = await thrown(() => dynamodb.send(new PutItemCommand({ TableName: 'ttt', Item: { pk: { S: 'once' } }, ConditionExpression: 'attribute_not_exists(pk)' })));
    assert.equal(error.name, 'ConditionalCheckFailedException', 'the retry of a conditional write that happened fails its condition');
    assert.equal(proxy.injected['dynamodb PutItem lose-response'], 2);
  });

  it('probability draws from the seed: two proxies with one seed hit the same requests', async () => {
    const pattern = async (): Promise<boolean[]> => {
      const p = await startFaultProxy({ upstreams: aws.upstreams, seed: 42 });
      const client = new DynamoDBClient({ ...config, endpoint: p.url, maxAttempts: 1 });
      try {
        p.faults.add({ service: 'dynamodb', kind: 'internal', probability: 0.5 });
        const hits: boolean[] = [];
        for (let i = 0; i < 12; i++) hits.push(await client.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } })).then(() => false, () => true));
        return hits;
      } finally {
        client.destroy();
        await p.stop();
      }
    };
    const [a, b] = [await pattern(), await pattern()];
    assert.deepEqual(a, b);
    assert.ok(a.includes(true) && a.includes(false), a.join());
  });

  it('on command over HTTP: POST a rule, GET rules and counts, DELETE them all; a bad rule is a 400', async () => {
    const control = `${proxy.url}/_fault-proxy/faults`;
    const posted = await fetch(control, { method: 'POST', body: JSON.stringify({ service: 'sqs', operations: ['SendMessage'], kind: 'throttle', label: 'http rule' }) });
    assert.equal(posted.status, 201);
    const error = await thrown(() => sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'd' })));
    assert.ok(error instanceof RequestThrottled);
    const state = (await (await fetch(control)).json()) as { rules: { hits: number }[]; injected: Record<string, number> };
    assert.equal(state.rules[0].hits, 3);
    assert.equal(state.injected['http rule'], 3);
    assert.equal((await fetch(control, { method: 'DELETE' })).status, 200);
    assert.equal(proxy.faults.rules.length, 0);
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'e' }));
    const bad = await fetch(control, { method: 'POST', body: JSON.stringify({ kind: 'explode' }) });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { message: string }).message, /kind must be one of/);
  });
});
