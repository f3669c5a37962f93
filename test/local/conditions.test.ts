/**
 * The CloudFormation conditions the local stack evaluates (filter policies chosen by `Fn::If`, resources
 * with a `Condition`), as CloudFormation evaluates them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CfnTemplate } from '../../infra/local/stack/template.ts';
import { activeResources, conditionHolds, resolveIfs, WiringError } from '../../infra/local/stack/wiring.ts';

const template = (conditions: Record<string, unknown>, resources: CfnTemplate['Resources'] = {}): CfnTemplate => ({ Resources: resources, Conditions: conditions });

describe('conditionHolds', () => {
  const t = template({
    On: { 'Fn::Equals': ['true', 'true'] },
    Off: { 'Fn::Equals': ['false', 'true'] },
    NumberAsString: { 'Fn::Equals': [15, '15'] },
    NotOff: { 'Fn::Not': [{ Condition: 'Off' }] },
    Both: { 'Fn::And': [{ Condition: 'On' }, { Condition: 'NotOff' }] },
    Either: { 'Fn::Or': [{ Condition: 'Off' }, { 'Fn::Equals': ['a', 'b'] }] },
    Loop: { 'Fn::Not': [{ Condition: 'Loop' }] },
    Unsupported: { 'Fn::Contains': [['a'], 'a'] },
    NotLiteral: { 'Fn::Equals': [{ Ref: 'AWS::Region' }, 'eu-west-1'] },
    Empty: {},
    TwoFunctions: { 'Fn::Equals': ['a', 'a'], 'Fn::Not': [{ Condition: 'On' }] },
    EqualsOneArg: { 'Fn::Equals': ['a'] },
    EqualsThreeArgs: { 'Fn::Equals': ['a', 'a', 'b'] },
    NotTwoArgs: { 'Fn::Not': [{ Condition: 'On' }, { Condition: 'Off' }] },
    OrOneArg: { 'Fn::Or': [{ Condition: 'On' }] },
    AndNotList: { 'Fn::And': { Condition: 'On' } },
    ConditionNotName: { Condition: ['On'] },
    Null: null,
  });
  const rows: Array<[string, boolean]> = [['On', true], ['Off', false], ['NumberAsString', true], ['NotOff', true], ['Both', true], ['Either', false]];
  for (const [name, holds] of rows) it(`${name} → ${holds}`, () => assert.equal(conditionHolds(t, name), holds));
  for (const name of ['Loop', 'Unsupported', 'NotLiteral', 'Missing', 'Empty', 'TwoFunctions', 'EqualsOneArg', 'EqualsThreeArgs', 'NotTwoArgs', 'OrOneArg', 'AndNotList', 'ConditionNotName', 'Null']) {
    it(`${name}: a clear error, never a guess`, () => assert.throws(() => conditionHolds(t, name), WiringError));
  }
});

describe('resolveIfs and activeResources', () => {
  const t = template(
    { On: { 'Fn::Equals': ['x', 'x'] }, Off: { 'Fn::Equals': ['x', 'y'] } },
    {
      Kept: { Type: 'AWS::SQS::Queue', Properties: { Key: { 'Fn::If': ['Off', 'k', { Ref: 'AWS::NoValue' }] }, List: ['a', { 'Fn::If': ['Off', 'b', { Ref: 'AWS::NoValue' }] }], Policy: { 'Fn::If': ['On', { kind: ['A'] }, { kind: ['B'] }] } } },
      Dropped: { Type: 'AWS::SQS::Queue', Condition: 'Off', Properties: {} },
    },
  );
  it('picks the branch, drops AWS::NoValue from objects and arrays', () => {
    assert.deepEqual(resolveIfs(t, t.Resources.Kept.Properties), { List: ['a'], Policy: { kind: ['A'] } });
    assert.equal(resolveIfs(t, { 'Fn::If': ['Off', 'x', { Ref: 'AWS::NoValue' }] }), undefined);
    assert.deepEqual(resolveIfs(t, { Ref: 'CacheTable' }), { Ref: 'CacheTable' }, 'other references are left as they are');
  });
  it('a malformed Fn::If is an error', () => assert.throws(() => resolveIfs(t, { 'Fn::If': ['On', 'x'] }), WiringError));
  it('leaves out resources whose condition does not hold', () => {
    assert.deepEqual(Object.keys(activeResources(t)), ['Kept']);
  });
});
