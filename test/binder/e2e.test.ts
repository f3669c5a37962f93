/**
 * The binder end to end through the local stack: objects created with @kubernetes/client-node on the
 * API emulator, the forwarder watching it and publishing through SNS FIFO → the binder's SQS FIFO queue
 * (fauxqs), the binder function run by the stack's event source mapping with the shared runtime, the
 * object cache in dynalite.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, StorageV1Api, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { KubeClients } from '../../lib/kube/client.ts';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { createBinderController } from '../../lib/binder/controller.ts';
import { COMPONENT } from '../../lib/binder/constants.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

describe('binder end to end through the local stack', () => {
  let stack: Stack;
  let core: CoreV1Api;
  let storageV1: StorageV1Api;
  let handler: SqsHandler | undefined;

  before(async () => {
    stack = await startTestStack({
      functions: { binder: (event, context) => handler!(event, context) },
      withForwarder: true,
      storageApi: false,
    });
    const queueUrl = stack.queues.BinderQueue.url;
    handler = createSqsHandler(createBinderController({ sqs: stack.sqs.client, queueUrl }), {
      component: COMPONENT,
      doc: stack.dynamodb.doc,
      tables: stack.tables,
      sqs: stack.sqs.client,
      queueUrl,
      dlqUrl: stack.queues.BinderDlq.url,
      kube: new KubeClients({ env: { KUBECONFIG: stack.functionEnv.binder.KUBECONFIG } }),
      syncWaitMs: 100,
      limiter: { baseDelayMs: 5, maxDelayMs: 200 },
    });
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
    storageV1 = kc.makeApiClient(StorageV1Api);
    await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
  });
  after(async () => {
    await stack?.stop();
  });

  const pvc = (namespace: string, name: string) => core.readNamespacedPersistentVolumeClaim({ name, namespace });
  const pv = (name: string) => core.readPersistentVolume({ name });
  const createPV = (name: string, size: string, className: string, extra: Record<string, unknown> = {}) =>
    core.createPersistentVolume({
      body: {
        metadata: { name },
        spec: { capacity: { storage: size }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: className, hostPath: { path: `/tmp/${name}` }, ...extra },
      },
    });
  const createPVC = (namespace: string, name: string, size: string, className: string | null, extra: Record<string, unknown> = {}) =>
    core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: { metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, ...(className !== null ? { storageClassName: className } : {}), ...extra } },
    });
  const phaseOf = async (namespace: string, name: string) => (await pvc(namespace, name)).status?.phase;

  it('static binding: every claim gets the smallest sufficient volume', async () => {
    const n = 100;
    for (let i = 1; i <= n; i++) await createPV(`static-${i}`, `${i}Gi`, 'static');
    await eventually(async () => (await core.listPersistentVolume()).items.filter((v) => v.metadata?.name?.startsWith('static-') && v.status?.phase === 'Available').length === n, 20_000, 'volumes Available');
    for (let i = n; i >= 1; i--) await createPVC('default', `static-${i}`, `${i}Gi`, 'static');
    await eventually(async () => {
      const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: 'default' })).items.filter((c) => c.metadata?.name?.startsWith('static-'));
      return claims.length === n && claims.every((c: V1PersistentVolumeClaim) => c.status?.phase === 'Bound');
    }, 120_000, 'all claims Bound');
    for (let i = 1; i <= n; i++) {
      const claim = await pvc('default', `static-${i}`);
      assert.equal(claim.spec?.volumeName, `static-${i}`);
      const volume = await pv(`static-${i}`);
      assert.equal(volume.spec?.claimRef?.uid, claim.metadata?.uid);
      assert.equal(volume.status?.phase, 'Bound');
    }
  });

  it('a pre-bound volume and a pre-bound claim', async () => {
    await createPV('prebound-small', '1Gi', 'pre');
    await createPV('prebound-big', '10Gi', 'pre', { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'default', name: 'wants-big' } });
    await createPV('named', '3Gi', 'pre');
    await createPVC('default', 'wants-big', '1Gi', 'pre');
    await createPVC('default', 'names-it', '1Gi', 'pre', { volumeName: 'named' });
    await eventually(async () => (await phaseOf('default', 'wants-big')) === 'Bound' && (await phaseOf('default', 'names-it')) === 'Bound', 20_000, 'pre-bound claims Bound');
    assert.equal((await pvc('default', 'wants-big')).spec?.volumeName, 'prebound-big');
    assert.equal((await pv('named')).spec?.claimRef?.name, 'names-it');
    assert.equal((await pv('prebound-small')).status?.phase, 'Available');
  });

  it('deleting a claim releases its volume (Retain keeps it Released); a claim whose volume is deleted becomes Lost', async () => {
    await createPV('release-me', '1Gi', 'life');
    await createPV('lose-me', '2Gi', 'life');
    await createPVC('default', 'goes-away', '1Gi', 'life');
    await createPVC('default', 'stays', '2Gi', 'life');
    await eventually(async () => (await phaseOf('default', 'goes-away')) === 'Bound' && (await phaseOf('default', 'stays')) === 'Bound', 20_000, 'claims Bound');
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'goes-away', namespace: 'default' });
    await eventually(async () => (await pv('release-me')).status?.phase === 'Released', 20_000, 'volume Released');
    assert.equal((await pv('release-me')).spec?.claimRef?.name, 'goes-away');

    await core.deletePersistentVolume({ name: 'lose-me' });
    const stuck = await pv('lose-me');
    await core.replacePersistentVolume({ name: 'lose-me', body: { ...stuck, metadata: { ...stuck.metadata, finalizers: [] } } });
    await eventually(async () => (await phaseOf('default', 'stays')) === 'Lost', 20_000, 'claim Lost');
    await eventually(async () => (await core.listNamespacedEvent({ namespace: 'default' })).items.some(
      (e) => e.involvedObject.name === 'stays' && e.reason === 'ClaimLost' && e.source?.component === 'persistentvolume-controller',
    ), 20_000, 'ClaimLost event');
  });

  it('external provisioner hand-off, then binding to the PV it creates', async () => {
    await storageV1.createStorageClass({ body: { metadata: { name: 'ext' }, provisioner: 'ext.example.com', volumeBindingMode: 'Immediate' } });
    const claim = await createPVC('default', 'dynamic', '1Gi', 'ext');
    await eventually(async () => (await pvc('default', 'dynamic')).metadata?.annotations?.['volume.beta.kubernetes.io/storage-provisioner'] === 'ext.example.com', 20_000, 'hand-off annotations');
    assert.equal((await pvc('default', 'dynamic')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'], 'ext.example.com');
    await eventually(async () => (await core.listNamespacedEvent({ namespace: 'default' })).items.some((e) => e.involvedObject.name === 'dynamic' && e.reason === 'ExternalProvisioning'), 20_000, 'ExternalProvisioning event');
    await core.createPersistentVolume({
      body: {
        metadata: { name: `pvc-${claim.metadata?.uid}`, annotations: { 'pv.kubernetes.io/provisioned-by': 'ext.example.com' } },
        spec: {
          capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete', storageClassName: 'ext',
          csi: { driver: 'ext.example.com', volumeHandle: 'h-1' },
          claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'default', name: 'dynamic', uid: claim.metadata?.uid },
        },
      },
    });
    await eventually(async () => (await phaseOf('default', 'dynamic')) === 'Bound', 20_000, 'provisioned claim Bound');
    assert.equal((await pvc('default', 'dynamic')).spec?.volumeName, `pvc-${claim.metadata?.uid}`);
  });

  it('retroactive default class', async () => {
    await createPVC('default', 'no-class', '1Gi', null);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await pvc('default', 'no-class')).spec?.storageClassName, undefined);
    await storageV1.createStorageClass({
      body: { metadata: { name: 'fallback', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }, provisioner: 'ext.example.com', volumeBindingMode: 'Immediate' },
    });
    await eventually(async () => (await pvc('default', 'no-class')).spec?.storageClassName === 'fallback', 20_000, 'default class assigned');
  });
});
