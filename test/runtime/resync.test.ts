import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import { ClusterEventSchema, messageGroupId } from '../../lib/runtime/message.ts';
import type { Controller } from '../../lib/runtime/reconcile.ts';
import { binderResync } from '../../lib/binder/resync.ts';
import type { ResyncSource } from '../../lib/resync/source.ts';
import { runResync } from '../../lib/resync/run.ts';
import { BackoffStore } from '../../lib/state/backoff.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { queueUrls, resyncSources } from '../../functions/resync.ts';
import { CapturedMetrics, silentLogger, startRuntimeFixture, type RuntimeFixture } from './harness.ts';

describe('resync: parked retries and level-triggered sources → REQUEUE messages', () => {
  let fx: RuntimeFixture;
  let backoff: BackoffStore;
  before(async () => {
    fx = await startRuntimeFixture();
    backoff = new BackoffStore({ doc: fx.db.doc, table: fx.db.tables.control });
    await fx.markSynced('c1', ['PersistentVolumeClaim', 'PersistentVolume']);
  });
  after(() => fx.stop());

  const drain = async () => {
    const bodies = [];
    for (;;) {
      const out = await fx.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: fx.queue.url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] }),
      );
      if (!out.Messages?.length) break;
      for (const m of out.Messages) bodies.push({ event: ClusterEventSchema.parse(JSON.parse(m.Body ?? '')), group: m.Attributes?.MessageGroupId });
    }
    return bodies;
  };

  test('due parked keys are re-enqueued once; registered sources re-enqueue what they list from the cache', async () => {
    const now = Date.now();
    const due = { controller: 'binder', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/due' };
    const later = { ...due, key: 'ns/later' };
    await backoff.recordFailure(due, 'boom', { uid: 'u-due', resourceVersion: '12' });
    await backoff.park(due, now - 1);
    await backoff.park(later, now + 3_600_000, { uid: 'u-later', resourceVersion: '3' });

    // A test source: every claim in the cache whose phase is Pending.
    const cache = new ObjectCache(fx.db.doc, fx.db.tables.cache, { indexer: indexAttributes });
    for (const [name, phase, rv] of [['a', 'Pending', '20'], ['b', 'Bound', '21'], ['c', 'Pending', '22']] as const) {
      await cache.put('c1', 'PersistentVolumeClaim', {
        metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv },
        status: { phase },
      });
    }
    const pendingClaims: ResyncSource = async function* (cluster, objects) {
      for (const name of ['a', 'b', 'c']) {
        const entry = await objects.get(cluster, 'PersistentVolumeClaim', `ns/${name}`);
        if (entry && !entry.deleted && entry.object.status?.phase === 'Pending') {
          yield { kind: 'PersistentVolumeClaim', key: `ns/${name}`, uid: entry.uid, resourceVersion: String(entry.rv) };
        }
      }
    };
    const report = await runResync({
      doc: fx.db.doc,
      tables: fx.db.tables,
      sqs: fx.sqs,
      queueUrls: { binder: fx.queue.url },
      clusters: ['c1'],
      sources: new Map([['binder', pendingClaims]]),
    });
    assert.deepEqual(report, { due: 1, resynced: { binder: 2 }, skipped: 0, errors: [] });
    const sent = await drain();
    const summary = sent.map(({ event }) => [event.type, event.controller, event.key, event.uid, event.resourceVersion]).sort();
    assert.deepEqual(summary, [
      ['REQUEUE', 'binder', 'ns/a', 'uid-a', '20'],
      ['REQUEUE', 'binder', 'ns/c', 'uid-c', '22'],
      ['REQUEUE', 'binder', 'ns/due', 'u-due', '12'],
    ]);
    for (const { event, group } of sent) assert.equal(group, messageGroupId(event.cluster, event.kind, event.key));
    // Taken off the due index, but the failure count survives for the next attempt's backoff.
    assert.equal((await backoff.listDue(now + 1000)).some((r) => r.key === 'ns/due'), false);
    assert.equal((await backoff.get(due))?.failures, 1);

    const again = await runResync({ doc: fx.db.doc, tables: fx.db.tables, sqs: fx.sqs, queueUrls: { binder: fx.queue.url }, clusters: ['c1'], sources: new Map() });
    assert.equal(again.due, 0, 'a second run does not send the same parked key again');
    assert.equal((await drain()).length, 0);
  });

  test('a reminder (a scoped park with rearms) is sent with its own UID and parked again until its rearms run out', async () => {
    const now = Date.now();
    const id = { controller: 'binder', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/reminded' };
    const scoped = { ...id, scope: 'u-earlier' };
    await backoff.park(scoped, now - 1, { uid: 'u-earlier' }, { rearms: 2, rearmEveryMs: 60_000 });
    const sweep = (at: number) => runResync({ doc: fx.db.doc, tables: fx.db.tables, sqs: fx.sqs, queueUrls: { binder: fx.queue.url }, clusters: ['c1'], sources: new Map(), now: () => at });
    const sentAt: number[] = [];
    for (let run = 0, at = now; run < 4; run++, at += 60_000) {
      const report = await sweep(at);
      // Received and deleted, as the consumer would (a FIFO group's next message waits for that).
      const sent = [];
      for (;;) {
        const out = await fx.sqs.send(new ReceiveMessageCommand({ QueueUrl: fx.queue.url, MaxNumberOfMessages: 10 }));
        if (!out.Messages?.length) break;
        for (const m of out.Messages) {
          await fx.sqs.send(new DeleteMessageCommand({ QueueUrl: fx.queue.url, ReceiptHandle: m.ReceiptHandle! }));
          const event = ClusterEventSchema.parse(JSON.parse(m.Body ?? ''));
          if (event.key === 'ns/reminded') sent.push({ event });
        }
      }
      if (sent.length) {
        sentAt.push(at);
        assert.deepEqual(sent.map(({ event }) => [event.type, event.key, event.uid]), [['REQUEUE', 'ns/reminded', 'u-earlier']]);
        assert.equal(report.due, 1);
      }
      const record = await backoff.get(scoped);
      assert.equal(record?.dueAt, run < 2 ? at + 60_000 : undefined, run < 2 ? 'parked again a minute on' : 'off the due index once its rearms ran out');
    }
    assert.deepEqual(sentAt, [now, now + 60_000, now + 120_000], 'sent, then twice more');
    // A park without rearming (the runtime's) leaves none behind.
    await backoff.park(scoped, now + 1, { uid: 'u-earlier' }, { rearms: 5, rearmEveryMs: 60_000 });
    await backoff.park(scoped, now + 1, { uid: 'u-earlier' });
    assert.equal((await backoff.get(scoped))?.rearms, undefined);
    await backoff.clear(scoped);
  });

  test('a parked requeueAfter comes back through resync and is reconciled by the handler', async () => {
    let calls = 0;
    const controller: Controller = {
      name: 'binder',
      kinds: ['PersistentVolumeClaim', 'PersistentVolume'],
      async reconcile() {
        calls++;
        return calls === 1 ? { requeueAfterMs: 1 } : undefined;
      },
    };
    const handler = createSqsHandler(controller, {
      doc: fx.db.doc,
      tables: fx.db.tables,
      sqs: fx.sqs,
      queueUrl: fx.queue.url,
      dlqUrl: fx.dlq.url,
      maxReceiveCount: 2, // no receive to spare: every wait is parked
      logger: silentLogger(),
      metrics: new CapturedMetrics(),
    });
    await fx.send([{ v: 1, cluster: 'c1', kind: 'PersistentVolume', type: 'ADDED', key: 'pv-1', uid: 'u-pv', resourceVersion: '30', observedAt: new Date().toISOString() }]);
    const first = await fx.receive(1);
    const response = await handler(first);
    assert.deepEqual(response.batchItemFailures, []);
    await fx.settle(first, response);
    assert.equal(calls, 1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const report = await runResync({ doc: fx.db.doc, tables: fx.db.tables, sqs: fx.sqs, queueUrls: { binder: fx.queue.url }, clusters: ['c1'], sources: new Map() });
    assert.equal(report.due, 1);
    const batch = await fx.receive(1);
    assert.equal(batch.Records.length, 1);
    assert.equal(JSON.parse(batch.Records[0].body).type, 'REQUEUE');
    assert.deepEqual((await handler(batch)).batchItemFailures, []);
    assert.equal(calls, 2);
    assert.equal(await backoff.get({ controller: 'binder', cluster: 'c1', kind: 'PersistentVolume', key: 'pv-1' }), undefined);
  });

  test('the resync function wires each controller\'s exported source; environment helpers', () => {
    assert.deepEqual([...resyncSources({}).keys()], ['binder']);
    assert.equal(resyncSources({}).get('binder'), binderResync);
    const both = resyncSources({ PROVISIONER_QUEUE_URL: 'http://q/provisioner.fifo' });
    assert.deepEqual([...both.keys()], ['binder', 'provisioner']);
    assert.equal(typeof both.get('provisioner'), 'function');
    assert.deepEqual(queueUrls({ BINDER_QUEUE_URL: 'http://q/binder.fifo' }), {
      binder: 'http://q/binder.fifo',
      provisioner: undefined,
      'shared-volume': undefined,
      'label-sync': undefined,
    });
  });
});
