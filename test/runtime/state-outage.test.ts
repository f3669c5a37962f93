/**
 * DynamoDB unavailable (issue #13's minute-long outage, alone): a record whose backoff record or cache entry
 * cannot be read comes back within seconds, not after the queue's visibility timeout (30 s here, 3–12 minutes
 * as shipped), and is reconciled once the state store answers again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import type { Controller } from '../../lib/runtime/reconcile.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { createDocumentClient } from '../../lib/state/client.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynalite.ts';
import { CapturedMetrics, clusterEvent, startRuntimeFixture, type RuntimeFixture } from './harness.ts';

describe('runtime: the state store unavailable', () => {
  let fx: RuntimeFixture;
  before(async () => {
    fx = await startRuntimeFixture({ maxReceiveCount: 10 });
    await fx.markSynced('c1', ['PersistentVolumeClaim']);
  });
  after(() => fx.stop());

  test('a record that cannot read its state is retried within seconds and reconciled when DynamoDB is back', async () => {
    let down = true;
    const doc = createDocumentClient({ endpoint: fx.db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
    doc.middlewareStack.add(
      (next) => async (args) => {
        if (down) throw Object.assign(new Error('injected: DynamoDB unavailable'), { name: 'InternalServerError', $metadata: {} });
        return next(args);
      },
      { step: 'initialize', name: 'outage' },
    );
    const seen: string[] = [];
    const controller: Controller = {
      name: 'outage',
      kinds: ['PersistentVolumeClaim'],
      async reconcile(request) {
        seen.push(request.key);
      },
    };
    const metrics = new CapturedMetrics();
    const handler = createSqsHandler(controller, fx.handlerOptions({ doc, maxReceiveCount: 10, metrics, recorderFor: () => new MemoryEventRecorder(), requiresSynced: [] }));
    await fx.send([clusterEvent({ kind: 'PersistentVolumeClaim', key: 'ns/outage' })]);

    const first = await fx.receive(5, 1);
    assert.equal(first.Records.length, 1);
    const before = Date.now();
    const response = await handler(first);
    assert.deepEqual(response.batchItemFailures, [{ itemIdentifier: first.Records[0].messageId }], 'reported failed, not deleted');
    assert.deepEqual(seen, [], 'no reconcile without its state');
    const inflight = fx.sqsServer.inspectQueue(fx.queue.url.split('/').pop()!)?.messages.inflight ?? [];
    const deadline = inflight.find((m) => m.receiptHandle === first.Records[0].receiptHandle)?.visibilityDeadline ?? 0;
    // 2 s asked at the first receive; well under the queue's 30 s (slack for a loaded machine)
    assert.ok(deadline > 0 && deadline - before <= 10_000, `visible again after ~2 s, not the queue's 30 s (${deadline - before} ms)`);
    assert.equal(metrics.total('InfrastructureRetry'), 1);

    down = false;
    const second = await fx.receive(15, 1);
    assert.equal(second.Records.length, 1, 'redelivered within seconds');
    assert.equal(second.Records[0].attributes.ApproximateReceiveCount, '2');
    const ok = await handler(second);
    assert.deepEqual(ok.batchItemFailures, []);
    await fx.settle(second, ok);
    assert.deepEqual(seen, ['ns/outage']);
    doc.destroy();
  });
});
