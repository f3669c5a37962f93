// core/v1 ↔ events.k8s.io/v1 Event conversion, the loose /api/v1 and strict events.k8s.io validation,
// and the Event field-selector set.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { coreEvents, eventFromV1, eventSelectableFields, eventsV1Events, eventToV1 } from '../../../infra/local/kube-api/kinds/event.ts';
import type { KubeObject } from '../../../infra/local/kube-api/types.ts';

const core = (extra: Record<string, unknown> = {}): KubeObject => ({
  metadata: { name: 'pvc1.17a', namespace: 'ns1' },
  involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'ns1', name: 'pvc1', uid: 'u1' },
  reason: 'Provisioning', message: 'External provisioner is provisioning volume', type: 'Normal', count: 2,
  source: { component: 'csi-provisioner' }, firstTimestamp: '2026-01-01T00:00:00Z', lastTimestamp: '2026-01-01T00:01:00Z', ...extra,
});

describe('kube-api events', () => {
  it('converts core/v1 to events.k8s.io/v1 and back', () => {
    const view = eventToV1(core());
    assert.deepEqual([view.apiVersion, view.regarding.name, view.note, view.deprecatedCount, view.deprecatedSource.component, view.deprecatedFirstTimestamp],
      ['events.k8s.io/v1', 'pvc1', 'External provisioner is provisioning volume', 2, 'csi-provisioner', '2026-01-01T00:00:00Z']);
    assert.equal(view.involvedObject, undefined);
    const back = eventFromV1(view);
    for (const k of ['involvedObject', 'message', 'count', 'source', 'firstTimestamp', 'lastTimestamp', 'reason', 'type']) {
      assert.deepEqual(back[k], core()[k], k);
    }
  });

  it('core/v1 validation only pairs namespaces', () => {
    assert.deepEqual(coreEvents.strategy.validate(core()), []);
    const wrong = core({ involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'other', name: 'pvc1' } });
    assert.deepEqual(coreEvents.strategy.validate(wrong).map((e) => `${e.field}: ${e.detail}`), ['involvedObject.namespace: does not match event.namespace']);
    const clusterScoped = (ns: string) => ({ ...core({ involvedObject: { kind: 'PersistentVolume', name: 'pv1' } }), metadata: { name: 'pv1.1', namespace: ns } });
    assert.deepEqual(coreEvents.strategy.validate(clusterScoped('default')), []);
    assert.equal(coreEvents.strategy.validate(clusterScoped('ns1')).length, 1);
  });

  it('events.k8s.io/v1 creation requires eventTime, reporting fields and no deprecated fields', () => {
    const errs = eventsV1Events.strategy.validate(eventToV1(core()));
    assert.deepEqual(errs.map((e) => `${e.type} ${e.field}`), [
      'FieldValueRequired eventTime',
      'FieldValueInvalid firstTimestamp', 'FieldValueInvalid lastTimestamp', 'FieldValueInvalid count', 'FieldValueInvalid source',
    ]);
    const good: KubeObject = { metadata: { name: 'e1', namespace: 'ns1' }, eventTime: '2026-01-01T00:00:00.000000Z', reportingController: 'example.com/ctl',
      reportingInstance: 'ctl-1', action: 'Provision', reason: 'Provisioning', type: 'Normal', regarding: { kind: 'PersistentVolumeClaim', namespace: 'ns1', name: 'c' } };
    assert.deepEqual(eventsV1Events.strategy.validate(good), []);
    const noController = { ...good, reportingController: undefined, action: undefined };
    assert.deepEqual(eventsV1Events.strategy.validate(noController).map((e) => `${e.type} ${e.field}`),
      // An empty qualified name fails both "must be non-empty" and the regex, as upstream reports it.
      ['FieldValueRequired reportingController', 'FieldValueInvalid reportingController', 'FieldValueInvalid reportingController', 'FieldValueRequired action']);
  });

  it('selects on involvedObject.*, reason, reportingComponent, source and type', () => {
    assert.deepEqual(eventSelectableFields(core()), {
      'metadata.name': 'pvc1.17a', 'metadata.namespace': 'ns1', 'involvedObject.kind': 'PersistentVolumeClaim', 'involvedObject.namespace': 'ns1',
      'involvedObject.name': 'pvc1', 'involvedObject.uid': 'u1', 'involvedObject.apiVersion': '', 'involvedObject.resourceVersion': '',
      'involvedObject.fieldPath': '', reason: 'Provisioning', reportingComponent: '', source: 'csi-provisioner', type: 'Normal',
    });
    assert.equal(eventSelectableFields(eventToV1(core())).source, 'csi-provisioner');
  });
});
