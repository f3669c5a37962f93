/**
 * The binder shell on the real stand-ins, for tests that play the forwarder and the queue themselves: the
 * Kubernetes API emulator over HTTP, dynalite holding the cache and the event records, and binder deps
 * whose requeues land in `queue`.
 */
import { CoreV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import { KubeEventRecorder } from '../../lib/kube/recorder.ts';
import type { WatchedKind } from '../../lib/runtime/message.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { BinderApi } from '../../lib/binder/api.ts';
import { COMPONENT } from '../../lib/binder/constants.ts';
import type { BinderDeps } from '../../lib/binder/controller.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

export interface BinderShell {
  kube: KubeApi;
  db: Dynalite;
  core: CoreV1Api;
  storageV1: StorageV1Api;
  cache: ObjectCache;
  deps: BinderDeps;
  /** What the binder asked to requeue. */
  queue: Array<{ kind: WatchedKind; key: string }>;
  stop(): Promise<void>;
}

export async function startBinderShell(cluster: string): Promise<BinderShell> {
  const kube = await startKubeApi({ port: 0 });
  const db = await startDynalite();
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfig());
  const core = kc.makeApiClient(CoreV1Api);
  const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
  const queue: BinderShell['queue'] = [];
  const deps: BinderDeps = {
    cluster,
    cache,
    api: new BinderApi(kc.makeApiClient(KubeJsonApi)),
    recorder: new KubeEventRecorder({ api: kc.makeApiClient(KubeJsonApi), component: COMPONENT, cluster, doc: db.doc, table: db.tables.control, onError: () => {} }),
    enqueue: async (kind, key) => void queue.push({ kind, key }),
  };
  return {
    kube, db, core, storageV1: kc.makeApiClient(StorageV1Api), cache, deps, queue,
    async stop() {
      await kube.stop();
      await db.stop();
    },
  };
}
