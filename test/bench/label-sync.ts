/**
 * `npm run bench:label-sync`: the node label sync through the whole local stack (API emulator → forwarder →
 * SNS FIFO → LabelSyncQueue → the label-sync function's containers, in a thread of their own as the
 * controller benches run them (support/harness.ts) → the embedded storage control plane over HTTP), with the
 * per-cluster API budget on.
 *
 * The operation: a Node's labels changed (one update through the API) until the storage node carries them.
 * `BENCH_SINGLES + BENCH_NODES` StorageOS nodes exist on the control plane and in the emulator's store
 * (annotated with the StorageOS CSI driver's node id) before the forwarder starts.
 *
 * 1. `single`: `BENCH_SINGLES` nodes (default 5), one at a time, the pipeline idle in between.
 * 2. `burst`: `BENCH_NODES` nodes (default 100) changed `BENCH_CONCURRENCY` at a time (default 20), budget
 *    `BENCH_QPS`/`BENCH_BURST` (default 400/600). Both report what the binder and provisioner benches do:
 *    latency p50/p99, changes per second, API reads and writes, messages, DynamoDB requests and units, the
 *    cost per 1,000 changes, and the control-plane calls per changed node (lists and writes; upstream makes
 *    2 lists and 1 write).
 *    `warmBurst`: the same burst again on the now warm stack (`BENCH_WARM_BURST`, support/harness.ts).
 * 3. `kcmBudget`: the same burst on a fresh stack at kube-controller-manager's default budget (20 QPS, burst
 *    30) for each size in `BENCH_BUDGET_SIZES` (default 100).
 * 4. One scheduled resync over every node with nothing to do (on the first stack, after the burst): the calls
 *    it made.
 *
 * Prints one JSON document on stdout and a short table on stderr.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { performance } from 'node:perf_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { CoreV1Api, KubeConfig, type V1Node } from '@kubernetes/client-node';
import { makeBudgetedApiClient } from '../../lib/kube/client.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { NODE_ID_ANNOTATION } from '../../lib/label-sync/predicate.ts';
import { LabelResyncSlots, runLabelResync } from '../../lib/label-sync/resync.ts';
import { KCM_CLIENT_DEFAULTS } from '../../lib/state/bucket.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import type { KubeObject } from '../../infra/local/kube-api/types.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { BenchStack, emitControllerReport, envNumber, envSizes, PollingTracker, progress, round, runBurst, runSingles, warmBurstNames, type BenchOperation } from './support/harness.ts';

const SINGLES = envNumber('BENCH_SINGLES', 5);
const NODES = envNumber('BENCH_NODES', 100);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 20);
const BUDGET = { qps: envNumber('BENCH_QPS', 400), burst: envNumber('BENCH_BURST', 600) };
const BUDGET_SIZES = envSizes('BENCH_BUDGET_SIZES', [100]);
const CHANGED = { bench: 'v1' };

/** Storage nodes and Nodes `names`, the Nodes written straight into the emulator's store (no budget spent). */
async function addNodes(bench: BenchStack, names: readonly string[]): Promise<void> {
  const store = bench.stack.kubeApi!.store;
  for (const name of names) {
    await bench.stack.storageApi!.state.addNode(name);
    store.create('/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name }, annotations: { [NODE_ID_ANNOTATION]: '{"csi.storageos.com":"x"}' } },
    } as KubeObject);
  }
}

/** A Node's labels changed by one update through the API; done when its storage node carries them. */
function labelOperation(bench: BenchStack): BenchOperation {
  const kc = new KubeConfig();
  kc.loadFromFile(bench.stack.kubeconfigPath);
  const core = makeBudgetedApiClient(kc, CoreV1Api);
  const store = bench.stack.kubeApi!.store;
  const state = bench.stack.storageApi!.state;
  return {
    noun: 'nodes',
    kind: 'Node',
    // read from the control plane's state in process (no request)
    tracker: () =>
      new PollingTracker(function* () {
        for (const n of state.listNodes()) if (n.labels.bench === CHANGED.bench) yield n.name;
      }, 20),
    async start(tracker, name) {
      const node = store.get({ resource: '/nodes', namespace: '', name }) as V1Node;
      node.metadata!.labels = { ...node.metadata!.labels, ...CHANGED, rack: `r${name.slice(-1)}` };
      tracker.created.set(name, performance.now());
      await core.replaceNode({ name, body: node });
      bench.benchRequests.add('update nodes');
    },
    isBenchWrite: (e) => e.type === 'MODIFIED' && e.resource === '/nodes',
  };
}

async function startBench(budget: { qps: number; burst: number }, names: readonly string[]): Promise<{ bench: BenchStack; op: BenchOperation }> {
  const bench = await BenchStack.start({ functions: ['labelSync'], budget, storageApi: true });
  try {
    await addNodes(bench, names);
    await bench.startForwarder();
    if (!(await bench.settle({ timeoutMs: 300_000 }))) progress('warning: the initial sync did not settle');
    return { bench, op: labelOperation(bench) };
  } catch (error) {
    await bench.stop();
    throw error;
  }
}

