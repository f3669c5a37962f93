/**
 * `npm run bench:shared-volume`: the shared volume function through the whole local stack (API emulator →
 * forwarder → SNS FIFO → the shared-volume SQS FIFO queue → the function's containers, in a thread of their
 * own as the controller benches run them (support/harness.ts); dynalite; the embedded storage control plane),
 * with the per-cluster API budget on.
 *
 * The operation: a volume attached as shared — the control plane gives it an NFS server endpoint and its
 * VolumeAttachment is created — until the control plane holds the volume's
 * `storageos.com/nfs/mount-endpoint` (`<ClusterIP>:2049` of the Service the function made for its claim).
 * Each volume's RWX claim and control-plane volume exist before the forwarder starts.
 *
 * 1. `single`: `BENCH_SINGLES` volumes (default 5), one at a time, the pipeline idle in between.
 * 2. `burst`: `BENCH_VOLUMES` volumes (default 100) attached `BENCH_CONCURRENCY` at a time (default 20), budget
 *    `BENCH_QPS`/`BENCH_BURST` (default 400/600). Both report what the binder and provisioner benches do:
 *    latency p50/p99, volumes per second, API reads and writes, messages, DynamoDB requests and units, the
 *    cost per 1,000 volumes, the control-plane calls per volume.
 *    `warmBurst`: the same burst again on the now warm stack (`BENCH_WARM_BURST`, support/harness.ts).
 * 3. `kcmBudget`: the same burst on a fresh stack at kube-controller-manager's default budget (20 QPS, burst
 *    30) for each size in `BENCH_BUDGET_SIZES` (default 100).
 * 4. Steady state (on the first stack, after the burst): one poll iteration with a fresh cache in a new
 *    container (entries read back from DynamoDB), one in a warm container, and one after the entries expired;
 *    per volume: control-plane calls, Kubernetes requests and GETs (forwarder list/watch excluded), DynamoDB
 *    requests. The pass after expiry runs twice: reading the claim, Service and Endpoints from the object cache
 *    the forwarder fills (as the function does), and from the API server (as it did before), for the
 *    Kubernetes GETs per volume per poll and per minute.
 * 5. Cost of polling at the default settings, from the price table (test/bench/prices.ts; assumptions printed).
 *
 * Prints one JSON document on stdout and a short table on stderr.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { performance } from 'node:perf_hooks';
import { StorageV1Api, KubeConfig } from '@kubernetes/client-node';
import { KubeClients, makeBudgetedApiClient } from '../../lib/kube/client.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { SharedVolumeCache } from '../../lib/shared-volume/cache.ts';
import { DEFAULT_CONFIG } from '../../lib/shared-volume/config.ts';
import { SharedVolumeReconciler } from '../../lib/shared-volume/reconciler.ts';
import { LABELS } from '../../lib/storage/types.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { KCM_CLIENT_DEFAULTS } from '../../lib/state/bucket.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import type { KubeObject } from '../../infra/local/kube-api/types.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { PRICES } from './prices.ts';
import { BenchStack, emitControllerReport, envNumber, envSizes, PollingTracker, progress, round, runBurst, runSingles, warmBurstNames, type BenchOperation } from './support/harness.ts';
import { coreV1 } from '../../lib/kube/core-v1.ts';

const SINGLES = envNumber('BENCH_SINGLES', 5);
const VOLUMES = envNumber('BENCH_VOLUMES', 100);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 20);
const BUDGET = { qps: envNumber('BENCH_QPS', 400), burst: envNumber('BENCH_BURST', 600) };
const BUDGET_SIZES = envSizes('BENCH_BUDGET_SIZES', [100]);
const NS = 'default';

/**
 * Claims `<name>` (RWX) written straight into the emulator's store and control-plane volumes `pvc-<name>`
 * labelled for them as the CSI driver labels its volumes; before the forwarder starts, so they cost no budget.
 */
