/**
 * The local stack end to end: resources created from serverless.yml's compiled template, the forwarder
 * watching the emulator, and functions run through the SQS event source mapping. A watched object's
 * change reaches exactly the queues whose filter admits its kind; each consumer sees an object's
 * changes in resourceVersion order while different objects run in parallel; the schedule fires.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { StoreEvent } from '../../infra/local/kube-api/types.ts';
import type { SqsEventSource } from '../../infra/local/stack/event-source.ts';
import { consumeQueue, EventRecorder, eventually, startTestStack, type Stack } from '../support/stack.ts';

const KIND_OF: Record<string, string> = {
  '/persistentvolumes': 'PersistentVolume',
  '/persistentvolumeclaims': 'PersistentVolumeClaim',
  '/nodes': 'Node',
  'storage.k8s.io/storageclasses': 'StorageClass',
  'storage.k8s.io/volumeattachments': 'VolumeAttachment',
  '/services': 'Service',
};

/** The filter policies serverless.yml declares, by consumer. */
const ADMITS: Record<string, string[]> = {
  binder: ['PersistentVolume', 'PersistentVolumeClaim', 'StorageClass'],
  provisioner: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment'],
  SharedVolumeQueue: ['VolumeAttachment', 'PersistentVolumeClaim', 'Service', 'Endpoints'],
  LabelSyncQueue: ['Node'],
};

const VOLUME_LABEL = 'storageos.com/volume-id';

