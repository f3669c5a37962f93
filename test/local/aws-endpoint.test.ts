/**
 * `npm start -- --aws-endpoint URL` and `--param name=value`. The endpoint is a second fauxqs + dynalite
 * that this test starts behind one URL (a router in front of both, as LocalStack's edge port serves every
 * service), so the stack takes the path that starts no stand-in of its own. Through it a claim binds end to
 * end; the topic, queues (redrive), subscriptions (filter policies) and tables are there, made from the
 * compiled template; a restart reuses all of them, creates nothing twice and deletes nothing that was
 * there (someone else's queue and table, another cluster's cache entries); the previous emulator run's
 * state of cluster `local` is forgotten so the same claim name binds again; the CLI's `status` works on
 * it. Stage parameters reach the functions' environment, and a bad `--param` fails with a clear message.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { GetSubscriptionAttributesCommand, ListSubscriptionsByTopicCommand, ListTopicsCommand, SNSClient } from '@aws-sdk/client-sns';
import { CreateQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand, ListQueuesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';
import { belongsToCluster } from '../../infra/local/stack/cluster-state.ts';
import { checkParams, knownParams, ParamError, parseParamArgs } from '../../infra/local/stack/params.ts';
import { LOCAL_CREDENTIALS, startStack, StackStartError } from '../../infra/local/stack/stack.ts';
import { compileTemplate } from '../../infra/local/stack/template.ts';
import { createDynalite } from '../../infra/local/dynalite.ts';
import { readWiring, type Wiring } from '../../infra/local/stack/wiring.ts';
import { createDocumentClient, type DocumentClient } from '../../lib/state/client.ts';
import { main } from '../../lib/ops/cli.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const REGION = 'eu-west-1';
const PARAMS = { kubeApiQps: '400', kubeApiBurst: '600' };

/** fauxqs (SQS, SNS) and dynalite (DynamoDB) behind one URL, routed by the request's X-Amz-Target. */
interface Endpoint {
  url: string;
  sqs: SQSClient;
  sns: SNSClient;
  dynamodb: DynamoDBClient;
  doc: DocumentClient;
  stop(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  return (server.address() as AddressInfo).port;
}

async function startEndpoint(): Promise<Endpoint> {
  const fauxqs: FauxqsServer = await startFauxqs({ port: 0, logger: false, defaultRegion: REGION });
  const dynalite = createDynalite();
  const dynamoPort = await listen(dynalite);
  const router = createServer((req, res) => {
    const port = String(req.headers['x-amz-target'] ?? '').startsWith('DynamoDB_') ? dynamoPort : fauxqs.port;
    const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (error) => res.destroy(error));
    req.pipe(upstream);
  });
  const url = `http://127.0.0.1:${await listen(router)}`;
  // the test looks at the stand-ins directly, not through the router
  const config = { region: REGION, credentials: LOCAL_CREDENTIALS };
  const sqs = new SQSClient({ ...config, endpoint: `http://127.0.0.1:${fauxqs.port}` });
  const sns = new SNSClient({ ...config, endpoint: `http://127.0.0.1:${fauxqs.port}` });
  const dynamodb = new DynamoDBClient({ ...config, endpoint: `http://127.0.0.1:${dynamoPort}` });
  const doc = createDocumentClient({ ...config, endpoint: `http://127.0.0.1:${dynamoPort}` });
  return {
    url,
    sqs,
    sns,
    dynamodb,
    doc,
    async stop() {
      for (const c of [sqs, sns, dynamodb, doc]) c.destroy();
      for (const server of [router, dynalite]) {
        server.closeAllConnections();
        await new Promise<void>((ok) => server.close(() => ok()));
      }
      await fauxqs.stop();
    },
  };
}

/** What the endpoint holds: queue name → ARN, subscriptions (queue ARN → filter policy), table name → creation time. */
async function inventory(endpoint: Endpoint): Promise<{ queues: Map<string, string>; subscriptions: Map<string, unknown>[]; tables: Map<string, number> }> {
  const queues = new Map<string, string>();
  const base = await endpointOf(endpoint.sqs);
  for (const url of (await endpoint.sqs.send(new ListQueuesCommand({}))).QueueUrls ?? []) {
    const path = new URL(url).pathname;
    const attributes = (await endpoint.sqs.send(new GetQueueAttributesCommand({ QueueUrl: `${base}${path}`, AttributeNames: ['QueueArn'] }))).Attributes!;
    queues.set(path.slice(path.lastIndexOf('/') + 1), attributes.QueueArn!);
  }
  const subscriptions: Map<string, unknown>[] = [];
  for (const topic of (await endpoint.sns.send(new ListTopicsCommand({}))).Topics ?? []) {
    const bySqs = new Map<string, unknown>();
    for (const s of (await endpoint.sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topic.TopicArn }))).Subscriptions ?? []) {
      const a = (await endpoint.sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: s.SubscriptionArn }))).Attributes ?? {};
      assert.ok(!bySqs.has(s.Endpoint!), `one subscription per queue on ${topic.TopicArn}: ${s.Endpoint} twice`);
      bySqs.set(s.Endpoint!, a.FilterPolicy ? JSON.parse(a.FilterPolicy) : undefined);
    }
    subscriptions.push(bySqs);
  }
  const tables = new Map<string, number>();
  for (const name of (await endpoint.dynamodb.send(new ListTablesCommand({}))).TableNames ?? []) {
    const t = (await endpoint.dynamodb.send(new DescribeTableCommand({ TableName: name }))).Table!;
    tables.set(name, t.CreationDateTime!.getTime());
  }
  return { queues, subscriptions, tables };
}