async function addClaimsAndVolumes(bench: BenchStack, names: readonly string[]): Promise<Map<string, string>> {
  const store = bench.stack.kubeApi!.store;
  const storage = new StorageOSClient({ endpoint: bench.stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
  const ids = new Map<string, string>();
  for (const name of names) {
    store.create('/persistentvolumeclaims', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: NS },
      spec: { accessModes: ['ReadWriteMany'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);
    const volume = await storage.createVolume({
      namespace: NS,
      name: `pvc-${name}`,
      sizeBytes: 1 << 20,
      labels: { 'csi.storage.k8s.io/pv/name': `pvc-${name}`, 'csi.storage.k8s.io/pvc/name': name, 'csi.storage.k8s.io/pvc/namespace': NS },
    });
    ids.set(name, volume.id);
  }
  return ids;
}

/** A volume attached as shared: the control plane's NFS endpoint, then its VolumeAttachment (the bench's create). */
function attachOperation(bench: BenchStack, ids: ReadonlyMap<string, string>): BenchOperation {
  const kc = new KubeConfig();
  kc.loadFromFile(bench.stack.kubeconfigPath);
  const storageV1 = makeBudgetedApiClient(kc, StorageV1Api);
  const state = bench.stack.storageApi!.state;
  return {
    noun: 'volumes',
    kind: 'VolumeAttachment',
    // published: the endpoint label on the control plane's volume, read from its state in process (no request)
    tracker: () =>
      new PollingTracker(function* () {
        for (const v of state.allVolumes()) if (v.labels[LABELS.nfsMountEndpoint]) yield v.labels['csi.storage.k8s.io/pvc/name'];
      }, 20),
    async start(tracker, name) {
      tracker.created.set(name, performance.now());
      await state.shareVolume(ids.get(name)!);
      await storageV1.createVolumeAttachment({
        body: { metadata: { name }, spec: { attacher: 'csi.storageos.com', nodeName: 'local-node', source: { persistentVolumeName: `pvc-${name}` } } },
      });
      bench.benchRequests.add('create volumeattachments');
    },
    isBenchWrite: (e) => e.type === 'ADDED' && e.resource === 'storage.k8s.io/volumeattachments',
  };
}

async function startBench(budget: { qps: number; burst: number }, names: readonly string[]): Promise<{ bench: BenchStack; op: BenchOperation; ids: Map<string, string> }> {
  const bench = await BenchStack.start({ functions: ['sharedVolume'], budget, storageApi: true });
  try {
    const ids = await addClaimsAndVolumes(bench, names);
    await bench.startForwarder();
    if (!(await bench.settle({ timeoutMs: 300_000 }))) progress('warning: the initial sync did not settle');
    return { bench, op: attachOperation(bench, ids), ids };
  } catch (error) {
    await bench.stop();
    throw error;
  }
}

/** Steady-state poll passes and the cost of polling, on a stack whose volumes are all published. */
async function steadyState(bench: BenchStack, published: number): Promise<Record<string, unknown>> {
  const stack = bench.stack;
  const storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
  const kube = new KubeClients({ env: { KUBECONFIG: stack.kubeconfigPath } });
  const VOLUMES = published;
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
  const coreApi = await coreV1(kube, 'local');
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
  const PRICE_GB_S = PRICES.lambda.armPerGBSecond;
  const PRICE_PER_REQUEST = PRICES.lambda.perMillionRequests / 1e6;
  const MEMORY_GB = bench.pool('sharedVolume').memoryMB / 1024;
  const invocationsPerMonth = (30 * 24 * 60 * 60_000) / DEFAULT_CONFIG.scheduleIntervalMs;
  const billedSeconds = (DEFAULT_CONFIG.scheduleIntervalMs - DEFAULT_CONFIG.scheduleMarginMs) / 1000;
  const computeUsd = invocationsPerMonth * billedSeconds * MEMORY_GB * PRICE_GB_S;
  const requestUsd = invocationsPerMonth * PRICE_PER_REQUEST;

  return {
    volumes: published,
    poll: {
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
        priceUsdPerMillionRequests: PRICES.lambda.perMillionRequests,
        excluded:
          'free tier, DynamoDB (per invocation: the poll lease, two writes; per container start: one BatchGetItem per 100 volumes; per volume per cache expiry: one BatchGetItem of its claim, Service and Endpoints entries and one PutItem, and two lease writes when it writes anything), CloudWatch Logs, the SQS event path',
      },
    },
  };
}

async function atTargetBudget(): Promise<{ single?: Record<string, unknown>; burst?: Record<string, unknown>; warmBurst?: Record<string, unknown>; steadyState?: Record<string, unknown> }> {
  if (SINGLES + VOLUMES === 0) return {};
  progress(`shared-volume: ${SINGLES} single volumes, then ${VOLUMES} volumes ${CONCURRENCY} at a time; budget ${BUDGET.qps} QPS / burst ${BUDGET.burst}`);
  const singles = Array.from({ length: SINGLES }, (_, i) => `single-${i}`);
  const names = Array.from({ length: VOLUMES }, (_, i) => `shared-${i}`);
  const again = warmBurstNames(names);
  const { bench, op, ids } = await startBench(BUDGET, [...singles, ...names]);
  try {
    const single = SINGLES > 0 ? await runSingles(bench, singles, op) : undefined;
    const burst = VOLUMES > 0 ? await runBurst(bench, names, op, { concurrency: CONCURRENCY, timeoutMs: 600_000 }) : undefined;
    // The warm burst's claims and volumes only now, so that the first burst runs over the same cluster as ever.
    if (again.length > 0) {
      for (const [name, id] of await addClaimsAndVolumes(bench, again)) ids.set(name, id);
      // Their events handled before anything is counted.
      if (!(await bench.settle({ timeoutMs: 300_000 }))) progress('warning: the warm burst\'s objects did not settle');
    }
    const warmBurst = again.length > 0 ? await runBurst(bench, again, op, { concurrency: CONCURRENCY, timeoutMs: 600_000 }) : undefined;
    progress('shared-volume: steady-state polls');
    return { single, burst, warmBurst, steadyState: await steadyState(bench, SINGLES + VOLUMES + again.length) };
  } finally {
    await bench.stop();
  }
}

async function atKcmBudget(volumes: number): Promise<Record<string, unknown>> {
  const budget = { ...KCM_CLIENT_DEFAULTS };
  progress(`shared-volume: ${volumes} volumes ${CONCURRENCY} at a time at kube-controller-manager's budget (${budget.qps} QPS / burst ${budget.burst})`);
  const names = Array.from({ length: volumes }, (_, i) => `shared-${i}`);
  const { bench, op } = await startBench(budget, names);
  try {
    return await runBurst(bench, names, op, { concurrency: CONCURRENCY, timeoutMs: 120_000 + volumes * 1000 });
  } finally {
    await bench.stop();
  }
}

const started = Date.now();
const { single, burst, warmBurst, steadyState: steady } = await atTargetBudget();
const kcmBudget: Record<string, unknown>[] = [];
for (const size of BUDGET_SIZES) kcmBudget.push(await atKcmBudget(size));
emitControllerReport({
  bench: 'shared-volume',
  operation: 'publish (volume attached as shared → its mount endpoint on the control plane)',
  budget: BUDGET,
  single,
  burst,
  warmBurst,
  kcmBudget,
  steadyState: steady,
}, started);
