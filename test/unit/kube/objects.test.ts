/**
 * deepCopy (lib/kube/objects.ts): an exact copy of a JSON object, shared with nothing of the original.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deepCopy } from '../../../lib/kube/objects.ts';

describe('deepCopy', () => {
  test('a volume from JSON: equal, and no object or array of it shared with the original', () => {
    const volume = JSON.parse(
      '{"metadata":{"name":"pv-1","annotations":{"a":"1"},"finalizers":["kubernetes.io/pv-protection"]},' +
        '"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"claimRef":null,"mountOptions":[],' +
        '"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},' +
        '"status":{"phase":"Available"}}',
    );
    const copy = deepCopy(volume);
    assert.deepStrictEqual(copy, volume);
    copy.metadata.annotations.a = '2';
    copy.metadata.finalizers.push('x');
    copy.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0] = 'b';
    assert.equal(volume.metadata.annotations.a, '1');
    assert.deepEqual(volume.metadata.finalizers, ['kubernetes.io/pv-protection']);
    assert.equal(volume.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0], 'a');
  });

  test('a key named __proto__ (a CSI volume attribute) stays a key of the copy, and the copy\'s prototype stays Object\'s', () => {
    const volume = JSON.parse('{"spec":{"csi":{"driver":"d","volumeAttributes":{"__proto__":"x","b":"y"}}},"x":{"__proto__":{"polluted":true}}}');
    const copy = deepCopy(volume);
    assert.deepStrictEqual(copy, volume);
    assert.deepEqual(Object.keys(copy.spec.csi.volumeAttributes), ['__proto__', 'b']);
    assert.equal(Object.getPrototypeOf(copy.x), Object.prototype);
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
  });

  test('undefined values stay as keys; a Date is copied as a Date', () => {
    const at = new Date('2026-11-29T10:00:00Z');
    const copy = deepCopy({ a: undefined, at });
    assert.ok(Object.hasOwn(copy, 'a'));
    assert.ok(copy.at instanceof Date && copy.at !== at && copy.at.getTime() === at.getTime());
  });
});
