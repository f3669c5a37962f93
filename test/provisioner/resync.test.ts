/**
 * The provisioner's resync source against the emulator, dynalite, fauxqs and the storage control plane:
 * a claim and a Released Delete volume the runtime gave up on (failure threshold exceeded while the
 * backend was down) are re-enqueued by the resync after the period and then provisioned / deleted; the
 * resync enqueues nothing a second time within one period, and nothing that is not ours.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Logger } from '@aws-lambda-powertools/logger';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import { MESSAGE_VERSION, type ClusterEvent, type WatchedKind } from '../../lib/runtime/message.ts';
import { createMetrics } from '../../lib/runtime/observability.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { resyncSources } from '../../functions/resync.ts';
import { runResync } from '../../lib/resync/run.ts';
import { createProvisionerController, runtimeOptionsFor } from '../../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import type { ResyncSource } from '../../lib/resync/source.ts';
import { StorageOSProvisioner, STORAGEOS_DRIVER } from '../../lib/provisioner/provisioners/storageos.ts';
import { startRuntimeFixture, type RuntimeFixture } from '../runtime/harness.ts';
import { CLUSTER, startProvisionerStack, type ProvisionerStack } from './stack.ts';

const PERIOD_MS = 60_000;

describe('provisioner resync: keys given up on come back after the period', () => {
  let stack: ProvisionerStack;
  let fixture: RuntimeFixture;
  let handler: ReturnType<typeof createSqsHandler>;
  let clock = Date.now();
  const options = provisionerOptionsFromEnv({
    PROVISIONER_FAILED_PROVISION_THRESHOLD: '1',
    PROVISIONER_FAILED_DELETE_THRESHOLD: '1',
    PROVISIONER_RETRY_INTERVAL_START_MS: '1',
    PROVISIONER_RETRY_INTERVAL_MAX_MS: '1',
    PROVISIONER_RESYNC_PERIOD_MS: String(PERIOD_MS),
    PROVISIONER_CREATE_PV_INTERVAL_MS: '10',
  });
  let source: ResyncSource;

  before(async () => {
    // functions/resync.ts wires the provisioner's source when its queue URL is set (the deployed function has it).
    process.env.PROVISIONER_QUEUE_URL ??= 'https://sqs.invalid/provisioner.fifo';
    const { createProvisionerResync } = await import('../../lib/provisioner/resync.ts');
    source = createProvisionerResync(() => options, () => clock);
    stack = await startProvisionerStack();
    fixture = await startRuntimeFixture();
    const sync = new SyncMarkers(stack.db.doc, stack.db.tables.control);
    for (const kind of ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment']) await sync.markListComplete(CLUSTER, kind, '1');
    await stack.createClass('storageos', STORAGEOS_DRIVER, { reclaimPolicy: 'Delete' });
    await stack.createClass('foreign', 'example.com/other', { reclaimPolicy: 'Delete' });
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

  const eventFor = (kind: WatchedKind, key: string, obj: Record<string, any>): ClusterEvent => ({
    v: MESSAGE_VERSION, cluster: CLUSTER, kind, type: 'MODIFIED', key,
    uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion, observedAt: new Date().toISOString(),
  });

  /** Delivers until the queue stays empty (a failed record comes back after its 1 ms backoff); returns the events handled. */
  const pump = async (): Promise<ClusterEvent[]> => (await fixture.drain(handler, { idleMs: 1_100 })).map((h) => h.event);

  const resync = () => runResync({
    doc: stack.db.doc, tables: stack.db.tables, sqs: fixture.sqs, queueUrls: { provisioner: fixture.queue.url },
    clusters: [CLUSTER], sources: new Map([['provisioner', source]]), now: () => clock,
  });

  /**
   * The forwarder's and the binder's part: the provisioned volume is cached from the watch (the provisioner
   * leaves it to the watch), and the claim gets it (and leaves the pending index).
   */
  const bind = async (name: string, volumeName: string) => {
    await stack.observe('PersistentVolume', volumeName);
    const claim = await stack.core.readNamespacedPersistentVolumeClaim({ name, namespace: 'default' });
    await stack.core.replaceNamespacedPersistentVolumeClaim({ name, namespace: 'default', body: { ...claim, spec: { ...claim.spec!, volumeName } } });
    await stack.observe('PersistentVolumeClaim', `default/${name}`);
  };

  const gaveUp = (name: string) => stack.recorder.events.some((e) => e.object.metadata?.name === name && e.reason === 'RetryThresholdExceeded');

  it('is wired into the resync function', () => {
    assert.equal(typeof resyncSources(process.env).get('provisioner'), 'function');
  });

  it('re-enqueues a claim and a Released Delete volume given up on, once per period, and they then succeed', async () => {
    // A volume provisioned while the backend works, then released.
    const released = await stack.createClaim('released', 'storageos', STORAGEOS_DRIVER);
    await fixture.send([eventFor('PersistentVolumeClaim', 'default/released', released)]);
    await pump();
    const pvName = `pvc-${released.metadata.uid}`;
    await bind('released', pvName);
    const pv = await stack.core.readPersistentVolume({ name: pvName });
    assert.equal(pv.spec!.persistentVolumeReclaimPolicy, 'Delete');
    await stack.core.replacePersistentVolumeStatus({ name: pvName, body: { ...pv, status: { phase: 'Released' } } });
    const releasedPv = await stack.observe('PersistentVolume', pvName);
    assert.equal((await stack.storage.listVolumes('default')).length, 1);

    // The backend goes down: the claim and the volume fail past the threshold (2 attempts) and are dropped.
    const stuck = await stack.createClaim('stuck', 'storageos', STORAGEOS_DRIVER);
    const foreign = await stack.createClaim('foreign-claim', 'foreign', 'example.com/other');
    stack.storageApi.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', status: 503, times: Infinity });
    stack.storageApi.faults.add({ method: 'DELETE', path: '/v2/namespaces/*/volumes/*', status: 503, times: Infinity });
    await fixture.send([eventFor('PersistentVolumeClaim', 'default/stuck', stuck), eventFor('PersistentVolume', pvName, releasedPv)]);
    const failed = await pump();
    assert.ok(failed.length >= 4, 'each key was attempted until the threshold');
    assert.ok(gaveUp('stuck'), 'the runtime gave up on the claim');
    assert.ok(gaveUp(pvName), 'the runtime gave up on the volume');
    stack.storageApi.faults.clear();
    assert.equal((await pump()).length, 0, 'nothing retries them by itself');

    // The first resync of the cluster runs; the backend works again: both succeed.
    const first = await resync();
    assert.deepEqual(first.errors, []);
    assert.equal(first.resynced.provisioner, 3);
    const requeued = await pump();
    // Every claim of our class (the bound one too, as upstream's informer resync) and every PV of ours.
    assert.deepEqual(requeued.map((e) => `${e.type} ${e.kind} ${e.key}`).sort(), [
      `REQUEUE PersistentVolume ${pvName}`,
      'REQUEUE PersistentVolumeClaim default/released',
      'REQUEUE PersistentVolumeClaim default/stuck',
    ]);
    assert.ok(!requeued.some((e) => e.key === `default/${foreign.metadata.name}`), 'a claim of another provisioner is not ours');
    const provisioned = await stack.core.readPersistentVolume({ name: `pvc-${stuck.metadata.uid}` });
    assert.equal(provisioned.spec!.csi!.driver, STORAGEOS_DRIVER);
    await bind('stuck', provisioned.metadata!.name!);
    await assert.rejects(stack.core.readPersistentVolume({ name: pvName }), 'the released volume is deleted');
    await stack.cache.remove(CLUSTER, 'PersistentVolume', releasedPv, Number(releasedPv.metadata.resourceVersion) + 1_000); // the forwarder's DELETED
    const volumes = await stack.storage.listVolumes('default');
    assert.deepEqual(volumes.map((v) => v.name), [`pvc-${stuck.metadata.uid}`], 'the backend volume of the released PV is gone');

    // Within the period, a second resync enqueues nothing, even with a claim pending again.
    const again = await stack.createClaim('again', 'storageos', STORAGEOS_DRIVER);
    clock += PERIOD_MS - 1;
    const second = await resync();
    assert.equal(second.resynced.provisioner, 0);
    assert.equal((await pump()).length, 0);

    // Once the period has passed it runs again and finds the pending claim (and everything else of ours).
    clock += 1;
    const third = await resync();
    assert.deepEqual((await pump()).map((e) => e.key).sort(), ['default/again', 'default/released', 'default/stuck', `pvc-${stuck.metadata.uid}`]);
    assert.equal(third.resynced.provisioner, 4);
    await stack.core.readPersistentVolume({ name: `pvc-${again.metadata.uid}` });
    await bind('again', `pvc-${again.metadata.uid}`);
  });

  it('two concurrent resyncs of one period enqueue a pending claim once', async () => {
    const claim = await stack.createClaim('concurrent', 'storageos', STORAGEOS_DRIVER);
    clock += PERIOD_MS;
    const reports = await Promise.all([resync(), resync()]);
    // 4 claims of our class and 2 PVs of ours, once.
    assert.deepEqual(reports.map((r) => r.resynced.provisioner).sort(), [0, 6]);
    const keys = (await pump()).map((e) => e.key);
    assert.equal(keys.length, 6);
    assert.equal(keys.filter((k) => k === 'default/concurrent').length, 1);
    await stack.core.readPersistentVolume({ name: `pvc-${claim.metadata.uid}` });
  });
});
