/**
 * `npm run bench:provisioner`: dynamic provisioning through the whole local stack (emulator → forwarder →
 * SNS FIFO → SQS FIFO → binder and provisioner function containers → emulator and the embedded storage
 * control plane; cache in dynalite), with the per-cluster API budget on. Claims ask for 1 Gi and name no
 * class: admission gives them the stack's default class `local` (claimflow.io/local, reclaim Delete); the
 * binder marks them for the provisioner, the provisioner creates the backend volume and the PV, the binder
 * binds. An operation is one claim created → Bound, and its cost is both functions' (and the forwarder's).
 *
 * 1. `single`: `BENCH_SINGLES` claims (default 5), one at a time, the pipeline idle in between: create →
 *    Bound, median; records each function got before Bound (hops); backend time per claim.
 * 2. `burst`: `BENCH_CLAIMS` claims (default 100) created `BENCH_CONCURRENCY` at a time (default 20),
 *    budget `BENCH_QPS`/`BENCH_BURST` (default 400/600): latency p50/p99, claims Bound per second, and
 *    per claim: API reads and writes by function, verb and resource (events included), messages,
 *    DynamoDB requests and units, storage calls, SQS/SNS/Lambda counts, cost per 1,000 claims.
 *    `warmBurst`: the same burst again on the now warm stack (`BENCH_WARM_BURST`, support/harness.ts).
 * 3. `delete`: the burst's claims deleted `BENCH_CONCURRENCY` at a time: claim deleted → PV gone (backend
 *    volume deleted first), p50/p99, per-claim figures, backend volumes left; `BENCH_ATTACHMENTS` (default
 *    500) VolumeAttachments of other volumes exist meanwhile, which each deletion's guard must pass over.
 * 4. `steadyBurst`: the median-rate one of `BENCH_STEADY_BURSTS` (default 5) more bursts after the
 *    deletion, once V8 has compiled most of what the bursts run (support/harness.ts). They run among the
 *    deletion's `BENCH_ATTACHMENTS` attachments and the warm burst's volumes, more of both than the
 *    first two bursts had.
 * 5. `kcmBudget`: the burst on a fresh stack at kube-controller-manager's default budget (20 QPS, burst
 *    30) for each size in `BENCH_BUDGET_SIZES` (default 100; `100,1000` for the long run): the most API
 *    requests the functions sent in one second (≤ QPS + burst) and throughput ÷ (QPS ÷ requests per claim).
 *
 * fauxqs and dynalite run in their own process unless `BENCH_AWS=embedded`, and the functions in a thread
 * of their own unless `BENCH_FUNCTIONS=inline` (support/harness.ts); the report's `aws` and `functions` say
 * which.
 *
 * Prints one JSON document on stdout and a short table on stderr.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { performance } from 'node:perf_hooks';
import { KCM_CLIENT_DEFAULTS } from '../../lib/state/bucket.ts';
import type { KubeObject } from '../../infra/local/kube-api/types.ts';
import { BenchStack, claimOperation, emitControllerReport, envNumber, envSizes, measure, pool, progress, runBurst, runSingles, runSteadyBursts, steadyBurstNames, warmBurstNames } from './support/harness.ts';

const SINGLES = envNumber('BENCH_SINGLES', 5);
const CLAIMS = envNumber('BENCH_CLAIMS', 100);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 20);
const BUDGET = { qps: envNumber('BENCH_QPS', 400), burst: envNumber('BENCH_BURST', 600) };
const BUDGET_SIZES = envSizes('BENCH_BUDGET_SIZES', [100]);
const ATTACHMENTS = envNumber('BENCH_ATTACHMENTS', 500);

const claimSpec = () => ({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });

async function startBench(budget: { qps: number; burst: number }): Promise<BenchStack> {
  const bench = await BenchStack.start({ functions: ['binder', 'provisioner'], budget, storageApi: true });
  try {
    await bench.startForwarder();
    await bench.settle({ timeoutMs: 120_000 });
    return bench;
  } catch (error) {
    await bench.stop();
    throw error;
  }
}

/**
 * VolumeAttachments of `count` other volumes, on a node, written straight into the store: the cluster's
 * attached volumes that every deletion's guard must tell apart from its own.
 */
function addOtherAttachments(bench: BenchStack, count: number): void {
  const store = bench.stack.kubeApi!.store;
  for (let i = 0; i < count; i++) {
    store.create('storage.k8s.io/volumeattachments', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: `csi-attached-${i}` },
      spec: { attacher: 'attacher.claimflow.io', nodeName: 'local-node', source: { persistentVolumeName: `attached-elsewhere-${i}` } },
    } as KubeObject);
  }
}

