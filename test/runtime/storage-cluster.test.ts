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
import { clusterIdsFromEnv } from '../../lib/kube/client.ts';
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

  test('a scheduled run that names no cluster (resync, label-sync resync, shared-volume poll) covers every CLUSTERS entry, else CLUSTER_ID', () => {
    const rows: Array<[NodeJS.ProcessEnv, string[] | RegExp]> = [
      [{ CLUSTERS: JSON.stringify({ a: { kubeconfig: '/a' }, b: { kubeconfig: '/b' } }), CLUSTER_ID: 'a' }, ['a', 'b']],
      [{ CLUSTERS: '{"prod":{"eks":{"name":"p"}},"dev":{"kubeconfig":"/k"}}' }, ['prod', 'dev']],
      [{ CLUSTER_ID: 'local' }, ['local']],
      [{ CLUSTERS: '', CLUSTER_ID: 'c1' }, ['c1']],
      [{ CLUSTERS: '  ' }, ['default']],
      [{ CLUSTERS: '{}', CLUSTER_ID: 'c1' }, ['c1']],
      [{}, ['default']],
      [{ CLUSTERS: '{' }, /CLUSTERS is not JSON/],
      [{ CLUSTERS: '{"a":{"nothing":1}}' }, /CLUSTERS is invalid/],
    ];
    for (const [env, want] of rows) {
      if (want instanceof RegExp) assert.throws(() => clusterIdsFromEnv(env), want, JSON.stringify(env));
      else assert.deepEqual(clusterIdsFromEnv(env), want, JSON.stringify(env));
    }
  });
});
