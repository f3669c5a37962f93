/**
 * Alarms, dashboard and the operator's view of the template osls compiles from serverless.yml:
 * - an alarm for every DLQ (non-empty), every controller queue (oldest message age), every function
 *   (errors, throttles), the forwarder's heartbeat (missing 5 minutes), parked keys and API budget waits —
 *   on the metric names and dimensions the code publishes;
 * - every alarm notifies `alarmTopicArn`, and none does without it;
 * - one dashboard per stage whose every reference resolves, with latency per controller;
 * - the forwarder may put metrics into the `claimflow` namespace only, the one its manifest configures;
 * - the names and outputs `claimflow` (lib/ops) relies on.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { compileTemplate, type CfnResource, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { referencedId, resolveIfs } from '../../infra/local/stack/wiring.ts';
import { HEARTBEAT_METRIC } from '../../lib/forwarder/heartbeat.ts';
import { CONTROLLERS, queueNames, SERVICE, tableNamesOf } from '../../lib/ops/controllers.ts';
import { PARKED_KEYS_METRIC } from '../../lib/resync/parked.ts';
import { createMetrics, METRIC, METRICS_NAMESPACE } from '../../lib/runtime/observability.ts';
import { ENV } from '../../lib/runtime/reconcile.ts';

const TOPIC = 'arn:aws:sns:eu-west-1:111122223333:oncall';
let plain: CfnTemplate;
let notifying: CfnTemplate;

before(async () => {
  [plain, notifying] = await Promise.all([
    compileTemplate({ stage: 'dev', region: 'eu-west-1' }),
    compileTemplate({
      stage: 'dev',
      region: 'eu-west-1',
      params: { alarmTopicArn: TOPIC, clusterId: 'prod-eu-1', queueAgeAlarmSeconds: '600', parkedKeysAlarmThreshold: '250', kubeApiQps: '50', kubeApiBurst: '75' },
    }),
  ]);
});

const ofType = (t: CfnTemplate, type: string): [string, CfnResource][] => Object.entries(t.Resources).filter(([, r]) => r.Type === type);
const alarms = (t: CfnTemplate) => ofType(t, 'AWS::CloudWatch::Alarm');
const dimension = (p: any, name: string) => p.Dimensions?.find((d: any) => d.Name === name)?.Value;
/** The alarms on `metric` in `namespace`. */
const on = (t: CfnTemplate, namespace: string, metric: string) => alarms(t).filter(([, a]) => a.Properties!.Namespace === namespace && a.Properties!.MetricName === metric);

/** A property as CloudFormation sees it (`Fn::If` chosen, `AWS::NoValue` dropped: undefined). */
const evaluate = (t: CfnTemplate, value: unknown): unknown => resolveIfs(t, value);
const NO_VALUE = undefined;

const dlqIds = (t: CfnTemplate): string[] =>
  ofType(t, 'AWS::SQS::Queue').flatMap(([, q]) => (q.Properties!.RedrivePolicy ? [referencedId(q.Properties!.RedrivePolicy.deadLetterTargetArn)] : []));
const controllerQueueIds = (t: CfnTemplate): string[] => ofType(t, 'AWS::SQS::Queue').filter(([, q]) => q.Properties!.RedrivePolicy).map(([id]) => id);

/** Every statement each role gets: inline, or from an AWS::IAM::Policy attached to it. */
function grants(t: CfnTemplate): Map<string, any[]> {
  const byRole = new Map<string, any[]>();
  for (const [id, r] of ofType(t, 'AWS::IAM::Role')) byRole.set(id, r.Properties!.Policies.flatMap((p: any) => p.PolicyDocument.Statement));
  for (const [, r] of ofType(t, 'AWS::IAM::Policy')) {
    for (const role of r.Properties!.Roles.map(referencedId)) byRole.get(role)!.push(...r.Properties!.PolicyDocument.Statement);
  }
  return byRole;
}

/** The dimensions (names) a function's EMF metrics carry. */
const emfDimensions = (): string[] => (createMetrics('binder').serializeMetrics() as any)._aws.CloudWatchMetrics[0].Dimensions[0];

/** The `service` every function's logs and metrics carry: their POWERTOOLS_SERVICE_NAME, the same for all. */
function stageService(t: CfnTemplate): string {
  const values = new Set(ofType(t, 'AWS::Lambda::Function').map(([, f]) => f.Properties!.Environment.Variables.POWERTOOLS_SERVICE_NAME));
  assert.equal(values.size, 1, 'one service name per stage');
  return [...values][0] as string;
}

