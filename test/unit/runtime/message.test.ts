import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messageDeduplicationId, MESSAGE_VERSION, type ClusterEvent } from '../../../lib/runtime/message.ts';

const event = (partial: Partial<ClusterEvent>): ClusterEvent => ({
  v: MESSAGE_VERSION,
  cluster: 'east',
  kind: 'PersistentVolume',
  type: 'MODIFIED',
  key: 'pv-1',
  uid: 'u-1',
  resourceVersion: '7',
  observedAt: '2026-01-01T00:00:00.000Z',
  ...partial,
});

describe('messageDeduplicationId', () => {
  const differ: Array<[string, ClusterEvent, ClusterEvent]> = [
    ['two clusters, empty uid, same key', event({ uid: '', cluster: 'east' }), event({ uid: '', cluster: 'west' })],
    ['two clusters, same uid (a restored backup)', event({ cluster: 'east' }), event({ cluster: 'west' })],
    ['two clusters, REQUEUE with the same nonce', event({ uid: '', type: 'REQUEUE', cluster: 'east', controller: 'binder' }), event({ uid: '', type: 'REQUEUE', cluster: 'west', controller: 'binder' })],
    ['same object, another resourceVersion', event({ resourceVersion: '7' }), event({ resourceVersion: '8' })],
    ['same observation, another type', event({ type: 'MODIFIED' }), event({ type: 'SYNC' })],
  ];
  for (const [name, a, b] of differ) {
    test(`differs: ${name}`, () => assert.notEqual(messageDeduplicationId(a, 'n'), messageDeduplicationId(b, 'n')));
  }

  test('a replay of the same observation collapses (same id), whatever its observedAt', () => {
    assert.equal(messageDeduplicationId(event({})), messageDeduplicationId(event({ observedAt: '2026-01-02T00:00:00.000Z' })));
  });

  test('stays within the FIFO limits for the longest cluster and key', () => {
    const id = messageDeduplicationId(event({ cluster: 'c'.repeat(40), uid: '', key: `${'n'.repeat(63)}/${'x'.repeat(253)}`, type: 'REQUEUE', controller: 'provisioner' }), 'nonce');
    assert.ok(id.length <= 128);
    assert.match(id, /^[\x21-\x7e]+$/);
  });
});
