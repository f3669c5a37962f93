import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import { TerminalError, type Controller, type ReconcileRequest, type ReconcileResult } from '../../lib/runtime/reconcile.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { BackoffStore, type BackoffRecord } from '../../lib/state/backoff.ts';
import { ApiBudget } from '../../lib/state/bucket.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { KubeClients } from '../../lib/kube/client.ts';
import { coreV1 } from '../../lib/kube/core-v1.ts';
import type { RuntimeContext } from '../../lib/runtime/handler.ts';
import type { Context } from 'aws-lambda';
import { CapturedMetrics, clusterEvent, handBuiltRecord, silentLogger, startRuntimeFixture, type RuntimeFixture } from './harness.ts';

const KINDS = ['PersistentVolumeClaim', 'PersistentVolume'] as const;

/** A controller whose reconcile runs `behaviour` and records the keys it saw, in order. */
function testController(name: string, behaviour: (request: ReconcileRequest, call: number) => Promise<ReconcileResult>) {
  const seen: string[] = [];
  const controller: Controller = {
    name,
    kinds: KINDS,
    async reconcile(request) {
      seen.push(`${request.key}@${request.event.resourceVersion}`);
      return behaviour(request, seen.length);
    },
  };
  return { controller, seen };
}

describe('createSqsHandler against dynalite and fauxqs', () => {
  let fx: RuntimeFixture;
  let backoff: BackoffStore;
  before(async () => {
    fx = await startRuntimeFixture({ maxReceiveCount: 10 });
    backoff = new BackoffStore({ doc: fx.db.doc, table: fx.db.tables.control });
    await fx.markSynced('c1', KINDS);
  });
  after(() => fx.stop());
  // Each test's records stay its own: one left invisible (deferred, failed) must not come back in the next.
  afterEach(() => fx.purge());

  const handlerFor = (controller: Controller, extra: Record<string, unknown> = {}) => {
    const metrics = new CapturedMetrics();
    const recorder = new MemoryEventRecorder();
    const handler = createSqsHandler(controller, fx.handlerOptions({ maxReceiveCount: 10, metrics, recorderFor: () => recorder, ...extra }));
    return { handler, metrics, recorder };
  };

  test('fails three times, then succeeds: three backoff records with growing delays, then a cleared record', async () => {
    const { controller, seen } = testController('flaky', async (_request, call) => {
      if (call <= 3) throw new Error(`transient ${call}`);
    });
    const { handler, metrics } = handlerFor(controller);
    const id = { controller: 'flaky', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/flaky' };
    await fx.send([clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/flaky' })]);
    const records: BackoffRecord[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      // The visibility the runtime set (1 s: the delay rounded up) hides the message until it is due.
      const batch = await fx.receive(5, 1);
      assert.equal(batch.Records.length, 1, `delivery ${attempt}`);
      assert.equal(batch.Records[0].attributes.ApproximateReceiveCount, String(attempt));
      const response = await handler(batch);
      if (attempt <= 3) {
        assert.deepEqual(response.batchItemFailures, [{ itemIdentifier: batch.Records[0].messageId }]);
        const record = await backoff.get(id);
        assert.ok(record);
        assert.equal(record.failures, attempt);
        assert.equal(record.lastError, `transient ${attempt}`);
        records.push(record);
        const inflight = fx.sqsServer.inspectQueue(fx.queue.url.split('/').pop()!)?.messages.inflight ?? [];
        assert.equal(inflight.length, 1, 'the message stays in flight while it waits');
      } else {
        assert.deepEqual(response.batchItemFailures, []);
      }
    }
    const delays = records.map((r) => r.nextAttemptAt - r.updatedAt);
    assert.deepEqual(delays, [5, 10, 20], 'client-go defaults: 5 ms doubling');
    assert.equal(await backoff.get(id), undefined, 'success forgets the key');
    assert.equal(seen.length, 4);
    assert.equal(metrics.total('ReconcileError'), 3);
    assert.equal(metrics.total('ReconcileSuccess'), 1);
  });

  test('always fails: stops at maxFailures with a Warning event and a ThresholdExceeded metric', async () => {
    const { controller, seen } = testController('doomed', async () => {
      throw new Error('storage backend says no');
    });
    const { handler, metrics, recorder } = handlerFor(controller, { maxFailures: 3 });
    const batch = { Records: [handBuiltRecord('d1', JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/doomed' })), 'g-doomed')] };
    assert.equal((await handler(batch)).batchItemFailures.length, 1);
    assert.equal((await handler(batch)).batchItemFailures.length, 1);
    assert.deepEqual((await handler(batch)).batchItemFailures, [], 'the third failure reaches the threshold: stop retrying');
    assert.equal(seen.length, 3);
    assert.equal(metrics.total('ThresholdExceeded'), 1);
    assert.equal(recorder.events.length, 1);
    const [event] = recorder.events;
    assert.equal(event.type, 'Warning');
    assert.equal(event.reason, 'RetryThresholdExceeded');
    assert.match(event.message, /giving up after 3 failed attempts: storage backend says no/);
    assert.equal(event.object.kind, 'PersistentVolumeClaim');
    assert.deepEqual(event.object.metadata, { name: 'doomed', namespace: 'ns', uid: 'uid-ns/doomed' });
    const kept = await backoff.get({ controller: 'doomed', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/doomed' });
    assert.equal(kept?.failures, 3, 'the count survives the give-up (Done without Forget)');
    assert.equal(kept?.givenUp, true);
    assert.equal(kept?.dueAt, undefined, 'a given-up key is never parked for the resync');
  });

  test('give-up sticks: one attempt per later change, no new round of retries; only a success clears the count', async () => {
    let failing = true;
    const { controller, seen } = testController('sticky', async () => {
      if (failing) throw new Error('backend refuses');
      return undefined;
    });
    const { handler, metrics, recorder } = handlerFor(controller, { maxFailures: 2 });
    const id = { controller: 'sticky', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/sticky' };
    const record = (n: number, type: 'MODIFIED' | 'REQUEUE', rv: string) =>
      handBuiltRecord(`s${n}`, JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/sticky', type, resourceVersion: rv })), 'g-sticky');
    assert.equal((await handler({ Records: [record(1, 'MODIFIED', '10')] })).batchItemFailures.length, 1, 'first failure retries');
    assert.deepEqual((await handler({ Records: [record(1, 'MODIFIED', '10')] })).batchItemFailures, [], 'second failure gives up');
    assert.equal(seen.length, 2);
    // A later change of the object, and a resync's REQUEUE: each gets exactly one attempt and gives up at once.
    assert.deepEqual((await handler({ Records: [record(2, 'MODIFIED', '11')] })).batchItemFailures, [], 'a change: one attempt, given up again');
    assert.deepEqual((await handler({ Records: [record(3, 'REQUEUE', '11')] })).batchItemFailures, [], 'a resync: one attempt, given up again');
    assert.equal(seen.length, 4, 'no new round of retries');
    const after = await backoff.get(id);
    assert.equal(after?.failures, 4);
    assert.equal(after?.givenUp, true);
    assert.equal(metrics.total('ThresholdExceeded'), 1, 'the threshold is reported once, not per later attempt');
    assert.equal(recorder.events.filter((e) => e.reason === 'RetryThresholdExceeded').length, 1);
    // The object is fixed (or deleted: its reconcile succeeds): success forgets the key.
    failing = false;
    assert.deepEqual((await handler({ Records: [record(4, 'MODIFIED', '12')] })).batchItemFailures, []);
    assert.equal(await backoff.get(id), undefined, 'success clears the count');
    failing = true;
    assert.equal((await handler({ Records: [record(5, 'MODIFIED', '13')] })).batchItemFailures.length, 1, 'after a success a failure starts a fresh round');
  });

  test('a malformed message goes to the DLQ with its reason; the batch’s other records still succeed', async () => {
    const { controller, seen } = testController('poison', async () => undefined);
    const { handler, metrics } = handlerFor(controller);
    await fx.send([clusterEvent({ kind: 'PersistentVolume', key: 'pv-before' })]);
    await fx.sqs.send(
      new (await import('@aws-sdk/client-sqs')).SendMessageCommand({
        QueueUrl: fx.queue.url,
        MessageBody: JSON.stringify({ v: 1, cluster: 'c1', kind: 'Pod', key: 'x' }),
        MessageGroupId: 'junk',
        MessageDeduplicationId: 'junk-1',
      }),
    );
    await fx.send([clusterEvent({ kind: 'PersistentVolume', key: 'pv-after' })]);
    const batch = await fx.receive(1);
    assert.equal(batch.Records.length, 3, 'three groups: one receive hands out all three');
    const response = await handler(batch);
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(seen.sort(), ['pv-after@10', 'pv-before@10']);
    assert.equal(metrics.total('PoisonMessages'), 1);
    const dead = await fx.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: fx.dlq.url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'] }),
    );
    assert.equal(dead.Messages?.length, 1);
    assert.equal(dead.Messages?.[0].Body, JSON.stringify({ v: 1, cluster: 'c1', kind: 'Pod', key: 'x' }));
    const reason = dead.Messages?.[0].MessageAttributes?.poisonReason?.StringValue ?? '';
    assert.match(reason, /kind/, `the reason names the bad field: ${reason}`);
    assert.match(reason, /uid|resourceVersion|observedAt|type/);
    // Not JSON at all is poison too.
    const notJson = await handler({ Records: [handBuiltRecord('nj', '{not json', 'junk-2')] });
    assert.deepEqual(notJson.batchItemFailures, []);
    assert.equal(metrics.total('PoisonMessages'), 2);
    // Without a DLQ to send it to, the record fails and the queue's own redrive takes it there.
    const { handler: noDlq } = handlerFor(controller, { dlqUrl: undefined });
    const saved = process.env.DLQ_URL;
    delete process.env.DLQ_URL;
    try {
      assert.deepEqual((await noDlq({ Records: [handBuiltRecord('nd', '{not json', 'junk-3')] })).batchItemFailures, [{ itemIdentifier: 'nd' }]);
    } finally {
      if (saved !== undefined) process.env.DLQ_URL = saved;
    }
  });

  test('FIFO: a failure in group A skips A’s later records but not B’s', async () => {
    const { controller, seen } = testController('fifo', async (request) => {
      if (request.key === 'ns/a' && request.event.resourceVersion === '1') throw new Error('A1 fails');
    });
    const { handler } = handlerFor(controller);
    const rec = (id: string, key: string, rv: string) =>
      handBuiltRecord(id, JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key, resourceVersion: rv })), `g-${key}`);
    const response = await handler({ Records: [rec('A1', 'ns/a', '1'), rec('B1', 'ns/b', '1'), rec('A2', 'ns/a', '2'), rec('B2', 'ns/b', '2')] });
    assert.deepEqual(response.batchItemFailures.map((f) => f.itemIdentifier), ['A1', 'A2']);
    assert.deepEqual(seen, ['ns/a@1', 'ns/b@1', 'ns/b@2'], 'A2 never ran; B ran in order');
  });

  test('FIFO: skipped records of a deferred group get the same short visibility (the group lock would hold the retry otherwise)', async () => {
    const { controller, seen } = testController('hold', async (request) => {
      if (request.event.resourceVersion === '1') throw new Error('first fails');
    });
    const { handler } = handlerFor(controller);
    // fauxqs hands out one message per group per receive, so send under two groups and relabel the records
    // into one group, as Lambda would deliver them: their receipt handles stay real.
    for (const [rv, group] of [['1', 'hold-x'], ['2', 'hold-y']] as const) {
      await fx.sqs.send(
        new (await import('@aws-sdk/client-sqs')).SendMessageCommand({
          QueueUrl: fx.queue.url,
          MessageBody: JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/hold', resourceVersion: rv })),
          MessageGroupId: group,
          MessageDeduplicationId: `hold-${rv}`,
        }),
      );
    }
    const batch = await fx.receive(1);
    assert.equal(batch.Records.length, 2);
    batch.Records.sort((a, b) => JSON.parse(a.body).resourceVersion.localeCompare(JSON.parse(b.body).resourceVersion));
    for (const record of batch.Records) record.attributes.MessageGroupId = 'hold';
    const before = Date.now();
    const response = await handler(batch);
    assert.deepEqual(response.batchItemFailures.map((f) => f.itemIdentifier), batch.Records.map((r) => r.messageId));
    assert.deepEqual(seen, ['ns/hold@1'], 'the second record was skipped, not run');
    const inflight = fx.sqsServer.inspectQueue(fx.queue.url.split('/').pop()!)?.messages.inflight ?? [];
    const deadlines = batch.Records.map((r) => inflight.find((m) => m.receiptHandle === r.receiptHandle)?.visibilityDeadline ?? 0);
    for (const deadline of deadlines) {
      // 1 s asked; anything well under the queue's 30 s proves it (slack for a loaded machine).
      assert.ok(deadline > 0 && deadline - before <= 15_000, `visible again after ~1 s, not the queue's 30 s (${deadline - before} ms)`);
    }
  });

  test('a 429 from the API server waits at least its Retry-After', async () => {
    const { ApiException } = await import('@kubernetes/client-node');
    const { controller } = testController('throttled', async () => {
      throw new ApiException(429, 'Too Many Requests', '{"kind":"Status","code":429}', { 'retry-after': '7' });
    });
    const { handler } = handlerFor(controller);
    await fx.send([clusterEvent({ kind: 'PersistentVolume', key: 'pv-throttled' })]);
    const batch = await fx.receive(1, 1);
    const before = Date.now();
    assert.equal((await handler(batch)).batchItemFailures.length, 1);
    const inflight = fx.sqsServer.inspectQueue(fx.queue.url.split('/').pop()!)?.messages.inflight ?? [];
    const deadline = inflight.find((m) => m.receiptHandle === batch.Records[0].receiptHandle)?.visibilityDeadline ?? 0;
    assert.ok(deadline - before >= 6_000 && deadline - before <= 20_000, `hidden for ~7 s (${deadline - before} ms), not the 5 ms backoff`);
    const record = await backoff.get({ controller: 'throttled', cluster: 'c1', kind: 'PersistentVolume', key: 'pv-throttled' });
    assert.equal(record?.failures, 1);
  });

  test('FIFO: every record failing is a partial response, not a thrown error', async () => {
    const { controller } = testController('allfail', async () => {
      throw new Error('down');
    });
    const { handler } = handlerFor(controller);
    const rec = (id: string, key: string) => handBuiltRecord(id, JSON.stringify(clusterEvent({ kind: 'PersistentVolume', key })), `g-${key}`);
    const response = await handler({ Records: [rec('X1', 'x'), rec('Y1', 'y')] });
    assert.deepEqual(response.batchItemFailures.map((f) => f.itemIdentifier), ['X1', 'Y1']);
  });

  test('nothing runs before the initial LIST of every kind is complete', async () => {
    const { controller, seen } = testController('gated', async () => undefined);
    const { handler, metrics } = handlerFor(controller);
    const event = clusterEvent({ cluster: 'c2', kind: 'PersistentVolumeClaim', key: 'ns/early' });
    const batch = { Records: [handBuiltRecord('g1', JSON.stringify(event), 'g-early')] };
    assert.equal((await handler(batch)).batchItemFailures.length, 1, 'no sync marker: waits');
    await fx.sync.markListComplete('c2', 'PersistentVolumeClaim', '5');
    assert.equal((await handler(batch)).batchItemFailures.length, 1, 'PVs are not listed yet: still waits');
    assert.deepEqual(seen, []);
    assert.equal(metrics.total('CacheNotSynced'), 2);
    await fx.sync.markListComplete('c2', 'PersistentVolume', '5');
    assert.deepEqual((await handler(batch)).batchItemFailures, []);
    assert.deepEqual(seen, ['ns/early@10']);
  });

  test('TerminalError: no retry, a Warning event and a metric', async () => {
    const { controller, seen } = testController('terminal', async () => {
      throw new TerminalError('spec.storageClassName is invalid');
    });
    const { handler, metrics, recorder } = handlerFor(controller);
    const batch = { Records: [handBuiltRecord('t1', JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/bad' })), 'g-bad')] };
    assert.deepEqual((await handler(batch)).batchItemFailures, []);
    assert.equal(seen.length, 1);
    assert.equal(metrics.total('TerminalErrors'), 1);
    assert.deepEqual(recorder.events.map((e) => [e.type, e.reason, e.message]), [['Warning', 'ReconcileFailed', 'spec.storageClassName is invalid']]);
    assert.equal(await backoff.get({ controller: 'terminal', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/bad' }), undefined);
  });

  test('requeueAfter and failures near maxReceiveCount park the key instead of risking the DLQ', async () => {
    const { controller } = testController('parker', async () => ({ requeueAfterMs: 30_000 }));
    const { handler, metrics } = handlerFor(controller, { maxReceiveCount: 3 });
    const event = clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/wait', uid: 'u-wait', resourceVersion: '42' });
    const record = handBuiltRecord('p1', JSON.stringify(event), 'g-wait');
    record.attributes.ApproximateReceiveCount = '2';
    const started = Date.now();
    assert.deepEqual((await handler({ Records: [record] })).batchItemFailures, [], 'parked: the message is deleted');
    const parked = await backoff.get({ controller: 'parker', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/wait' });
    assert.ok(parked?.dueAt && parked.dueAt >= started + 30_000);
    assert.equal(parked.failures, 0);
    assert.equal(parked.uid, 'u-wait');
    assert.equal(parked.resourceVersion, '42');
    assert.equal(metrics.total('Requeue'), 1);
    assert.equal(metrics.total('Parked'), 1);
    assert.ok((await backoff.listDue(parked.dueAt)).some((r) => r.pk === parked.pk));
  });

  test('backoff gate: an early REQUEUE waits without reconciling; a fresh watch event goes through', async () => {
    const { controller, seen } = testController('gate', async () => undefined);
    const { handler } = handlerFor(controller);
    const id = { controller: 'gate', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/gated' };
    for (let i = 0; i < 12; i++) await backoff.recordFailure(id, 'earlier'); // 5 ms · 2^11 ≈ 10 s ahead (held in visibility)
    const requeue = handBuiltRecord('r1', JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/gated', type: 'REQUEUE', controller: 'gate' })), 'g-gated');
    assert.equal((await handler({ Records: [requeue] })).batchItemFailures.length, 1);
    assert.deepEqual(seen, []);
    assert.equal((await backoff.get(id))?.failures, 12, 'waiting is not a failure');
    const fresh = handBuiltRecord('m1', JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/gated', resourceVersion: '11' })), 'g-gated');
    assert.deepEqual((await handler({ Records: [fresh] })).batchItemFailures, []);
    assert.deepEqual(seen, ['ns/gated@11']);
    assert.equal(await backoff.get(id), undefined);
  });

  test('the records of a batch read their keys’ state in one request, each its own: a waiting REQUEUE still waits, the others run on their own cache entries', async () => {
    const cached = new Map<string, number | undefined>();
    const controller: Controller = {
      name: 'shared',
      kinds: KINDS,
      async reconcile(request) {
        cached.set(request.key, request.cached?.rv);
      },
    };
    // The records' state reads: BatchGetItems asking for backoff records (the sync markers' read is another).
    const stateReads: number[] = [];
    const doc = {
      send: (command: { input: { RequestItems?: Record<string, { Keys: Array<{ pk: string }> }> } }) => {
        const keys = Object.values(command.input.RequestItems ?? {}).flatMap((t) => t.Keys);
        if (keys.some((k) => k.pk.startsWith('backoff#'))) stateReads.push(keys.length);
        return (fx.db.doc.send as (c: unknown) => Promise<unknown>)(command);
      },
    } as unknown as typeof fx.db.doc;
    const handler = createSqsHandler(controller, fx.handlerOptions({ maxReceiveCount: 10, metrics: new CapturedMetrics(), recorderFor: () => new MemoryEventRecorder(), doc }));
    const cache = new ObjectCache(fx.db.doc, fx.db.tables.cache, { indexer: indexAttributes });
    const keys = ['ns/s1', 'ns/s2', 'ns/s3', 'ns/s4'];
    for (const [i, key] of keys.entries()) {
      const [namespace, name] = key.split('/');
      if (i !== 3) await cache.put('c1', 'PersistentVolumeClaim', { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace, name, uid: `uid-${key}`, resourceVersion: String(20 + i) } });
    }
    const gated = { controller: 'shared', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/gated-in-batch' };
    for (let i = 0; i < 12; i++) await backoff.recordFailure(gated, 'earlier'); // due in ~10 s
    const records = [
      ...keys.map((key, i) => handBuiltRecord(`s${i}`, JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key })), `g-${key}`)),
      handBuiltRecord('s-gated', JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: gated.key, type: 'REQUEUE', controller: 'shared' })), 'g-gated-in-batch'),
    ];
    const response = await handler({ Records: records });
    assert.deepEqual(stateReads, [10], 'five records, one read of their ten keys (a backoff record and a cache entry each)');
    assert.deepEqual(response.batchItemFailures, [{ itemIdentifier: 's-gated' }], 'the early REQUEUE saw its own backoff record and waits');
    assert.deepEqual(Object.fromEntries(cached), { 'ns/s1': 20, 'ns/s2': 21, 'ns/s3': 22, 'ns/s4': undefined }, 'each record got its own cache entry (none for s4)');
    assert.equal((await backoff.get(gated))?.failures, 12);
    await backoff.clear(gated);
  });

  test('a record reads its state after the record before it in its group finished: it sees what that one wrote', async () => {
    const marker = 'test#same-group-marker';
    const saw: string[] = [];
    let written = 0;
    const controller: Controller = {
      name: 'ordered',
      kinds: KINDS,
      prefetch: () => ({ control: [marker] }),
      async reconcile(request) {
        saw.push(`${request.key}:${String(request.prefetched?.control.get(marker)?.n ?? null)}`);
        // Only the ordered group writes: what the other group's record reads does not depend on timing.
        if (request.key === 'ns/ordered') await fx.db.doc.send(new PutCommand({ TableName: fx.db.tables.control, Item: { pk: marker, n: ++written } }));
      },
    };
    const { handler } = handlerFor(controller);
    const records = [1, 2, 3].map((n) => handBuiltRecord(`o${n}`, JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/ordered', resourceVersion: String(10 + n) })), 'g-ordered'));
    // Another group beside them, reading the same item at the first moment.
    records.push(handBuiltRecord('o-other', JSON.stringify(clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/other-group' })), 'g-other'));
    assert.deepEqual((await handler({ Records: records })).batchItemFailures, []);
    assert.deepEqual(saw.slice(0, 2).sort(), ['ns/ordered:null', 'ns/other-group:null'], 'the first of each group read together, before any write');
    assert.deepEqual(saw.slice(2), ['ns/ordered:1', 'ns/ordered:2'], 'each later record of the group saw the write of the one before');
    await fx.db.doc.send(new DeleteCommand({ TableName: fx.db.tables.control, Key: { pk: marker } }));
  });

  /** A Lambda context whose remaining time is `remaining()`. */
  const lambdaContext = (remaining: () => number): Context =>
    ({ functionName: 'f', awsRequestId: 'r', getRemainingTimeInMillis: remaining }) as unknown as Context;

  test('too little Lambda time left: the record is deferred briefly, not started, and no failure is counted', async () => {
    // an invocation that started with 60 s; the first record of the group uses all but 3 s of it
    let remaining = 60_000;
    const { controller, seen } = testController('timeleft', async () => void (remaining = 3000));
    const { handler, metrics } = handlerFor(controller, { timeMarginMs: 5000 });
    await fx.send([clusterEvent({ kind: 'PersistentVolume', key: 'pv-late' })]);
    const late = (await fx.receive(1, 1)).Records[0];
    const earlier = handBuiltRecord('slow', JSON.stringify(clusterEvent({ kind: 'PersistentVolume', key: 'pv-late', resourceVersion: '9' })), late.attributes.MessageGroupId!);
    const before = Date.now();
    const response = await handler({ Records: [earlier, late] }, lambdaContext(() => remaining));
    assert.deepEqual(response.batchItemFailures.map((f) => f.itemIdentifier), [late.messageId]);
    assert.deepEqual(seen, ['pv-late@9'], 'the later record of the group is not started');
    assert.equal(metrics.total('DeferredForTime'), 1);
    const inflight = fx.sqsServer.inspectQueue(fx.queue.url.split('/').pop()!)?.messages.inflight ?? [];
    const deadline = inflight.find((m) => m.receiptHandle === late.receiptHandle)?.visibilityDeadline ?? 0;
    assert.ok(deadline > 0 && deadline - before <= 15_000, `visible again soon, not after the queue's 30 s (${deadline - before} ms)`);
    assert.equal(await backoff.get({ controller: 'timeleft', cluster: 'c1', kind: 'PersistentVolume', key: 'pv-late' }), undefined);
    const again = handBuiltRecord('late2', JSON.stringify(clusterEvent({ kind: 'PersistentVolume', key: 'pv-late2' })), 'g-late2');
    assert.deepEqual((await handler({ Records: [again] }, lambdaContext(() => 25_000))).batchItemFailures, [], 'with time left it runs');
    assert.deepEqual(seen, ['pv-late@9', 'pv-late2@10']);
  });

  test('an API budget wait that would outlast the Lambda is a short requeue, not a failure', async () => {
    const budget = new ApiBudget({ doc: fx.db.doc, table: fx.db.tables.control, cluster: 'c1', qps: 0.01, burst: 1, maxWaitMs: 600_000 });
    await budget.take(); // the bucket is empty now; the next token is 100 s away
    const { controller, seen } = testController('budgeted', async () => {
      await budget.take();
    });
    const { handler, metrics } = handlerFor(controller, { timeMarginMs: 5000 });
    const record = handBuiltRecord('b1', JSON.stringify(clusterEvent({ kind: 'PersistentVolume', key: 'pv-budget' })), 'g-budget');
    const response = await handler({ Records: [record] }, lambdaContext(() => 30_000));
    assert.deepEqual(response.batchItemFailures.map((f) => f.itemIdentifier), ['b1']);
    assert.equal(seen.length, 1);
    assert.equal(metrics.total('BudgetWait'), 1);
    assert.equal(metrics.total('ReconcileError'), 0);
    assert.equal(await backoff.get({ controller: 'budgeted', cluster: 'c1', kind: 'PersistentVolume', key: 'pv-budget' }), undefined);
  });

  test('a long backoff is parked, not held in the FIFO group: a fresh event for the key is reconciled promptly', async () => {
    const { controller, seen } = testController('deleter', async (request) => {
      if (request.event.type !== 'DELETED') throw new Error('still provisioning');
    });
    const { handler, metrics } = handlerFor(controller);
    const id = { controller: 'deleter', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/gone' };
    for (let i = 0; i < 13; i++) await backoff.recordFailure(id, 'earlier'); // the next failure waits 5 ms · 2^13 ≈ 41 s
    await fx.send([clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/gone', resourceVersion: '20' })]);
    const first = await fx.receive(1, 1);
    assert.equal(first.Records.length, 1);
    const response = await handler(first);
    assert.deepEqual(response.batchItemFailures, [], 'the 41 s wait is parked: the message is deleted');
    await fx.settle(first, response);
    assert.equal(metrics.total('Parked'), 1);
    const parked = await backoff.get(id);
    assert.equal(parked?.failures, 14);
    assert.ok(parked?.dueAt, 'the resync function will re-enqueue it when due');
    await fx.send([clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/gone', type: 'DELETED', resourceVersion: '21' })]);
    const fresh = await fx.receive(1, 1);
    assert.equal(fresh.Records.length, 1, 'the object’s FIFO group is not locked behind the wait');
    assert.deepEqual((await handler(fresh)).batchItemFailures, []);
    assert.deepEqual(seen, ['ns/gone@20', 'ns/gone@21']);
    assert.equal(await backoff.get(id), undefined);
  });

  test('a cluster with no CLUSTERS entry is terminal: dropped with a metric naming the cluster, never retried', async () => {
    const seen: string[] = [];
    const controller: Controller<RuntimeContext> = {
      name: 'nocluster',
      kinds: KINDS,
      async reconcile(request, ctx) {
        seen.push(request.cluster);
        await coreV1(ctx.kube, request.cluster);
      },
    };
    const kube = new KubeClients({ env: { CLUSTERS: JSON.stringify({ other: { kubeconfig: 'apiVersion: v1' } }) } });
    const metrics = new CapturedMetrics();
    const recorder = new MemoryEventRecorder();
    const handler = createSqsHandler(controller, {
      doc: fx.db.doc,
      tables: fx.db.tables,
      sqs: fx.sqs,
      queueUrl: fx.queue.url,
      dlqUrl: fx.dlq.url,
      maxReceiveCount: 10,
      logger: silentLogger(),
      metrics,
      recorderFor: () => recorder,
      kube,
    });
    const record = handBuiltRecord('u1', JSON.stringify(clusterEvent({ kind: 'PersistentVolume', key: 'pv-nowhere' })), 'g-nowhere');
    assert.deepEqual((await handler({ Records: [record] })).batchItemFailures, [], 'dropped, not retried');
    assert.deepEqual(seen, ['c1']);
    assert.equal(metrics.total('UnknownCluster'), 1);
    assert.equal(metrics.total('ReconcileError'), 0);
    const blob = metrics.blobs.find((b) => 'UnknownCluster' in b);
    assert.equal(blob?.cluster, 'c1', 'the metric names the cluster');
    assert.equal(await backoff.get({ controller: 'nocluster', cluster: 'c1', kind: 'PersistentVolume', key: 'pv-nowhere' }), undefined);
    assert.ok(metrics.blobs.every((b) => b === blob || !('cluster' in b)), 'the cluster dimension does not leak into other metrics');
    assert.deepEqual((await handler({ Records: [handBuiltRecord('u2', JSON.stringify(clusterEvent({ kind: 'PersistentVolume', key: 'pv-2' })), 'g-2')] })).batchItemFailures, []);
    assert.ok(metrics.blobs.filter((b) => 'cluster' in b).every((b) => 'UnknownCluster' in b));
  });
});