/** Deletes the claims; each operation ends when its PV is gone (the backend volume deleted before it). */
async function runDeletes(bench: BenchStack, claims: readonly string[]): Promise<Record<string, unknown>> {
  const store = bench.stack.kubeApi!.store;
  addOtherAttachments(bench, ATTACHMENTS);
  const volumeOf = new Map<string, string>();
  for (const name of claims) {
    const claim = store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name }) as { spec?: { volumeName?: string } } | undefined;
    if (claim?.spec?.volumeName) volumeOf.set(name, claim.spec.volumeName);
  }
  const names = claims.filter((n) => volumeOf.has(n));
  const deletedVolumes = new Set(names.map((n) => volumeOf.get(n)!));
  const gone = new Map<string, number>();
  const unsubscribe = store.watchRaw((e) => {
    if (e.type === 'DELETED' && e.resource === '/persistentvolumes' && e.object.metadata?.name) gone.set(e.object.metadata.name, performance.now());
  });
  try {
    await bench.settle();
    const before = await bench.snapshot();
    const deletedAt = new Map<string, number>();
    const started = performance.now();
    await pool(names, CONCURRENCY, async (name) => {
      deletedAt.set(name, performance.now());
      await bench.core.deleteNamespacedPersistentVolumeClaim({ namespace: 'default', name });
      bench.benchRequests.add('delete persistentvolumeclaims');
    });
    const deadline = performance.now() + 600_000;
    while (names.some((n) => !gone.has(volumeOf.get(n)!)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const done = names.filter((n) => gone.has(volumeOf.get(n)!));
    const last = Math.max(...done.map((n) => gone.get(volumeOf.get(n)!)!));
    await bench.settle();
    const after = await bench.snapshot();
    const latencies = done.map((n) => gone.get(volumeOf.get(n)!)! - deletedAt.get(n)!);
    const figures = measure(bench, before, after, { operations: done.length || 1, latencies, elapsedMs: last - started, complete: done.length === names.length });
    delete figures.apiBudget;
    return {
      claims: names.length,
      otherAttachments: ATTACHMENTS,
      volumesGone: done.length,
      ...figures,
      // Of the deleted claims' volumes (the warm burst's stay).
      backendVolumesLeft: bench.stack.storageApi!.state.allVolumes().filter((v) => deletedVolumes.has(v.name)).length,
    };
  } finally {
    unsubscribe();
  }
}

async function atTargetBudget(): Promise<{ single?: Record<string, unknown>; burst?: Record<string, unknown>; warmBurst?: Record<string, unknown>; deletion?: Record<string, unknown>; steadyBurst?: Record<string, unknown> }> {
  if (SINGLES + CLAIMS === 0) return {};
  progress(`provisioner: ${SINGLES} single claims, then ${CLAIMS} claims ${CONCURRENCY} at a time, then their deletion; budget ${BUDGET.qps} QPS / burst ${BUDGET.burst}`);
  const bench = await startBench(BUDGET);
  try {
    const singles = Array.from({ length: SINGLES }, (_, i) => `single-${i}`);
    const single = SINGLES > 0 ? await runSingles(bench, singles, claimOperation(bench, claimSpec)) : undefined;
    const names = Array.from({ length: CLAIMS }, (_, i) => `claim-${i}`);
    const burst = CLAIMS > 0 ? await runBurst(bench, names, claimOperation(bench, claimSpec), { concurrency: CONCURRENCY, timeoutMs: 600_000 }) : undefined;
    const again = warmBurstNames(names);
    const warmBurst = again.length > 0 ? await runBurst(bench, again, claimOperation(bench, claimSpec), { concurrency: CONCURRENCY, timeoutMs: 600_000 }) : undefined;
    const deletion = CLAIMS > 0 ? await runDeletes(bench, names) : undefined;
    // After the deletion, which so runs among as many volumes as ever.
    const steadyBurst = CLAIMS > 0
      ? await runSteadyBursts('provisioner', (round) => runBurst(bench, steadyBurstNames(names, round), claimOperation(bench, claimSpec), { concurrency: CONCURRENCY, timeoutMs: 600_000 }))
      : undefined;
    return { single, burst, warmBurst, deletion, steadyBurst };
  } finally {
    await bench.stop();
  }
}

async function atKcmBudget(claims: number): Promise<Record<string, unknown>> {
  const budget = { ...KCM_CLIENT_DEFAULTS };
  progress(`provisioner: ${claims} claims ${CONCURRENCY} at a time at kube-controller-manager's budget (${budget.qps} QPS / burst ${budget.burst})`);
  const bench = await startBench(budget);
  try {
    const names = Array.from({ length: claims }, (_, i) => `claim-${i}`);
    return await runBurst(bench, names, claimOperation(bench, claimSpec), { concurrency: CONCURRENCY, timeoutMs: 120_000 + claims * 2000 });
  } finally {
    await bench.stop();
  }
}

const started = Date.now();
const { single, burst, warmBurst, deletion, steadyBurst } = await atTargetBudget();
const kcmBudget: Record<string, unknown>[] = [];
for (const size of BUDGET_SIZES) kcmBudget.push(await atKcmBudget(size));
emitControllerReport({
  bench: 'provisioner',
  operation: 'provision (default-class claim created → Bound: binder + provisioner)',
  budget: BUDGET,
  single,
  burst,
  warmBurst,
  steadyBurst,
  delete: deletion,
  kcmBudget,
}, started);