/** Runs the CLI in process against a stack file. */
async function cli(stackFile: string, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main([...argv, '--stack-file', stackFile], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}

/** Creates a claim of the default class (the local provisioner serves it) and waits until it is Bound. */
async function bindClaim(kubeconfig: string, name: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: { metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
  });
  await eventually(async () => (await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name })).status?.phase === 'Bound', 30_000, `claim ${name} Bound`);
}

/** `npm start` with `args`, until its ready line; `stop()` sends SIGINT and resolves with the exit code. */
async function npmStart(args: string[]): Promise<{ child: ChildProcess; stdout: () => string; stderr: () => string; stop(): Promise<number | null> }> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'infra/local/start.ts'), ...args], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!/local stack ready[\s\S]*Ctrl-C/.test(stdout)) {
    if (child.exitCode !== null) assert.fail(`start exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      assert.fail(`no ready line: ${stdout}\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

/** `npm start` that is expected to fail before starting anything: exit code and stderr. */
async function npmStartFails(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'infra/local/start.ts'), ...args], { cwd: PROJECT_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stderr };
}

describe('npm start on an AWS-compatible endpoint (--aws-endpoint)', () => {
  let endpoint: Endpoint;
  let wiring: Wiring;
  const dirs: string[] = [];
  let first: Awaited<ReturnType<typeof inventory>>;

  const tempDir = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), 'claimflow-endpoint-'));
    dirs.push(dir);
    return dir;
  };

  before(async () => {
    endpoint = await startEndpoint();
    wiring = readWiring(await compileTemplate({ stage: 'local', region: REGION, params: PARAMS }));
    // someone else's queue (with a message) and table, there before claimflow
    const { QueueUrl } = await endpoint.sqs.send(new CreateQueueCommand({ QueueName: 'someone-elses-queue' }));
    await endpoint.sqs.send(new SendMessageCommand({ QueueUrl: `${await endpointOf(endpoint.sqs)}${new URL(QueueUrl!).pathname}`, MessageBody: 'keep me' }));
    await endpoint.dynamodb.send(
      new CreateTableCommand({
        TableName: 'someone-elses-table',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  });

  after(async () => {
    await endpoint?.stop();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('creates the topic, queues, subscriptions and tables there from the template, binds a claim through it, and the CLI reads it', async () => {
    const stateDir = await tempDir();
    const args = ['--state-dir', stateDir, '--aws-endpoint', endpoint.url, '--no-schedules'];
    for (const [k, v] of Object.entries(PARAMS)) args.push('--param', `${k}=${v}`);
    const run = await npmStart(args);
    try {
      assert.match(run.stdout(), new RegExp(`sqs/sns ${endpoint.url}, dynamodb ${endpoint.url}`));
      assert.match(run.stdout(), /API budget 400 QPS, burst 600/, 'the functions run with the --param budget');
      const stackJson = JSON.parse(await readFile(join(stateDir, 'stack.json'), 'utf8'));
      assert.deepEqual([stackJson.sqs, stackJson.sns, stackJson.dynamodb, stackJson.awsEndpoint, stackJson.stage, stackJson.region], [endpoint.url, endpoint.url, endpoint.url, endpoint.url, 'local', REGION]);

      first = await inventory(endpoint);
      for (const q of wiring.queues) assert.ok(first.queues.has(q.name), `queue ${q.name} on the endpoint`);
      const binderUrl = `${await endpointOf(endpoint.sqs)}/${first.queues.get('claimflow-local-binder.fifo')!.split(':')[4]}/claimflow-local-binder.fifo`;
      const binder = (await endpoint.sqs.send(new GetQueueAttributesCommand({ QueueUrl: binderUrl, AttributeNames: ['All'] }))).Attributes!;
      assert.equal(binder.FifoQueue, 'true');
      assert.equal(JSON.parse(binder.RedrivePolicy!).deadLetterTargetArn, first.queues.get('claimflow-local-binder-dlq.fifo'));
      assert.equal(first.subscriptions.length, wiring.topics.length);
      const subscribed = first.subscriptions[0];
      assert.equal(subscribed.size, wiring.subscriptions.length);
      for (const s of wiring.subscriptions) {
        const queueName = wiring.queues.find((q) => q.logicalId === s.queue)!.name;
        assert.deepEqual(subscribed.get(first.queues.get(queueName)!), s.filterPolicy, `filter policy of ${queueName}`);
      }
      for (const t of wiring.tables) {
        assert.ok(first.tables.has(t.create.TableName), `table ${t.create.TableName}`);
        const described = (await endpoint.dynamodb.send(new DescribeTableCommand({ TableName: t.create.TableName }))).Table!;
        assert.deepEqual(
          (described.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName).sort(),
          (t.create.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName).sort(),
        );
      }

      await bindClaim(stackJson.kubeconfig, 'claim-1');

      const status = await cli(join(stateDir, 'stack.json'), 'status', '--json');
      assert.equal(status.code, 0, `status: ${status.stdout}${status.stderr}`);
      const report = JSON.parse(status.stdout);
      assert.match(report.target, new RegExp(`on ${endpoint.url}`));
      assert.deepEqual(report.controllers.map((c: { queue: { name: string } }) => c.queue.name).sort(), [
        'claimflow-local-binder.fifo',
        'claimflow-local-label-sync.fifo',
        'claimflow-local-provisioner.fifo',
        'claimflow-local-shared-volume.fifo',
      ]);
      assert.ok(report.clusters.some((c: { cluster: string }) => c.cluster === 'local'), 'the forwarder\'s cluster');
    } finally {
      assert.equal(await run.stop(), 0, `exit code (stderr: ${run.stderr()})`);
    }
    assert.match(run.stdout(), /claimflow: stopped/);
    const after = await inventory(endpoint);
    assert.deepEqual([...after.queues.keys()].sort(), [...first.queues.keys()].sort(), 'stopping deletes nothing');
  });

  it('a restart on the same endpoint reuses every resource, deletes nothing it did not own, and binds the same claim name again', async () => {
    assert.ok(first, 'the first run ran');
    const cache = 'claimflow-local-cache';
    await endpoint.doc.send(new PutCommand({ TableName: cache, Item: { pk: 'elsewhere#PersistentVolume', sk: 'pv-x', rv: 7, uid: 'u', obj: '{}' } }));
    const warnings: string[] = [];
    const stateDir = await tempDir();
    const logs: string[] = [];
    const stack: Stack = await startTestStack({
      awsEndpoint: endpoint.url,
      stateDir,
      params: PARAMS,
      withForwarder: true,
      warn: (m) => warnings.push(m),
      functionOutput: (fn, _stream, text) => {
        if (!text.includes('"_aws"')) logs.push(`${fn}: ${text}`);
      },
    });
    try {
      assert.equal(stack.fauxqs, undefined, 'no embedded fauxqs');
      assert.deepEqual(stack.resources.created, [], 'nothing created twice');
      const declared = [...wiring.topics, ...wiring.queues, ...wiring.subscriptions, ...wiring.tables].map((r) => r.logicalId).sort();
      assert.deepEqual([...stack.resources.reused].sort(), declared);
      assert.equal(stack.queues.BinderQueue.arn, first.queues.get('claimflow-local-binder.fifo'));
      assert.equal(stack.functionEnv.binder.AWS_ENDPOINT_URL_SQS, endpoint.url);
      assert.equal(stack.functionEnv.binder.AWS_ENDPOINT_URL_DYNAMODB, endpoint.url);
      assert.equal(stack.functionEnv.binder.KUBE_API_QPS, '400', '--param kubeApiQps reaches the functions');
      assert.equal(stack.functionEnv.provisioner.KUBE_API_BURST, '600', '--param kubeApiBurst reaches the functions');
      assert.ok(warnings.some((w) => /cluster local: forgot \d+ items of an earlier emulator run/.test(w)), warnings.join('\n'));
      assert.ok(!warnings.some((w) => /reused as it is|set to the template/.test(w)), `the resources match the template: ${warnings.join('\n')}`);

      const now = await inventory(endpoint);
      assert.deepEqual(now.tables, first.tables, 'the same tables, not recreated');
      assert.deepEqual(now.queues, first.queues, 'the same queues');
      assert.deepEqual(now.subscriptions, first.subscriptions, 'the same subscriptions, none twice');
      assert.ok(now.tables.has('someone-elses-table') && now.queues.has('someone-elses-queue'));
      const { QueueUrl } = await endpoint.sqs.send(new GetQueueUrlCommand({ QueueName: 'someone-elses-queue' }));
      const theirs = await endpoint.sqs.send(new GetQueueAttributesCommand({ QueueUrl: `${await endpointOf(endpoint.sqs)}${new URL(QueueUrl!).pathname}`, AttributeNames: ['ApproximateNumberOfMessages'] }));
      assert.equal(theirs.Attributes!.ApproximateNumberOfMessages, '1', 'their message is still there');
      const elsewhere = await endpoint.doc.send(new GetCommand({ TableName: cache, Key: { pk: 'elsewhere#PersistentVolume', sk: 'pv-x' } }));
      assert.ok(elsewhere.Item, "another cluster's cache entry stays");

      // the first run's claim-1 is cached at its resourceVersion; this emulator starts again from 1
      await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
      await bindClaim(stack.kubeconfigPath, 'claim-1').catch((error: Error) => {
        throw new Error(`${error.message}; the functions said:\n${logs.join('').slice(-6000)}`, { cause: error });
      });
      const status = await cli(join(stateDir, 'stack.json'), 'status');
      assert.equal(status.code, 0, `status: ${status.stdout}${status.stderr}`);
    } finally {
      await stack.stop();
    }
  });
});

/** The SDK client's endpoint as `http://host:port`. */
async function endpointOf(client: SQSClient): Promise<string> {
  const e = await client.config.endpoint!();
  return `${e.protocol}//${e.hostname}:${e.port}`;
}

describe('--param name=value', () => {
  it('parses name=value pairs (a value may hold "="), and rejects one without "="', () => {
    assert.deepEqual(parseParamArgs(['kubeApiQps=400', 'clusters={"a":{"x":"y=z"}}']), { kubeApiQps: '400', clusters: '{"a":{"x":"y=z"}}' });
    assert.throws(() => parseParamArgs(['kubeApiQps']), { name: 'ParamError', message: /--param "kubeApiQps": expected name=value/ });
    assert.throws(() => parseParamArgs(['=1']), ParamError);
  });

  it("knows serverless.yml's params and names the unknown ones with the known list", async () => {
    const known = await knownParams(PROJECT_ROOT);
    for (const name of ['kubeApiQps', 'kubeApiBurst', 'clusterId', 'provisionerBackend', 'resyncSchedule']) assert.ok(known.includes(name), name);
    assert.throws(() => checkParams({ kubeApiQPS: '1', kubeApiQps: '2' }, known), (error: Error) => {
      assert.equal(error.name, 'ParamError');
      assert.match(error.message, /^unknown parameter kubeApiQPS: serverless.yml's params are .*kubeApiBurst, .*kubeApiQps/);
      return true;
    });
    await assert.rejects(startStack({ params: { nope: '1' } }), (error: Error) => error instanceof StackStartError && /unknown parameter nope/.test(error.message));
    await assert.rejects(startStack({ awsEndpoint: 'localhost:4566' }), StackStartError);
  });

  it('npm start refuses a malformed or unknown --param before starting anything', async () => {
    const [malformed, unknown] = await Promise.all([npmStartFails(['--param', 'kubeApiQps']), npmStartFails(['--param', 'kubeApiQPS=400'])]);
    assert.equal(malformed.code, 2, malformed.stderr);
    assert.match(malformed.stderr, /--param "kubeApiQps": expected name=value/);
    assert.equal(unknown.code, 1, unknown.stderr);
    assert.match(unknown.stderr, /the local stack did not start: unknown parameter kubeApiQPS: serverless.yml's params are .*kubeApiQps/);
    assert.doesNotMatch(unknown.stderr, /\n\s+at /, 'a message, not a stack trace');
  });
});

describe('forgetting a cluster', () => {
  const rows: [pk: string, table: 'cache' | 'control', expected: boolean][] = [
    ['local#PersistentVolumeClaim', 'cache', true],
    ['localx#PersistentVolumeClaim', 'cache', false],
    ['sync#local#Node', 'control', true],
    ['bucket#local', 'control', true],
    ['bucket#local2', 'control', false],
    ['backoff#binder#local#PersistentVolumeClaim#default/a', 'control', true],
    ['backoff#binder#other#PersistentVolumeClaim#local/a', 'control', false],
    ['sv#local#vol-1', 'control', true],
    ['labelsync#local#node-1', 'control', true],
    ['lease#provision#local', 'control', false],
    ['idem#local#x', 'control', false],
  ];
  for (const [pk, table, expected] of rows) {
    it(`${table} ${pk}: ${expected ? 'forgotten' : 'kept'}`, () => assert.equal(belongsToCluster(pk, 'local', table), expected));
  }
});
