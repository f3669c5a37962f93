/**
 * `functions/shared-volume.ts` as the local stack runs it: its own worker thread, the template's environment
 * (plus short schedule settings), both event shapes — an SQS batch from the shared-volume queue and the
 * scheduled `{"action":"poll"}` invocation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import { ClusterEventSchema, type ClusterEvent } from '../../lib/runtime/message.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const NS = 'default';

describe('the sharedVolume function on the local stack', () => {
  let stack: Stack;
  let core: CoreV1Api;
  let storageV1: StorageV1Api;
  let storage: StorageOSClient;
  /** The cluster events the sharedVolume function handled (their records deleted from its queue). */
  const handled: ClusterEvent[] = [];

  before(async () => {
    stack = await startTestStack({
      withForwarder: true,
      onSettled: (functionName, outcome) => {
        if (functionName !== 'sharedVolume') return;
        for (const r of outcome.records) if (outcome.deleted.includes(r.messageId)) handled.push(ClusterEventSchema.parse(JSON.parse(r.body)));
      },
      functionEnv: {
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        POWERTOOLS_METRICS_DISABLED: 'true',
        SHARED_VOLUME_POLL_INTERVAL_MS: '100',
        SHARED_VOLUME_SCHEDULE_INTERVAL_MS: '800',
        SHARED_VOLUME_SCHEDULE_MARGIN_MS: '0',
      },
    });
    storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
    storageV1 = kc.makeApiClient(StorageV1Api);
    await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
  });
  after(async () => {
    await stack?.stop();
  });

  const sharedVolume = async (n: number, share = true) => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: { metadata: { name: `fn-${n}` }, spec: { accessModes: ['ReadWriteMany'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } } },
    });
    const v = await storage.createVolume({
      namespace: NS,
      name: `pvc-fn-${n}`,
      sizeBytes: 1 << 20,
      labels: { 'csi.storage.k8s.io/pv/name': `pvc-fn-${n}`, 'csi.storage.k8s.io/pvc/name': `fn-${n}`, 'csi.storage.k8s.io/pvc/namespace': NS },
    });
    if (share) await stack.storageApi!.state.shareVolume(v.id);
    return v.id;
  };
  const mountEndpoint = async (id: string) => (await storage.getVolume({ namespace: NS, id })).labels['storageos.com/nfs/mount-endpoint'];

  it('an SQS batch (VolumeAttachment event) publishes the mount endpoint', async () => {
    const id = await sharedVolume(1);
    await storageV1.createVolumeAttachment({
      body: { metadata: { name: 'csi-fn-1' }, spec: { attacher: 'csi.storageos.com', nodeName: 'local-node', source: { persistentVolumeName: 'pvc-fn-1' } } },
    });
    await eventually(async () => (await mountEndpoint(id)) !== undefined, 15_000, 'published through the queue');
    const svc = await core.readNamespacedService({ name: 'pvc-fn-1', namespace: NS });
    assert.equal(await mountEndpoint(id), `${svc.spec!.clusterIP}:2049`);
  });

  it('an RWX claim provisioned by the local provisioner, attached as shared → published', async () => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: { metadata: { name: 'fn-provisioned' }, spec: { accessModes: ['ReadWriteMany'], storageClassName: 'local', resources: { requests: { storage: '1Gi' } } } },
    });
    let pvName = '';
    await eventually(async () => {
      const claim = await core.readNamespacedPersistentVolumeClaim({ name: 'fn-provisioned', namespace: NS });
      pvName = claim.spec?.volumeName ?? '';
      return claim.status?.phase === 'Bound';
    }, 20_000, 'claim provisioned and bound');
    const volume = await storage.getVolumeByName(NS, pvName);
    assert.ok(volume, `volume ${pvName} on the control plane`);
    assert.equal(volume.labels['csi.storage.k8s.io/pvc/name'], 'fn-provisioned');
    await stack.storageApi!.state.shareVolume(volume.id);
    const started = Date.now();
    await storageV1.createVolumeAttachment({
      body: { metadata: { name: 'csi-fn-provisioned' }, spec: { attacher: 'csi.storageos.com', nodeName: 'local-node', source: { persistentVolumeName: pvName } } },
    });
    await eventually(async () => (await mountEndpoint(volume.id)) !== undefined, 15_000, 'published');
    console.log(`# provisioned RWX volume: attached → published in ${Date.now() - started} ms`);
    const svc = await core.readNamespacedService({ name: pvName, namespace: NS });
    assert.equal(await mountEndpoint(volume.id), `${svc.spec!.clusterIP}:2049`);
    const ep = await core.readNamespacedEndpoints({ name: pvName, namespace: NS });
    assert.equal(ep.subsets?.length, 1);
  });

  it('the scheduled poll finds a volume no event announced', async () => {
    const id = await sharedVolume(2, false);
    // Let the claim's own event be handled while the volume is not shared yet; sharing it makes no Kubernetes event.
    const claimHandled = () => handled.some((e) => e.kind === 'PersistentVolumeClaim' && e.key === `${NS}/fn-2`);
    await eventually(claimHandled, 15_000, "the claim's event handled by the function");
    await stack.storageApi!.state.shareVolume(id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await mountEndpoint(id), undefined, 'nothing but the poll can publish it');
    const summary = (await stack.invoke('sharedVolume', { action: 'poll' })) as { iterations: number; listFailures: number; volumes: number };
    // One pass is what this proves (the poll found it); repeated passes until the stop are poll-ownership's and
    // e2e's: in an 800 ms schedule a second pass depends on how long the first took.
    assert.ok(summary.iterations >= 1, `iterations ${summary.iterations}`);
    assert.equal(summary.listFailures, 0);
    assert.equal(summary.volumes, 3);
    const svc = await core.readNamespacedService({ name: 'pvc-fn-2', namespace: NS });
    assert.equal(await mountEndpoint(id), `${svc.spec!.clusterIP}:2049`);
  });
});
