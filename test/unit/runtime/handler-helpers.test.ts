import { test } from 'node:test';
import assert from 'node:assert/strict';
import { involvedObjectOf, queueUrlFromArn, unwrapSnsEnvelope } from '../../../lib/runtime/handler.ts';
import { MESSAGE_VERSION, type ClusterEvent } from '../../../lib/runtime/message.ts';

test('queueUrlFromArn', () => {
  const cases: Array<[string, string | undefined]> = [
    ['arn:aws:sqs:eu-west-1:123456789012:claimflow-prod-binder.fifo', 'https://sqs.eu-west-1.amazonaws.com/123456789012/claimflow-prod-binder.fifo'],
    ['arn:aws-cn:sqs:cn-north-1:123456789012:q.fifo', 'https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q.fifo'],
    ['arn:aws:sns:eu-west-1:123456789012:topic', undefined],
    ['not an arn', undefined],
  ];
  for (const [arn, want] of cases) assert.equal(queueUrlFromArn(arn), want, arn);
});

test('involvedObjectOf: the embedded object when present, else a reference built from the key', () => {
  const event = (partial: Partial<ClusterEvent>): ClusterEvent => ({
    v: MESSAGE_VERSION,
    cluster: 'c1',
    kind: 'PersistentVolumeClaim',
    type: 'MODIFIED',
    key: 'ns/claim',
    uid: 'u1',
    resourceVersion: '3',
    observedAt: new Date(0).toISOString(),
    ...partial,
  });
  assert.deepEqual(involvedObjectOf({ cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim', event: event({}) }), {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'claim', namespace: 'ns', uid: 'u1' },
  });
  assert.deepEqual(involvedObjectOf({ cluster: 'c1', kind: 'StorageClass', key: 'gold', event: event({ kind: 'StorageClass', key: 'gold', uid: '' }) }), {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'gold' },
  });
  const object = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-9', uid: 'u9', resourceVersion: '77' } };
  assert.deepEqual(involvedObjectOf({ cluster: 'c1', kind: 'PersistentVolume', key: 'pv-9', event: event({ kind: 'PersistentVolume', key: 'pv-9', object }) }), object);
});

test('unwrapSnsEnvelope: SNS notification bodies (no raw delivery) yield the event inside; others pass through', () => {
  const event = { v: 1, cluster: 'c1', kind: 'Node', key: 'n1' };
  assert.deepEqual(unwrapSnsEnvelope({ Type: 'Notification', TopicArn: 'arn:aws:sns:us-east-1:1:t.fifo', Message: JSON.stringify(event) }), event);
  assert.deepEqual(unwrapSnsEnvelope(event), event);
  const broken = { Type: 'Notification', TopicArn: 'arn', Message: '{nope' };
  assert.equal(unwrapSnsEnvelope(broken), broken);
  assert.equal(unwrapSnsEnvelope(null), null);
});

test('goSprintf: the Go verbs event messages use', async () => {
  const { goSprintf } = await import('../../../lib/kube/recorder.ts');
  const cases: Array<[string, unknown[], string]> = [
    ['storageclass.storage.k8s.io %q not found', ['gold'], 'storageclass.storage.k8s.io "gold" not found'],
    ['Successfully provisioned volume %s', ['pvc-1'], 'Successfully provisioned volume pvc-1'],
    ['cannot bind to requested volume %q: %v', ['pv-1', new Error('size mismatch')], 'cannot bind to requested volume "pv-1": size mismatch'],
    ['%d%% done, ready=%t', [50, true], '50% done, ready=true'],
    ['missing %s', [], 'missing %!s(MISSING)'],
  ];
  for (const [format, args, want] of cases) assert.equal(goSprintf(format, ...args), want, format);
});
