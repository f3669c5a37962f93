import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig, type CoreV1Event } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { COMBINED_PREFIX, KubeEventRecorder } from '../../lib/kube/recorder.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

describe('KubeEventRecorder against the emulator (client-go correlation, state in DynamoDB)', () => {
  let kube: KubeApi;
  let db: Dynalite;
  let api: CoreV1Api;
  /** What the recorder sends with (the test reads and deletes through `api`). */
  let json: KubeJsonApi;
  let clock = Date.parse('2026-11-21T12:00:00Z');
  before(async () => {
    [kube, db] = await Promise.all([startKubeApi({ port: 0 }), startDynalite()]);
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    api = kc.makeApiClient(CoreV1Api);
    json = kc.makeApiClient(KubeJsonApi);
  });
  after(async () => {
    await Promise.all([kube.stop(), db.stop()]);
  });

  /** Two recorders = two Lambda containers: they share only the control table. */
  const recorder = (component = 'persistentvolume-controller') =>
    new KubeEventRecorder({
      api: json,
      component,
      cluster: 'c1',
      doc: db.doc,
      table: db.tables.control,
      now: () => clock,
      onError: (error) => assert.fail(`recording failed: ${String(error)}`),
    });
  const claim = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace: 'default', uid: 'uid-data', resourceVersion: '5' } };
  const events = async (namespace: string): Promise<CoreV1Event[]> => (await api.listNamespacedEvent({ namespace })).items;

  test('a repeat from another container PATCHes the same Event: count and lastTimestamp move', async () => {
    await recorder().event(claim, 'Warning', 'ProvisioningFailed', 'storageclass "gold" not found');
    clock += 5000;
    await recorder().eventf(claim, 'Warning', 'ProvisioningFailed', 'storageclass "%s" not found', 'gold');
    clock += 5000;
    await recorder().event(claim, 'Warning', 'ProvisioningFailed', 'storageclass "gold" not found');
    const list = (await events('default')).filter((e) => e.reason === 'ProvisioningFailed');
    assert.equal(list.length, 1);
    const [e] = list;
    assert.equal(e.count, 3);
    assert.equal(e.type, 'Warning');
    assert.equal(e.message, 'storageclass "gold" not found');
    assert.equal(e.source?.component, 'persistentvolume-controller');
    assert.deepEqual(
      { kind: e.involvedObject.kind, name: e.involvedObject.name, namespace: e.involvedObject.namespace, uid: e.involvedObject.uid },
      { kind: 'PersistentVolumeClaim', name: 'data', namespace: 'default', uid: 'uid-data' },
    );
    assert.match(e.metadata?.name ?? '', /^data\.[0-9a-f]+$/);
    assert.equal(new Date(e.lastTimestamp as unknown as string).getTime() - new Date(e.firstTimestamp as unknown as string).getTime(), 10_000);
  });

  test("timestamps go out as the API server writes them; a server refusing strategic merge gets a merge patch", async () => {
    const stamped = { ...claim, metadata: { ...claim.metadata, name: 'stamped', uid: 'uid-stamped' } };
    const raw = async () =>
      (await json.get<{ items: Array<{ involvedObject: { name: string }; count: number; firstTimestamp: string; lastTimestamp: string }> }>('/api/v1/namespaces/default/events')).items
        .filter((e) => e.involvedObject.name === 'stamped')
        .map((e) => [e.count, e.firstTimestamp, e.lastTimestamp]);
    clock = Date.parse('2026-11-21T12:30:00.750Z');
    const r = recorder();
    await r.event(stamped, 'Normal', 'Stamped', 'stamped');
    assert.deepEqual(await raw(), [[1, '2026-11-21T12:30:00Z', '2026-11-21T12:30:00Z']], 'RFC 3339, whole seconds, as sent');
    kube.faults.inject({ verb: 'patch', resource: 'events', count: 1, status: 415, message: 'the server does not support strategic merge patch here' });
    clock += 2000;
    await r.event(stamped, 'Normal', 'Stamped', 'stamped');
    assert.deepEqual(await raw(), [[2, '2026-11-21T12:30:00Z', '2026-11-21T12:30:02Z']], 'the 415 was answered by a merge patch');
  });

  test('a deleted Event is created again under the same name with the next count', async () => {
    const pv = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-1', uid: 'uid-pv1' } };
    await recorder().event(pv, 'Normal', 'VolumeRecycled', 'recycled');
    let list = (await events('default')).filter((e) => e.involvedObject.name === 'pv-1');
    assert.equal(list.length, 1, 'cluster-scoped objects get their events in default');
    const name = list[0].metadata?.name ?? '';
    await api.deleteNamespacedEvent({ name, namespace: 'default' });
    clock += 1000;
    await recorder().event(pv, 'Normal', 'VolumeRecycled', 'recycled');
    list = (await events('default')).filter((e) => e.involvedObject.name === 'pv-1');
    assert.equal(list.length, 1);
    assert.equal(list[0].metadata?.name, name);
    assert.equal(list[0].count, 2);
  });

  test('the 10th distinct message within 600 s is combined; later ones patch the combined Event', async () => {
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a', uid: 'uid-node-a' } };
    for (let i = 1; i <= 12; i++) {
      clock += 1000;
      await recorder('label-sync').event(node, 'Warning', 'LabelSyncFailed', `attempt ${i} failed`);
    }
    const list = (await events('default')).filter((e) => e.involvedObject.name === 'node-a');
    const plain = list.filter((e) => !e.message?.startsWith(COMBINED_PREFIX));
    const combined = list.filter((e) => e.message?.startsWith(COMBINED_PREFIX));
    assert.equal(plain.length, 9, 'the first nine messages are events of their own');
    assert.equal(combined.length, 1);
    assert.equal(combined[0].count, 3, 'messages 10, 11 and 12 in one event');
    assert.equal(combined[0].message, `${COMBINED_PREFIX}attempt 12 failed`);

    clock += 601_000; // the aggregation window passes: a new message stands alone again
    await recorder('label-sync').event(node, 'Warning', 'LabelSyncFailed', 'attempt 13 failed');
    const after13 = (await events('default')).filter((e) => e.message === 'attempt 13 failed');
    assert.equal(after13.length, 1);
  });

  test('events in a namespace follow the object; recording failures never throw', async () => {
    await api.createNamespace({ body: { metadata: { name: 'team-a' } } });
    const teamClaim = { ...claim, metadata: { ...claim.metadata, namespace: 'team-a', uid: 'uid-team' } };
    await recorder().event(teamClaim, 'Normal', 'ExternalProvisioning', 'waiting for a volume to be created');
    assert.equal((await events('team-a')).length, 1);
    const errors: unknown[] = [];
    const broken = new KubeEventRecorder({
      api: json,
      component: 'x',
      cluster: 'c1',
      doc: db.doc,
      table: db.tables.control,
      onError: (error) => errors.push(error),
    });
    await broken.event({ ...claim, metadata: { ...claim.metadata, namespace: 'no-such-namespace', uid: 'u-x' } }, 'Normal', 'R', 'm');
    assert.equal(errors.length, 1, 'the API refused (namespace not found); the error went to onError');
  });
});