describe('serverless.yml: the service dimension', () => {
  it('is the stage\'s own, so two stages in one account never read each other\'s metrics', async () => {
    assert.equal(stageService(plain), 'claimflow-dev');
    const prod = await compileTemplate({ stage: 'prod', region: 'eu-west-1' });
    assert.equal(stageService(prod), 'claimflow-prod');
    assert.equal((prod.Outputs?.MetricsService as { Value?: unknown } | undefined)?.Value, 'claimflow-prod', 'claimflow status reads it from the stack');
  });

  it('is what a function\'s EMF metrics carry under that environment', () => {
    const before = process.env.POWERTOOLS_SERVICE_NAME;
    process.env.POWERTOOLS_SERVICE_NAME = stageService(plain);
    try {
      const blob = createMetrics('binder').serializeMetrics() as any;
      assert.equal(blob.service, 'claimflow-dev');
    } finally {
      if (before === undefined) delete process.env.POWERTOOLS_SERVICE_NAME;
      else process.env.POWERTOOLS_SERVICE_NAME = before;
    }
  });
});

describe('serverless.yml: alarms', () => {
  it('every DLQ alarms as soon as it holds a message', () => {
    const dlqs = dlqIds(plain);
    assert.equal(dlqs.length, CONTROLLERS.length);
    const watched = on(plain, 'AWS/SQS', 'ApproximateNumberOfMessagesVisible').map(([, a]) => referencedId(dimension(a.Properties, 'QueueName')));
    assert.deepEqual(watched.sort(), [...dlqs].sort());
    for (const [id, a] of on(plain, 'AWS/SQS', 'ApproximateNumberOfMessagesVisible')) {
      const p = a.Properties!;
      assert.deepEqual([p.Statistic, p.Threshold, p.ComparisonOperator, p.TreatMissingData], ['Maximum', 0, 'GreaterThanThreshold', 'notBreaching'], id);
      assert.ok(p.Period * p.EvaluationPeriods <= 300, `${id} fires within 5 minutes`);
      assert.deepEqual(dimension(p, 'QueueName'), { 'Fn::GetAtt': [referencedId(dimension(p, 'QueueName')), 'QueueName'] });
    }
  });

  it("every controller queue alarms on its oldest message's age (queueAgeAlarmSeconds)", () => {
    for (const [t, threshold] of [[plain, 900], [notifying, 600]] as const) {
      const age = on(t, 'AWS/SQS', 'ApproximateAgeOfOldestMessage');
      assert.deepEqual(age.map(([, a]) => referencedId(dimension(a.Properties, 'QueueName'))).sort(), controllerQueueIds(t).sort());
      for (const [, a] of age) assert.deepEqual([a.Properties!.Statistic, Number(a.Properties!.Threshold), a.Properties!.ComparisonOperator], ['Maximum', threshold, 'GreaterThanThreshold']);
    }
  });

  it('every function alarms on errors and on throttles', () => {
    const functions = ofType(plain, 'AWS::Lambda::Function').map(([id]) => id).sort();
    assert.ok(functions.length >= 5);
    for (const metric of ['Errors', 'Throttles']) {
      const found = on(plain, 'AWS/Lambda', metric);
      assert.deepEqual(found.map(([, a]) => dimension(a.Properties, 'FunctionName').Ref).sort(), functions, metric);
      for (const [, a] of found) assert.deepEqual([a.Properties!.Statistic, a.Properties!.Threshold, a.Properties!.ComparisonOperator], ['Sum', 0, 'GreaterThanThreshold']);
    }
  });

  it("alarms when the forwarder's heartbeat is missing for 5 minutes (the metric the leader puts, for the stage's cluster)", () => {
    const [[, alarm]] = on(notifying, METRICS_NAMESPACE, HEARTBEAT_METRIC);
    const p = alarm.Properties!;
    assert.deepEqual(p.Dimensions, [{ Name: 'cluster', Value: 'prod-eu-1' }]);
    assert.equal(p.Statistic, 'Sum');
    assert.equal(p.Period * p.EvaluationPeriods, 300);
    assert.equal(p.DatapointsToAlarm, p.EvaluationPeriods, 'every minute of the five without a beat');
    assert.deepEqual([p.Threshold, p.ComparisonOperator, p.TreatMissingData], [1, 'LessThanThreshold', 'breaching']);
  });

  for (const [metric, threshold, param] of [[PARKED_KEYS_METRIC, 250, 'parkedKeysAlarmThreshold'], [METRIC.budgetWait, 0, 'budgetWaitAlarmThreshold']] as const) {
    it(`alarms on ${metric} of all controllers together above ${param}`, () => {
      const found = alarms(notifying).filter(([, a]) => a.Properties!.Metrics?.some((m: any) => m.MetricStat?.Metric.MetricName === metric));
      assert.equal(found.length, 1);
      const p = found[0][1].Properties!;
      const inputs = p.Metrics.filter((m: any) => m.MetricStat);
      assert.deepEqual(inputs.map((m: any) => m.MetricStat.Metric.Dimensions.find((d: any) => d.Name === 'controller').Value).sort(), CONTROLLERS.map((c) => c.name).sort());
      for (const m of inputs) {
        assert.equal(m.MetricStat.Metric.Namespace, METRICS_NAMESPACE);
        assert.deepEqual(m.MetricStat.Metric.Dimensions.map((d: any) => d.Name), emfDimensions(), 'the dimensions the EMF metrics carry');
        assert.equal(m.MetricStat.Metric.Dimensions.find((d: any) => d.Name === 'service').Value, stageService(notifying));
        assert.equal(m.ReturnData, false);
      }
      const [expression] = p.Metrics.filter((m: any) => m.Expression);
      assert.equal(expression.Expression, `SUM([${inputs.map((m: any) => m.Id).join(', ')}])`);
      assert.equal(expression.ReturnData, true);
      assert.deepEqual([Number(p.Threshold), p.ComparisonOperator, p.EvaluationPeriods, p.DatapointsToAlarm], [threshold, 'GreaterThanThreshold', 3, 3]);
    });
  }

  it('every alarm notifies alarmTopicArn (alarm and recovery), and none does without it; names are unique per stage', () => {
    assert.equal(alarms(plain).length, 21);
    for (const [t, expected] of [[notifying, [TOPIC]], [plain, NO_VALUE]] as const) {
      for (const [id, a] of alarms(t)) {
        assert.deepEqual(evaluate(t, a.Properties!.AlarmActions), expected, `${id} AlarmActions`);
        assert.deepEqual(evaluate(t, a.Properties!.OKActions), expected, `${id} OKActions`);
        assert.ok(a.Properties!.AlarmDescription, `${id} says what it means`);
      }
    }
    const names = alarms(plain).map(([, a]) => a.Properties!.AlarmName);
    assert.equal(new Set(names).size, names.length);
    assert.ok(names.every((n) => n.startsWith('claimflow-dev-')));
  });
});

