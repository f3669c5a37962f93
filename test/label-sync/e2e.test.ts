/**
 * The label sync end to end through the local stack: Kubernetes API emulator → forwarder → SNS FIFO →
 * LabelSyncQueue → the label sync handler → the embedded storage control plane (over HTTP).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { CoreV1Api, KubeConfig, type V1Node } from '@kubernetes/client-node';
import { KubeClients } from '../../lib/kube/client.ts';
import { createLabelSyncHandler, type LabelSyncHandler } from '../../lib/label-sync/handler.ts';
import { ObservedNodes } from '../../lib/label-sync/observed.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { runResync } from '../../lib/resync/run.ts';
import { NODE_ID_ANNOTATION } from '../../lib/label-sync/predicate.ts';
import type { LabelResyncReport } from '../../lib/label-sync/resync.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const CO = 'storageos.com/computeonly';
const DRIVER = JSON.stringify({ 'csi.storageos.com': 'sos-node-id' });

describe('label sync end to end through the local stack', () => {
  let stack: Stack;
  let core: CoreV1Api;
  let storage: StorageOSClient;
  let observed: ObservedNodes;
  let enabled: LabelSyncHandler;
  let disabled: LabelSyncHandler;
  let current: LabelSyncHandler | undefined;

  before(async () => {
    stack = await startTestStack({ functions: { labelSync: (event, context) => current!(event, context) }, withForwarder: true });
    storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS, backoff: { attempts: 2, baseDelayMs: 20, maxDelayMs: 50, jitter: false } });
    const build = (on: boolean) =>
      createLabelSyncHandler({
        config: { enabled: on, resyncIntervalMs: 3_600_000 },
        storage,
        doc: stack.dynamodb.doc,
        clusters: [stack.env.CLUSTER_ID],
        runtime: {
          tables: stack.tables,
          sqs: stack.sqs.client,
          queueUrl: stack.queues.LabelSyncQueue.url,
          dlqUrl: stack.queues.LabelSyncDlq.url,
          kube: new KubeClients({ env: { KUBECONFIG: stack.functionEnv.labelSync.KUBECONFIG } }),
          syncWaitMs: 100,
          limiter: { baseDelayMs: 5, maxDelayMs: 1000 },
        },
      });
    enabled = build(true);
    disabled = build(false);
    current = enabled;
    observed = new ObservedNodes(stack.dynamodb.doc, stack.tables.control);
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
    await eventually(() => stack.forwarder!.isReady(), 30_000, 'forwarder ready');
  });
  after(async () => {
    await stack?.stop();
  });

  const ops = (path: string, method: string, body?: unknown) =>
    fetch(`${stack.storageApi!.url}/_storage/${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const storageLabels = async (name: string) => (await storage.listNodes()).find((n) => n.name === name)?.labels;
  const labelsAre = (name: string, expected: Record<string, string>) => async () => {
    const labels = await storageLabels(name);
    return labels !== undefined && JSON.stringify(Object.entries(labels).sort()) === JSON.stringify(Object.entries(expected).sort());
  };
  /** A storage node and a Kubernetes node of the same name. */
  const createNode = async (name: string, labels: Record<string, string>, annotated = true): Promise<void> => {
    assert.equal((await ops('nodes', 'POST', { name })).status, 200);
    await core.createNode({ body: { metadata: { name, labels, ...(annotated ? { annotations: { [NODE_ID_ANNOTATION]: DRIVER } } : {}) } } });
  };
  const updateNode = async (name: string, change: (node: V1Node) => void): Promise<void> => {
    const node = await core.readNode({ name });
    change(node);
    await core.replaceNode({ name, body: node });
  };
  const setLabels = (name: string, labels: Record<string, string>) => updateNode(name, (n) => (n.metadata!.labels = labels));

  it('labelling a StorageOS node reaches the control plane; a removed label is removed', async () => {
    await createNode('ls-basic', { 'kubernetes.io/hostname': 'ls-basic' });
    await setLabels('ls-basic', { 'kubernetes.io/hostname': 'ls-basic', rack: 'r1', zone: 'z1' });
    await eventually(labelsAre('ls-basic', { 'kubernetes.io/hostname': 'ls-basic', rack: 'r1', zone: 'z1' }), 20_000, 'labels applied');
    await setLabels('ls-basic', { 'kubernetes.io/hostname': 'ls-basic', rack: 'r2' });
    await eventually(labelsAre('ls-basic', { 'kubernetes.io/hostname': 'ls-basic', rack: 'r2' }), 20_000, 'labels replaced');
  });

  it('storageos.com/computeonly=true then removed → compute-only on, then off', async () => {
    await createNode('ls-co', {});
    await setLabels('ls-co', { [CO]: 'true', a: '1' });
    await eventually(async () => (await storage.listNodes()).find((n) => n.name === 'ls-co')?.computeOnly === true, 20_000, 'compute-only on');
    await eventually(labelsAre('ls-co', { [CO]: 'true', a: '1' }), 20_000, 'labels with compute-only');
    await setLabels('ls-co', { a: '1' });
    await eventually(async () => (await storage.listNodes()).find((n) => n.name === 'ls-co')?.computeOnly === false, 20_000, 'compute-only off');
    assert.deepEqual(await storageLabels('ls-co'), { a: '1' });
  });

  it('an invalid reserved label → a Warning event on the Node, and the valid labels still applied', async () => {
    await createNode('ls-invalid', {});
    await setLabels('ls-invalid', { good: 'yes', 'storageos.com/replicas': '2', [CO]: 'true' });
    await eventually(labelsAre('ls-invalid', { good: 'yes', [CO]: 'true' }), 20_000, 'valid labels applied');
    await eventually(
      async () => (await core.listNamespacedEvent({ namespace: 'default' })).items.some((e) => e.involvedObject.kind === 'Node' && e.involvedObject.name === 'ls-invalid' && e.reason === 'FailedLabelSync'),
      20_000,
      'FailedLabelSync event',
    );
    const event = (await core.listNamespacedEvent({ namespace: 'default' })).items.find((e) => e.involvedObject.name === 'ls-invalid' && e.reason === 'FailedLabelSync')!;
    assert.equal(event.type, 'Warning');
    assert.equal(event.message, 'storageos.com/replicas: invalid reserved label for this object type');
  });

  it('a control plane answering 500 for a minute → retried with backoff until applied, nothing lost', async () => {
    await createNode('ls-outage', { a: '0' });
    assert.equal((await ops('faults', 'POST', { method: 'PUT', path: '/v2/nodes/*', status: 500, times: -1 })).status < 300, true);
    // Long waits are parked in the control table; the resync function (here every 500 ms) re-enqueues them.
    const resync = setInterval(() => {
      runResync({ doc: stack.dynamodb.doc, sqs: stack.sqs.client, tables: stack.tables, queueUrls: { 'label-sync': stack.queues.LabelSyncQueue.url }, clusters: [], sources: new Map() }).catch(() => {});
    }, 500);
    await ops('requests', 'DELETE');
    try {
      await setLabels('ls-outage', { a: '1', b: '2' });
      await new Promise((resolve) => setTimeout(resolve, 60_000));
      assert.deepEqual(await storageLabels('ls-outage'), {}, 'nothing applied during the outage');
    } finally {
      await ops('faults', 'DELETE');
    }
    try {
      await eventually(labelsAre('ls-outage', { a: '1', b: '2' }), 20_000, 'applied after the outage');
    } finally {
      clearInterval(resync);
    }
    const { calls } = (await (await ops('requests', 'GET')).json()) as { calls: Record<string, number> };
    assert.ok(calls['PUT /v2/nodes/{id}'] >= 4, `the write was retried (${calls['PUT /v2/nodes/{id}']} PUTs)`);
    assert.equal(Number((await stack.sqs.client.send(new GetQueueAttributesCommand({ QueueUrl: stack.queues.LabelSyncDlq.url, AttributeNames: ['ApproximateNumberOfMessages'] }))).Attributes?.ApproximateNumberOfMessages), 0, 'nothing dead-lettered');
  });

  it('a node without the driver annotation is ignored until the annotation appears, then its labels are applied at once', async () => {
    await createNode('ls-late', { x: '1' }, false);
    await setLabels('ls-late', { x: '2', y: '3' });
    // The update was handled (and filtered): the previous-state record holds it as a non-StorageOS node.
    await eventually(async () => JSON.stringify((await observed.get(stack.env.CLUSTER_ID, 'ls-late'))?.labels) === JSON.stringify({ x: '2', y: '3' }), 20_000, 'update filtered');
    assert.deepEqual(await storageLabels('ls-late'), {});
    await updateNode('ls-late', (n) => (n.metadata!.annotations = { [NODE_ID_ANNOTATION]: DRIVER }));
    await eventually(labelsAre('ls-late', { x: '2', y: '3' }), 20_000, 'labels applied when the annotation appears');
  });

  it('a label changed while the function was disabled is repaired by the next resync', async () => {
    await createNode('ls-resync', {});
    await setLabels('ls-resync', { v: '1' });
    await eventually(labelsAre('ls-resync', { v: '1' }), 20_000, 'first sync');
    current = disabled;
    try {
      await setLabels('ls-resync', { v: '2' });
      // Wait until the cache holds the change, so the resync compares against it.
      await eventually(async () => {
        const entry = await new ObjectCache(stack.dynamodb.doc, stack.tables.cache).get(stack.env.CLUSTER_ID, 'Node', 'ls-resync');
        return entry?.object.metadata?.labels?.v === '2';
      }, 20_000, 'cache updated');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.deepEqual(await storageLabels('ls-resync'), { v: '1' }, 'not synced while disabled');
    } finally {
      current = enabled;
    }
    const schedule = stack.wiring.schedules.flatMap((s) => s.targets).find((t) => t.functionName === 'labelSync');
    assert.ok(schedule?.input, 'the resync schedule targets labelSync with an input');
    const report = (await stack.invoke('labelSync', JSON.parse(schedule.input))) as LabelResyncReport;
    assert.ok(report.differed >= 1, `resync found the difference (${JSON.stringify(report)})`);
    assert.equal(report.failed, 0);
    assert.deepEqual(await storageLabels('ls-resync'), { v: '2' });
  });
});
