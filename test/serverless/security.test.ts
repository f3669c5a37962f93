/**
 * The AWS half of "security proven, not declared", on the CloudFormation template osls compiles from
 * serverless.yml (offline), with the default parameters and with a customer managed KMS key:
 * - every role is least privilege: no wildcard action, no `*` resource except where the action has no
 *   resource-level permission (and then under a condition), data-plane actions only on this stack's resources
 *   or the ARNs given as parameters;
 * - the kubeconfig secret prefix is readable only by the functions that reach a cluster (exactly those with an
 *   EKS access entry), the storage API secret only by the three storage functions;
 * - SQS, SNS and DynamoDB are encrypted — AWS-managed keys by default, the `kmsKeyArn` key when given (and
 *   then every role that sends, publishes or receives may use that key, and only that key);
 * - DynamoDB has point-in-time recovery, and deletion protection is a parameter;
 * - only the forwarder's role may publish to the topic;
 * - each access entry maps its function's role to the group its ClusterRole is bound to in infra/k8s.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';
import { compileTemplate, type CfnResource, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { activeResources, referencedId } from '../../infra/local/stack/wiring.ts';

const KEY = 'arn:aws:kms:eu-west-1:123456789012:key/1111aaaa-2222-bbbb-3333-cccc4444dddd';
const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:storageos-api-AbCdEf';
const PSEUDO: Record<string, string> = { 'AWS::Partition': 'aws', 'AWS::Region': 'eu-west-1', 'AWS::AccountId': '123456789012' };

const FUNCTIONS = ['BinderLambdaFunction', 'ProvisionerLambdaFunction', 'SharedVolumeLambdaFunction', 'LabelSyncLambdaFunction', 'ResyncLambdaFunction'];
const KUBE_FUNCTIONS = ['BinderLambdaFunction', 'ProvisionerLambdaFunction', 'SharedVolumeLambdaFunction', 'LabelSyncLambdaFunction'];
const STORAGE_FUNCTIONS = ['ProvisionerLambdaFunction', 'SharedVolumeLambdaFunction', 'LabelSyncLambdaFunction'];

/** The template as CloudFormation would see it: conditions evaluated, `Fn::If` chosen, `AWS::NoValue` dropped, inactive resources removed. */
const evaluate = (t: CfnTemplate): Record<string, CfnResource> => activeResources(t);

/** A resource entry as concrete ARN patterns (pseudo parameters substituted); undefined for Ref/GetAtt of a resource. */
function patterns(r: unknown): string[] | undefined {
  if (typeof r === 'string') return [r];
  if (r && typeof r === 'object' && 'Fn::Sub' in r && typeof (r as any)['Fn::Sub'] === 'string') {
    return [(r as any)['Fn::Sub'].replace(/\$\{([\w:]+)\}/g, (m: string, name: string) => PSEUDO[name] ?? m)];
  }
  if (r && typeof r === 'object' && 'Fn::Split' in r) return String((r as any)['Fn::Split'][1]).split((r as any)['Fn::Split'][0]);
  return undefined;
}

const matches = (pattern: string, arn: string) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(arn);

/** Each role's statements, inline and from attached AWS::IAM::Policy resources. */
function grants(R: Record<string, CfnResource>): Map<string, any[]> {
  const byRole = new Map<string, any[]>();
  const add = (role: string, sts: any[]) => byRole.set(role, [...(byRole.get(role) ?? []), ...sts]);
  for (const [id, r] of Object.entries(R)) if (r.Type === 'AWS::IAM::Role') add(id, (r.Properties!.Policies ?? []).flatMap((p: any) => p.PolicyDocument.Statement));
  for (const r of Object.values(R)) if (r.Type === 'AWS::IAM::Policy') for (const role of r.Properties!.Roles.map(referencedId)) add(role, r.Properties!.PolicyDocument.Statement);
  return byRole;
}

