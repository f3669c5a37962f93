/**
 * `npm run bench:binder`: the binder through the whole local stack (emulator → forwarder → SNS FIFO → SQS
 * FIFO → binder function containers → emulator; cache in dynalite), with the per-cluster API budget on.
 * Static binding: each claim fits exactly one Available volume best (claim i asks for i+1 Gi, volume i has
 * i+1 Gi; class `bench`), so binds never compete for a volume.
 *
 * 1. `single`: `BENCH_SINGLES` claims (default 5), one at a time, each on a fresh volume and claim, the
 *    pipeline idle in between: create → Bound, median; records each function got before Bound (hops).
 * 2. `burst`: `BENCH_CLAIMS` claims (default 100) created `BENCH_CONCURRENCY` at a time (default 20),
 *    budget `BENCH_QPS`/`BENCH_BURST` (default 400/600): latency p50/p99, binds per second (first create →
 *    last Bound), and per bind: API reads and writes (by verb and resource, events included), messages,
 *    DynamoDB requests and capacity units (the functions' and the forwarder's), SQS/SNS/Lambda counts and
 *    the cost per 1,000 binds (test/bench/prices.ts). `warmBurst`: the same burst again on the now warm
 *    stack (`BENCH_WARM_BURST`, support/harness.ts). `steadyBurst`: the median-rate one of
 *    `BENCH_STEADY_BURSTS` (default 5) more, each on volumes of its own, once V8 has compiled most of
 *    what the bursts run.
 * 3. `kcmBudget`: the same burst on a fresh stack at kube-controller-manager's default budget (20 QPS,
 *    burst 30) for each size in `BENCH_BUDGET_SIZES` (default 100,1000): the most API requests the functions
 *    sent in any one second (must stay ≤ QPS + burst) and throughput ÷ (QPS ÷ API requests per bind), which
 *    must reach 0.9.
 * 4. `scaling`: the binder shell alone (emulator + dynalite, cache filled directly, budget on) binds
 *    `BENCH_SCALE_CLAIMS` claims (default 30) one at a time with 100 and then 10,000 bigger volumes of the
 *    same class in the cache: reconcile p50 and DynamoDB items read per bind.
 *
 * fauxqs and dynalite run in their own process unless `BENCH_AWS=embedded`, and the functions in a thread
 * of their own unless `BENCH_FUNCTIONS=inline` (support/harness.ts); the report's `aws` and `functions` say
 * which.
 *
 * Volumes are written into the emulator's store as Available, costing no budget: the first burst's before
 * the forwarder starts (its first LIST publishes them; the binder has nothing to do for them), the warm and
 * steady bursts' just before each, settled before it is counted.
 * Prints one JSON document on stdout and a short table on stderr.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { performance } from 'node:perf_hooks';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startKubeApi } from '../../infra/local/kube-api/index.ts';
import type { KubeObject } from '../../infra/local/kube-api/types.ts';
import { makeBudgetedApiClient } from '../../lib/kube/client.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import { KubeEventRecorder } from '../../lib/kube/recorder.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { ApiBudget, KCM_CLIENT_DEFAULTS } from '../../lib/state/bucket.ts';
import { BinderApi } from '../../lib/binder/api.ts';
import { COMPONENT } from '../../lib/binder/constants.ts';
import { reconcileBinder, type BinderDeps } from '../../lib/binder/controller.ts';
import { BenchStack, claimOperation, emitControllerReport, envNumber, envSizes, percentile, progress, round, runBurst, runSingles, runSteadyBursts, startBenchDynalite, steadyBurstNames, warmBurstNames } from './support/harness.ts';
import { Tally, meterDynamo } from './support/meter.ts';

const SINGLES = envNumber('BENCH_SINGLES', 5);
const CLAIMS = envNumber('BENCH_CLAIMS', 100);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 20);
const BUDGET = { qps: envNumber('BENCH_QPS', 400), burst: envNumber('BENCH_BURST', 600) };
const BUDGET_SIZES = envSizes('BENCH_BUDGET_SIZES', [100, 1000]);
const SCALE_CLAIMS = envNumber('BENCH_SCALE_CLAIMS', 30);

const claimSpec = (index: number) => ({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${index + 1}Gi` } }, storageClassName: 'bench' });

/** Volumes `bench-<i>` (i+1 Gi, class `bench`) for i in [from, to), Available, written straight into the store. */
function addAvailableVolumes(bench: BenchStack, from: number, to: number): void {
  const store = bench.stack.kubeApi!.store;
  for (let i = from; i < to; i++) {
    const created = store.create('/persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `bench-${i}` },
      spec: { capacity: { storage: `${i + 1}Gi` }, accessModes: ['ReadWriteOnce'], storageClassName: 'bench', persistentVolumeReclaimPolicy: 'Retain', hostPath: { path: `/tmp/bench-${i}` } },
    } as KubeObject);
    store.update('/persistentvolumes', { ...created, status: { phase: 'Available' } } as KubeObject, 'status');
  }
}

