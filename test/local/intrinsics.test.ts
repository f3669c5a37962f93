/**
 * The CloudFormation intrinsics the local stack resolves in the functions' environment.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolveIntrinsics, UnresolvableIntrinsicError, type PhysicalResource } from '../../infra/local/stack/intrinsics.ts';

const resources = new Map<string, PhysicalResource>([
  ['BinderQueue', { ref: 'http://127.0.0.1:1/000000000000/b.fifo', attributes: { Arn: 'arn:aws:sqs:eu-west-1:000000000000:b.fifo', QueueName: 'b.fifo' } }],
  ['CacheTable', { ref: 'claimflow-local-cache', attributes: { Arn: 'arn:aws:dynamodb:eu-west-1:000000000000:table/claimflow-local-cache' } }],
]);
const ctx = { resources, region: 'eu-west-1', accountId: '000000000000' };

describe('resolveIntrinsics', () => {
  const rows: { name: string; value: unknown; expected: unknown }[] = [
    { name: 'plain values pass through', value: { A: 'x', B: 3, C: true }, expected: { A: 'x', B: 3, C: true } },
    { name: 'Ref of a resource', value: { Ref: 'CacheTable' }, expected: 'claimflow-local-cache' },
    { name: 'Ref of a pseudo parameter', value: { Ref: 'AWS::Region' }, expected: 'eu-west-1' },
    { name: 'GetAtt as a list', value: { 'Fn::GetAtt': ['BinderQueue', 'Arn'] }, expected: 'arn:aws:sqs:eu-west-1:000000000000:b.fifo' },
    { name: 'GetAtt as a dotted string', value: { 'Fn::GetAtt': 'BinderQueue.QueueName' }, expected: 'b.fifo' },
    {
      name: 'Sub with a GetAtt and pseudo parameters',
      value: { 'Fn::Sub': '${CacheTable.Arn}/index/byVolumeMatch in ${AWS::AccountId}' },
      expected: 'arn:aws:dynamodb:eu-west-1:000000000000:table/claimflow-local-cache/index/byVolumeMatch in 000000000000',
    },
    { name: 'Sub with variables', value: { 'Fn::Sub': ['${Name}-${AWS::Partition}', { Name: { Ref: 'CacheTable' } }] }, expected: 'claimflow-local-cache-aws' },
    { name: 'Sub renders ${!Literal} as ${Literal}', value: { 'Fn::Sub': 'a-${!Literal}' }, expected: 'a-${Literal}' },
    { name: 'Join', value: { 'Fn::Join': [',', [{ Ref: 'CacheTable' }, 'x']] }, expected: 'claimflow-local-cache,x' },
    { name: 'nested in objects and lists', value: { V: [{ Ref: 'CacheTable' }] }, expected: { V: ['claimflow-local-cache'] } },
  ];
  for (const row of rows) {
    it(row.name, () => assert.deepEqual(resolveIntrinsics(row.value, ctx), row.expected));
  }

  const invalid: { name: string; value: unknown }[] = [
    { name: 'Ref of an unknown id', value: { Ref: 'Nope' } },
    { name: 'GetAtt of an unknown attribute', value: { 'Fn::GetAtt': ['CacheTable', 'StreamArn'] } },
    { name: 'an unsupported function', value: { 'Fn::ImportValue': 'x' } },
  ];
  for (const row of invalid) {
    it(`rejects ${row.name}`, () => assert.throws(() => resolveIntrinsics(row.value, ctx), UnresolvableIntrinsicError));
  }
});
