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
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { CONTROLLER_NAME, createProvisionerController, provisioningLeaseName, runtimeOptionsFor } from '../../lib/provisioner/controller.ts';
import { ClaimRecords } from '../../lib/provisioner/records.ts';
import { runResync } from '../../lib/resync/run.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import { backoffPk, leasePk } from '../../lib/state/schema.ts';
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
  it('an earlier claim of the name whose finishing was parked is finished by its reminder, after the new claim\'s success cleared the key', async () => {
    const db = stack.db;
    const key = 'default/via-queue-again';
    const first = await stack.createClaim('via-queue-again', 'storageos', STORAGEOS_DRIVER);
    // The earlier claim was being provisioned in the background by an invocation that died holding its
    // lease (missed renewals: waited out in one step, a park).
    await new ClaimRecords(db.doc, db.tables.control).apply(CLUSTER, first.metadata.uid!, { inProgress: first });
    const leaseName = provisioningLeaseName(CLUSTER, first.metadata.uid!);
    await new LeaseStore({ doc: db.doc, table: db.tables.control }).acquire(leaseName, 'dead-invocation', 5 * 60_000);
    const setLeaseUntil = (until: number) => db.doc.send(new UpdateCommand({
      TableName: db.tables.control, Key: { pk: leasePk(leaseName) }, UpdateExpression: 'SET leaseUntil = :until', ExpressionAttributeValues: { ':until': until },
    }));
    await setLeaseUntil(Date.now() + 60_000);
    await stack.core.deleteNamespacedPersistentVolumeClaim({ name: 'via-queue-again', namespace: 'default' });
    const second = await stack.createClaim('via-queue-again', 'storageos', STORAGEOS_DRIVER);
    const requeueOf = (uid: string): ClusterEvent => ({ ...eventFor(second), type: 'REQUEUE', uid, resourceVersion: '0' });

    // A message with the earlier UID: the runtime parks the key, the controller the reminder.
    // One batch through the handler, then what the event source mapping does with it.
    const deliver = async () => {
      const batch = await fixture.receive(1);
      assert.equal(batch.Records.length, 1);
      const response = await handler(batch);
      assert.deepEqual(response.batchItemFailures, []);
      await fixture.settle(batch, response);
      return batch;
    };
    await fixture.send([requeueOf(first.metadata.uid!)]);
    await deliver();
    const backoff = new BackoffStore({ doc: db.doc, table: db.tables.control });
    const keyId = { controller: CONTROLLER_NAME, cluster: CLUSTER, kind: 'PersistentVolumeClaim', key };
    const parked = await backoff.get(keyId);
    assert.ok(parked?.dueAt !== undefined && parked.uid === first.metadata.uid, 'the runtime parked the key with the earlier UID');
    const reminder = await backoff.get({ ...keyId, scope: first.metadata.uid! });
    assert.ok(reminder?.dueAt !== undefined && reminder.dueAt > parked.dueAt, 'the reminder comes after the runtime\'s park');

    // The new claim's own message, once the key's wait is over, provisions it; its success clears the key.
    await db.doc.send(new UpdateCommand({ TableName: db.tables.control, Key: { pk: backoffPk(CONTROLLER_NAME, CLUSTER, 'PersistentVolumeClaim', key) }, UpdateExpression: 'SET nextAttemptAt = :zero REMOVE dueShard, dueAt', ExpressionAttributeValues: { ':zero': 0 } }));
    await fixture.send([eventFor(second)]);
    await deliver();
    assert.equal((await stack.core.readPersistentVolume({ name: `pvc-${second.metadata.uid}` })).spec!.claimRef!.uid, second.metadata.uid);
    assert.equal(await backoff.get(keyId), undefined, 'the key\'s record is gone, and the earlier claim\'s wait with it');

    // The sweep, once the reminder is due and the dead holder's lease has lapsed: the earlier claim is finished.
    await setLeaseUntil(0);
    const report = await runResync({ doc: db.doc, tables: db.tables, sqs: fixture.sqs, queueUrls: { [CONTROLLER_NAME]: fixture.queue.url }, clusters: [CLUSTER], sources: new Map(), now: () => reminder.dueAt! });
    assert.equal(report.due, 1);
    const batch = await deliver();
    assert.deepEqual(batch.Records.map((r) => (JSON.parse(r.body) as ClusterEvent).uid), [first.metadata.uid]);
    assert.equal((await stack.core.readPersistentVolume({ name: `pvc-${first.metadata.uid}` })).spec!.claimRef!.uid, first.metadata.uid, 'the earlier claim\'s volume has its PV, which releases it');
    assert.equal(await backoff.get({ ...keyId, scope: first.metadata.uid! }), undefined, 'and the reminder is done');
  });
});
