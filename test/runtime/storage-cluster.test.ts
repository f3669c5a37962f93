/**
 * The runtime marks each record's cluster for the storage client (lib/storage/clusters.ts): everything a
 * reconcile calls, however deep, sees `storageCluster()` = the record's cluster. The soak found a deployment
 * serving two clusters needs it (issue #13); before, only its own sandbox host marked it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import type { Controller } from '../../lib/runtime/reconcile.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { storageCluster } from '../../lib/storage/clusters.ts';
import { pollClusters } from '../../lib/shared-volume/controller.ts';
import { CapturedMetrics, clusterEvent, startRuntimeFixture, type RuntimeFixture } from './harness.ts';

describe('runtime: the storage cluster of a record', () => {
  let fx: RuntimeFixture;
  before(async () => {
    fx = await startRuntimeFixture();
  });
  after(() => fx.stop());

  test('each reconcile runs marked with its record\'s cluster, records of two clusters in one batch', async () => {
    const seen: string[] = [];
    const controller: Controller = {
      name: 'storage-cluster',
      kinds: ['Node'],
      async reconcile(request) {
        await new Promise((r) => setTimeout(r, 5)); // the mark survives awaits
        seen.push(`${request.cluster}:${storageCluster() ?? 'none'}`);
      },
    };
    const handler = createSqsHandler(controller, fx.handlerOptions({ metrics: new CapturedMetrics(), recorderFor: () => new MemoryEventRecorder(), requiresSynced: [] }));
    await fx.send([clusterEvent({ kind: 'Node', key: 'n1', cluster: 'a' }), clusterEvent({ kind: 'Node', key: 'n1', cluster: 'b' })]);
    const batch = await fx.receive(5, 10);
    assert.equal(batch.Records.length, 2);
    const response = await handler(batch);
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(seen.sort(), ['a:a', 'b:b']);
    assert.equal(storageCluster(), undefined, 'nothing marked outside a reconcile');
  });

  test('a scheduled shared-volume poll that names no cluster covers every CLUSTERS entry, else CLUSTER_ID', () => {
    assert.deepEqual(pollClusters({ CLUSTERS: JSON.stringify({ a: { kubeconfig: '/a' }, b: { kubeconfig: '/b' } }), CLUSTER_ID: 'a' }), ['a', 'b']);
    assert.deepEqual(pollClusters({ CLUSTER_ID: 'local' }), ['local']);
    assert.deepEqual(pollClusters({ CLUSTERS: '' }), ['default']);
    assert.throws(() => pollClusters({ CLUSTERS: '{' }), /CLUSTERS is not JSON/);
  });
});