async function startBench(budget: { qps: number; burst: number }, volumes: number): Promise<BenchStack> {
  const bench = await BenchStack.start({ functions: ['binder'], budget });
  try {
    addAvailableVolumes(bench, 0, volumes);
    await bench.startForwarder();
    if (!(await bench.settle({ timeoutMs: 300_000 }))) progress('warning: the initial sync did not settle');
    return bench;
  } catch (error) {
    await bench.stop();
    throw error;
  }
}

async function atTargetBudget(): Promise<{ single?: Record<string, unknown>; burst?: Record<string, unknown>; warmBurst?: Record<string, unknown>; steadyBurst?: Record<string, unknown> }> {
  if (SINGLES + CLAIMS === 0) return {};
  progress(`binder: ${SINGLES} single binds, then ${CLAIMS} claims ${CONCURRENCY} at a time; budget ${BUDGET.qps} QPS / burst ${BUDGET.burst}`);
  const names = Array.from({ length: CLAIMS }, (_, i) => `claim-${i}`);
  const again = warmBurstNames(names);
  const bench = await startBench(BUDGET, SINGLES + names.length);
  try {
    const singles = Array.from({ length: SINGLES }, (_, i) => `single-${i}`);
    const single = SINGLES > 0 ? await runSingles(bench, singles, claimOperation(bench, (_, i) => claimSpec(i))) : undefined;
    const burst = CLAIMS > 0 ? await runBurst(bench, names, claimOperation(bench, (_, i) => claimSpec(SINGLES + i)), { concurrency: CONCURRENCY, timeoutMs: 600_000 }) : undefined;
    // The warm burst's volumes only now, so that the first burst runs over the same cluster as ever.
    if (again.length > 0) {
      addAvailableVolumes(bench, SINGLES + CLAIMS, SINGLES + CLAIMS + again.length);
      // Their events handled before anything is counted.
      if (!(await bench.settle({ timeoutMs: 300_000 }))) progress('warning: the warm burst\'s objects did not settle');
    }
    const warmBurst = again.length > 0 ? await runBurst(bench, again, claimOperation(bench, (_, i) => claimSpec(SINGLES + CLAIMS + i)), { concurrency: CONCURRENCY, timeoutMs: 600_000 }) : undefined;
    // Each steady round on volumes of its own, added and settled before it is counted, as the warm burst's.
    const steadyBurst = CLAIMS > 0
      ? await runSteadyBursts('binder', async (round) => {
          const first = SINGLES + CLAIMS + again.length + round * CLAIMS;
          addAvailableVolumes(bench, first, first + CLAIMS);
          if (!(await bench.settle({ timeoutMs: 300_000 }))) progress('warning: a steady burst\'s objects did not settle');
          return runBurst(bench, steadyBurstNames(names, round), claimOperation(bench, (_, i) => claimSpec(first + i)), { concurrency: CONCURRENCY, timeoutMs: 600_000 });
        })
      : undefined;
    return { single, burst, warmBurst, steadyBurst };
  } finally {
    await bench.stop();
  }
}

async function atKcmBudget(claims: number): Promise<Record<string, unknown>> {
  const budget = { ...KCM_CLIENT_DEFAULTS };
  progress(`binder: ${claims} claims ${CONCURRENCY} at a time at kube-controller-manager's budget (${budget.qps} QPS / burst ${budget.burst})`);
  const bench = await startBench(budget, claims);
  try {
    const names = Array.from({ length: claims }, (_, i) => `claim-${i}`);
    return await runBurst(bench, names, claimOperation(bench, (_, i) => claimSpec(i)), { concurrency: CONCURRENCY, timeoutMs: 120_000 + claims * 1000 });
  } finally {
    await bench.stop();
  }
}

