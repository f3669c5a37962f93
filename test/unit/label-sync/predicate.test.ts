import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isStorageOSNode, labelsEqual, NODE_ID_ANNOTATION, shouldSync, type NodeLike } from '../../../lib/label-sync/predicate.ts';

const node = (labels: Record<string, string> | undefined, annotation?: string): NodeLike => ({
  metadata: { name: 'n1', ...(labels ? { labels } : {}), ...(annotation !== undefined ? { annotations: { [NODE_ID_ANNOTATION]: annotation } } : {}) },
});
const STORAGEOS = '{"csi.storageos.com":"n1-id"}';

describe('isStorageOSNode: a JSON key test on csi.volume.kubernetes.io/nodeid', () => {
  const cases: [string, string | undefined, boolean, boolean][] = [
    ['no annotation', undefined, false, false],
    ['the StorageOS driver', STORAGEOS, true, false],
    ['among other drivers', '{"ebs.csi.aws.com":"i-1","csi.storageos.com":""}', true, false],
    ['another driver only', '{"ebs.csi.aws.com":"i-1"}', false, false],
    ['driver name only as a value (not a substring test)', '{"x":"csi.storageos.com"}', false, false],
    ['malformed JSON', '{"csi.storageos.com":}', false, true],
    ['JSON that is not an object', '"csi.storageos.com"', false, true],
    ['empty', '', false, true],
  ];
  for (const [name, annotation, expected, malformed] of cases) {
    it(name, () => {
      let reported = false;
      assert.equal(isStorageOSNode(node({}, annotation), () => (reported = true)), expected);
      assert.equal(reported, malformed);
    });
  }
});

describe('shouldSync: Update only; annotation just added or labels changed', () => {
  const sos = (labels: Record<string, string>) => ({ storageos: true, labels });
  const cases: { name: string; previous: Parameters<typeof shouldSync>[0]; next: NodeLike; update: boolean; expected: ReturnType<typeof shouldSync> }[] = [
    { name: 'create is dropped', previous: undefined, next: node({ a: '1' }, STORAGEOS), update: false, expected: { sync: false, reason: 'not-an-update' } },
    { name: 'not a StorageOS node', previous: sos({}), next: node({ a: '1' }), update: true, expected: { sync: false, reason: 'not-storageos' } },
    { name: 'malformed annotation', previous: sos({}), next: node({ a: '1' }, '{"csi.storageos.com":}'), update: true, expected: { sync: false, reason: 'not-storageos' } },
    { name: 'annotation just added, labels unchanged', previous: { storageos: false, labels: { a: '1' } }, next: node({ a: '1' }, STORAGEOS), update: true, expected: { sync: true, reason: 'annotation-added' } },
    { name: 'previous unknown counts as annotation added', previous: undefined, next: node({ a: '1' }, STORAGEOS), update: true, expected: { sync: true, reason: 'annotation-added' } },
    { name: 'label added', previous: sos({ a: '1' }), next: node({ a: '1', b: '2' }, STORAGEOS), update: true, expected: { sync: true, reason: 'labels-changed' } },
    { name: 'label value changed', previous: sos({ a: '1' }), next: node({ a: '2' }, STORAGEOS), update: true, expected: { sync: true, reason: 'labels-changed' } },
    { name: 'label removed', previous: sos({ a: '1' }), next: node({}, STORAGEOS), update: true, expected: { sync: true, reason: 'labels-changed' } },
    { name: 'labels unchanged (annotation/status-only change)', previous: sos({ a: '1' }), next: node({ a: '1' }, STORAGEOS), update: true, expected: { sync: false, reason: 'labels-unchanged' } },
    { name: 'no labels before and after', previous: sos({}), next: node(undefined, STORAGEOS), update: true, expected: { sync: false, reason: 'labels-unchanged' } },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(shouldSync(c.previous, c.next, c.update), c.expected));
});

it('labelsEqual: same keys and values; nil equals empty', () => {
  assert.equal(labelsEqual({ a: '1' }, { a: '1' }), true);
  assert.equal(labelsEqual(undefined, {}), true);
  assert.equal(labelsEqual({ a: '1' }, { a: '1', b: '' }), false);
  assert.equal(labelsEqual({ a: '' }, { b: '' }), false);
});
