import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { KubeClients } from '../../lib/kube/client.ts';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import type { Controller } from '../../lib/runtime/reconcile.ts';
import { CapturedMetrics, clusterEvent, silentLogger, startRuntimeFixture, type RuntimeFixture } from './harness.ts';

let kube: KubeApi;
let fx: RuntimeFixture;
let dir: string;
before(async () => {
  [kube, fx] = await Promise.all([startKubeApi({ port: 0 }), startRuntimeFixture({ maxReceiveCount: 10 })]);
  dir = await mkdtemp(join(tmpdir(), 'claimflow-threshold-'));
  await kube.writeKubeconfig(join(dir, 'kubeconfig'));
  await fx.markSynced('c1', ['PersistentVolumeClaim']);
});
after(async () => {
  await Promise.all([kube.stop(), fx.stop(), rm(dir, { recursive: true, force: true })]);
});

test('threshold through the default wiring: a Warning Event on the claim in the API server, and the metric', async () => {
  const core = new KubeConfig();
  core.loadFromString(kube.kubeconfig());
  const api = core.makeApiClient(CoreV1Api);
  const pvc = await api.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: {
      metadata: { name: 'stuck' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'gold' },
    },
  });
  let calls = 0;
  const controller: Controller = {
    name: 'provisioner',
    kinds: ['PersistentVolumeClaim'],
    async reconcile() {
      calls++;
      throw new Error('backend unavailable');
    },
  };
  const metrics = new CapturedMetrics();
  const handler = createSqsHandler(controller, {
    doc: fx.db.doc,
    tables: fx.db.tables,
    sqs: fx.sqs,
    queueUrl: fx.queue.url,
    dlqUrl: fx.dlq.url,
    maxFailures: 2,
    maxReceiveCount: 10,
    component: 'claimflow-provisioner',
    logger: silentLogger(),
    metrics,
    kube: new KubeClients({ env: { KUBECONFIG: join(dir, 'kubeconfig') } }),
  });
  await fx.send([clusterEvent({ kind: 'PersistentVolumeClaim', key: 'default/stuck', uid: pvc.metadata?.uid ?? '', object: pvc as unknown as Record<string, unknown> })]);
  const first = await fx.receive(5, 1);
  assert.equal((await handler(first)).batchItemFailures.length, 1, 'first failure: retry');
  const second = await fx.receive(5, 1);
  assert.equal(second.Records[0]?.attributes.ApproximateReceiveCount, '2');
  const response = await handler(second);
  assert.deepEqual(response.batchItemFailures, [], 'second failure reaches maxFailures: the message is let go');
  await fx.settle(second, response);
  assert.equal(calls, 2);
  assert.equal(metrics.total('ThresholdExceeded'), 1);
  const events = (await api.listNamespacedEvent({ namespace: 'default' })).items.filter((e) => e.involvedObject.name === 'stuck');
  assert.equal(events.length, 1);
  assert.equal(events[0].type, 'Warning');
  assert.equal(events[0].reason, 'RetryThresholdExceeded');
  assert.equal(events[0].source?.component, 'claimflow-provisioner');
  assert.equal(events[0].involvedObject.uid, pvc.metadata?.uid);
  assert.match(events[0].message ?? '', /giving up after 2 failed attempts: backend unavailable/);
  assert.equal((await fx.receive(0)).Records.length, 0, 'no further delivery');
});
