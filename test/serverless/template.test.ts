/**
 * The CloudFormation template osls compiles from serverless.yml, with no AWS credentials and no
 * network: queues and DLQs, FIFO everywhere, filter policies, one least-privilege role per function,
 * event source mappings, schedules, tables exactly as lib/state/tables.ts creates them, encryption.
 * And `npm run package` end to end: each function's zip holds only its own bundle.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';
import { readFunctionSpecs } from '../../infra/build/functions.ts';
import { compileTemplate, type CfnResource, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { readWiring, referencedId, resolveIfs } from '../../infra/local/stack/wiring.ts';
import { ENV } from '../../lib/runtime/reconcile.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { cacheTableDefinition, controlTableDefinition } from '../../lib/state/tables.ts';

const execFileAsync = promisify(execFile);
let template: CfnTemplate;
let R: Record<string, CfnResource>;

before(async () => {
  template = await compileTemplate({ stage: 'dev', region: 'eu-west-1' });
  R = template.Resources;
});

const ofType = (type: string): [string, CfnResource][] => Object.entries(R).filter(([, r]) => r.Type === type);
const queues = (): [string, CfnResource][] => ofType('AWS::SQS::Queue');
const dlqIds = (): Set<string> => new Set(queues().flatMap(([, q]) => (q.Properties?.RedrivePolicy ? [referencedId(q.Properties.RedrivePolicy.deadLetterTargetArn)] : [])));

const FILTERS: Record<string, string[]> = {
  BinderQueue: ['PersistentVolume', 'PersistentVolumeClaim', 'StorageClass'],
  ProvisionerQueue: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment'],
  SharedVolumeQueue: ['VolumeAttachment', 'PersistentVolumeClaim', 'Service', 'Endpoints'],
  LabelSyncQueue: ['Node'],
};

/** Queues whose subscription leaves out the versions their controller wrote back itself (`writer`). */
const OWN_WRITES_FILTERED: Record<string, string> = {
  BinderQueue: 'binder',
  ProvisionerQueue: 'provisioner',
};