describe('serverless.yml: the dashboard', () => {
  const body = (t: CfnTemplate): { text: string; refs: string[]; json: any } => {
    const [[, dashboard]] = ofType(t, 'AWS::CloudWatch::Dashboard');
    const text: string = dashboard.Properties!.DashboardBody['Fn::Sub'];
    const refs = [...text.matchAll(/\$\{([^}]+)\}/g)].map((m) => m[1]);
    return { text, refs, json: JSON.parse(text.replace(/\$\{([^}]+)\}/g, (_, ref: string) => `<${ref}>`)) };
  };
  const rows = (json: any, metric: string) => json.widgets.flatMap((w: any) => (w.properties.metrics ?? []).filter((m: any) => m[1] === metric));

  it('one per stage, and every reference it makes resolves', () => {
    const dashboards = ofType(plain, 'AWS::CloudWatch::Dashboard');
    assert.equal(dashboards.length, 1);
    assert.deepEqual(dashboards[0][1].Properties!.DashboardName, { 'Fn::Sub': 'claimflow-dev-${AWS::Region}' }, 'dashboards are global: the region is in the name');
    const { refs } = body(plain);
    for (const ref of refs) {
      if (ref.startsWith('AWS::')) continue;
      const [id, attribute] = ref.split('.');
      assert.ok(plain.Resources[id], `${ref} names a resource`);
      if (attribute) assert.ok(['QueueName', 'Arn'].includes(attribute), ref);
    }
  });

  it('shows latency per controller, queues, DLQs, ages, errors, throttles, parked keys, budget waits, the heartbeat and every alarm', () => {
    const { json } = body(notifying);
    const controllers = CONTROLLERS.map((c) => c.name).sort();
    for (const stat of ['p50', 'p99']) {
      const latency = rows(json, METRIC.reconcileLatency).filter((m: any) => m.at(-1).stat === stat);
      assert.deepEqual(latency.map((m: any) => m[5]).sort(), controllers, `${stat} latency per controller`);
      for (const m of latency) assert.deepEqual([m[0], m[2], m[3], m[4]], [METRICS_NAMESPACE, 'service', stageService(notifying), 'controller']);
    }
    for (const metric of [PARKED_KEYS_METRIC, METRIC.budgetWait, METRIC.reconcileError]) assert.deepEqual(rows(json, metric).map((m: any) => m[5]).sort(), controllers, metric);
    const queuesIn = (metric: string) => rows(json, metric).map((m: any) => /^<(\w+)\.QueueName>$/.exec(m[3])?.[1]).sort();
    assert.deepEqual(queuesIn('ApproximateAgeOfOldestMessage'), controllerQueueIds(notifying).sort());
    assert.deepEqual(queuesIn('ApproximateNumberOfMessagesVisible'), [...controllerQueueIds(notifying), ...dlqIds(notifying)].sort());
    const functions = ofType(notifying, 'AWS::Lambda::Function').map(([id]) => `<${id}>`).sort();
    for (const metric of ['Errors', 'Throttles']) assert.deepEqual(rows(json, metric).map((m: any) => m[3]).sort(), functions, metric);
    assert.deepEqual(rows(json, HEARTBEAT_METRIC).map((m: any) => [m[0], m[2], m[3]]), [[METRICS_NAMESPACE, 'cluster', 'prod-eu-1']]);
    const alarmWidget = json.widgets.find((w: any) => w.type === 'alarm');
    assert.deepEqual(alarmWidget.properties.alarms.sort(), alarms(notifying).map(([id]) => `<${id}.Arn>`).sort());
    for (const w of json.widgets.filter((x: any) => x.type === 'metric')) assert.equal(w.properties.region, '<AWS::Region>');
  });
});

