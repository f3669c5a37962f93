/**
 * The shared volume controller end to end through the local stack: the API emulator watched by the
 * forwarder, SNS FIFO → the shared-volume SQS FIFO queue (fauxqs) → the function run by the stack's event
 * source mapping with the shared runtime, the per-volume cache and event records in dynalite, and the
 * embedded storage control plane holding the volumes (shared, failed over, faulted). The scheduled poll is
 * the function's own poller, invoked directly with a short schedule.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import { KubeClients } from '../../lib/kube/client.ts';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { DEFAULT_CONFIG, type SharedVolumeConfig } from '../../lib/shared-volume/config.ts';
import { createScheduledPoller, createSharedVolumeController, sharedVolumeRuntimeOptions, type ScheduledPollSummary } from '../../lib/shared-volume/controller.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, queuedMessages, startTestStack, type Stack } from '../support/stack.ts';

const NS = 'default';
const MOUNT_PUT = ['PUT', '/v2/namespaces/{namespaceID}/volumes/{id}/nfs/mount-endpoint'] as const;

describe('shared volumes end to end through the local stack', () => {
  let stack: Stack;
  let core: CoreV1Api;
  let storageV1: StorageV1Api;
  let storage: StorageOSClient;
  let handler: SqsHandler | undefined;
  const config: SharedVolumeConfig = { ...DEFAULT_CONFIG, pollIntervalMs: 100, createPollIntervalMs: 50, createWaitMs: 2000, scheduleIntervalMs: 700, scheduleMarginMs: 0 };
  let poll: ReturnType<typeof createScheduledPoller>;
  /** The same poll with a 3 s schedule: two passes or more even when a pass takes a second under load. */
  let steadyPoll: ReturnType<typeof createScheduledPoller>;

  before(async () => {
    stack = await startTestStack({ functions: { sharedVolume: (event, context) => handler!(event, context) }, withForwarder: true });
    storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
    const kube = new KubeClients({ env: { KUBECONFIG: stack.functionEnv.sharedVolume.KUBECONFIG } });
    const queueUrl = stack.queues.SharedVolumeQueue!.url;
    handler = createSqsHandler(createSharedVolumeController({ storage, config }), {
      ...sharedVolumeRuntimeOptions(),
      doc: stack.dynamodb.doc,
      tables: stack.tables,
      sqs: stack.sqs.client,
      queueUrl,
      dlqUrl: stack.queues.SharedVolumeDlq!.url,
      kube,
      limiter: { baseDelayMs: 5, maxDelayMs: 200 },
    });
    poll = createScheduledPoller({ storage, config, env: { CLUSTER_ID: 'local' }, doc: stack.dynamodb.doc, tables: stack.tables, kube });
    steadyPoll = createScheduledPoller({ storage, config: { ...config, scheduleIntervalMs: 3000 }, env: { CLUSTER_ID: 'local' }, doc: stack.dynamodb.doc, tables: stack.tables, kube });
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
    storageV1 = kc.makeApiClient(StorageV1Api);
    await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
  });
  after(async () => {
    await stack?.stop();
  });

  const createClaim = (name: string) =>
    core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: { metadata: { name }, spec: { accessModes: ['ReadWriteMany'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } } },
    });
  const createSharedVolume = async (pv: string, claim: string) => {
    const volume = await storage.createVolume({
      namespace: NS,
      name: pv,
      sizeBytes: 1 << 30,
      labels: { 'csi.storage.k8s.io/pv/name': pv, 'csi.storage.k8s.io/pvc/name': claim, 'csi.storage.k8s.io/pvc/namespace': NS },
    });
    const wire = (await stack.storageApi!.state.shareVolume(volume.id)) as { nfs?: { serviceEndpoint?: string } };
    return { id: volume.id, endpoint: wire.nfs!.serviceEndpoint! };
  };
  const attach = (pv: string) =>
    storageV1.createVolumeAttachment({
      body: { metadata: { name: `csi-${pv}` }, spec: { attacher: 'csi.storageos.com', nodeName: 'local-node', source: { persistentVolumeName: pv } } },
    });
  const mountEndpoint = async (id: string) => (await storage.getVolume({ namespace: NS, id })).labels['storageos.com/nfs/mount-endpoint'];
  const service = (name: string) => core.readNamespacedService({ name, namespace: NS }).catch(() => undefined);
  const endpoints = (name: string) => core.readNamespacedEndpoints({ name, namespace: NS }).catch(() => undefined);
  const events = async (name: string) =>
    (await core.listNamespacedEvent({ namespace: NS })).items.filter((e) => e.involvedObject.kind === 'Service' && e.involvedObject.name === name);
  /** Kubernetes requests other than the forwarder's list/watch. */
  const kubeCalls = (since: Record<string, number> = {}) =>
    Object.fromEntries(
      Object.entries(stack.kubeApi!.requests.snapshot())
        .filter(([key, n]) => !/^(list|watch) /.test(key) && n !== (since[key] ?? 0))
        .map(([key, n]) => [key, n - (since[key] ?? 0)]),
    );
  /**
   * Waits until the event path has settled: the sharedVolume queue holds nothing (no record being handled, none
   * hidden until a requeue is due — a reconcile that found its volume `busy` comes back BUSY_REQUEUE_MS later),
   * the forwarder has published everything it queued, and no Kubernetes request came for 500 ms (the watch echo
   * of the controller's last write has reached the forwarder).
   */
  const settled = async () => {
    let last = JSON.stringify(kubeCalls());
    let stableSince = Date.now();
    await eventually(async () => {
      const now = JSON.stringify(kubeCalls());
      if (now !== last) [last, stableSince] = [now, Date.now()];
      if (Date.now() - stableSince < 500) return false;
      await stack.forwarder!.flush();
      return (await queuedMessages(stack, 'SharedVolumeQueue')) === 0 && JSON.stringify(kubeCalls()) === last;
    }, 20_000, 'the event path settled (sharedVolume queue empty, no Kubernetes request for 500 ms)');
  };
  const split = (endpoint: string) => {
    const i = endpoint.lastIndexOf(':');
    return { ip: endpoint.slice(0, i), port: Number(endpoint.slice(i + 1)) };
  };

  let first: { id: string; endpoint: string };
  let clusterIP: string;

  it('attached as shared → Service, Endpoints and the published mount endpoint', async () => {
    const claim = await createClaim('data-1');
    first = await createSharedVolume('pvc-sv-1', 'data-1');
    const started = Date.now();
    await attach('pvc-sv-1');
    await eventually(async () => (await mountEndpoint(first.id)) !== undefined, 10_000, 'mount endpoint published');
    const elapsed = Date.now() - started;
    const svc = (await service('pvc-sv-1'))!;
    clusterIP = svc.spec!.clusterIP!;
    assert.match(clusterIP, /^\d+\.\d+\.\d+\.\d+$/);
    assert.equal(await mountEndpoint(first.id), `${clusterIP}:2049`);
    assert.equal(svc.spec?.type, 'ClusterIP');
    assert.equal(svc.spec?.selector, undefined);
    assert.deepEqual(
      svc.spec?.ports?.map((p) => ({ name: p.name, port: p.port, protocol: p.protocol, targetPort: p.targetPort })),
      [{ name: 'nfs', port: 2049, protocol: 'TCP', targetPort: split(first.endpoint).port }],
    );
    assert.equal(svc.metadata?.labels?.['storageos.com/volume-id'], first.id);
    assert.deepEqual(
      svc.metadata?.ownerReferences?.map((o) => ({ kind: o.kind, name: o.name, uid: o.uid })),
      [{ kind: 'PersistentVolumeClaim', name: 'data-1', uid: claim.metadata!.uid }],
    );
    const ep = (await endpoints('pvc-sv-1'))!;
    assert.equal(ep.subsets?.[0]?.addresses?.[0]?.ip, split(first.endpoint).ip);
    assert.equal(ep.subsets?.[0]?.ports?.[0]?.port, split(first.endpoint).port);
    const created = await events('pvc-sv-1');
    assert.ok(created.some((e) => e.type === 'Normal' && e.reason === 'Created' && e.message === 'Created service for shared volume default/pvc-sv-1'));
    assert.equal(created[0]?.source?.component, 'storageos-api-manager');
    assert.equal(stack.storageApi!.requests.get(...MOUNT_PUT), 1);
    console.log(`# attached → published in ${elapsed} ms (event path)`);
  });

  it('a steady-state poll with a fresh cache makes no Kubernetes call and publishes nothing', async () => {
    await settled();
    const before = stack.storageApi!.requests.get(...MOUNT_PUT);
    const kubeBefore = stack.kubeApi!.requests.snapshot();
    const summary = (await steadyPoll({ action: 'poll' })) as ScheduledPollSummary;
    // repeated passes over the same fresh entry, not just one
    assert.ok(summary.iterations >= 2, `iterations ${summary.iterations}`);
    assert.equal(summary.listFailures, 0);
    assert.equal(summary.volumes, 1);
    assert.equal(stack.storageApi!.requests.get(...MOUNT_PUT), before);
    assert.deepEqual(kubeCalls(kubeBefore), {}, 'no Kubernetes request while the cache is fresh');
  });

  it('failover → same ClusterIP, updated Endpoints and target port, Warning event, no second publish', async () => {
    const moved = (await stack.storageApi!.state.failoverVolume(first.id)) as { nfs?: { serviceEndpoint?: string } };
    const next = split(moved.nfs!.serviceEndpoint!);
    assert.notDeepEqual(next, split(first.endpoint));
    await poll({ action: 'poll' });
    const svc = (await service('pvc-sv-1'))!;
    assert.equal(svc.spec?.clusterIP, clusterIP);
    assert.equal(svc.spec?.ports?.[0]?.targetPort, next.port);
    const ep = (await endpoints('pvc-sv-1'))!;
    assert.equal(ep.subsets?.[0]?.addresses?.[0]?.ip, next.ip);
    assert.equal(ep.subsets?.[0]?.ports?.[0]?.port, next.port);
    assert.ok((await events('pvc-sv-1')).some((e) => e.type === 'Warning' && e.reason === 'Updated' && e.message === 'Shared volume service target changed default/pvc-sv-1'));
    assert.equal(await mountEndpoint(first.id), `${clusterIP}:2049`);
    assert.equal(stack.storageApi!.requests.get(...MOUNT_PUT), 1, 'no second publish');
  });

  it('a Service deleted by hand is recreated on its deletion event (cache still fresh)', async () => {
    const old = (await service('pvc-sv-1'))!;
    await core.deleteNamespacedService({ name: 'pvc-sv-1', namespace: NS });
    await eventually(async () => {
      const svc = await service('pvc-sv-1');
      return svc !== undefined && svc.metadata?.uid !== old.metadata?.uid && (await endpoints('pvc-sv-1')) !== undefined;
    }, 10_000, 'Service and Endpoints recreated');
    const svc = (await service('pvc-sv-1'))!;
    await eventually(async () => (await mountEndpoint(first.id)) === `${svc.spec!.clusterIP}:2049`, 10_000, 'mount endpoint follows the new Service');
  });

  it('a 412 and a 401 from the control plane are survived', async () => {
    await createClaim('data-2');
    const second = await createSharedVolume('pvc-sv-2', 'data-2');
    stack.storageApi!.auth.expireAll();
    stack.storageApi!.faults.add({ method: 'PUT', path: '/v2/namespaces/*/volumes/*/nfs/mount-endpoint', stale: true, times: 1 });
    const puts = stack.storageApi!.requests.get(...MOUNT_PUT);
    const logins = stack.storageApi!.auth.logins;
    await attach('pvc-sv-2');
    await eventually(async () => (await mountEndpoint(second.id)) !== undefined, 10_000, 'published despite 401 and 412');
    const svc = (await service('pvc-sv-2'))!;
    assert.equal(await mountEndpoint(second.id), `${svc.spec!.clusterIP}:2049`);
    assert.ok(stack.storageApi!.requests.get(...MOUNT_PUT) - puts >= 2, 'the 412 and then a successful PUT');
    assert.ok(stack.storageApi!.auth.logins > logins, 'logged in again after the 401');
  });

  it('a volume whose claim is missing gets no Service', async () => {
    const ghost = await createSharedVolume('pvc-sv-ghost', 'no-such-claim');
    await attach('pvc-sv-ghost');
    await poll({ action: 'poll' });
    assert.equal(await service('pvc-sv-ghost'), undefined);
    assert.equal(await endpoints('pvc-sv-ghost'), undefined);
    assert.equal(await mountEndpoint(ghost.id), undefined);
  });

  it('claim deleted → Service and Endpoints garbage-collected through the ownerReference', async () => {
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'data-2', namespace: NS });
    await eventually(async () => (await service('pvc-sv-2')) === undefined && (await endpoints('pvc-sv-2')) === undefined, 15_000, 'Service and Endpoints gone');
    assert.ok((await service('pvc-sv-1')) !== undefined, 'the other volume is untouched');
  });
});
