/**
 * The provisioner controller behind the shared SQS FIFO runtime (fauxqs delivering real messages):
 * a claim event provisions the claim; a failing backend fails the record with upstream's first
 * backoff step (15 s) recorded for the claim's key.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Logger } from '@aws-lambda-powertools/logger';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import { MESSAGE_VERSION, type ClusterEvent } from '../../lib/runtime/message.ts';
import { createMetrics } from '../../lib/runtime/observability.ts';
import { BackoffStore } from '../../lib/state/backoff.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { createProvisionerController, runtimeOptionsFor } from '../../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { StorageOSProvisioner, STORAGEOS_DRIVER } from '../../lib/provisioner/provisioners/storageos.ts';
import { startRuntimeFixture, type RuntimeFixture } from '../runtime/harness.ts';
import { CLUSTER, startProvisionerStack, type ProvisionerStack } from './stack.ts';

describe('provisioner behind the SQS runtime', () => {
  let stack: ProvisionerStack;
  let fixture: RuntimeFixture;
  let handler: ReturnType<typeof createSqsHandler>;

  before(async () => {
    stack = await startProvisionerStack();
    fixture = await startRuntimeFixture();
    const sync = new SyncMarkers(stack.db.doc, stack.db.tables.control);
    for (const kind of ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment']) await sync.markListComplete(CLUSTER, kind, '1');
    await stack.createClass('storageos', STORAGEOS_DRIVER, { reclaimPolicy: 'Delete' });
    const options = provisionerOptionsFromEnv({});
    handler = createSqsHandler(createProvisionerController({ options, provisioner: new StorageOSProvisioner(stack.storage) }), {
      ...runtimeOptionsFor(options),
      doc: stack.db.doc, tables: stack.db.tables, sqs: fixture.sqs, queueUrl: fixture.queue.url, dlqUrl: fixture.dlq.url,
      kube: stack.clients, recorderFor: () => stack.recorder,
      logger: new Logger({ serviceName: 'claimflow-test', logLevel: 'SILENT' }), metrics: createMetrics('provisioner'),
    });
  });
  after(async () => {
    await fixture.stop();
    await stack.stop();
  });

  const eventFor = (claim: { metadata: { name?: string; uid?: string; resourceVersion?: string } }): ClusterEvent => ({
    v: MESSAGE_VERSION, cluster: CLUSTER, kind: 'PersistentVolumeClaim', type: 'ADDED', key: `default/${claim.metadata.name}`,
    uid: claim.metadata.uid!, resourceVersion: claim.metadata.resourceVersion!, observedAt: new Date().toISOString(),
  });

  it('a claim event provisions the claim and the record succeeds', async () => {
    const claim = await stack.createClaim('via-queue', 'storageos', STORAGEOS_DRIVER);
    await fixture.send([eventFor(claim)]);
    const batch = await fixture.receive(1);
    assert.equal(batch.Records.length, 1);
    const response = await handler(batch);
    assert.deepEqual(response.batchItemFailures, []);
    const pv = await stack.core.readPersistentVolume({ name: `pvc-${claim.metadata.uid}` });
    assert.equal(pv.spec!.csi!.driver, STORAGEOS_DRIVER);
  });

  it('a failing backend fails the record and backs the key off 15 s (upstream first step)', async () => {
    const claim = await stack.createClaim('via-queue-down', 'storageos', STORAGEOS_DRIVER);
    stack.storageApi.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', status: 503, times: Infinity });
    try {
      await fixture.send([eventFor(claim)]);
      const batch = await fixture.receive(1);
      const before = Date.now();
      const response = await handler(batch);
      assert.deepEqual(response.batchItemFailures.map((f) => f.itemIdentifier), [batch.Records[0].messageId]);
      const backoff = await new BackoffStore({ doc: stack.db.doc, table: stack.db.tables.control }).get({ controller: 'provisioner', cluster: CLUSTER, kind: 'PersistentVolumeClaim', key: 'default/via-queue-down' });
      assert.equal(backoff?.failures, 1);
      assert.ok(backoff!.nextAttemptAt >= before + 15_000 && backoff!.nextAttemptAt <= Date.now() + 15_000);
      assert.ok(stack.recorder.events.some((e) => e.object.metadata?.name === 'via-queue-down' && e.reason === 'ProvisioningFailed'));
    } finally {
      stack.storageApi.faults.clear();
    }
  });
});
