// Name, label, annotation and finalizer rules with apimachinery's messages (validation.go tables).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  DNS1035_LABEL_ERROR, DNS1123_LABEL_ERROR, DNS1123_SUBDOMAIN_ERROR, isDNS1035Label, isDNS1123Label, isDNS1123Subdomain,
  isQualifiedName, isValidLabelValue, isValidPathSegmentName,
} from '../../../infra/local/kube-api/kinds/common/names.ts';
import { validateFinalizers, validateLabels, validateObjectMeta, validateOwnerReferences } from '../../../infra/local/kube-api/kinds/common/meta.ts';

describe('kube-api names', () => {
  const cases: Array<[string, (s: string) => string[], string, boolean]> = [
    ['subdomain', isDNS1123Subdomain, 'pvc-1.example', true],
    ['subdomain', isDNS1123Subdomain, 'Upper', false],
    ['subdomain', isDNS1123Subdomain, 'a'.repeat(254), false],
    ['subdomain', isDNS1123Subdomain, '-lead', false],
    ['label', isDNS1123Label, 'ns-1', true],
    ['label', isDNS1123Label, 'has.dot', false],
    ['label', isDNS1123Label, 'a'.repeat(64), false],
    ['dns1035', isDNS1035Label, 'svc-a', true],
    ['dns1035', isDNS1035Label, '1svc', false],
    ['qualified', isQualifiedName, 'example.com/My_name', true],
    ['qualified', isQualifiedName, 'a/b/c', false],
    ['qualified', isQualifiedName, '/x', false],
    ['qualified', isQualifiedName, 'Bad..Prefix/x', false],
    ['label value', isValidLabelValue, '', true],
    ['label value', isValidLabelValue, 'v_1.2-x', true],
    ['label value', isValidLabelValue, '-x', false],
    ['path segment', isValidPathSegmentName, 'pv1.17a3f', true],
    ['path segment', isValidPathSegmentName, 'a/b', false],
    ['path segment', isValidPathSegmentName, '..', false],
  ];
  for (const [rule, fn, value, ok] of cases) {
    it(`${rule}: ${JSON.stringify(value.length > 20 ? value.slice(0, 20) + '…' : value)} is ${ok ? 'valid' : 'invalid'}`, () => {
      assert.equal(fn(value).length === 0, ok, fn(value).join('; '));
    });
  }

  it('prints upstream messages, including the double space between examples', () => {
    assert.equal(isDNS1123Subdomain('Bad')[0], DNS1123_SUBDOMAIN_ERROR);
    assert.match(DNS1123_SUBDOMAIN_ERROR, /^a lowercase RFC 1123 subdomain must consist of .* \(e\.g\. 'example\.com', regex used for validation is '\[a-z0-9\]/);
    assert.match(DNS1123_LABEL_ERROR, /\(e\.g\. 'my-name', {2}or '123-abc', regex used/);
    assert.match(DNS1035_LABEL_ERROR, /^a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character/);
    assert.deepEqual(isDNS1123Label('a'.repeat(64)), ['must be no more than 63 characters']);
  });

  it('validates labels, finalizers and names inside ObjectMeta with field paths', () => {
    assert.deepEqual(validateLabels({ 'ok/k': 'v', 'x': '-bad' }, 'metadata.labels').map((e) => [e.field, e.value]), [['metadata.labels', '-bad']]);
    const fin = validateFinalizers(['orphan', 'foregroundDeletion', 'custom', 'example.com/ok'], 'metadata.finalizers');
    assert.deepEqual(fin.map((e) => e.detail), [
      'name is neither a standard finalizer name nor is it fully qualified',
      'finalizer orphan and foregroundDeletion cannot be both set',
    ]);
    const meta = validateObjectMeta({ metadata: { name: 'Bad_Name' } }, true, isDNS1123Subdomain);
    assert.deepEqual(meta.map((e) => [e.type, e.field]), [['FieldValueInvalid', 'metadata.name'], ['FieldValueRequired', 'metadata.namespace']]);
    assert.deepEqual(validateObjectMeta({ metadata: { name: 'pv', namespace: 'x' } }, false, isDNS1123Subdomain).map((e) => e.type), ['FieldValueForbidden']);
  });

  it('validates ownerReferences: required parts, one controller, no Event owners', () => {
    const f = 'metadata.ownerReferences';
    const ok = { apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'u1', controller: true };
    assert.deepEqual(validateOwnerReferences([ok], f), []);
    assert.deepEqual(validateOwnerReferences([{ apiVersion: 'apps/', kind: '', name: '', uid: '' }], f).map((e) => `${e.field}: ${e.detail}`), [
      'metadata.ownerReferences.apiVersion: version must not be empty',
      'metadata.ownerReferences.kind: kind must not be empty',
      'metadata.ownerReferences.name: name must not be empty',
      'metadata.ownerReferences.uid: uid must not be empty',
    ]);
    const two = validateOwnerReferences([ok, { ...ok, name: 'p', uid: 'u2' }], f);
    assert.deepEqual(two.map((e) => e.detail), ['Only one reference can have Controller set to true. Found "true" in references for ConfigMap/o and ConfigMap/p']);
    const ev = validateOwnerReferences([{ apiVersion: 'events.k8s.io/v1', kind: 'Event', name: 'e', uid: 'u' }], f);
    assert.deepEqual(ev.map((e) => e.detail), ['events.k8s.io/v1, Kind=Event is disallowed from being an owner']);
  });
});