describe('serverless.yml → CloudFormation', () => {
  it('has one FIFO queue and one FIFO DLQ per controller, each queue with a redrive policy', () => {
    const dlqs = dlqIds();
    const controllerQueues = queues().filter(([id]) => !dlqs.has(id));
    assert.deepEqual(controllerQueues.map(([id]) => id).sort(), Object.keys(FILTERS).sort());
    assert.equal(dlqs.size, controllerQueues.length, 'every controller queue has its own DLQ');
    for (const [id, q] of controllerQueues) {
      const rp = q.Properties!.RedrivePolicy;
      assert.ok(rp, `${id} has a RedrivePolicy`);
      assert.equal(R[referencedId(rp.deadLetterTargetArn)].Type, 'AWS::SQS::Queue');
      assert.ok(Number(rp.maxReceiveCount) >= 1, `${id} maxReceiveCount`);
    }
    for (const [id, q] of queues()) {
      assert.equal(q.Properties!.FifoQueue, true, `${id} is FIFO`);
      assert.match(q.Properties!.QueueName, /\.fifo$/);
      // encryption (SSE-SQS, or the kmsKeyArn key): test/serverless/security.test.ts
      assert.ok(q.Properties!.SqsManagedSseEnabled !== undefined, `${id} is encrypted`);
    }
  });

  it('has a FIFO, encrypted cluster-events topic and subscriptions with raw delivery and kind filters', () => {
    const topics = ofType('AWS::SNS::Topic');
    assert.equal(topics.length, 1);
    const [topicId, topic] = topics[0];
    assert.equal(topic.Properties!.FifoTopic, true);
    assert.match(topic.Properties!.TopicName, /-cluster-events\.fifo$/);
    assert.ok(topic.Properties!.KmsMasterKeyId, 'encrypted (test/serverless/security.test.ts)');
    const subs = ofType('AWS::SNS::Subscription').map(([, s]) => s.Properties!);
    assert.equal(subs.length, Object.keys(FILTERS).length);
    for (const s of subs) {
      const queue = referencedId(s.Endpoint);
      assert.equal(referencedId(s.TopicArn), topicId);
      assert.equal(s.Protocol, 'sqs');
      assert.equal(s.RawMessageDelivery, true);
      assert.equal(s.FilterPolicyScope, 'MessageAttributes');
      const writer = OWN_WRITES_FILTERED[queue];
      const expected = writer
        ? {
            kind: FILTERS[queue],
            // the provisioner has nothing to do for a claim already Bound (lib/runtime/message.ts isBoundClaim)
            // nor for a static claim or volume (isUnprovisioned)
            // and (AddFinalizer off, the default) for a volume that is not Released (isUnreleased)
            ...(queue === 'ProvisionerQueue' ? { boundClaim: [{ exists: false }], unprovisioned: [{ exists: false }], unreleased: [{ exists: false }] } : {}),
            $or: [{ writer: [{ exists: false }] }, { writer: [{ 'anything-but': [writer] }] }],
          }
        : queue === 'SharedVolumeQueue'
          ? // nor what the shared-volume controller does nothing for (isUnshared)
            { kind: FILTERS[queue], unshared: [{ exists: false }] }
          : { kind: FILTERS[queue] };
      assert.deepEqual(resolveIfs(template, s.FilterPolicy), expected, `${queue} filter`);
    }
  });

  it('provisionerAddFinalizer=true: the provisioner adds its finalizer, and its subscription keeps the volume changes that needs', async () => {
    const on = await compileTemplate({ stage: 'dev', region: 'eu-west-1', params: { provisionerAddFinalizer: 'true' } });
    const policy = resolveIfs(on, on.Resources.ProvisionerSubscription.Properties!.FilterPolicy) as Record<string, unknown>;
    assert.equal(policy.unreleased, undefined, 'no unreleased filter');
    assert.deepEqual(policy.boundClaim, [{ exists: false }]);
    assert.equal(on.Resources.ProvisionerLambdaFunction.Properties!.Environment.Variables.PROVISIONER_ADD_FINALIZER, 'true');
    assert.equal(R.ProvisionerLambdaFunction.Properties!.Environment.Variables.PROVISIONER_ADD_FINALIZER, 'false', 'off by default');
    // The local stack reads the same choice from the template.
    const local = readWiring(on).subscriptions.find((sub) => sub.queue === 'ProvisionerQueue')!;
    assert.equal((local.filterPolicy as Record<string, unknown>).unreleased, undefined);
    const dflt = readWiring(template).subscriptions.find((sub) => sub.queue === 'ProvisionerQueue')!;
    assert.deepEqual((dflt.filterPolicy as Record<string, unknown>).unreleased, [{ exists: false }]);
  });

  /** The message attribute names a filter policy reads (`$or` branches included). */
  const attributeNames = (policy: unknown, into = new Set<string>()): Set<string> => {
    if (Array.isArray(policy)) policy.forEach((p) => attributeNames(p, into));
    else if (policy && typeof policy === 'object') {
      for (const [k, v] of Object.entries(policy)) {
        if (k === '$or') attributeNames(v, into);
        else into.add(k);
      }
    }
    return into;
  };

  it('provisionerAddFinalizer: the subscription agrees with the provisioner\'s options for every value they accept', async () => {
    for (const value of ['true', '1', 'false', '0']) {
      const t = await compileTemplate({ stage: 'dev', region: 'eu-west-1', params: { provisionerAddFinalizer: value } });
      const env = t.Resources.ProvisionerLambdaFunction.Properties!.Environment.Variables as Record<string, string>;
      const addsFinalizer = provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local', PROVISIONER_ADD_FINALIZER: env.PROVISIONER_ADD_FINALIZER }).addFinalizer;
      const policy = resolveIfs(t, t.Resources.ProvisionerSubscription.Properties!.FilterPolicy) as Record<string, unknown>;
      assert.equal(policy.unreleased === undefined, addsFinalizer, `${value}: the unreleased filter is off exactly when the finalizer is added`);
      assert.ok(attributeNames(policy).size <= 5, `${value}: SNS takes at most 5 attribute names (${[...attributeNames(policy)]})`);
    }
  });

  /** The policy's statement that denies every request made without TLS (as CDK's `enforceSSL` writes it). */
  const insecureTransportDeny = (statements: any[], action: string) =>
    statements.find((st) => st.Effect === 'Deny' && st.Principal === '*' && st.Action === action && st.Condition?.Bool?.['aws:SecureTransport'] === 'false');

  it('lets only the forwarder role publish to the topic, and only over TLS', () => {
    const [, policy] = ofType('AWS::SNS::TopicPolicy')[0];
    const statements = policy.Properties!.PolicyDocument.Statement;
    const [allow, deny] = statements;
    assert.equal(referencedId(allow.Principal.AWS), 'ForwarderRole');
    assert.equal(allow.Action, 'sns:Publish');
    assert.equal(deny.Effect, 'Deny');
    assert.equal(referencedId(deny.Condition.ArnNotEquals['aws:PrincipalArn']), 'ForwarderRole');
    assert.equal(referencedId(insecureTransportDeny(statements, 'sns:Publish')?.Resource), 'ClusterEventsTopic');
  });

  it('admits only the topic to the controller queues, and nobody to a queue or a DLQ without TLS', () => {
    const queues = Object.keys(FILTERS);
    const dlqs = queues.map((q) => q.replace(/Queue$/, 'Dlq'));
    const policies = ofType('AWS::SQS::QueuePolicy').map(([, p]) => p.Properties!);
    const covered = policies.flatMap((p) => p.Queues.map(referencedId));
    assert.deepEqual(covered.sort(), [...queues, ...dlqs].sort());
    for (const p of policies) {
      const statements = p.PolicyDocument.Statement as any[];
      for (const st of statements.filter((x) => x.Effect === 'Allow')) {
        assert.deepEqual(st.Principal, { Service: 'sns.amazonaws.com' });
        assert.equal(st.Action, 'sqs:SendMessage');
        assert.equal(referencedId(st.Condition.ArnEquals['aws:SourceArn']), ofType('AWS::SNS::Topic')[0][0]);
        assert.deepEqual(st.Resource.map(referencedId).sort(), [...queues].sort(), 'the topic reaches the queues, never a DLQ');
      }
      const deny = insecureTransportDeny(statements, 'sqs:*');
      assert.ok(deny, 'a SecureTransport deny');
      assert.deepEqual(deny.Resource.map(referencedId).sort(), [...queues, ...dlqs].sort());
      assert.equal(statements.length, 2, 'nothing else');
    }
  });

  it('gives every function its own role with least privilege (no * resource in a data-plane statement)', async () => {
    const fns = ofType('AWS::Lambda::Function');
    const declared = (await readFunctionSpecs(PROJECT_ROOT)).map((f) => `${f.name[0].toUpperCase()}${f.name.slice(1)}LambdaFunction`);
    assert.deepEqual(fns.map(([id]) => id).sort(), declared.sort());
    for (const id of ['BinderLambdaFunction', 'ProvisionerLambdaFunction', 'ResyncLambdaFunction']) assert.ok(R[id], `${id} declared`);
    assert.equal(R.IamRoleLambdaExecution, undefined, 'no shared default role');
    const roles = fns.map(([, f]) => referencedId(f.Properties!.Role));
    assert.equal(new Set(roles).size, fns.length, 'one role per function');
    for (const [id, role] of ofType('AWS::IAM::Role')) {
      const statements = role.Properties!.Policies.flatMap((p: any) => p.PolicyDocument.Statement);
      for (const st of statements) {
        const actions: string[] = [st.Action].flat();
        const resources: unknown[] = [st.Resource].flat();
        for (const r of resources) assert.notEqual(r, '*', `${id} ${st.Sid}: * resource`);
        if (actions.some((a) => /^(sqs|sns|dynamodb):/.test(a))) {
          for (const r of resources) {
            // data plane: only resources of this template (Ref/GetAtt, or Sub on one, like an index ARN or a
            // topic's subscriptions)
            const ref = typeof r === 'object' && r && 'Fn::Sub' in r ? /^\$\{(\w+)(?:\.Arn)?\}(?::\*|\/index\/\w+)?$/.exec(String((r as any)['Fn::Sub']))?.[1] : referencedId(r);
            assert.ok(ref && R[ref], `${id} ${st.Sid}: ${JSON.stringify(r)} is a resource of this template`);
          }
        }
        if (actions.some((a) => a.startsWith('logs:'))) {
          for (const r of resources) assert.match(String((r as any)['Fn::Sub']), /log-group:\/aws\/lambda\/claimflow-dev-\w+:\*$/);
        }
      }
    }
    for (const [fnId, f] of fns) {
      const name = String(f.Properties!.FunctionName).replace('claimflow-dev-', '');
      const role = R[referencedId(f.Properties!.Role)];
      const logs = role.Properties!.Policies[0].PolicyDocument.Statement.find((s: any) => s.Sid === 'Logs');
      assert.ok(String(logs.Resource['Fn::Sub']).includes(`/aws/lambda/claimflow-dev-${name}:*`), `${fnId} logs only to its own group`);
      assert.deepEqual(role.Properties!.AssumeRolePolicyDocument.Statement[0].Principal, { Service: 'lambda.amazonaws.com' });
    }
  });

  it('runs on nodejs24.x arm64 and sets the shared environment names', () => {
    for (const [id, f] of ofType('AWS::Lambda::Function')) {
      const p = f.Properties!;
      assert.equal(p.Runtime, 'nodejs24.x');
      assert.deepEqual(p.Architectures, ['arm64']);
      assert.match(p.Handler, /^\.build\/\w+\/index\.handler$/);
      const vars = p.Environment.Variables;
      for (const name of [ENV.clusterId, ENV.cacheTable, ENV.controlTable, ENV.topicArn, ENV.clusters, ENV.storageApiUrl, ...Object.values(ENV.queueUrl)]) {
        assert.ok(name in vars, `${id} sets ${name}`);
      }
      assert.equal(referencedId(vars.CACHE_TABLE), 'CacheTable');
      assert.equal(referencedId(vars.CONTROL_TABLE), 'ControlTable');
      assert.equal(referencedId(vars.BINDER_QUEUE_URL), 'BinderQueue');
    }
    // every SQS-fed function's DLQ_URL is the DLQ its own queue redrives to
    for (const [, m] of ofType('AWS::Lambda::EventSourceMapping')) {
      const fn = R[referencedId(m.Properties!.FunctionName)].Properties!;
      const queue = R[referencedId(m.Properties!.EventSourceArn)].Properties!;
      assert.equal(referencedId(fn.Environment.Variables[ENV.dlqUrl]), referencedId(queue.RedrivePolicy.deadLetterTargetArn));
    }
    assert.equal(referencedId(R.BinderLambdaFunction.Properties!.Environment.Variables[ENV.dlqUrl]), 'BinderDlq');
  });

  it('maps each SQS function to its queue with ReportBatchItemFailures, batch size ≤ 10, bounded concurrency and visibility ≥ 6 × timeout', () => {
    const mappings = ofType('AWS::Lambda::EventSourceMapping').map(([, m]) => m.Properties!);
    const mapped = mappings.map((m) => referencedId(m.EventSourceArn));
    assert.equal(new Set(mapped).size, mapped.length, 'one function per queue');
    for (const q of ['BinderQueue', 'ProvisionerQueue']) assert.ok(mapped.includes(q), `${q} feeds a function`);
    for (const q of mapped) assert.ok(q in FILTERS, `${q} is a controller queue`);
    for (const m of mappings) {
      const queue = R[referencedId(m.EventSourceArn)].Properties!;
      const fn = R[referencedId(m.FunctionName)].Properties!;
      assert.deepEqual(m.FunctionResponseTypes, ['ReportBatchItemFailures']);
      assert.ok(m.BatchSize >= 1 && m.BatchSize <= 10, `batch size ${m.BatchSize}`);
      assert.ok(m.ScalingConfig.MaximumConcurrency >= 2, 'bounded concurrency');
      assert.ok(queue.VisibilityTimeout >= 6 * fn.Timeout, `${queue.QueueName}: ${queue.VisibilityTimeout} ≥ 6 × ${fn.Timeout}`);
    }
  });

  it('schedules the resync every minute', () => {
    const rules = ofType('AWS::Events::Rule').map(([, r]) => r.Properties!);
    const resync = rules.filter((r) => referencedId(r.Targets[0].Arn) === 'ResyncLambdaFunction');
    assert.equal(resync.length, 1);
    assert.equal(resync[0].ScheduleExpression, 'rate(1 minute)');
    assert.equal(resync[0].State, 'ENABLED');
  });

  it('takes per-stage schedule configuration, including a disabled rule the local stack does not arm', async () => {
    const custom = await compileTemplate({
      stage: 'dev',
      region: 'eu-west-1',
      params: { resyncSchedule: 'cron(0/5 * * * ? *)', resyncScheduleEnabled: 'false', maxReceiveCount: '3' },
    });
    const rule = custom.Resources.ResyncEventsRuleSchedule1.Properties!;
    assert.equal(rule.ScheduleExpression, 'cron(0/5 * * * ? *)');
    assert.equal(rule.State, 'DISABLED');
    assert.equal(Number(custom.Resources.BinderQueue.Properties!.RedrivePolicy.maxReceiveCount), 3);
    const wiring = readWiring(custom);
    // Only the resync rule was switched off; every other function's schedule stays armed.
    const states = new Map(wiring.schedules.map((s) => [s.logicalId, s.enabled]));
    assert.equal(states.get('ResyncEventsRuleSchedule1'), false);
    for (const [logicalId, enabled] of states) if (logicalId !== 'ResyncEventsRuleSchedule1') assert.equal(enabled, true, logicalId);
    assert.equal(wiring.queues.find((q) => q.logicalId === 'BinderQueue')?.redrive?.maxReceiveCount, 3);
  });

  it('declares the tables exactly as lib/state/tables.ts creates them, with TTL, SSE and PITR', () => {
    const norm = (def: any) => ({
      AttributeDefinitions: [...def.AttributeDefinitions].sort((a: any, b: any) => a.AttributeName.localeCompare(b.AttributeName)),
      KeySchema: def.KeySchema,
      GlobalSecondaryIndexes: [...(def.GlobalSecondaryIndexes ?? [])]
        .map((g: any) => ({ IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: { ProjectionType: g.Projection.ProjectionType } }))
        .sort((a, b) => a.IndexName.localeCompare(b.IndexName)),
    });
    for (const [id, expected] of [
      ['CacheTable', cacheTableDefinition('x')],
      ['ControlTable', controlTableDefinition('x')],
    ] as const) {
      const p = R[id].Properties!;
      assert.deepEqual(norm(p), norm(expected), `${id} matches tables.ts`);
      assert.equal(p.BillingMode, 'PAY_PER_REQUEST');
      assert.deepEqual(p.TimeToLiveSpecification, { AttributeName: 'expiresAt', Enabled: true });
      assert.equal(p.SSESpecification.SSEEnabled, true);
      assert.deepEqual(p.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true });
    }
    assert.deepEqual(
      R.CacheTable.Properties!.GlobalSecondaryIndexes.map((g: any) => g.IndexName).sort(),
      ['byClaimRef', 'byPendingClaim', 'byResync', 'byVolumeMatch'],
    );
    assert.deepEqual(
      R.ControlTable.Properties!.GlobalSecondaryIndexes.map((g: any) => g.IndexName),
      ['byDue'],
    );
  });

  it('declares the forwarder role allowed to publish to the topic and outputs the topic ARN', () => {
    const statements = R.ForwarderRole.Properties!.Policies[0].PolicyDocument.Statement;
    const publish = statements.find((s: any) => [s.Action].flat().includes('sns:Publish'));
    assert.equal(referencedId(publish.Resource), 'ClusterEventsTopic');
    // It reads the topic's subscriptions to publish only what one of them takes (topic-subscriptions.ts).
    const read = statements.find((s: any) => s.Sid === 'ReadTopicSubscriptions');
    assert.deepEqual([read.Action].flat().sort(), ['sns:GetSubscriptionAttributes', 'sns:ListSubscriptionsByTopic']);
    assert.deepEqual(read.Resource, [{ Ref: 'ClusterEventsTopic' }, { 'Fn::Sub': '${ClusterEventsTopic}:*' }], 'the topic and its subscriptions only');
    const sync = statements.find((s: any) => s.Sid === 'SyncRecords');
    assert.deepEqual(sync.Condition['ForAllValues:StringLike']['dynamodb:LeadingKeys'], ['sync#*']);
    assert.equal(referencedId((template.Outputs as any).ClusterEventsTopicArn.Value), 'ClusterEventsTopic');
  });
});

