/**
 * `functions/provisioner.ts` as Lambda runs it: configured only by the environment (tables, endpoints,
 * kubeconfig, storage API, PROVISIONER_*), handed an SQS event built from a real fauxqs delivery.
 * Importing the module builds nothing; the first invocation does.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MESSAGE_VERSION } from '../../lib/runtime/message.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynalite.ts';
import { startRuntimeFixture, type RuntimeFixture } from '../runtime/harness.ts';
import { CLUSTER, startProvisionerStack, type ProvisionerStack } from './stack.ts';

describe('functions/provisioner.ts', () => {
  let stack: ProvisionerStack;
  let fixture: RuntimeFixture;
  let dir: string;

  before(async () => {
    stack = await startProvisionerStack({ nodes: ['node-1'] });
    fixture = await startRuntimeFixture();
    dir = await mkdtemp(join(tmpdir(), 'provisioner-fn-'));
    await writeFile(join(dir, 'kubeconfig'), stack.kube.kubeconfig());
    Object.assign(process.env, {
      CLUSTER_ID: CLUSTER,
      CACHE_TABLE: stack.db.tables.cache,
      CONTROL_TABLE: stack.db.tables.control,
      AWS_ENDPOINT_URL_DYNAMODB: stack.db.endpoint,
      AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${fixture.sqsServer.port}`,
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      PROVISIONER_QUEUE_URL: fixture.queue.url,
      DLQ_URL: fixture.dlq.url,
      KUBECONFIG: join(dir, 'kubeconfig'),
      STORAGE_API_URL: stack.storageApi.url,
      PROVISIONER_BACKEND: 'local',
      PROVISIONER_NAME: '',
      PROVISIONER_FAILED_PROVISION_THRESHOLD: '15',
    });
    const sync = new SyncMarkers(stack.db.doc, stack.db.tables.control);
    for (const kind of ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment']) await sync.markListComplete(CLUSTER, kind, '1');
    await stack.createClass('local', 'claimflow.io/local', { reclaimPolicy: 'Delete' });
  });
  after(async () => {
    await fixture.stop();
    await stack.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('provisions a claim of the local class from a queue message', async () => {
    const { handler } = await import('../../functions/provisioner.ts');
    const claim = await stack.createClaim('fn-claim', 'local', 'claimflow.io/local');
    await fixture.send([{
      v: MESSAGE_VERSION, cluster: CLUSTER, kind: 'PersistentVolumeClaim', type: 'ADDED', key: 'default/fn-claim',
      uid: claim.metadata.uid!, resourceVersion: claim.metadata.resourceVersion!, observedAt: new Date().toISOString(),
    }]);
    const batch = await fixture.receive(1);
    const response = await handler(batch);
    assert.deepEqual(response.batchItemFailures, []);
    const pv = await stack.core.readPersistentVolume({ name: `pvc-${claim.metadata.uid}` });
    assert.equal(pv.metadata!.annotations!['pv.kubernetes.io/provisioned-by'], 'claimflow.io/local');
    assert.ok(pv.spec!.local!.path);
    const events = (await stack.core.listNamespacedEvent({ namespace: 'default' })).items.filter((e) => e.involvedObject.name === 'fn-claim');
    assert.deepEqual(events.map((e) => e.reason).sort(), ['Provisioning', 'ProvisioningSucceeded'], 'events recorded through the API');
  });
});
