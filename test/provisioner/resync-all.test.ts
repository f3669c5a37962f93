/**
 * The provisioner resync visits every object it owns, as upstream's informer resync (`ResyncPeriod`)
 * hands every claim and every PV to the controller; against the emulator, dynalite and fauxqs:
 * - with `AddFinalizer` switched on, an existing Bound PV of ours (provisioned while it was off) gets
 *   the finalizer after one resync; the bound claim of our class and the PV of ours are enqueued,
 *   nothing of another provisioner (which claims count as ours: test/unit/provisioner/resync.test.ts);
 * - a run whose sends fail gives its period back: the next run lists again at once;
 * - a run that never finished (a Lambda timeout) holds its period only until its hold expires.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Logger } from '@aws-lambda-powertools/logger';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { runResync } from '../../lib/resync/run.ts';
import type { ResyncSource } from '../../lib/resync/source.ts';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import type { ClusterEvent } from '../../lib/runtime/message.ts';
import { createMetrics } from '../../lib/runtime/observability.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { createProvisionerController, runtimeOptionsFor } from '../../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { StorageOSProvisioner, STORAGEOS_DRIVER } from '../../lib/provisioner/provisioners/storageos.ts';
import { beginResyncRun, createProvisionerResync, RESYNC_RUN_LEASE_MS } from '../../lib/provisioner/resync.ts';
import { startRuntimeFixture, type RuntimeFixture } from '../runtime/harness.ts';
import { CLUSTER, startProvisionerStack, type ProvisionerStack } from './stack.ts';

const PERIOD_MS = 60_000;
const FINALIZER = 'external-provisioner.volume.kubernetes.io/finalizer';

describe('provisioner resync: every claim and volume it owns, once per period', () => {
  let stack: ProvisionerStack;
  let fixture: RuntimeFixture;
  let handler: ReturnType<typeof createSqsHandler>;
  let clock = Date.now();
  const options = provisionerOptionsFromEnv({
    PROVISIONER_ADD_FINALIZER: 'true',
    PROVISIONER_RESYNC_PERIOD_MS: String(PERIOD_MS),
    PROVISIONER_CREATE_PV_INTERVAL_MS: '10',
  });
  let source: ResyncSource;

  before(async () => {
    source = createProvisionerResync(() => options, () => clock);
    stack = await startProvisionerStack();
    fixture = await startRuntimeFixture();
    const sync = new SyncMarkers(stack.db.doc, stack.db.tables.control);
    for (const kind of ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment']) await sync.markListComplete(CLUSTER, kind, '1');
    await stack.createClass('storageos', STORAGEOS_DRIVER, { reclaimPolicy: 'Delete' });
    await stack.createClass('foreign', 'example.com/other', { reclaimPolicy: 'Delete' });
    handler = createSqsHandler(createProvisionerController({ options, provisioner: new StorageOSProvisioner(stack.storage), volumeRequeuer: null }), {
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

  const resync = (queueUrl = fixture.queue.url) => runResync({
    doc: stack.db.doc, tables: stack.db.tables, sqs: fixture.sqs, queueUrls: { provisioner: queueUrl },
    clusters: [CLUSTER], sources: new Map([['provisioner', source]]), now: () => clock,
  });

  /** Delivers until the queue stays empty; returns the events handled. */
  const pump = async (): Promise<ClusterEvent[]> => (await fixture.drain(handler)).map((h) => h.event);

  /** A PV as a provisioner made it earlier (no finalizer), bound to `claim`, in the cache. */
  async function boundVolume(name: string, provisionedBy: string, driver: string, claim: string): Promise<void> {
    const body: V1PersistentVolume = {
      metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': provisionedBy } },
      spec: {
        capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: provisionedBy === STORAGEOS_DRIVER ? 'storageos' : 'foreign',
        csi: { driver, volumeHandle: `default/${name}` },
        claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'default', name: claim },
      },
    };
    const created = await stack.core.createPersistentVolume({ body });
    await stack.core.replacePersistentVolumeStatus({ name, body: { ...created, status: { phase: 'Bound' } } });
    await stack.observe('PersistentVolume', name);
  }

  async function bindClaim(name: string, volumeName: string): Promise<void> {
    const claim = await stack.core.readNamespacedPersistentVolumeClaim({ name, namespace: 'default' });
    await stack.core.replaceNamespacedPersistentVolumeClaim({ name, namespace: 'default', body: { ...claim, spec: { ...claim.spec!, volumeName } } });
    await stack.observe('PersistentVolumeClaim', `default/${name}`);
  }

  it('AddFinalizer switched on: the resync brings every claim and PV of ours, and existing Bound PVs get the finalizer', async () => {
    // Objects from before AddFinalizer was on: a bound claim and its PV (ours), the same of another provisioner.
    await stack.createClaim('old', 'storageos', STORAGEOS_DRIVER);
    await boundVolume('pv-old', STORAGEOS_DRIVER, STORAGEOS_DRIVER, 'old');
    await bindClaim('old', 'pv-old');
    await stack.createClaim('theirs', 'foreign', 'example.com/other');
    await boundVolume('pv-theirs', 'example.com/other', 'example.com.other', 'theirs');
    await bindClaim('theirs', 'pv-theirs');

    const report = await resync();
    assert.deepEqual(report.errors, []);
    const handled = await pump();
    assert.deepEqual(handled.map((e) => `${e.type} ${e.kind} ${e.key}`).sort(), [
      'REQUEUE PersistentVolume pv-old',
      'REQUEUE PersistentVolumeClaim default/old',
    ]);
    assert.equal(report.resynced.provisioner, 2);
    assert.ok((await stack.core.readPersistentVolume({ name: 'pv-old' })).metadata!.finalizers?.includes(FINALIZER), 'our Bound PV got the finalizer');
    assert.ok(!(await stack.core.readPersistentVolume({ name: 'pv-theirs' })).metadata!.finalizers?.includes(FINALIZER), 'theirs is left alone');
  });

  it('a run whose sends fail gives its period back: the next run lists again', async () => {
    clock += PERIOD_MS;
    const failed = await resync(`${fixture.queue.url}-missing`);
    assert.equal(failed.errors.length, 1, 'the run failed');
    assert.equal((await pump()).length, 0);

    const retried = await resync();
    assert.deepEqual(retried.errors, []);
    assert.equal(retried.resynced.provisioner, 2, 'the same period, listed again');
    assert.deepEqual((await pump()).map((e) => e.key).sort(), ['default/old', 'pv-old']);

    const within = await resync();
    assert.equal(within.resynced.provisioner, 0, 'and then the period is done');
  });

  it('a run that died holds its period until its hold expires, then the next run lists', async () => {
    clock += PERIOD_MS;
    assert.ok(await beginResyncRun(stack.db.doc, stack.db.tables.control, CLUSTER, PERIOD_MS, clock), 'a run starts, and dies without a word');
    assert.equal((await resync()).resynced.provisioner, 0, 'held');
    clock += RESYNC_RUN_LEASE_MS;
    const next = await resync();
    assert.equal(next.resynced.provisioner, 2);
    assert.deepEqual((await pump()).map((e) => e.key).sort(), ['default/old', 'pv-old']);
  });
});