/** The control plane's node lists and writes during `run`, per changed node. */
async function withControlPlaneCalls<T extends Record<string, unknown> | undefined>(bench: BenchStack, nodes: number, run: () => Promise<T>): Promise<T> {
  const requests = bench.stack.storageApi!.requests;
  const before = requests.snapshot();
  const figures = await run();
  if (!figures) return figures;
  const after = requests.snapshot();
  const delta = (key: string) => (after[key] ?? 0) - (before[key] ?? 0);
  const lists = delta('GET /v2/nodes');
  const writes = delta('PUT /v2/nodes/{id}') + delta('PUT /v2/nodes/{id}/compute-only');
  return { ...figures, controlPlane: { listsPerChangedNode: round(lists / nodes), writesPerChangedNode: round(writes / nodes), callsPerChangedNode: round((lists + writes) / nodes) } };
}

/** One scheduled resync with nothing to do, as the function runs it for the scheduled event. */
async function resyncWithNothingToDo(bench: BenchStack): Promise<Record<string, unknown>> {
  const stack = bench.stack;
  const requests = stack.storageApi!.requests;
  const before = requests.total();
  const report = await runLabelResync({
    cache: new ObjectCache(stack.dynamodb.doc, stack.tables.cache, { indexer: indexAttributes }),
    storage: new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS }),
    slots: new LabelResyncSlots(stack.dynamodb.doc, stack.tables.control),
    clusters: [stack.env.CLUSTER_ID],
    config: { enabled: true, resyncIntervalMs: 3_600_000 },
    logger: new Logger({ serviceName: 'bench', logLevel: 'SILENT' }),
  });
  return { ...report, controlPlaneCalls: requests.total() - before };
}

async function atTargetBudget(): Promise<{ single?: Record<string, unknown>; burst?: Record<string, unknown>; warmBurst?: Record<string, unknown>; resync?: Record<string, unknown> }> {
  if (SINGLES + NODES === 0) return {};
  progress(`label-sync: ${SINGLES} single nodes, then ${NODES} nodes ${CONCURRENCY} at a time; budget ${BUDGET.qps} QPS / burst ${BUDGET.burst}`);
  const singles = Array.from({ length: SINGLES }, (_, i) => `single-${i}`);
  const names = Array.from({ length: NODES }, (_, i) => `node-${String(i).padStart(4, '0')}`);
  const again = warmBurstNames(names);
  const { bench, op } = await startBench(BUDGET, [...singles, ...names]);
  try {
    const single = await withControlPlaneCalls(bench, SINGLES, async () => (SINGLES > 0 ? runSingles(bench, singles, op) : undefined));
    const burst = await withControlPlaneCalls(bench, NODES, async () => (NODES > 0 ? runBurst(bench, names, op, { concurrency: CONCURRENCY, timeoutMs: 600_000 }) : undefined));
    // The warm burst's nodes only now, so that the first burst runs over the same cluster as ever.
    if (again.length > 0) {
      await addNodes(bench, again);
      // Their events handled before anything is counted.
      if (!(await bench.settle({ timeoutMs: 300_000 }))) progress('warning: the warm burst\'s objects did not settle');
    }
    const warmBurst = again.length > 0 ? await withControlPlaneCalls(bench, again.length, () => runBurst(bench, again, op, { concurrency: CONCURRENCY, timeoutMs: 600_000 })) : undefined;
    progress('label-sync: a resync with nothing to do');
    return { single, burst, warmBurst, resync: await resyncWithNothingToDo(bench) };
  } finally {
    await bench.stop();
  }
}

async function atKcmBudget(nodes: number): Promise<Record<string, unknown>> {
  const budget = { ...KCM_CLIENT_DEFAULTS };
  progress(`label-sync: ${nodes} nodes ${CONCURRENCY} at a time at kube-controller-manager's budget (${budget.qps} QPS / burst ${budget.burst})`);
  const names = Array.from({ length: nodes }, (_, i) => `node-${String(i).padStart(4, '0')}`);
  const { bench, op } = await startBench(budget, names);
  try {
    return await withControlPlaneCalls(bench, nodes, () => runBurst(bench, names, op, { concurrency: CONCURRENCY, timeoutMs: 120_000 + nodes * 1000 }));
  } finally {
    await bench.stop();
  }
}

const started = Date.now();
const { single, burst, warmBurst, resync } = await atTargetBudget();
const kcmBudget: Record<string, unknown>[] = [];
for (const size of BUDGET_SIZES) kcmBudget.push(await atKcmBudget(size));
emitControllerReport({
  bench: 'label-sync',
  operation: 'label change (Node labels updated → the storage node carries them)',
  budget: BUDGET,
  single,
  burst,
  warmBurst,
  kcmBudget,
  resyncWithNothingToDo: resync,
}, started);
