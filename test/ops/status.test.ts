/**
 * `claimflow status` as logic: each attention rule fires on exactly its condition (and `status` exits 1 for
 * it, 0 without); on AWS, the target comes from the CloudFormation stack (queue URLs, tables, budget
 * outputs) and the hour's failures, budget waits and queue ages from one GetMetricData with the
 * functions' EMF dimensions (service, controller) and SQS's QueueName.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { GetMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { SQSClient } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { renderStatus } from '../../lib/ops/cli.ts';
import { assess, collectStatus, DEFAULT_THRESHOLDS, type ClusterStatus, type ControllerStatus } from '../../lib/ops/status.ts';
import { resolveAwsTarget, resolveTarget, type Target } from '../../lib/ops/target.ts';
import { createMetrics } from '../../lib/runtime/observability.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

const controller = (over: Partial<ControllerStatus> = {}): ControllerStatus => ({
  controller: 'binder',
  queue: { name: 'q', visible: 0, inFlight: 0, delayed: 0 },
  dlq: { name: 'd', visible: 0, inFlight: 0 },
  oldestMessageAgeSeconds: 1,
  parked: 0,
  parkedOverdue: 0,
  backingOff: 0,
  givenUp: 0,
  failuresLastHour: 0,
  budgetWaitsLastHour: null,
  ...over,
});
const cluster = (over: Partial<ClusterStatus> = {}): ClusterStatus => ({
  cluster: 'c1',
  forwarder: { holder: 'pod-a', leading: true, heartbeatAgeSeconds: 30, leadingSinceSeconds: 600 },
  kinds: [{ kind: 'Node', listComplete: true, listCompletedAt: null, bookmark: '5', bookmarkAgeSeconds: 10 }],
  budget: null,
  ...over,
});

describe('status: what needs attention', () => {
  const rules: Array<[string, Partial<ControllerStatus>, Partial<ClusterStatus> | null, string[]]> = [
    ['healthy', {}, {}, []],
    ['a DLQ message (visible)', { dlq: { name: 'd', visible: 1, inFlight: 0 } }, {}, ['dlq']],
    ['a DLQ message (in flight)', { dlq: { name: 'd', visible: 0, inFlight: 2 } }, {}, ['dlq']],
    ['an old message', { oldestMessageAgeSeconds: 901 }, {}, ['queue-age']],
    ['a message at the threshold', { oldestMessageAgeSeconds: 900 }, {}, []],
    ['an unknown age', { oldestMessageAgeSeconds: null }, {}, []],
    ['a given-up key', { givenUp: 1 }, {}, ['given-up']],
    ['many parked keys', { parked: 101 }, {}, ['parked']],
    ['parked keys at the threshold', { parked: 100 }, {}, []],
    ['an overdue parked key', { parked: 1, parkedOverdue: 1 }, {}, ['parked-overdue']],
    ['no heartbeat record', {}, { forwarder: null }, ['forwarder']],
    ['nobody leads', {}, { forwarder: { holder: 'pod-a', leading: false, heartbeatAgeSeconds: 3, leadingSinceSeconds: null } }, ['forwarder']],
    ['a stale heartbeat', {}, { forwarder: { holder: 'pod-a', leading: true, heartbeatAgeSeconds: 301, leadingSinceSeconds: 900 } }, ['forwarder']],
    ['an incomplete list', {}, { kinds: [{ kind: 'Node', listComplete: false, listCompletedAt: null, bookmark: '', bookmarkAgeSeconds: null }] }, ['initial-list']],
    ['a cluster no forwarder ever ran in (backoff records only)', {}, null, []],
  ];
  for (const [name, c, k, checks] of rules) {
    test(name, () => {
      const report = { controllers: [controller(c)], clusters: k ? [cluster(k)] : [cluster({ forwarder: null, kinds: [] })] };
      const findings = assess(report, { forwardedClusters: k ? ['c1'] : [] }, DEFAULT_THRESHOLDS, Date.now());
      assert.deepEqual(findings.map((f) => f.check), checks);
      const text = renderStatus({ ...report, target: 't', mode: 'local', generatedAt: '', failuresSource: 'backoff-records', queueAgeSource: 'fauxqs', attention: findings, healthy: findings.length === 0 });
      assert.match(text, findings.length ? /needs attention:/ : /^all well$/m);
    });
  }
  test('thresholds are the flags', () => {
    const findings = assess({ controllers: [controller({ oldestMessageAgeSeconds: 61, parked: 6 })], clusters: [] }, { forwardedClusters: [] }, { ...DEFAULT_THRESHOLDS, maxMessageAgeMs: 60_000, maxParked: 5 }, 0);
    assert.deepEqual(findings.map((f) => f.check), ['queue-age', 'parked']);
  });
});

describe('status on AWS: CloudFormation and CloudWatch', () => {
  let db: Dynalite;
  let server: FauxqsServer;
  let sqs: SQSClient;
  const queueUrls: Record<string, string> = {};
  before(async () => {
    db = await startDynalite();
    server = await startFauxqs({ port: 0, logger: false, host: '127.0.0.1', defaultRegion: 'eu-west-1' });
    const endpoint = `http://127.0.0.1:${server.port}`;
    sqs = new SQSClient({ endpoint, region: 'eu-west-1', credentials: { accessKeyId: 'l', secretAccessKey: 'l' }, useQueueUrlAsEndpoint: false });
    for (const name of ['binder', 'provisioner', 'shared-volume', 'label-sync']) {
      for (const suffix of ['', '-dlq']) {
        const created = server.createQueue(`claimflow-prod-${name}${suffix}.fifo`, { attributes: { FifoQueue: 'true' } });
        queueUrls[`${name}${suffix}`] = `${endpoint}${created.queueUrl.replace(/^\w+:\/\/[^/]+/, '')}`;
      }
    }
  });
  after(async () => {
    sqs.destroy();
    await server.stop();
    await db.stop();
  });

  const pascal = (name: string) => name.replace(/(^|-)(\w)/g, (_, __, c: string) => c.toUpperCase());
  /** `legacy`: a stack deployed before the MetricsService output. */
  const cloudformation = (stackName: string, legacy = false) => ({
    send: async (command: any) => {
      assert.equal(command.input.StackName, stackName);
      if (command.constructor.name === 'ListStackResourcesCommand') {
        const summaries = Object.entries(queueUrls).map(([id, url]) => ({
          LogicalResourceId: id.endsWith('-dlq') ? `${pascal(id.slice(0, -4))}Dlq` : `${pascal(id)}Queue`,
          PhysicalResourceId: url,
        }));
        // two pages, as a big stack answers
        if (!command.input.NextToken) return { StackResourceSummaries: summaries.slice(0, 3), NextToken: 'more' };
        return {
          StackResourceSummaries: [...summaries.slice(3), { LogicalResourceId: 'CacheTable', PhysicalResourceId: db.tables.cache }, { LogicalResourceId: 'ControlTable', PhysicalResourceId: db.tables.control }],
        };
      }
      const outputs = [{ OutputKey: 'KubeApiQps', OutputValue: '50' }, { OutputKey: 'KubeApiBurst', OutputValue: '100' }];
      return { Stacks: [{ Outputs: legacy ? outputs : [...outputs, { OutputKey: 'MetricsService', OutputValue: `${stackName}` }] }] };
    },
  });

  test('the stage from its CloudFormation stack; --stage local still means the local stack', async () => {
    const target = await resolveAwsTarget({ stage: 'prod', region: 'eu-west-1', clients: { cloudformation: cloudformation('claimflow-prod') as any, sqs, doc: db.doc, cloudwatch: {} as any } });
    assert.equal(target.mode, 'aws');
    assert.deepEqual(target.queues.find((q) => q.controller === 'shared-volume'), {
      controller: 'shared-volume',
      queue: { name: 'claimflow-prod-shared-volume.fifo', url: queueUrls['shared-volume'] },
      dlq: { name: 'claimflow-prod-shared-volume-dlq.fifo', url: queueUrls['shared-volume-dlq'] },
    });
    assert.deepEqual(target.tables, db.tables);
    assert.deepEqual(target.budget, { qps: 50, burst: 100 });
    assert.equal(target.metricsService, 'claimflow-prod');
    const legacy = await resolveAwsTarget({ stage: 'prod', region: 'eu-west-1', clients: { cloudformation: cloudformation('claimflow-prod', true) as any, sqs, doc: db.doc, cloudwatch: {} as any } });
    assert.equal(legacy.metricsService, 'claimflow', 'a stack deployed before the stage dimension: its functions still say claimflow');
    // (.local/stack.json exists only while `npm start` runs)
    const local = await resolveTarget({ stage: 'local', env: {} }).catch((error: Error) => error);
    if (local instanceof Error) assert.match(local.message, /no local stack: \.local\/stack\.json does not exist/);
    else {
      assert.equal(local.mode, 'local');
      local.close();
    }
    await assert.rejects(resolveAwsTarget({ stage: 'prod', env: {} }), /no region/);
  });

  test('failures, budget waits and queue ages come from one GetMetricData with the dimensions the functions publish', async () => {
    const queries: GetMetricDataCommand[] = [];
    const now = Date.parse('2026-01-01T12:00:00Z');
    const cloudwatch = {
      send: async (command: GetMetricDataCommand) => {
        queries.push(command);
        return {
          MetricDataResults: [
            { Id: 'failures0', Values: [2, 3], Timestamps: [new Date(now - 60_000), new Date(now - 400_000)] },
            { Id: 'budgetwaits0', Values: [4], Timestamps: [new Date(now - 60_000)] },
            { Id: 'age0', Values: [1200, 5], Timestamps: [new Date(now - 120_000), new Date(now - 3_000_000)] },
            { Id: 'age1', Values: [800], Timestamps: [new Date(now - 3_000_000)] },
          ],
        };
      },
    };
    await db.doc.send(new PutCommand({ TableName: db.tables.control, Item: { pk: 'bucket#prod', tat: now + 1700, pausedUntil: now + 2000 } }));
    const target: Target = await resolveAwsTarget({ stage: 'prod', region: 'eu-west-1', clients: { cloudformation: cloudformation('claimflow-prod') as any, sqs, doc: db.doc, cloudwatch: cloudwatch as any } });
    const report = await collectStatus(target, { now: () => now });
    const [query] = queries;
    const byId = Object.fromEntries(query.input.MetricDataQueries!.map((q) => [q.Id, q.MetricStat!]));
    // the dimensions a function's EMF metrics carry
    const emf = JSON.parse(JSON.stringify(createMetrics('binder').serializeMetrics())) as { _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][] }> } };
    assert.deepEqual(byId.failures0.Metric!.Dimensions!.map((d: { Name?: string }) => d.Name), emf._aws.CloudWatchMetrics[0].Dimensions[0]);
    assert.deepEqual(byId.failures0.Metric!.Dimensions, [{ Name: 'service', Value: 'claimflow-prod' }, { Name: 'controller', Value: 'binder' }]);
    assert.deepEqual([byId.failures0.Metric!.Namespace, byId.failures0.Metric!.MetricName, byId.failures0.Stat], ['claimflow', 'ReconcileError', 'Sum']);
    assert.deepEqual([byId.budgetwaits0.Metric!.MetricName], ['BudgetWait']);
    assert.deepEqual(byId.age0.Metric, { Namespace: 'AWS/SQS', MetricName: 'ApproximateAgeOfOldestMessage', Dimensions: [{ Name: 'QueueName', Value: 'claimflow-prod-binder.fifo' }] });
    assert.equal(query.input.EndTime!.getTime() - query.input.StartTime!.getTime(), 3_600_000);

    const binder = report.controllers[0];
    assert.deepEqual([binder.failuresLastHour, binder.budgetWaitsLastHour, binder.oldestMessageAgeSeconds], [5, 4, 1200]);
    assert.equal(report.controllers[1].oldestMessageAgeSeconds, null, 'no datapoint in the last ten minutes: unknown');
    assert.equal(report.failuresSource, 'cloudwatch');
    assert.deepEqual(report.attention.map((f) => [f.check, f.subject]), [['queue-age', 'binder']]);
    const [prod] = report.clusters;
    assert.deepEqual(prod.budget, { qps: 50, burst: 100, tokens: 15, used: 0.85, pausedForSeconds: 2 });
    assert.match(renderStatus(report), /BUDGET WAITS 1H/);
    assert.match(renderStatus(report), /85% used \(15\/100 tokens, 50\/s\), paused 2s \(429\)/);
  });
});
