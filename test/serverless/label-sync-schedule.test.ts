/**
 * The label resync's wiring in the template osls compiles from serverless.yml: the schedule is a tick
 * (every minute, so the first resync comes within a minute of deploy), the period is the function's
 * NODE_LABEL_RESYNC_INTERVAL, and the role may make the conditional write that takes a period's slot.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, type CfnResource, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { referencedId } from '../../infra/local/stack/wiring.ts';

let template: CfnTemplate;

before(async () => {
  template = await compileTemplate({ stage: 'dev', region: 'eu-west-1' });
});

const labelSyncRules = (t: CfnTemplate): Record<string, any>[] =>
  Object.values(t.Resources)
    .filter((r: CfnResource) => r.Type === 'AWS::Events::Rule')
    .map((r) => r.Properties!)
    .filter((p) => p.Targets.some((target: { Arn: unknown }) => referencedId(target.Arn) === 'LabelSyncLambdaFunction'));

describe('serverless.yml → the label resync schedule', () => {
  it('ticks the labelSync function every minute with the resync input', () => {
    const rules = labelSyncRules(template);
    assert.equal(rules.length, 1);
    assert.equal(rules[0].ScheduleExpression, 'rate(1 minute)');
    assert.equal(rules[0].State, 'ENABLED');
    assert.deepEqual(JSON.parse(rules[0].Targets[0].Input), { source: 'claimflow.label-sync', 'detail-type': 'Node label resync' });
  });

  it('gives the function the period as NODE_LABEL_RESYNC_INTERVAL (default 1h, per stage)', async () => {
    const env = (t: CfnTemplate) => t.Resources.LabelSyncLambdaFunction.Properties!.Environment.Variables;
    assert.equal(String(env(template).NODE_LABEL_RESYNC_INTERVAL), '1h');
    const custom = await compileTemplate({ stage: 'dev', region: 'eu-west-1', params: { nodeLabelResyncInterval: '30m', labelSyncResyncSchedule: 'rate(2 minutes)' } });
    assert.equal(String(env(custom).NODE_LABEL_RESYNC_INTERVAL), '30m');
    assert.equal(labelSyncRules(custom)[0].ScheduleExpression, 'rate(2 minutes)');
  });

  it("lets the labelSync role take a period's slot: UpdateItem on the control table", () => {
    const role = template.Resources.LabelSyncRole.Properties!;
    const statements = role.Policies.flatMap((p: { PolicyDocument: { Statement: unknown[] } }) => p.PolicyDocument.Statement) as { Action: string[]; Resource: unknown }[];
    const control = statements.filter((s) => [s.Resource].flat().some((r) => { try { return referencedId(r) === 'ControlTable'; } catch { return false; } }));
    assert.ok(control.some((s) => s.Action.includes('dynamodb:UpdateItem')), JSON.stringify(control));
  });
});