/** Roles allowed `action` on `arn` (ARN patterns only; Ref/GetAtt resources are compared by id with `resourceId`). */
function allowed(R: Record<string, CfnResource>, action: string, target: { arn?: string; resourceId?: string }): string[] {
  return [...grants(R)].filter(([, sts]) => sts.some((st) => {
    if (st.Effect !== 'Allow' || ![st.Action].flat().some((a: string) => matches(a, action))) return false;
    return [st.Resource].flat().some((r) => {
      const p = typeof r === 'object' && r && 'Fn::Sub' in (r as any) && /^\$\{\w+\.Arn\}/.test(String((r as any)['Fn::Sub'])) ? undefined : patterns(r);
      if (p) return target.arn !== undefined && p.some((x) => matches(x, target.arn!));
      if (target.resourceId === undefined) return false;
      const sub = typeof r === 'object' && r && 'Fn::Sub' in (r as any) ? /\$\{(\w+)\.Arn\}/.exec(String((r as any)['Fn::Sub']))?.[1] : undefined;
      return (sub ?? referencedId(r)) === target.resourceId;
    });
  })).map(([role]) => role).sort();
}

describe('serverless.yml → CloudFormation: security', () => {
  let byDefault: Record<string, CfnResource>;
  let withKey: Record<string, CfnResource>;
  let raw: CfnTemplate;
  const roleOf = (R: Record<string, CfnResource>, fn: string) => referencedId(R[fn].Properties!.Role);

  before(async () => {
    raw = await compileTemplate({ stage: 'dev', region: 'eu-west-1', params: { eksClusterName: 'prod', storageApiSecretArn: SECRET } });
    byDefault = evaluate(raw);
    withKey = evaluate(await compileTemplate({ stage: 'dev', region: 'eu-west-1', params: { eksClusterName: 'prod', storageApiSecretArn: SECRET, kmsKeyArn: KEY, tableDeletionProtection: 'false' } }));
  });

  it('least privilege: no wildcard action; no * resource but for PutMetricData under a namespace condition; data plane only on this stack or given ARNs', () => {
    for (const R of [byDefault, withKey]) {
      for (const [role, statements] of grants(R)) {
        for (const st of statements) {
          assert.equal(st.Effect, 'Allow', `${role} ${st.Sid}`);
          const actions: string[] = [st.Action].flat();
          for (const a of actions) assert.match(a, /^[a-z0-9-]+:[A-Za-z]+$/, `${role} ${st.Sid}: no wildcard action (${a})`);
          for (const r of [st.Resource].flat()) {
            if (r === '*') {
              assert.deepEqual(actions, ['cloudwatch:PutMetricData'], `${role} ${st.Sid}: * only where no resource-level permission exists`);
              assert.ok(st.Condition?.StringEquals?.['cloudwatch:namespace'], `${role} ${st.Sid}: limited by namespace`);
              continue;
            }
            const ofStack = typeof r === 'object' && 'Fn::Sub' in r ? /^\$\{(\w+)(?:\.Arn)?\}(?::\*|\/index\/\w+)?$/.exec(String(r['Fn::Sub']))?.[1] : undefined;
            const p = ofStack ? undefined : patterns(r);
            if (p === undefined) {
              const id = ofStack ?? referencedId(r);
              assert.ok(R[id], `${role} ${st.Sid}: ${JSON.stringify(r)} is a resource of this stack`);
              continue;
            }
            for (const arn of p) {
              const known = arn === KEY || arn === SECRET || /^arn:aws:eks:/.test(arn)
                || /^arn:aws:logs:eu-west-1:123456789012:log-group:\/aws\/lambda\/claimflow-dev-\w+:\*$/.test(arn)
                || arn === 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:claimflow/dev/*';
              assert.ok(known, `${role} ${st.Sid}: ${arn} is a given ARN, the kubeconfig prefix or the function's log group`);
            }
          }
        }
      }
    }
  });

  it('the kubeconfig secret prefix: readable by exactly the functions that reach a cluster (those with an EKS access entry)', () => {
    const kubeconfig = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:claimflow/dev/prod-AbCdEf';
    const readers = allowed(byDefault, 'secretsmanager:GetSecretValue', { arn: kubeconfig });
    assert.deepEqual(readers, KUBE_FUNCTIONS.map((fn) => roleOf(byDefault, fn)).sort());
    const entries = Object.values(byDefault).filter((r) => r.Type === 'AWS::EKS::AccessEntry').map((r) => referencedId(r.Properties!.PrincipalArn)).sort();
    assert.deepEqual(entries, readers, 'the same roles have an access entry');
    assert.ok(!readers.includes('ResyncRole') && !readers.includes('ForwarderRole'));
    // another stage's kubeconfigs are not readable
    assert.deepEqual(allowed(byDefault, 'secretsmanager:GetSecretValue', { arn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:claimflow/prod/prod-AbCdEf' }), []);
  });

  it('the storage API secret: readable by the provisioner, sharedVolume and labelSync roles only', () => {
    assert.deepEqual(allowed(byDefault, 'secretsmanager:GetSecretValue', { arn: SECRET }), STORAGE_FUNCTIONS.map((fn) => roleOf(byDefault, fn)).sort());
  });

  it('encryption at rest with AWS-managed keys by default: SNS alias/aws/sns, SQS SSE-SQS, DynamoDB KMS (aws/dynamodb)', () => {
    const R = byDefault;
    for (const [id, r] of Object.entries(R)) {
      if (r.Type === 'AWS::SNS::Topic') assert.equal(r.Properties!.KmsMasterKeyId, 'alias/aws/sns', id);
      if (r.Type === 'AWS::SQS::Queue') {
        assert.equal(r.Properties!.SqsManagedSseEnabled, true, id);
        assert.equal(r.Properties!.KmsMasterKeyId, undefined, `${id}: SNS cannot deliver to a queue under aws/sqs`);
      }
      if (r.Type === 'AWS::DynamoDB::Table') assert.deepEqual(r.Properties!.SSESpecification, { SSEEnabled: true, SSEType: 'KMS' }, id);
    }
    assert.equal(R.KmsKeyUsePolicy, undefined, 'no key, no key grant');
    assert.deepEqual([...grants(R).values()].flat().filter((st) => [st.Action].flat().some((a: string) => a.startsWith('kms:'))), []);
  });

  it('with kmsKeyArn: the topic, every queue and both tables use that key, and every role that uses them may use it (only it)', () => {
    const R = withKey;
    const counts = { topic: 0, queue: 0, table: 0 };
    for (const [id, r] of Object.entries(R)) {
      if (r.Type === 'AWS::SNS::Topic') {
        assert.equal(r.Properties!.KmsMasterKeyId, KEY, id);
        counts.topic++;
      }
      if (r.Type === 'AWS::SQS::Queue') {
        assert.equal(r.Properties!.KmsMasterKeyId, KEY, id);
        assert.equal(r.Properties!.SqsManagedSseEnabled, false, `${id}: one encryption only`);
        counts.queue++;
      }
      if (r.Type === 'AWS::DynamoDB::Table') {
        assert.deepEqual(r.Properties!.SSESpecification, { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: KEY }, id);
        counts.table++;
      }
    }
    assert.deepEqual(counts, { topic: 1, queue: 8, table: 2 });
    const users = [...FUNCTIONS.map((fn) => roleOf(R, fn)), 'ForwarderRole'].sort();
    for (const action of ['kms:Decrypt', 'kms:GenerateDataKey']) assert.deepEqual(allowed(R, action, { arn: KEY }), users, action);
    for (const [role, sts] of grants(R)) {
      for (const st of sts.filter((x) => [x.Action].flat().some((a: string) => a.startsWith('kms:')))) {
        assert.deepEqual([st.Resource].flat(), [KEY], `${role}: kms only on the given key`);
        assert.deepEqual([st.Action].flat().sort(), ['kms:Decrypt', 'kms:GenerateDataKey'], `${role}: use only, no key administration`);
      }
    }
  });

  it('DynamoDB: point-in-time recovery on; deletion protection on by default, a parameter', () => {
    for (const [R, protectedTables] of [[byDefault, true], [withKey, false]] as const) {
      const tables = Object.entries(R).filter(([, r]) => r.Type === 'AWS::DynamoDB::Table');
      assert.equal(tables.length, 2);
      for (const [id, t] of tables) {
        assert.deepEqual(t.Properties!.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true }, id);
        assert.equal(String(t.Properties!.DeletionProtectionEnabled), String(protectedTables), id);
      }
    }
  });

  it('only the forwarder\'s role may list the topic\'s subscriptions and read their filter policies, and only the topic\'s', () => {
    for (const R of [byDefault, withKey]) {
      const readers = [...grants(R)]
        .filter(([, sts]) => sts.some((st) => [st.Action].flat().some((a: string) => a === 'sns:ListSubscriptionsByTopic' || a === 'sns:GetSubscriptionAttributes')))
        .map(([role]) => role);
      assert.deepEqual(readers, ['ForwarderRole']);
      const [statement] = grants(R).get('ForwarderRole')!.filter((st) => st.Sid === 'ReadTopicSubscriptions');
      assert.deepEqual([statement.Resource].flat(), [{ Ref: 'ClusterEventsTopic' }, { 'Fn::Sub': '${ClusterEventsTopic}:*' }]);
    }
  });

  it('only the forwarder\'s role may publish to the topic: the topic policy and every role\'s grants', () => {
    for (const R of [byDefault, withKey]) {
      const [topicId] = Object.entries(R).find(([, r]) => r.Type === 'AWS::SNS::Topic')!;
      assert.deepEqual(allowed(R, 'sns:Publish', { resourceId: topicId }), ['ForwarderRole']);
      const policies = Object.values(R).filter((r) => r.Type === 'AWS::SNS::TopicPolicy');
      assert.equal(policies.length, 1);
      const statements = policies[0].Properties!.PolicyDocument.Statement;
      const allow = statements.filter((s: any) => s.Effect === 'Allow');
      assert.deepEqual(allow.map((s: any) => [referencedId(s.Principal.AWS), s.Action]), [['ForwarderRole', 'sns:Publish']]);
      const deny = statements.find((s: any) => s.Effect === 'Deny' && s.Action === 'sns:Publish');
      assert.equal(deny.Principal, '*');
      assert.equal(referencedId(deny.Condition.ArnNotEquals['aws:PrincipalArn']), 'ForwarderRole');
    }
  });

  it('each function that reaches the cluster has an access entry in the group its ClusterRole is bound to; resync has none', () => {
    const docs = parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'infra/k8s/controllers-rbac.yaml'), 'utf8')).map((d) => d.toJS());
    const boundGroups = new Map<string, string>();
    for (const b of docs.filter((d) => d.kind === 'ClusterRoleBinding')) {
      for (const s of b.subjects) if (s.kind === 'Group') boundGroups.set(s.name, b.roleRef.name);
    }
    const entries = Object.values(byDefault).filter((r) => r.Type === 'AWS::EKS::AccessEntry');
    assert.equal(entries.length, KUBE_FUNCTIONS.length);
    for (const fn of KUBE_FUNCTIONS) {
      const entry = entries.find((e) => referencedId(e.Properties!.PrincipalArn) === roleOf(byDefault, fn));
      assert.ok(entry, `${fn} has an access entry`);
      assert.equal(entry!.Properties!.Type, 'STANDARD');
      assert.equal(entry!.Properties!.ClusterName, 'prod');
      assert.equal(entry!.Properties!.AccessPolicies, undefined, `${fn}: no EKS access policy, only its RBAC group`);
      const [group] = entry!.Properties!.KubernetesGroups;
      assert.equal(entry!.Properties!.KubernetesGroups.length, 1);
      assert.equal(boundGroups.get(group), group, `${fn}: group ${group} is bound to the ClusterRole ${group}`);
    }
    assert.ok(!entries.some((e) => referencedId(e.Properties!.PrincipalArn) === roleOf(byDefault, 'ResyncLambdaFunction')));
    // without eksClusterName nothing is created in a cluster
    assert.equal(Object.values(evaluate({ ...raw, Conditions: { ...(raw as any).Conditions, HasEksCluster: { 'Fn::Equals': ['a', 'b'] } } } as CfnTemplate)).filter((r) => r.Type === 'AWS::EKS::AccessEntry').length, 0);
  });
});