async function scaling(): Promise<Record<string, unknown>> {
  progress(`binder: reconcile cost with 100 and 10,000 volumes in the cache (${SCALE_CLAIMS} binds each)`);
  const kube = await startKubeApi({ port: 0 });
  const db = await startBenchDynalite();
  try {
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    const tally = new Tally();
    meterDynamo(db.doc, tally);
    const budget = new ApiBudget({ doc: db.doc, table: db.tables.control, cluster: 'bench', ...BUDGET });
    const core = makeBudgetedApiClient(kc, CoreV1Api, budget);
    const jsonApi = makeBudgetedApiClient(kc, KubeJsonApi, budget);
    const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
    const deps: BinderDeps = {
      cluster: 'bench', cache, api: new BinderApi(jsonApi),
      recorder: new KubeEventRecorder({ api: jsonApi, component: COMPONENT, cluster: 'bench', doc: db.doc, table: db.tables.control, onError: () => {} }),
      enqueue: async () => {},
    };
    const reconcile = (kind: 'PersistentVolume' | 'PersistentVolumeClaim', key: string) =>
      reconcileBinder({ kind, key, event: { v: 1, cluster: 'bench', kind, type: 'ADDED', key, uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } }, deps);
    const json = <T>(o: unknown): T => JSON.parse(JSON.stringify(o)) as T;
    let filled = 0;
    const fill = async (total: number): Promise<void> => {
      const batch: Promise<unknown>[] = [];
      for (; filled < total; filled++) {
        batch.push(cache.put('bench', 'PersistentVolume', {
          apiVersion: 'v1', kind: 'PersistentVolume',
          metadata: { name: `filler-${filled}`, uid: `filler-${filled}`, resourceVersion: '1' },
          spec: { capacity: { storage: `${100 + filled}Gi` }, accessModes: ['ReadWriteOnce'], storageClassName: 'scale', persistentVolumeReclaimPolicy: 'Retain' },
          status: { phase: 'Available' },
        }));
        if (batch.length >= 50) await Promise.all(batch.splice(0));
      }
      await Promise.all(batch);
    };
    const itemsRead = () => tally.get('items');
    db.doc.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const output = out.output as { Count?: number; Item?: unknown; Responses?: Record<string, unknown[]> };
        tally.add('items', output.Count ?? (output.Item ? 1 : 0) + Object.values(output.Responses ?? {}).reduce((n, r) => n + r.length, 0));
        return out;
      },
      { step: 'initialize', name: 'benchItems' },
    );
    const measureAt = async (tag: string) => {
      const latencies: number[] = [];
      const before = itemsRead();
      for (let i = 0; i < SCALE_CLAIMS; i++) {
        const pv = await core.createPersistentVolume({ body: { metadata: { name: `${tag}-pv-${i}` }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'scale', hostPath: { path: '/tmp/x' } } } });
        await cache.put('bench', 'PersistentVolume', json(pv));
        await reconcile('PersistentVolume', `${tag}-pv-${i}`);
        const pvc = await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name: `${tag}-claim-${i}` }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'scale' } } });
        await cache.put('bench', 'PersistentVolumeClaim', json(pvc));
        const t0 = performance.now();
        const outcome = await reconcile('PersistentVolumeClaim', `default/${tag}-claim-${i}`);
        latencies.push(performance.now() - t0);
        if (outcome.writes !== 4) throw new Error(`bind of ${tag}-claim-${i} made ${outcome.writes} writes`);
      }
      return { p50: percentile(latencies, 50), itemsReadPerBind: (itemsRead() - before) / SCALE_CLAIMS };
    };
    await fill(100);
    const small = await measureAt('small');
    await fill(10_000);
    const large = await measureAt('large');
    return {
      claimsPerSize: SCALE_CLAIMS,
      with100Volumes: { reconcileP50Ms: round(small.p50), itemsReadPerBind: round(small.itemsReadPerBind) },
      with10000Volumes: { reconcileP50Ms: round(large.p50), itemsReadPerBind: round(large.itemsReadPerBind) },
      latencyRatio: round(large.p50 / small.p50),
      itemsReadRatio: round(large.itemsReadPerBind / small.itemsReadPerBind),
    };
  } finally {
    await kube.stop();
    await db.stop();
  }
}

const started = Date.now();
const { single, burst, warmBurst, steadyBurst } = await atTargetBudget();
const kcmBudget: Record<string, unknown>[] = [];
for (const size of BUDGET_SIZES) kcmBudget.push(await atKcmBudget(size));
emitControllerReport({
  bench: 'binder',
  operation: 'bind (claim created → Bound, static)',
  budget: BUDGET,
  single,
  burst,
  warmBurst,
  steadyBurst,
  kcmBudget,
  scaling: SCALE_CLAIMS > 0 ? await scaling() : undefined,
}, started);