describe('local stack', () => {
  let stack: Stack;
  // slow enough that the next receive (other message groups) starts while a batch is still running
  const recorder = new EventRecorder({ delayMs: 200 });
  const extra: SqsEventSource[] = [];
  const truth: { kind: string; key: string; rv: string; deleting: boolean; boundClaim: boolean; unprovisioned: boolean; unshared: boolean; unreleased: boolean }[] = [];
  let unsubscribe: (() => void) | undefined;
  const stateDir = join(process.env.TMPDIR ?? '/tmp', `claimflow-stack-test-${process.pid}`);

  before(async () => {
    stack = await startTestStack({
      functions: { binder: recorder.handler('binder'), provisioner: recorder.handler('provisioner') },
      withForwarder: true,
      stateDir,
      storageApi: false,
    });
    extra.push(consumeQueue(stack, 'SharedVolumeQueue', recorder.handler('SharedVolumeQueue')));
    extra.push(consumeQueue(stack, 'LabelSyncQueue', recorder.handler('LabelSyncQueue')));
    await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
    unsubscribe = stack.kubeApi!.store.subscribe((event: StoreEvent) => {
      const kind = KIND_OF[event.resource];
      const meta = event.object.metadata;
      if (!kind) return;
      if (kind === 'Service' && !meta.labels?.[VOLUME_LABEL]) return;
      const boundClaim = kind === 'PersistentVolumeClaim' && Boolean((event.object as { spec?: { volumeName?: string } }).spec?.volumeName) && event.type !== 'DELETED';
      // No provisioner asked for (claim) or able to own it (volume), or a volume deleting without the
      // provisioner's finalizer: the provisioner's filter leaves it out.
      const annotations = meta.annotations ?? {};
      const unprovisioned =
        event.type !== 'DELETED' &&
        ((kind === 'PersistentVolumeClaim' && !('volume.kubernetes.io/storage-provisioner' in annotations) && !('volume.beta.kubernetes.io/storage-provisioner' in annotations)) ||
          (kind === 'PersistentVolume' && !('pv.kubernetes.io/provisioned-by' in annotations) && !('pv.kubernetes.io/migrated-to' in annotations) && !(event.object as { spec?: { csi?: unknown } }).spec?.csi) ||
          (kind === 'PersistentVolume' && Boolean(meta.deletionTimestamp) && !(meta.finalizers ?? []).includes('external-provisioner.volume.kubernetes.io/finalizer')));
      // Nothing for the shared-volume controller to do: the shared-volume filter leaves it out.
      const modes = (event.object as { spec?: { accessModes?: string[] } }).spec?.accessModes;
      const unshared =
        (kind === 'PersistentVolumeClaim' && (event.type === 'DELETED' || (Array.isArray(modes) && !modes.includes('ReadWriteMany')))) ||
        ((kind === 'Service' || kind === 'Endpoints') && event.type !== 'DELETED') ||
        (kind === 'VolumeAttachment' && event.type === 'DELETED');
      // A volume not Released, not being deleted, without the provisioner's finalizer: its filter (AddFinalizer off) leaves it out.
      const unreleased = kind === 'PersistentVolume' && event.type !== 'DELETED' && (event.object as { status?: { phase?: string } }).status?.phase !== 'Released' &&
        !meta.deletionTimestamp && !(meta.finalizers ?? []).includes('external-provisioner.volume.kubernetes.io/finalizer');
      truth.push({ kind, key: meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name!, rv: meta.resourceVersion!, deleting: Boolean(meta.deletionTimestamp) && event.type !== 'DELETED', boundClaim, unprovisioned, unshared, unreleased });
    });
  });

  after(async () => {
    unsubscribe?.();
    await Promise.all(extra.map((s) => s.stop()));
    await stack?.stop();
  });

  it('creates the queues, redrive policies and tables serverless.yml declares (stage local)', async () => {
    const binder = stack.queues.BinderQueue;
    assert.equal(binder.name, 'claimflow-local-binder.fifo');
    const a = (
      await stack.sqs.client.send(new GetQueueAttributesCommand({ QueueUrl: binder.url, AttributeNames: ['All'] }))
    ).Attributes!;
    assert.equal(a.FifoQueue, 'true');
    assert.equal(a.VisibilityTimeout, '180');
    assert.deepEqual(JSON.parse(a.RedrivePolicy!), { deadLetterTargetArn: stack.queues.BinderDlq.arn, maxReceiveCount: 5 });
    const cache = await stack.dynamodb.client.send(new DescribeTableCommand({ TableName: stack.tables.cache }));
    assert.deepEqual(
      cache.Table!.GlobalSecondaryIndexes!.map((g) => g.IndexName).sort(),
      ['byClaimRef', 'byPendingClaim', 'byResync', 'byVolumeMatch'],
    );
    assert.equal(stack.env.CACHE_TABLE, 'claimflow-local-cache');
    assert.equal(stack.env.BINDER_QUEUE_URL, binder.url);
    assert.equal(stack.env.CLUSTER_ID, 'local');
    assert.equal(stack.functionEnv.binder.DLQ_URL, stack.queues.BinderDlq.url);
    const json = JSON.parse(await readFile(join(stateDir, 'stack.json'), 'utf8'));
    assert.deepEqual(Object.keys(json).sort(), ['awsEndpoint', 'dynamodb', 'kubeApi', 'kubeconfig', 'region', 'sns', 'sqs', 'stage', 'storageApi']);
    assert.deepEqual([json.stage, json.region, json.awsEndpoint], ['local', 'eu-west-1', null], 'the CLI reads the stage and region from it');
    assert.equal(json.kubeApi, stack.kubeApi!.url);
    assert.match(await readFile(json.kubeconfig, 'utf8'), new RegExp(stack.kubeApi!.url));
  });

  it('routes every change to exactly the queues whose filter admits its kind, in resourceVersion order per object, objects in parallel', async () => {
    const store = stack.kubeApi!.store;
    store.create('storage.k8s.io/storageclasses', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'gold' },
      provisioner: 'example.com/p',
    });
    // Even-numbered volumes were provisioned and even-numbered claims handed to a provisioner; the others
    // are static, which the provisioner's filter leaves out.
    for (let i = 0; i < 6; i++) {
      store.create('/persistentvolumes', {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `pv-${i}`, ...(i % 2 === 0 ? { annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } } : {}) },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'gold', hostPath: { path: `/tmp/pv-${i}` } },
      });
      store.create('/persistentvolumeclaims', {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: `claim-${i}`, namespace: 'default', ...(i % 2 === 0 ? { annotations: { 'volume.kubernetes.io/storage-provisioner': 'example.com/p' } } : {}) },
        // claim-0 and claim-3 are shared (ReadWriteMany); the shared-volume filter leaves the others out
        spec: { accessModes: [i % 3 === 0 ? 'ReadWriteMany' : 'ReadWriteOnce'], storageClassName: 'gold', resources: { requests: { storage: '1Gi' } } },
      });
      store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${i}` } });
    }
    store.create('storage.k8s.io/volumeattachments', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: 'va-0' },
      spec: { attacher: 'csi.storageos.com', nodeName: 'node-0', source: { persistentVolumeName: 'pv-0' } },
    });
    store.create('/services', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'vol-1', namespace: 'default', labels: { [VOLUME_LABEL]: 'v1' } },
      spec: { ports: [{ port: 2049 }] },
    });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 6; i++) {
        const pv = store.get({ resource: '/persistentvolumes', namespace: '', name: `pv-${i}` })!;
        store.update('/persistentvolumes', { ...pv, metadata: { ...pv.metadata, labels: { round: String(round) } } });
        const n = store.get({ resource: '/nodes', namespace: '', name: `node-${i}` })!;
        store.update('/nodes', { ...n, metadata: { ...n.metadata, labels: { round: String(round) } } });
      }
    }

    // Two claims are bound as the binder binds them (spec.volumeName, then status Bound): from the first of
    // those writes on, their changes skip the provisioner.
    for (const i of [0, 1]) {
      const pending = store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: `claim-${i}` })!;
      store.update('/persistentvolumeclaims', { ...pending, spec: { ...(pending.spec as object), volumeName: `pv-${i}` } });
      const claim = store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: `claim-${i}` })!;
      store.update('/persistentvolumeclaims', { ...claim, status: { phase: 'Bound' } }, 'status');
      const bound = store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: `claim-${i}` })!;
      store.update('/persistentvolumeclaims', { ...bound, metadata: { ...bound.metadata, labels: { after: 'bound' } } });
    }

    // claim-0 (asked of a provisioner, bound above) is deleted: the change its DELETE makes (a deletion timestamp,
    // pvc-protection's finalizer still on) is left out of the provisioner's queue, the deletion itself is not.
    store.delete({ resource: '/persistentvolumeclaims', namespace: 'default', name: 'claim-0' });

    // Two provisioned volumes are released (their claims gone, as the binder marks them): the provisioner gets those.
    for (const i of [2, 4]) {
      const pv = store.get({ resource: '/persistentvolumes', namespace: '', name: `pv-${i}` })!;
      store.update('/persistentvolumes', { ...pv, status: { phase: 'Released' } }, 'status');
    }
    // The provisioner deletes pv-4: what its DELETE changes (a deletion timestamp, pv-protection's finalizer
    // still on) is left out; the deletion itself reaches it.
    store.delete({ resource: '/persistentvolumes', namespace: '', name: 'pv-4' });

    // The Service deleted (recreate it: delivered) and the attachment deleted (nothing to do: left out).
    store.delete({ resource: '/services', namespace: 'default', name: 'vol-1' });
    store.delete({ resource: 'storage.k8s.io/volumeattachments', namespace: '', name: 'va-0' });

    const expectedFor = (consumer: string) =>
      truth.filter(
        (t) => ADMITS[consumer].includes(t.kind) && !(consumer === 'provisioner' && (t.boundClaim || t.unprovisioned || t.unreleased)) && !(consumer === 'SharedVolumeQueue' && t.unshared),
      );
    const id = (e: { kind: string; key: string; rv?: string; resourceVersion?: string }) => `${e.kind}|${e.key}|${e.rv ?? e.resourceVersion}`;
    await eventually(
      () => Object.keys(ADMITS).every((c) => recorder.events(c).length >= expectedFor(c).length),
      30_000,
      'every change at every consumer',
    );
    await stack.forwarder!.flush();
    await new Promise((r) => setTimeout(r, 300)); // anything extra would arrive now

    for (const consumer of Object.keys(ADMITS)) {
      const got = recorder.events(consumer);
      assert.deepEqual(got.map(id).sort(), expectedFor(consumer).map(id).sort(), `${consumer} received exactly its kinds' changes`);
      const byObject = new Map<string, number[]>();
      for (const e of got) byObject.set(`${e.kind}|${e.key}`, [...(byObject.get(`${e.kind}|${e.key}`) ?? []), Number(e.resourceVersion)]);
      for (const [object, rvs] of byObject) {
        assert.deepEqual(rvs, [...rvs].sort((a, b) => a - b), `${consumer}: ${object} in resourceVersion order`);
      }
    }
    assert.ok(truth.some((t) => t.kind === 'Service') && truth.some((t) => t.kind === 'VolumeAttachment'));
    assert.equal(truth.filter((t) => t.boundClaim).length, 7, 'two claims, each given its volumeName, then Bound, then relabelled; one then deleting');
    const provisioned = recorder.events('provisioner').filter((e) => e.kind === 'PersistentVolume' || e.kind === 'PersistentVolumeClaim');
    assert.ok(provisioned.length >= 5 && truth.filter((t) => t.unprovisioned).length >= 12, 'both sides of the unprovisioned filter were exercised');
    assert.deepEqual(provisioned.filter((e) => e.kind === 'PersistentVolume').map((e) => `${e.key} ${e.type}`).sort(), ['pv-2 MODIFIED', 'pv-4 DELETED', 'pv-4 MODIFIED'],
      'of the volumes, only the two Released ones reach the provisioner, and the deletion of one, not the change its DELETE made');
    assert.ok(truth.some((t) => t.key === 'pv-4' && t.unprovisioned), 'pv-4 was seen deleting');
    assert.ok(truth.some((t) => t.key === 'default/claim-0' && t.deleting && t.boundClaim), 'claim-0 was seen deleting, still bound');
    assert.deepEqual(recorder.events('provisioner').filter((e) => e.key === 'default/claim-0').map((e) => e.type), ['ADDED', 'DELETED'],
      'of claim-0, the provisioner gets its creation and its deletion: not its bind, nor the change its DELETE made');
    assert.ok(truth.filter((t) => t.unreleased && !t.unprovisioned).length >= 12, 'provisioned volumes\' other changes were left out');
    const shared = recorder.events('SharedVolumeQueue');
    assert.ok(shared.some((e) => e.key === 'default/claim-0') && shared.some((e) => e.kind === 'Service' && e.type === 'DELETED'), 'shared claims and a deleted Service reach shared-volume');
    assert.ok(truth.filter((t) => t.unshared && t.kind === 'PersistentVolumeClaim').length >= 6 && truth.some((t) => t.unshared && t.kind === 'Service'), 'both sides of the unshared filter were exercised');
    assert.equal(recorder.events('binder').filter((e) => e.kind === 'PersistentVolumeClaim' && truth.some((t) => t.boundClaim && t.key === e.key && t.rv === e.resourceVersion)).length, 7, 'the binder still gets them');
    assert.ok(recorder.maxInFlight('binder') >= 2, `binder ran ${recorder.maxInFlight('binder')} invocations at once`);
    assert.equal(stack.eventSources.binder.stats.fifoOrderViolations, 0);
    assert.equal(stack.eventSources.binder.stats.wholeBatchFailures, 0);
  });
});

describe('local stack schedules', () => {
  it('fires the resync schedule from the template with a Scheduled Event', async () => {
    const events: Record<string, unknown>[] = [];
    const stack = await startTestStack({
      functions: { resync: async (event: Record<string, unknown>) => void events.push(event) },
      kubeApi: false,
      storageApi: false,
      schedules: true,
      scheduleSpeedup: 1200, // rate(1 minute) → every 50 ms
    });
    try {
      await eventually(() => events.length >= 2, 10_000, 'two resync firings');
    } finally {
      await stack.stop();
    }
    assert.equal(events[0]['detail-type'], 'Scheduled Event');
    assert.deepEqual(events[0].resources, ['arn:aws:events:eu-west-1:000000000000:rule/ResyncEventsRuleSchedule1']);
    const fired = events.length;
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(events.length, fired, 'no firing after stop');
  });
});
