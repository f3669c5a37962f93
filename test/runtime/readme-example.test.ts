/**
 * The example of lib/runtime/README.md, run: the `hello` controller (the README's code, word for word)
 * behind createSqsHandler, against dynalite and fauxqs. A Node in the cache is looked at and parked for a
 * minute (longer than a visibility wait may hold its group); a Node gone from the cache is done.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Controller } from '../../lib/runtime/reconcile.ts';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import { BackoffStore } from '../../lib/state/backoff.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { CapturedMetrics, clusterEvent, silentLogger, startRuntimeFixture, type RuntimeFixture } from './harness.ts';

export const hello: Controller = {
  name: 'hello',
  kinds: ['Node'],
  async reconcile(request) {
    if (!request.cached || request.cached.deleted) return; // gone: nothing to do
    console.log(`node ${request.key} is at resourceVersion ${request.cached.rv}`);
    return { requeueAfterMs: 60_000 }; // look again in a minute
  },
};

let fx: RuntimeFixture;
before(async () => {
  fx = await startRuntimeFixture();
  await fx.markSynced('c1', ['Node']);
});
after(() => fx.stop());

test('the README example: a cached Node is looked at again in a minute, an unknown one is done', async () => {
  const metrics = new CapturedMetrics();
  const handler = createSqsHandler(hello, {
    doc: fx.db.doc, tables: fx.db.tables, sqs: fx.sqs, queueUrl: fx.queue.url, dlqUrl: fx.dlq.url, logger: silentLogger(), metrics,
  });
  await new ObjectCache(fx.db.doc, fx.db.tables.cache, { indexer: indexAttributes }).put('c1', 'Node', { metadata: { name: 'n1', uid: 'u-n1', resourceVersion: '12' } });
  await fx.send([clusterEvent({ kind: 'Node', key: 'n1', uid: 'u-n1', resourceVersion: '12' }), clusterEvent({ kind: 'Node', key: 'n2', uid: 'u-n2' })]);
  const batch = await fx.receive(5);
  assert.equal(batch.Records.length, 2);
  const response = await handler(batch);
  assert.deepEqual(response.batchItemFailures, []);
  const parked = await new BackoffStore({ doc: fx.db.doc, table: fx.db.tables.control }).get({ controller: 'hello', cluster: 'c1', kind: 'Node', key: 'n1' });
  assert.ok(parked?.dueAt, 'n1 is parked until due');
  assert.equal(metrics.total('ReconcileSuccess'), 2);
  assert.equal(metrics.total('Requeue'), 1);
  assert.equal(metrics.total('Parked'), 1);
});
