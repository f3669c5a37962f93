/**
 * The label sync controller on the real runtime: fauxqs (a FIFO queue with its DLQ), dynalite (cache and
 * control tables) and the embedded storage control plane; events recorded in memory.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SQSBatchResponse } from 'aws-lambda';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import type { LabelSyncConfig } from '../../lib/label-sync/config.ts';
import { createLabelSyncHandler, type LabelSyncHandler } from '../../lib/label-sync/handler.ts';
import { ObservedNodes } from '../../lib/label-sync/observed.ts';
import { NODE_ID_ANNOTATION } from '../../lib/label-sync/predicate.ts';
import type { LabelResyncReport } from '../../lib/label-sync/resync.ts';
import { MESSAGE_VERSION, type ClusterEvent } from '../../lib/runtime/message.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { silentLogger, startRuntimeFixture, type RuntimeFixture } from '../runtime/harness.ts';
import { startStorage, type StorageFixture } from '../storage/support.ts';

const CLUSTER = 'c1';
const DRIVER = { [NODE_ID_ANNOTATION]: '{"csi.storageos.com":"id"}' };

describe('label-sync controller on the runtime', () => {
  let f: RuntimeFixture;
  let s: StorageFixture;
  let recorder: MemoryEventRecorder;
  let observed: ObservedNodes;
  let cache: ObjectCache;
  const handlers = new Map<boolean, LabelSyncHandler>();
  let rv = 100;
  /** The resync's clock (its period slots). */
  let clock = Date.now();

  before(async () => {
    f = await startRuntimeFixture();
    s = await startStorage();
    recorder = new MemoryEventRecorder();
    observed = new ObservedNodes(f.db.doc, f.db.tables.control);
    cache = new ObjectCache(f.db.doc, f.db.tables.cache, { indexer: indexAttributes });
    await f.markSynced(CLUSTER, ['Node']);
    for (const enabled of [true, false]) {
      const config: LabelSyncConfig = { enabled, resyncIntervalMs: enabled ? 3_600_000 : 0 };
      handlers.set(
        enabled,
        createLabelSyncHandler({
          config,
          storage: s.client,
          doc: f.db.doc,
          clusters: [CLUSTER],
          runtime: { tables: f.db.tables, sqs: f.sqs, queueUrl: f.queue.url, dlqUrl: f.dlq.url, logger: silentLogger(), recorderFor: () => recorder, limiter: { baseDelayMs: 5, maxDelayMs: 50 } },
          now: () => clock,
        }),
      );
    }
  });
  after(async () => {
    await s?.stop();
    await f?.stop();
  });

  const node = (name: string, labels: Record<string, string>, annotations: Record<string, string> = DRIVER) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, uid: `uid-${name}`, resourceVersion: String(++rv), labels, annotations },
  });
  const event = (type: ClusterEvent['type'], object: ReturnType<typeof node> | undefined, key = object!.metadata.name): ClusterEvent => ({
    v: MESSAGE_VERSION,
    cluster: CLUSTER,
    kind: 'Node',
    type,
    key,
    uid: object?.metadata.uid ?? '',
    resourceVersion: object?.metadata.resourceVersion ?? '0',
    ...(object ? { object } : {}),
    observedAt: new Date().toISOString(),
  });
  /** Sends the events, runs one batch through the handler and settles it as the event source mapping would. */
  const deliver = async (events: ClusterEvent[], enabled = true): Promise<SQSBatchResponse> => {
    await f.send(events);
    const batch = await f.receive(1);
    assert.equal(batch.Records.length, events.length);
    const response = (await handlers.get(enabled)!(batch)) as SQSBatchResponse;
    await f.settle(batch, response);
    return response;
  };
  const labelsOf = async (name: string) => (await s.client.listNodes()).find((n) => n.name === name)!.labels;
  const writes = () => s.api.requests.get('PUT', '/v2/nodes/{id}') + s.api.requests.get('PUT', '/v2/nodes/{id}/compute-only');

  it('a batch of node changes: each node’s previous state comes with its message’s read, one request for the batch, none of its own', async () => {
    const sent: string[] = [];
    const counting = {
      send: (command: { constructor: { name: string }; input: { Key?: { pk?: string } } }) => {
        sent.push(`${command.constructor.name} ${String(command.input.Key?.pk ?? '').split('#')[0]}`);
        return (f.db.doc.send as (c: unknown) => Promise<unknown>)(command);
      },
    } as unknown as typeof f.db.doc;
    const handler = createLabelSyncHandler({
      config: { enabled: true, resyncIntervalMs: 3_600_000 },
      storage: s.client,
      doc: counting,
      clusters: [CLUSTER],
      runtime: { tables: f.db.tables, sqs: f.sqs, queueUrl: f.queue.url, dlqUrl: f.dlq.url, logger: silentLogger(), recorderFor: () => recorder, limiter: { baseDelayMs: 5, maxDelayMs: 50 } },
      now: () => clock,
    });
    const names = ['n-batch-1', 'n-batch-2', 'n-batch-3'];
    for (const name of names) await s.api.state.addNode(name);
    await observed.put(CLUSTER, 'n-batch-1', { storageos: true, labels: { a: '0' } });
    // n-batch-3's recorded state already has the new labels: judged against it, the change is filtered.
    await observed.put(CLUSTER, 'n-batch-3', { storageos: true, labels: { a: '1' } });
    await f.send(names.map((name) => event('MODIFIED', node(name, { a: '1' }))));
    const batch = await f.receive(1);
    assert.equal(batch.Records.length, 3);
    const response = (await handler(batch)) as SQSBatchResponse;
    await f.settle(batch, response);
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(sent.filter((c) => c.startsWith('GetCommand')), [], 'no read of a previous state on its own');
    assert.equal(sent.filter((c) => c.startsWith('BatchGetCommand')).length, 2, 'the sync markers, then one read for the three records');
    assert.deepEqual(await labelsOf('n-batch-1'), { a: '1' }, 'n-batch-1: labels changed from its recorded state, applied');
    assert.deepEqual(await labelsOf('n-batch-3'), {}, 'n-batch-3: unchanged from its recorded state, filtered (no call)');
    for (const name of names) assert.deepEqual(await observed.get(CLUSTER, name), { storageos: true, labels: { a: '1' } });
  });

  it('a create is filtered (its state recorded); a label change is applied; an unchanged update is filtered', async () => {
    await s.api.state.addNode('n-basic');
    const before = writes();
    assert.deepEqual((await deliver([event('ADDED', node('n-basic', { a: '1' }))])).batchItemFailures, []);
    assert.deepEqual(await observed.get(CLUSTER, 'n-basic'), { storageos: true, labels: { a: '1' } });
    assert.deepEqual(await labelsOf('n-basic'), {});
    await deliver([event('MODIFIED', node('n-basic', { a: '2' }))]);
    assert.deepEqual(await labelsOf('n-basic'), { a: '2' });
    const after = writes();
    assert.equal(after - before, 1);
    await deliver([event('MODIFIED', node('n-basic', { a: '2' }, { ...DRIVER, other: 'x' }))]);
    assert.equal(writes(), after, 'an annotation-only change makes no call');
  });

  it('a failed call reports the record failed and keeps the previous state, so the redelivery syncs', async () => {
    await s.api.state.addNode('n-fail');
    await deliver([event('ADDED', node('n-fail', {}))]);
    s.api.faults.add({ method: 'PUT', path: '/v2/nodes/*', status: 500, times: Infinity });
    const change = event('MODIFIED', node('n-fail', { a: '1' }));
    try {
      const response = await deliver([change]);
      assert.equal(response.batchItemFailures.length, 1);
      assert.deepEqual(await observed.get(CLUSTER, 'n-fail'), { storageos: true, labels: {} }, 'previous state kept');
    } finally {
      s.api.faults.clear();
    }
    await new Promise((r) => setTimeout(r, 1100)); // the record's visibility (the backoff, at least 1 s)
    const redelivered = await f.receive(2);
    assert.equal(redelivered.Records.length, 1);
    assert.equal(redelivered.Records[0].attributes.ApproximateReceiveCount, '2');
    const response = (await handlers.get(true)!(redelivered)) as SQSBatchResponse;
    await f.settle(redelivered, response);
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(await labelsOf('n-fail'), { a: '1' });
    assert.deepEqual(await observed.get(CLUSTER, 'n-fail'), { storageos: true, labels: { a: '1' } });
  });

  it('invalid reserved labels: a Warning event on the Node, valid labels applied, not retried', async () => {
    await s.api.state.addNode('n-invalid');
    await deliver([event('ADDED', node('n-invalid', {}))]);
    const response = await deliver([event('MODIFIED', node('n-invalid', { ok: '1', 'storageos.com/encryption': 'true', 'storageos.com/computeonly': 'maybe' }))]);
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(await labelsOf('n-invalid'), { ok: '1' });
    const events = recorder.events.filter((e) => e.object.metadata?.name === 'n-invalid');
    assert.equal(events.length, 1);
    assert.equal(events[0].type, 'Warning');
    assert.equal(events[0].reason, 'FailedLabelSync');
    assert.equal(events[0].object.kind, 'Node');
    assert.match(events[0].message, /^2 errors occurred: /);
    assert.ok(events[0].message.includes('storageos.com/encryption: unrecognized reserved label'));
    assert.ok(events[0].message.includes('storageos.com/computeonly: strconv.ParseBool: parsing "maybe": invalid syntax'));
  });

  it('a REQUEUE without an object reads the node from the cache', async () => {
    await s.api.state.addNode('n-requeue');
    await cache.put(CLUSTER, 'Node', node('n-requeue', { from: 'cache' }));
    await deliver([event('REQUEUE', undefined, 'n-requeue')]);
    assert.deepEqual(await labelsOf('n-requeue'), { from: 'cache' });
  });

  it('a node unknown to the control plane is nothing to do; a delete forgets the previous state', async () => {
    const response = await deliver([event('MODIFIED', node('n-unknown', { a: '1' }))]);
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(await observed.get(CLUSTER, 'n-unknown'), { storageos: true, labels: { a: '1' } });
    await deliver([event('DELETED', node('n-unknown', { a: '1' }))]);
    assert.equal(await observed.get(CLUSTER, 'n-unknown'), undefined);
  });

  it('disabled: events are acknowledged and nothing is written; the scheduled run does nothing', async () => {
    await s.api.state.addNode('n-off');
    const before = writes();
    const response = await deliver([event('MODIFIED', node('n-off', { a: '1' }))], false);
    assert.deepEqual(response.batchItemFailures, []);
    assert.equal(writes(), before);
    assert.deepEqual(await labelsOf('n-off'), {});
    assert.deepEqual(await handlers.get(false)!({ source: 'schedule' }), { clusters: [], nodes: 0, differed: 0, writes: 0, failed: 0, deferred: 0, skipped: 'disabled' });
  });

  it('the scheduled resync ensures every cached node whose labels differ, skipping unknown ones', async () => {
    await s.api.state.addNode('n-resync');
    await cache.put(CLUSTER, 'Node', node('n-resync', { r: '1', 'storageos.com/computeonly': 'true' }, {}));
    await cache.put(CLUSTER, 'Node', node('n-not-storage', { r: '1' }, {}));
    const report = (await handlers.get(true)!({ source: 'schedule' })) as LabelResyncReport;
    assert.equal(report.failed, 0);
    assert.ok(report.differed >= 1);
    assert.deepEqual(await labelsOf('n-resync'), { r: '1', 'storageos.com/computeonly': 'true' });
    clock += 3_600_000; // the next period
    const again = (await handlers.get(true)!({ source: 'schedule' })) as LabelResyncReport;
    assert.deepEqual(again.clusters, [CLUSTER]);
    assert.equal(again.differed, 0, 'nothing differs after a resync');
    assert.equal(again.writes, 0);
  });
});
