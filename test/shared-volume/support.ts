/**
 * Shared fixtures of the shared-volume integration tests that need no queues: the Kubernetes API emulator,
 * dynalite (cache and control tables) and the embedded storage control plane, a claim + shared volume maker,
 * and a storage client wrapper that records when each list call ran.
 *
 * @example
 * const s = await startStandIns();
 * after(() => s.stop());
 * const v = await s.sharedVolume();
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { startStorageApi, type StorageApiHandle } from '../../infra/local/storage-api/server.ts';
import { lambdaContext } from '../../infra/local/stack/event-source.ts';
import { KubeClients } from '../../lib/kube/client.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import type { RuntimeContext } from '../../lib/runtime/handler.ts';
import { createLogger, createMetrics } from '../../lib/runtime/observability.ts';
import type { ReconcileRequest } from '../../lib/runtime/reconcile.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import type { SharedVolumeApi } from '../../lib/shared-volume/reconciler.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

export const NS = 'default';

export interface StandIns {
  kube: KubeApi;
  db: Dynalite;
  storageApi: StorageApiHandle;
  storage: StorageOSClient;
  /** A client-node CoreV1Api on the emulator (the test's own reads and writes). */
  core: CoreV1Api;
  /** KubeClients as the functions build them (KUBECONFIG file). */
  kubeClients: KubeClients;
  /** A claim and a volume shared over NFS for it (the claim is left out with `withClaim: false`). */
  sharedVolume(options?: { withClaim?: boolean }): Promise<{ id: string; pv: string; claim: string; endpoint: string }>;
  stop(): Promise<void>;
}

let counter = 0;

/** Starts the three stand-ins. */
export async function startStandIns(): Promise<StandIns> {
  const kube = await startKubeApi({ port: 0 } as never);
  const db = await startDynalite();
  const storageApi = await startStorageApi({ port: 0, nodes: ['node-1'] });
  const storage = new StorageOSClient({ endpoint: storageApi.url, username: 'storageos', password: 'storageos', backoff: { attempts: 1 } });
  const dir = await mkdtemp(join(tmpdir(), 'sv-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await kube.writeKubeconfig(kubeconfig);
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfig());
  const core = kc.makeApiClient(CoreV1Api);
  return {
    kube,
    db,
    storageApi,
    storage,
    core,
    kubeClients: new KubeClients({ env: { KUBECONFIG: kubeconfig } }),
    async sharedVolume(options = {}) {
      const n = ++counter;
      const claim = `claim-${n}`;
      const pv = `pvc-sv-${n}`;
      if (options.withClaim !== false) {
        await core.createNamespacedPersistentVolumeClaim({
          namespace: NS,
          body: { metadata: { name: claim }, spec: { accessModes: ['ReadWriteMany'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } } },
        });
      }
      const volume = await storage.createVolume({
        namespace: NS,
        name: pv,
        sizeBytes: 1 << 20,
        labels: { 'csi.storage.k8s.io/pv/name': pv, 'csi.storage.k8s.io/pvc/name': claim, 'csi.storage.k8s.io/pvc/namespace': NS },
      });
      const wire = (await storageApi.state.shareVolume(volume.id)) as { nfs?: { serviceEndpoint?: string } };
      return { id: volume.id, pv, claim, endpoint: wire.nfs!.serviceEndpoint! };
    },
    async stop() {
      await Promise.all([kube.stop(), db.stop(), storageApi.stop()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One list call: when it started and ended (epoch ms). */
export interface ListCall {
  start: number;
  end: number;
}

/** The storage client as one Lambda container uses it, recording its list calls. */
export function recordingStorage(storage: StorageOSClient): SharedVolumeApi & { lists: ListCall[] } {
  const lists: ListCall[] = [];
  return {
    lists,
    async listSharedVolumes(options) {
      const start = Date.now();
      try {
        return await storage.listSharedVolumes(options);
      } finally {
        lists.push({ start, end: Date.now() });
      }
    },
    getSharedVolume: (ref, options) => storage.getSharedVolume(ref, options),
    setExternalEndpoint: (request, options) => storage.setExternalEndpoint(request, options),
    reset: () => storage.reset(),
  };
}

/** Whether two sets of calls ever ran at the same time. */
export function overlaps(a: readonly ListCall[], b: readonly ListCall[]): boolean {
  return a.some((x) => b.some((y) => x.start < y.end && y.start < x.end));
}

/** A PersistentVolumeClaim event for the event path (as the forwarder publishes it). */
export function claimRequest(cluster: string, claim: string): ReconcileRequest {
  const key = `${NS}/${claim}`;
  return {
    cluster,
    kind: 'PersistentVolumeClaim',
    key,
    event: {
      v: 1,
      cluster,
      kind: 'PersistentVolumeClaim',
      type: 'MODIFIED',
      key,
      uid: '',
      resourceVersion: '0',
      object: { metadata: { name: claim, namespace: NS }, spec: { accessModes: ['ReadWriteMany'] } },
      observedAt: new Date().toISOString(),
    },
  } as ReconcileRequest;
}

/** The context the SQS runtime gives a reconcile; `timeoutMs` makes a Lambda context with that much time left. */
export function runtimeContext(s: StandIns, request: ReconcileRequest, options: { timeoutMs?: number; recorder?: MemoryEventRecorder } = {}): RuntimeContext {
  const context: Context | undefined =
    options.timeoutMs === undefined ? undefined : lambdaContext('sharedVolume', 'us-east-1', Date.now() + options.timeoutMs);
  return {
    request,
    logger: createLogger('shared-volume'),
    metrics: createMetrics('shared-volume'),
    doc: s.db.doc,
    tables: s.db.tables,
    kube: s.kubeClients,
    recorder: options.recorder ?? new MemoryEventRecorder(),
    leases: new LeaseStore({ doc: s.db.doc, table: s.db.tables.control }),
    lambdaContext: context,
  };
}