describe('serverless.yml: what operations rely on', () => {
  it('the forwarder may put metrics into the claimflow namespace only — the namespace its manifest sets', () => {
    const statements = grants(notifying).get('ForwarderRole')!;
    const metrics = statements.filter((s: any) => [s.Action].flat().some((a: string) => a.startsWith('cloudwatch:')));
    assert.equal(metrics.length, 1);
    assert.equal(metrics[0].Effect, 'Allow');
    assert.deepEqual(metrics[0].Action, ['cloudwatch:PutMetricData']);
    assert.equal(metrics[0].Resource, '*');
    assert.deepEqual(metrics[0].Condition, { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } });
    const deployment = parseAllDocuments(readFileSync(new URL('../../infra/k8s/deployment.yaml', import.meta.url), 'utf8')).map((d) => d.toJS()).find((d: any) => d.kind === 'Deployment');
    const env = Object.fromEntries(deployment.spec.template.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    assert.equal(env.CLOUDWATCH_NAMESPACE, METRICS_NAMESPACE);
    // no other role may put metrics (the functions write EMF to their logs)
    for (const [id, granted] of grants(notifying)) {
      if (id === 'ForwarderRole') continue;
      assert.ok(!granted.some((s: any) => [s.Action].flat().some((a: string) => a.startsWith('cloudwatch:'))), id);
    }
  });

  it("the queue and table names `claimflow` derives, and the budget outputs it reads", () => {
    for (const spec of CONTROLLERS) {
      const names = queueNames(SERVICE, 'dev', spec);
      assert.equal(plain.Resources[`${spec.prefix}Queue`].Properties!.QueueName, names.queue);
      assert.equal(plain.Resources[`${spec.prefix}Dlq`].Properties!.QueueName, names.dlq);
      assert.ok(spec.name in ENV.queueUrl, `${spec.name} is a runtime controller`);
      assert.equal(plain.Resources[`${spec.prefix}LambdaFunction`]?.Properties!.FunctionName, `claimflow-dev-${spec.functionName}`);
    }
    const tables = tableNamesOf(SERVICE, 'dev');
    assert.equal(plain.Resources.CacheTable.Properties!.TableName, tables.cache);
    assert.equal(plain.Resources.ControlTable.Properties!.TableName, tables.control);
    const outputs = notifying.Outputs as Record<string, { Value: unknown }>;
    assert.deepEqual([String(outputs.KubeApiQps.Value), String(outputs.KubeApiBurst.Value)], ['50', '75']);
    assert.deepEqual(outputs.DashboardName.Value, { Ref: 'Dashboard' });
  });
});
