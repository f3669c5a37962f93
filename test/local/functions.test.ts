/**
 * The deployed function code run by the local stack as Lambda runs it: each function of serverless.yml
 * from its `functions/<name>.ts`, in its own worker thread with the environment the template gives it
 * (tables, queue URLs, DLQ, cluster id) resolved against the stand-ins. A claim and a matching volume
 * written through the Kubernetes API are bound by the binder function via forwarder → SNS → SQS →
 * event source mapping; the scheduled resync function runs without errors. Also: `kubeconfig` points
 * the forwarder and functions at another cluster (here a separately started emulator) instead of the
 * stack's own.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const QUIET = { POWERTOOLS_LOG_LEVEL: 'ERROR', POWERTOOLS_METRICS_DISABLED: 'true' };

describe('the functions of serverless.yml on the local stack, against another cluster', () => {
  let cluster: KubeApi;
  let stack: Stack;
  let dir: string;
  let core: CoreV1Api;

  before(async () => {
    // "a real cluster": an emulator the stack did not start, reached only through its kubeconfig file
    cluster = await startKubeApi({ port: 0 });
    dir = await mkdtemp(join(tmpdir(), 'claimflow-cluster-'));
    await cluster.writeKubeconfig(join(dir, 'kubeconfig'));
    stack = await startTestStack({ kubeconfig: join(dir, 'kubeconfig'), withForwarder: true, storageApi: false, functionEnv: QUIET });
    const kc = new KubeConfig();
    kc.loadFromFile(join(dir, 'kubeconfig'));
    core = kc.makeApiClient(CoreV1Api);
  });

  after(async () => {
    await stack?.stop();
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs every function with its template environment and no emulator of its own', () => {
    assert.equal(stack.kubeApi, undefined);
    assert.equal(stack.kubeconfigPath, join(dir, 'kubeconfig'));
    for (const name of ['binder', 'provisioner']) assert.ok(stack.eventSources[name]?.running, `${name} consumes its queue`);
    for (const name of ['binder', 'provisioner', 'resync']) {
      const env = stack.functionEnv[name];
      assert.equal(env.KUBECONFIG, join(dir, 'kubeconfig'));
      assert.equal(env.CACHE_TABLE, 'claimflow-local-cache');
      assert.equal(env.AWS_ENDPOINT_URL_SQS, stack.sqs.endpoint);
      assert.ok(env.BINDER_QUEUE_URL.startsWith(`${stack.sqs.endpoint}/`), 'queue URLs resolve to the stand-in');
    }
    assert.equal(stack.functionEnv.provisioner.DLQ_URL, stack.queues.ProvisionerDlq.url);
  });

  it('binds a claim to a matching volume through the binder function', async () => {
    await core.createPersistentVolume({
      body: {
        metadata: { name: 'pv-small' },
        spec: { capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'manual', hostPath: { path: '/tmp/pv-small' } },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: {
        metadata: { name: 'claim-1' },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } },
      },
    });
    let phase: string | undefined;
    let volumeName: string | undefined;
    await eventually(
      async () => {
        const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'claim-1' });
        phase = claim.status?.phase;
        volumeName = claim.spec?.volumeName;
        return phase === 'Bound';
      },
      30_000,
      'the claim to be bound',
    );
    assert.equal(volumeName, 'pv-small');
    const volume = await core.readPersistentVolume({ name: 'pv-small' });
    assert.equal(volume.spec?.claimRef?.name, 'claim-1');
    // the binding came from the binder function's invocations, which then settle their batches
    await eventually(() => stack.eventSources.binder.stats.recordsDeleted > 0, 10_000, 'the binder to settle a batch');
  });

  it('runs the scheduled resync function', async () => {
    const report = (await stack.invoke('resync', { source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} })) as { errors?: unknown[] };
    assert.deepEqual(report.errors, []);
  });
});