/** Names of the entries of a zip file (central directory). */
function zipEntries(zip: Buffer): string[] {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const nameLength = zip.readUInt16LE(at + 28);
    const extra = zip.readUInt16LE(at + 30);
    const comment = zip.readUInt16LE(at + 32);
    names.push(zip.toString('utf8', at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extra + comment;
  }
  return names;
}

describe('npm run package', () => {
  it('bundles every function and packages it alone, offline and without credentials', async (t) => {
    const specs = await readFunctionSpecs(PROJECT_ROOT);
    const missing = specs.filter((s) => !existsSync(join(PROJECT_ROOT, s.entry)));
    if (missing.length > 0) {
      t.skip(`function entries not written yet: ${missing.map((s) => s.entry).join(', ')}`);
      return;
    }
    const out = await mkdtemp(join(tmpdir(), 'claimflow-package-'));
    try {
      await execFileAsync('npm', ['run', 'package', '--', '--package', out], {
        cwd: PROJECT_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: out },
        maxBuffer: 16 << 20,
      });
      const packaged = JSON.parse(await readFile(join(out, 'cloudformation-template-update-stack.json'), 'utf8')) as CfnTemplate;
      const withoutCode = (t: CfnTemplate) =>
        JSON.stringify(t.Resources, (k, v) => (k === 'S3Key' ? 'code' : v));
      assert.equal(withoutCode(packaged), withoutCode(template), 'same template as the placeholder compile');
      for (const spec of specs) {
        const entries = zipEntries(await readFile(join(out, `${spec.name}.zip`)));
        assert.deepEqual(entries.sort(), [`.build/${spec.name}/index.mjs`, `.build/${spec.name}/index.mjs.map`]);
        // the bundle is self-contained: it loads from outside the project with a bare environment
        const { stdout } = await execFileAsync(
          process.execPath,
          ['--input-type=module', '-e', `const m = await import(${JSON.stringify(join(PROJECT_ROOT, spec.outfile))}); console.log(typeof m.${spec.exportName});`],
          { cwd: out, env: { PATH: process.env.PATH ?? '' } },
        );
        assert.equal(stdout.trim(), 'function', `${spec.name} exports its handler`);
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});

describe('serverless.yml → CloudFormation: secrets and EKS access', () => {
  const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:storageos-api-AbCdEf';
  const EKS = ['arn:aws:eks:eu-west-1:123456789012:cluster/prod', 'arn:aws:eks:us-east-1:123456789012:cluster/dr'];
  const PSEUDO: Record<string, string> = { 'AWS::Partition': 'aws', 'AWS::Region': 'eu-west-1', 'AWS::AccountId': '123456789012' };
  let custom: CfnTemplate;

  before(async () => {
    custom = await compileTemplate({ stage: 'dev', region: 'eu-west-1', params: { storageApiSecretArn: SECRET, eksClusterArns: EKS.join(',') } });
  });

  /** Evaluate the Fn::Not/Fn::Equals conditions this template uses. */
  const condition = (t: CfnTemplate, name: string): boolean => {
    const evaluate = (c: any): boolean => {
      if ('Fn::Not' in c) return !evaluate(c['Fn::Not'][0]);
      if ('Fn::Equals' in c) return c['Fn::Equals'][0] === c['Fn::Equals'][1];
      throw new Error(`unexpected condition ${JSON.stringify(c)}`);
    };
    return evaluate((t as any).Conditions[name]);
  };
  /** A resource entry as a concrete string or list (Fn::Sub with pseudo parameters, Fn::Split); undefined for Ref/GetAtt. */
  const resolve = (r: any): string[] | undefined => {
    if (typeof r === 'string') return [r];
    if (r && typeof r === 'object' && 'Fn::Sub' in r && typeof r['Fn::Sub'] === 'string') {
      return [r['Fn::Sub'].replace(/\$\{([\w:]+)\}/g, (m: string, name: string) => PSEUDO[name] ?? m)];
    }
    if (r && typeof r === 'object' && 'Fn::Split' in r) return String(r['Fn::Split'][1]).split(r['Fn::Split'][0]);
    return undefined;
  };
  /** IAM wildcard match (`*`, `?`). */
  const matches = (pattern: string, arn: string) =>
    new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(arn);
  /** Every statement each role gets, inline or from an AWS::IAM::Policy attached to it (active conditions only). */
  const grants = (t: CfnTemplate): Map<string, any[]> => {
    const byRole = new Map<string, any[]>();
    for (const [id, r] of Object.entries(t.Resources)) {
      if (r.Type === 'AWS::IAM::Role') byRole.set(id, [...(byRole.get(id) ?? []), ...r.Properties!.Policies.flatMap((p: any) => p.PolicyDocument.Statement)]);
    }
    for (const [, r] of Object.entries(t.Resources)) {
      if (r.Type !== 'AWS::IAM::Policy' || (r.Condition !== undefined && !condition(t, r.Condition))) continue;
      for (const role of r.Properties!.Roles.map(referencedId)) byRole.set(role, [...(byRole.get(role) ?? []), ...r.Properties!.PolicyDocument.Statement]);
    }
    return byRole;
  };
  /** Roles allowed `action` on `arn`. */
  const allowed = (t: CfnTemplate, action: string, arn: string): string[] =>
    [...grants(t)]
      .filter(([, statements]) =>
        statements.some((st) => {
          if (st.Effect !== 'Allow' || ![st.Action].flat().some((a: string) => matches(a, action))) return false;
          return [st.Resource].flat().some((r) => (resolve(r) ?? []).some((p) => matches(p, arn)));
        }),
      )
      .map(([role]) => role)
      .sort();
  const roleOf = (t: CfnTemplate, fn: string) => referencedId(t.Resources[fn].Properties!.Role);
  const STORAGE_FUNCTIONS = ['ProvisionerLambdaFunction', 'SharedVolumeLambdaFunction', 'LabelSyncLambdaFunction'];
  const KUBE_FUNCTIONS = ['BinderLambdaFunction', ...STORAGE_FUNCTIONS];

  it('puts no password in any function environment and passes the secret ARN only to the storage functions', () => {
    for (const t of [template, custom]) {
      const fns = Object.entries(t.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
      assert.ok(fns.length >= 5);
      for (const [id, f] of fns) {
        const vars: Record<string, unknown> = f.Properties!.Environment.Variables;
        for (const [name, value] of Object.entries(vars)) {
          assert.doesNotMatch(name, /PASSWORD|PASSWD|TOKEN/i, `${id} sets ${name}`);
          assert.ok(typeof value !== 'string' || !/password/i.test(value), `${id} ${name} carries no password`);
        }
        assert.equal(vars.STORAGE_API_USERNAME, undefined, `${id}: the username comes with the secret`);
        const secretArn = vars.STORAGE_API_SECRET_ARN;
        if (STORAGE_FUNCTIONS.includes(id)) assert.equal(secretArn, t === custom ? SECRET : '', `${id} gets the secret ARN`);
        else assert.equal(secretArn, undefined, `${id} does not talk to storage`);
      }
    }
  });

  it('lets only the provisioner, sharedVolume and labelSync roles read the storage API secret, and nothing else read it', () => {
    assert.equal(condition(template, 'HasStorageApiSecret'), false, 'no secret configured: no grant');
    assert.equal(condition(custom, 'HasStorageApiSecret'), true);
    assert.deepEqual(allowed(template, 'secretsmanager:GetSecretValue', SECRET), []);
    const readers = allowed(custom, 'secretsmanager:GetSecretValue', SECRET);
    assert.deepEqual(readers, STORAGE_FUNCTIONS.map((fn) => roleOf(custom, fn)).sort());
    const policy = custom.Resources.StorageApiSecretPolicy;
    assert.equal(policy.Condition, 'HasStorageApiSecret');
    assert.deepEqual(policy.Properties!.PolicyDocument.Statement.map((st: any) => [st.Action, st.Resource]), [[['secretsmanager:GetSecretValue'], SECRET]]);
    // the matcher is not vacuous: a kubeconfig secret of this stage is readable by every controller role
    const kubeconfig = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:claimflow/dev/prod-AbCdEf';
    assert.deepEqual(allowed(custom, 'secretsmanager:GetSecretValue', kubeconfig), KUBE_FUNCTIONS.map((fn) => roleOf(custom, fn)).sort());
  });

  it('allows eks:DescribeCluster only on the clusters of eksClusterArns, to the functions that reach a cluster', () => {
    assert.equal(condition(template, 'HasEksClusterArns'), false, 'no clusters configured: no grant');
    assert.equal(condition(custom, 'HasEksClusterArns'), true);
    const anyCluster = 'arn:aws:eks:eu-west-1:123456789012:cluster/other';
    assert.deepEqual(allowed(template, 'eks:DescribeCluster', EKS[0]), []);
    assert.deepEqual(allowed(custom, 'eks:DescribeCluster', anyCluster), [], 'a cluster not listed is not describable');
    for (const arn of EKS) assert.deepEqual(allowed(custom, 'eks:DescribeCluster', arn), KUBE_FUNCTIONS.map((fn) => roleOf(custom, fn)).sort(), arn);
    for (const [role, statements] of grants(custom)) {
      for (const st of statements) {
        if (![st.Action].flat().some((a: string) => a.startsWith('eks:'))) continue;
        const resources = [st.Resource].flat().flatMap((r) => resolve(r) ?? []);
        assert.deepEqual(resources, EKS, `${role}: eks actions only on the listed clusters`);
        for (const r of resources) assert.ok(!r.includes('*'), `${role}: no wildcard cluster`);
      }
    }
  });
});

describe('serverless.yml → CloudFormation: the provisioner resync', () => {
  it('gives the resync function the same provisioner identity as the provisioner, so its resync source finds that provisioner\'s claims', async () => {
    for (const params of [{}, { provisionerBackend: 'local', provisionerName: 'claimflow.io/local' }] as Array<Record<string, string>>) {
      const t = await compileTemplate({ stage: 'dev', region: 'eu-west-1', params });
      const env = (fn: string) => t.Resources[fn].Properties!.Environment.Variables;
      for (const name of ['PROVISIONER_BACKEND', 'PROVISIONER_NAME', 'PROVISIONER_QUEUE_URL']) {
        assert.deepEqual(env('ResyncLambdaFunction')[name], env('ProvisionerLambdaFunction')[name], name);
      }
    }
  });
});
