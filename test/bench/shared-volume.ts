/**
 * `npm run bench:shared-volume`: the shared volume function through the whole local stack (API emulator →
 * forwarder → SNS FIFO → the shared-volume SQS FIFO queue → the function, in process; dynalite; the
 * embedded storage control plane).
 *
 * 1. Latency: `BENCH_VOLUMES` (default 200) RWX claims and volumes; each volume is attached as shared on the
 *    control plane and its VolumeAttachment created; timed from that moment to the first time the volume
 *    carries its `storageos.com/nfs/mount-endpoint` (p50/p99, event path).
 * 2. Steady state: one poll iteration with a fresh cache in a new container (entries read back from
 *    DynamoDB), one in a warm container, and one after the entries expired; per volume: control-plane calls,
 *    Kubernetes requests and GETs (forwarder list/watch excluded), DynamoDB requests. The pass after expiry runs
 *    twice: reading the claim, Service and Endpoints from the object cache the forwarder fills (as the function
 *    does), and from the API server (as it did before), for the Kubernetes GETs per volume per poll and per minute.
 * 3. Cost of polling at the default settings, from AWS Lambda arm64 list prices (assumptions printed).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { CoreV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import { KubeClients, makeBudgetedApiClient } from '../../lib/kube/client.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { SharedVolumeCache } from '../../lib/shared-volume/cache.ts';
import { DEFAULT_CONFIG } from '../../lib/shared-volume/config.ts';
import { createSharedVolumeController, sharedVolumeRuntimeOptions } from '../../lib/shared-volume/controller.ts';
import { SharedVolumeReconciler } from '../../lib/shared-volume/reconciler.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, startTestStack } from '../support/stack.ts';

const VOLUMES = Number(process.env.BENCH_VOLUMES ?? 200);
const NS = 'default';

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
};
const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

const stack = await startTestStack({ functions: { sharedVolume: (event, context) => handler!(event, context) }, withForwarder: true });
let handler: SqsHandler | undefined;
try {
  const storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
  const kube = new KubeClients({ env: { KUBECONFIG: stack.kubeconfigPath } });
  const queueUrl = stack.queues.SharedVolumeQueue!.url;
  handler = createSqsHandler(createSharedVolumeController({ storage, config: DEFAULT_CONFIG }), {
    ...sharedVolumeRuntimeOptions(),
    doc: stack.dynamodb.doc,
    tables: stack.tables,
    sqs: stack.sqs.client,
    queueUrl,
    dlqUrl: stack.queues.SharedVolumeDlq!.url,
    kube,
  });
  const kc = new KubeConfig();
  kc.loadFromString(stack.kubeApi!.kubeconfig());
  const core = makeBudgetedApiClient(kc, CoreV1Api);
  const storageV1 = makeBudgetedApiClient(kc, StorageV1Api);
  await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');

  // ---- 1. attached as shared → published
  const ids: string[] = [];
  for (let i = 0; i < VOLUMES; i++) {
    const pv = `pvc-bench-${i}`;
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: { metadata: { name: `bench-${i}` }, spec: { accessModes: ['ReadWriteMany'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } } },
    });
    const v = await storage.createVolume({
      namespace: NS,
      name: pv,
      sizeBytes: 1 << 20,
      labels: { 'csi.storage.k8s.io/pv/name': pv, 'csi.storage.k8s.io/pvc/name': `bench-${i}`, 'csi.storage.k8s.io/pvc/namespace': NS },
    });
    ids.push(v.id);
  }
  // Let the claims' own events settle (they find no shared volume yet).
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const attachedAt = new Map<string, number>();
  const publishedAt = new Map<string, number>();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const now = performance.now();
      for (const v of await storage.listSharedVolumes()) if (v.externalEndpoint && !publishedAt.has(v.id)) publishedAt.set(v.id, now);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  for (let i = 0; i < VOLUMES; i++) {
    attachedAt.set(ids[i]!, performance.now());
    await stack.storageApi!.state.shareVolume(ids[i]!);
    await storageV1.createVolumeAttachment({
      body: { metadata: { name: `csi-bench-${i}` }, spec: { attacher: 'csi.storageos.com', nodeName: 'local-node', source: { persistentVolumeName: `pvc-bench-${i}` } } },
    });
  }
  const attachLoopMs = performance.now() - attachedAt.get(ids[0]!)!;
  await eventually(() => publishedAt.size === VOLUMES, 120_000, 'all published');
  watching = false;
  await watcher;
  const latencies = ids.map((id) => publishedAt.get(id)! - attachedAt.get(id)!);
  await new Promise((resolve) => setTimeout(resolve, 1500));

  // ---- 2. steady-state polls
  const dynamoCounts: Record<string, number> = {};
  const countingDoc = new Proxy(stack.dynamodb.doc, {
    get(target, prop, receiver) {
      if (prop === 'send') {
        return (command: { constructor: { name: string } }, ...rest: unknown[]) => {
          dynamoCounts[command.constructor.name] = (dynamoCounts[command.constructor.name] ?? 0) + 1;
          return (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  }) as DocumentClient;
  /** Kubernetes requests other than the forwarder's list/watch, per `verb resource`. */
  const kubeCalls = (): Record<string, number> =>
    Object.fromEntries(Object.entries(stack.kubeApi!.requests.snapshot()).filter(([key]) => !/^(list|watch) /.test(key)));
  const measure = async (reconciler: SharedVolumeReconciler) => {
    for (const key of Object.keys(dynamoCounts)) delete dynamoCounts[key];
    stack.storageApi!.requests.reset();
    const kubeBefore = kubeCalls();
    const result = await reconciler.pollOnce();
    const dynamo = Object.values(dynamoCounts).reduce((a, b) => a + b, 0);
    const kube = Object.fromEntries(
      Object.entries(kubeCalls())
        .map(([key, n]) => [key, n - (kubeBefore[key] ?? 0)] as const)
        .filter(([, n]) => n > 0),
    );
    const sum = (filter: (key: string) => boolean) => Object.entries(kube).filter(([key]) => filter(key)).reduce((a, [, n]) => a + n, 0);
    return {
      iterationMs: round(result.durationMs, 0),
      listed: result.listed,
      perVolume: {
        storageApiCalls: round(stack.storageApi!.requests.total() / VOLUMES, 3),
        kubeRequests: round(sum(() => true) / VOLUMES, 3),
        kubeGets: round(sum((key) => key.startsWith('get ')) / VOLUMES, 3),
        dynamoRequests: round(dynamo / VOLUMES, 3),
      },
      storageApiCalls: stack.storageApi!.requests.snapshot(),
      kube,
      dynamo: { ...dynamoCounts },
    };
  };
  const coreApi = await kube.coreV1('local');
  /**
   * A reconciler as a new container of the function builds it; `clockSkewMs` moves its cache's clock (to see
   * entries expired); `apiReads` leaves the object cache out (every claim, Service and Endpoints read is a GET,
   * as before the function read the object cache).
   */
  const newContainer = (clockSkewMs = 0, apiReads = false) =>
    new SharedVolumeReconciler({
      storage,
      core: coreApi,
      recorder: new MemoryEventRecorder(),
      cache: new SharedVolumeCache({ doc: countingDoc, table: stack.tables.control, cluster: 'local', now: () => Date.now() + clockSkewMs }),
      config: DEFAULT_CONFIG,
      objects: apiReads ? undefined : new ObjectCache(countingDoc, stack.tables.cache, { indexer: indexAttributes }),
      leases: new LeaseStore({ doc: countingDoc, table: stack.tables.control }),
      cluster: 'local',
    });
  const cold = newContainer();
  const steadyCold = await measure(cold);
  const steadyWarm = await measure(cold);
  // Each later container's clock is one expiry further on, so it sees the entries the previous one wrote expired.
  const afterExpiryApiReads = await measure(newContainer(DEFAULT_CONFIG.cacheExpiryMs + 1000, true));
  const afterExpiry = await measure(newContainer(2 * (DEFAULT_CONFIG.cacheExpiryMs + 1000)));
  const afterExpiryRefreshed = await measure(newContainer());
  // At the defaults a volume's entry expires once a minute: one pass in twelve reconciles it, the others hit.
  const passesPerMinute = 60_000 / DEFAULT_CONFIG.pollIntervalMs;
  const expiriesPerMinute = 60_000 / DEFAULT_CONFIG.cacheExpiryMs;
  const getsPerVolume = (after: typeof afterExpiry) => ({
    perPollAfterExpiry: after.perVolume.kubeGets,
    perMinute: round(after.perVolume.kubeGets * expiriesPerMinute, 3),
    perPollAveraged: round((after.perVolume.kubeGets * expiriesPerMinute) / passesPerMinute, 3),
  });

  // ---- 3. cost of polling at the default settings
  const PRICE_GB_S = 0.0000133334; // arm64, first 7.5 billion GB-s per month, us-east-1 / eu-west-1
  const PRICE_PER_REQUEST = 0.2 / 1e6;
  const MEMORY_GB = 0.5; // provider.memorySize 512
  const invocationsPerMonth = (30 * 24 * 60 * 60_000) / DEFAULT_CONFIG.scheduleIntervalMs;
  const billedSeconds = (DEFAULT_CONFIG.scheduleIntervalMs - DEFAULT_CONFIG.scheduleMarginMs) / 1000;
  const computeUsd = invocationsPerMonth * billedSeconds * MEMORY_GB * PRICE_GB_S;
  const requestUsd = invocationsPerMonth * PRICE_PER_REQUEST;

  console.log(
    JSON.stringify(
      {
        bench: 'shared-volume',
        volumes: VOLUMES,
        attachLoopMs: round(attachLoopMs, 0),
        attachedToPublishedMs: { p50: round(percentile(latencies, 50), 0), p99: round(percentile(latencies, 99), 0), max: round(Math.max(...latencies), 0) },
        steadyStatePoll: {
          freshCacheNewContainer: steadyCold,
          freshCacheWarmContainer: steadyWarm,
          afterCacheExpiry: afterExpiry,
          afterCacheExpiryApiReads: afterExpiryApiReads,
          nextPollAfterRefresh: afterExpiryRefreshed,
        },
        kubeGetsPerVolume: {
          objectCache: getsPerVolume(afterExpiry),
          apiReads: getsPerVolume(afterExpiryApiReads),
          assumptions: `poll every ${DEFAULT_CONFIG.pollIntervalMs / 1000} s, cache entries expire after ${DEFAULT_CONFIG.cacheExpiryMs / 1000} s, the forwarder watching PVCs and the labelled Services/Endpoints`,
        },
        pollingCostPerMonthUsd: {
          total: round(computeUsd + requestUsd, 2),
          compute: round(computeUsd, 2),
          requests: round(requestUsd, 4),
          assumptions: {
            month: '30 days',
            schedule: `one invocation per ${DEFAULT_CONFIG.scheduleIntervalMs / 1000} s, each polling every ${DEFAULT_CONFIG.pollIntervalMs / 1000} s for up to ${billedSeconds} s (billed while it sleeps between polls)`,
            memoryMB: MEMORY_GB * 1024,
            architecture: 'arm64',
            priceUsdPerGBs: PRICE_GB_S,
            priceUsdPerMillionRequests: 0.2,
            excluded:
              'free tier, DynamoDB (per invocation: the poll lease, two writes; per container start: one BatchGetItem per 100 volumes; per volume per cache expiry: three object-cache GetItems, two lease writes and one PutItem), CloudWatch Logs, the SQS event path',
          },
        },
      },
      null,
      2,
    ),
  );
} finally {
  await stack.stop();
}
