/**
 * fauxqs and dynalite in a child process (infra/local/fault-proxy/stand-ins-process.ts), as the benchmarks
 * run them: the returned URL serves DynamoDB and SQS (and the upstreams each service directly), `stop()`
 * ends the child and frees the ports, and the child does not outlive a parent that is killed. The stack
 * with `awsStandIns: 'process'` runs on them (a change reaches a function through SNS and SQS) and ends
 * them on stop.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startAwsStandInsProcess, type AwsStandInsProcess } from '../../infra/local/fault-proxy/stand-ins-process.ts';
import { LOCAL_CREDENTIALS, StackStartError } from '../../infra/local/stack/stack.ts';
import { EventRecorder, eventually, startTestStack } from '../support/stack.ts';

const REGION = 'eu-west-1';
const config = { region: REGION, credentials: LOCAL_CREDENTIALS };

/** Whether a process with this pid runs (a zombie no init has reaped yet does not count). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return existsSync('/proc') ? false : true;
  }
}

/** Pids of this process's children running stand-ins-main.ts. */
function standInsChildren(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('stand-ins-main.ts')) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Whether anything answers HTTP at `url`. */
async function serves(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  }
}

describe('aws stand-ins in a child process', () => {
  let aws: AwsStandInsProcess;
  let dynamodb: DynamoDBClient;
  let sqs: SQSClient;

  before(async () => {
    aws = await startAwsStandInsProcess({ region: REGION });
    dynamodb = new DynamoDBClient({ ...config, endpoint: aws.url });
    sqs = new SQSClient({ ...config, endpoint: aws.url });
  });

  after(async () => {
    dynamodb?.destroy();
    sqs?.destroy();
    await aws?.stop();
  });

  it('runs in another process', () => {
    assert.notEqual(aws.pid, process.pid);
    assert.ok(alive(aws.pid));
    assert.match(aws.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(aws.upstreams.sqs, aws.upstreams.sns, 'fauxqs serves SQS and SNS');
    assert.notEqual(aws.upstreams.sqs, aws.upstreams.dynamodb);
  });

  it('serves DynamoDB PutItem and GetItem through the URL', async () => {
    await dynamodb.send(
      new CreateTableCommand({
        TableName: 'child',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await dynamodb.send(new PutItemCommand({ TableName: 'child', Item: { pk: { S: 'a' }, v: { N: '7' } } }));
    const got = await dynamodb.send(new GetItemCommand({ TableName: 'child', Key: { pk: { S: 'a' } }, ConsistentRead: true }));
    assert.deepEqual(got.Item, { pk: { S: 'a' }, v: { N: '7' } });
  });

  it('serves SQS SendMessage and ReceiveMessage through the URL', async () => {
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'child' }))).QueueUrl!;
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'hello' }));
    const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }));
    assert.deepEqual(out.Messages?.map((m) => m.Body), ['hello']);
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: out.Messages![0].ReceiptHandle! }));
  });

  it("outlasts a Ctrl-C's SIGINT (the parent, getting it too, stops the child when it is done)", async () => {
    process.kill(aws.pid, 'SIGINT');
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(alive(aws.pid));
    assert.ok(await serves(aws.url));
  });

  it('serves each service directly on its upstream too', async () => {
    const direct = new DynamoDBClient({ ...config, endpoint: aws.upstreams.dynamodb });
    try {
      const got = await direct.send(new GetItemCommand({ TableName: 'child', Key: { pk: { S: 'a' } }, ConsistentRead: true }));
      assert.equal(got.Item?.v?.N, '7');
    } finally {
      direct.destroy();
    }
  });
});

describe('aws stand-ins process: stopped and gone', () => {
  it('stop() ends the child: its pid and every port are gone; a second stop() is a no-op', async () => {
    const aws = await startAwsStandInsProcess({ region: REGION });
    assert.ok(await serves(aws.url));
    await aws.stop();
    assert.equal(alive(aws.pid), false);
    for (const url of [aws.url, aws.upstreams.sqs, aws.upstreams.dynamodb]) assert.equal(await serves(url), false, `${url} still answers`);
    await aws.stop();
  });

  it('does not outlive a parent that is killed (SIGKILL: no exit handler runs)', async () => {
    const module = new URL('../../infra/local/fault-proxy/stand-ins-process.ts', import.meta.url).href;
    const parent = spawn(
      process.execPath,
      ['--input-type=module', '-e', `const { startAwsStandInsProcess } = await import(${JSON.stringify(module)}); const aws = await startAwsStandInsProcess(); console.log(aws.pid); setInterval(() => {}, 1000);`],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => parent.once('exit', resolve));
    let pid = 0;
    try {
      pid = await new Promise<number>((resolve, reject) => {
        createInterface({ input: parent.stdout! }).once('line', (line) => resolve(Number(line)));
        parent.once('exit', (code) => reject(new Error(`the parent exited (${code}) before starting the child`)));
      });
      assert.ok(alive(pid));
      parent.kill('SIGKILL');
      await exited;
      await eventually(() => !alive(pid), 10_000, 'the orphaned child to exit');
    } finally {
      parent.kill('SIGKILL');
      // failed: the orphan would hold this test's stderr open
      if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('stack with awsStandIns: process', () => {
  it('runs on the child: a claim reaches the binder through SNS and SQS; stop() ends the child', async () => {
    const before = standInsChildren();
    const recorder = new EventRecorder();
    const stack = await startTestStack({ awsStandIns: 'process', functions: { binder: recorder.handler('binder') }, withForwarder: true, storageApi: false });
    let stopped = false;
    try {
      const children = standInsChildren().filter((pid) => !before.includes(pid));
      assert.equal(children.length, 1, 'one stand-ins process, a child of this one');
      assert.equal(stack.fauxqs, undefined, 'no fauxqs in this process');
      assert.equal(stack.awsEndpoint, undefined, 'the embedded stand-ins, only elsewhere');
      assert.notEqual(stack.sqs.endpoint, stack.dynamodb.endpoint, 'each service on its own stand-in');
      stack.kubeApi!.store.create('/persistentvolumeclaims', {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'via-child', namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      });
      await eventually(() => recorder.events('binder').some((e) => e.key === 'default/via-child'), 20_000, 'the claim at the binder');
      await stack.stop();
      stopped = true;
      assert.equal(alive(children[0]), false, 'the child is gone');
      for (const url of [stack.sqs.endpoint, stack.dynamodb.endpoint]) assert.equal(await serves(url), false, `${url} still answers`);
    } finally {
      if (!stopped) await stack.stop();
    }
  });

  it('is refused with awsEndpoint (there is nothing to start)', async () => {
    await assert.rejects(startTestStack({ awsStandIns: 'process', awsEndpoint: 'http://127.0.0.1:1' }), StackStartError);
    assert.deepEqual(standInsChildren(), []);
  });
});