describe('KubeEventRecorder spam filter (25 burst, one per 300 s per source and object)', () => {
  let kube: KubeApi;
  let db: Dynalite;
  let api: CoreV1Api;
  /** What the recorder sends with (the test reads and deletes through `api`). */
  let json: KubeJsonApi;
  let clock = Date.parse('2026-11-21T12:00:00Z');
  before(async () => {
    [kube, db] = await Promise.all([startKubeApi({ port: 0 }), startDynalite()]);
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    api = kc.makeApiClient(CoreV1Api);
    json = kc.makeApiClient(KubeJsonApi);
  });
  after(async () => {
    await Promise.all([kube.stop(), db.stop()]);
  });

  test('the 26th event about one object inside the burst is dropped; time refills the bucket', async () => {
    const recorder = new KubeEventRecorder({ api: json, component: 'persistentvolume-controller', cluster: 'c1', doc: db.doc, table: db.tables.control, now: () => clock });
    const claim = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'noisy', namespace: 'default', uid: 'uid-noisy' } };
    const other = { ...claim, metadata: { ...claim.metadata, name: 'quiet', uid: 'uid-quiet' } };
    for (let i = 0; i < 30; i++) {
      clock += 10;
      await recorder.event(claim, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim and no storage class is set');
    }
    await recorder.event(other, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim and no storage class is set');
    const counts = async (name: string) =>
      (await api.listNamespacedEvent({ namespace: 'default' })).items.filter((e) => e.involvedObject.name === name).map((e) => e.count);
    assert.deepEqual(await counts('noisy'), [25]);
    assert.deepEqual(await counts('quiet'), [1], 'another object has its own bucket');
    clock += 300_000;
    await recorder.event(claim, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim and no storage class is set');
    await recorder.event(claim, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim and no storage class is set');
    assert.deepEqual(await counts('noisy'), [26], 'one token per 300 s');
  });
});
