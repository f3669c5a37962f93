/**
 * The stand-ins a provisioner test or benchmark runs against, started on port 0 and stopped together:
 * the Kubernetes API emulator, dynalite (cache + control tables) and the embedded storage control
 * plane. The helpers play the forwarder (`observe` writes what the API returns into the cache) and
 * drive the controller through `reconcile` with a runtime context like the handler builds.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { CoreV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { startStorageApi, type StorageApiHandle } from '../../infra/local/storage-api/server.ts';
import { KubeClients } from '../../lib/kube/client.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import type { RuntimeContext } from '../../lib/runtime/handler.ts';
import type { WatchedKind } from '../../lib/runtime/message.ts';
import { createMetrics } from '../../lib/runtime/observability.ts';
import type { Controller, ReconcileRequest, ReconcileResult } from '../../lib/runtime/reconcile.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import { BatchGetReader } from '../../lib/state/batch-get.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { toJson } from '../support/json.ts';
import type { PersistentVolumeClaim } from '../../lib/kube/objects.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

export const CLUSTER = 'local';

export interface ProvisionerStack {
  kube: KubeApi;
  db: Dynalite;
  storageApi: StorageApiHandle;
  storage: StorageOSClient;
  core: CoreV1Api;
  /** The same cluster's JSON client (lib/kube/json-api.ts). */
  json: KubeJsonApi;
  storageV1: StorageV1Api;
  cache: ObjectCache;
  clients: KubeClients;
  recorder: MemoryEventRecorder;
  /** The object as the API has it now, into the cache (the forwarder's job). */
  observe(kind: WatchedKind, key: string): Promise<Record<string, any>>;
  /**
   * One reconcile, as the runtime would call it: a MODIFIED message, or with `object` a DELETED one carrying
   * it; `type: 'REQUEUE'` makes it a requeue (the sweep's, say) instead; `prefetched`: what the runtime read
   * for the controller's prefetch (absent: the controller reads what it needs).
   */
  reconcile(controller: Controller<RuntimeContext>, kind: WatchedKind, key: string, uid?: string, object?: object, type?: 'REQUEUE', prefetched?: ReconcileRequest['prefetched']): Promise<ReconcileResult>;
  /** Creates a claim asking for `provisioner` and observes it. */
  createClaim(name: string, storageClassName: string, provisioner: string, annotations?: Record<string, string>): Promise<PersistentVolumeClaim>;
  /** Creates a StorageClass and observes it. */
  createClass(name: string, provisioner: string, extra?: Record<string, unknown>): Promise<void>;
  stop(): Promise<void>;
}

export async function startProvisionerStack(options: { nodes?: string[] } = {}): Promise<ProvisionerStack> {
  const kube = await startKubeApi({ port: 0 } as never);
  const db = await startDynalite();
  const storageApi = await startStorageApi({ port: 0, nodes: options.nodes ?? ['node-1'] });
  const storage = new StorageOSClient({ endpoint: storageApi.url, username: 'storageos', password: 'storageos' });
  const dir = await mkdtemp(join(tmpdir(), 'provisioner-stack-'));
  await writeFile(join(dir, 'kubeconfig'), kube.kubeconfig());
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfig());
  const core = kc.makeApiClient(CoreV1Api);
  const storageV1 = kc.makeApiClient(StorageV1Api);
  const clients = new KubeClients({ env: { KUBECONFIG: join(dir, 'kubeconfig') } });
  const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
  const leases = new LeaseStore({ doc: db.doc, table: db.tables.control });
  // One per stack, as the runtime keeps one per container: what reconciles read at the same moment is shared.
  const reader = new BatchGetReader(db.doc);
  const logger = new Logger({ serviceName: 'claimflow-test', logLevel: 'SILENT' });
  const metrics = createMetrics('provisioner');

  const stack: ProvisionerStack = {
    kube, db, storageApi, storage, core, json: kc.makeApiClient(KubeJsonApi), storageV1, cache, clients,
    recorder: new MemoryEventRecorder(),
    async observe(kind, key) {
      const [ns, name] = key.includes('/') ? key.split('/') : ['', key];
      const obj = kind === 'PersistentVolumeClaim' ? await core.readNamespacedPersistentVolumeClaim({ name, namespace: ns })
        : kind === 'PersistentVolume' ? await core.readPersistentVolume({ name })
          : await storageV1.readStorageClass({ name });
      const json = toJson<Record<string, any>>(obj);
      await cache.put(CLUSTER, kind, json);
      return json;
    },
    async reconcile(controller, kind, key, uid = '', object = undefined, type = undefined, prefetched = undefined) {
      const event = { v: 1 as const, cluster: CLUSTER, kind, type: type ?? (object ? 'DELETED' as const : 'MODIFIED' as const), key, uid, resourceVersion: '0', observedAt: new Date().toISOString(), ...(object ? { object: object as Record<string, unknown> } : {}) };
      const request = { cluster: CLUSTER, kind, key, event, ...(prefetched ? { prefetched } : {}) };
      const ctx: RuntimeContext = {
        request, logger, metrics, doc: db.doc, tables: db.tables, kube: clients, recorder: stack.recorder, leases, reader, lambdaContext: undefined,
      };
      return controller.reconcile(request, ctx);
    },
    async createClaim(name, storageClassName, provisioner, annotations = {}) {
      await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: {
        metadata: { name, annotations: { 'volume.kubernetes.io/storage-provisioner': provisioner, ...annotations } },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName },
      } });
      return (await stack.observe('PersistentVolumeClaim', `default/${name}`)) as PersistentVolumeClaim;
    },
    async createClass(name, provisioner, extra = {}) {
      await storageV1.createStorageClass({ body: { metadata: { name }, provisioner, ...extra } });
      await stack.observe('StorageClass', name);
    },
    async stop() {
      await kube.stop();
      await db.stop();
      await storageApi.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return stack;
}
