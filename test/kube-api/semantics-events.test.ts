// Events over HTTP: core/v1 writes seen through events.k8s.io/v1 and back, loose versus strict
// validation, the namespace pairing rule (divergence 10), Event field selectors and the Event table.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventsV1Api } from '@kubernetes/client-node';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';
import { createClusterControllers } from '../../infra/local/kube-api/controllers/index.ts';

describe('kube-api semantics: events', () => {
  let h: Harness;
  let events: EventsV1Api;
  before(async () => {
    h = await startHarness({ kinds: undefined });
    events = h.kc.makeApiClient(EventsV1Api);
  });
  after(async () => { await h.api.stop(); });

  const coreEvent = (name: string, namespace: string, involvedNamespace: string | undefined) => ({
    metadata: { name, namespace },
    involvedObject: { kind: 'PersistentVolumeClaim', name: 'claim-1', uid: 'uid-1', ...(involvedNamespace !== undefined ? { namespace: involvedNamespace } : {}) },
    reason: 'ProvisioningSucceeded', message: 'Successfully provisioned volume pv-1', type: 'Normal', count: 1,
    source: { component: 'claimflow-provisioner' }, firstTimestamp: new Date('2026-01-01T00:00:00Z'), lastTimestamp: new Date('2026-01-01T00:00:00Z'),
  }) as any;

  it('a core/v1 event is readable through events.k8s.io/v1 with regarding/note/deprecated* fields', async () => {
    await h.core.createNamespacedEvent({ namespace: 'default', body: coreEvent('claim-1.1', 'default', 'default') });
    const view = await h.http('/apis/events.k8s.io/v1/namespaces/default/events/claim-1.1');
    assert.equal(view.status, 200);
    assert.equal(view.body.apiVersion, 'events.k8s.io/v1');
    assert.deepEqual([view.body.regarding.name, view.body.note, view.body.deprecatedCount, view.body.deprecatedSource.component],
      ['claim-1', 'Successfully provisioned volume pv-1', 1, 'claimflow-provisioner']);
    assert.equal(view.body.involvedObject, undefined);
    const list = await events.listNamespacedEvent({ namespace: 'default' });
    assert.ok(list.items.some((e) => e.metadata!.name === 'claim-1.1' && e.regarding!.uid === 'uid-1'));
  });

  it('an events.k8s.io/v1 event is validated strictly and stored as a core/v1 event', async () => {
    const missing = await rejection(events.createNamespacedEvent({ namespace: 'default', body: { metadata: { name: 'v1-bad' },
      reason: 'R', type: 'Normal', regarding: { kind: 'Node', name: 'n1' } } as any }));
    assert.equal(missing.code, 422);
    assert.ok(missing.details.causes.some((c: { field: string }) => c.field === 'eventTime'));
    await events.createNamespacedEvent({ namespace: 'default', body: {
      metadata: { name: 'v1-good' }, eventTime: new Date('2026-01-01T00:00:00Z') as any, reportingController: 'claimflow.io/binder',
      reportingInstance: 'binder-1', action: 'Binding', reason: 'Bound', type: 'Normal', note: 'bound claim',
      regarding: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'c' } } });
    const core = await h.http('/api/v1/namespaces/default/events/v1-good');
    assert.deepEqual([core.body.involvedObject.name, core.body.message, core.body.reportingComponent], ['c', 'bound claim', 'claimflow.io/binder']);
  });

  it('core/v1 enforces the namespace pairing: involvedObject.namespace must match (divergence 10)', async () => {
    const st = await rejection(h.core.createNamespacedEvent({ namespace: 'default', body: coreEvent('wrong-ns.1', 'default', 'team-a') }));
    assert.equal(st.code, 422);
    assert.equal(st.message, 'Event "wrong-ns.1" is invalid: involvedObject.namespace: Invalid value: "team-a": does not match event.namespace');
    // Cluster-scoped objects (PV, Node) report into default.
    await h.core.createNamespacedEvent({ namespace: 'default', body: coreEvent('pv-event.1', 'default', undefined) });
  });

  it('selects events by involvedObject fields and source; prints the event table', async () => {
    const sel = await h.core.listNamespacedEvent({ namespace: 'default',
      fieldSelector: 'involvedObject.kind=PersistentVolumeClaim,involvedObject.name=claim-1,involvedObject.uid=uid-1,source=claimflow-provisioner' });
    assert.deepEqual(sel.items.map((e) => e.metadata!.name).sort(), ['claim-1.1', 'pv-event.1']);
    const bad = await rejection(h.core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'message=x' }));
    assert.equal(bad.code, 400);
    const table = await h.http('/api/v1/namespaces/default/events?fieldSelector=metadata.name%3Dclaim-1.1', { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    assert.deepEqual(table.body.columnDefinitions.map((c: { name: string }) => c.name),
      ['Last Seen', 'Type', 'Reason', 'Object', 'Subobject', 'Source', 'Message', 'First Seen', 'Count', 'Name']);
    const cells = table.body.rows[0].cells;
    assert.deepEqual(cells.slice(1, 7), ['Normal', 'ProvisioningSucceeded', 'persistentvolumeclaim/claim-1', '', 'claimflow-provisioner', 'Successfully provisioned volume pv-1']);
    assert.deepEqual(cells.slice(8), [1, 'claim-1.1']);
  });
});

describe('kube-api semantics: event TTL', () => {
  it('an Event goes one TTL after its last write; a write renews it', async () => {
    const ttl = 1500;
    const h = await startHarness({ kinds: undefined, controllers: createClusterControllers({ eventTtlMs: ttl }) });
    try {
      const body = (name: string) => ({ metadata: { name }, involvedObject: { kind: 'Node', name: 'n1' }, reason: 'R', message: 'm', type: 'Normal' }) as any;
      const gone = async (name: string) => {
        const deadline = Date.now() + 10_000;
        while ((await h.http(`/api/v1/namespaces/default/events/${name}`)).status !== 404) {
          assert.ok(Date.now() < deadline, `${name} expired`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await h.core.createNamespacedEvent({ namespace: 'default', body: body('old.1') });
      await h.core.createNamespacedEvent({ namespace: 'default', body: body('renewed.1') });
      await new Promise((r) => setTimeout(r, ttl / 2));
      await h.core.patchNamespacedEvent({ name: 'renewed.1', namespace: 'default', body: [{ op: 'replace', path: '/message', value: 'again' }] });
      await gone('old.1');
      assert.equal((await h.http('/api/v1/namespaces/default/events/renewed.1')).status, 200, 'renewed by its write');
      await gone('renewed.1');
    } finally {
      await h.api.stop();
    }
  });
});
