/**
 * `npm run bench:scale`: the binder pipeline at scale, with the forwarder as its own process (as it runs
 * in a cluster) so its memory can be read.
 *
 * 1. Baseline: a forwarder on the nearly empty cluster: RSS and V8 heap once synced. It is stopped and its
 *    sync records removed, so the next forwarder starts cold.
 * 2. `BENCH_SCALE_VOLUMES` existing volumes (default 10,000; Available, class `bench`, volume i has i+1 Gi)
 *    are written into the emulator's store, and the forwarder restarts on them:
 *    - `BENCH_SCALE_START=warm` (default): a restart with a warm cache (every volume already cached at
 *      its resourceVersion, a bookmark at the store's revision, the list not marked complete): its LIST of
 *      every volume is compared with the cache (both held in memory), nothing is republished;
 *    - `BENCH_SCALE_START=cold`: the first start on an existing cluster (empty cache, no bookmark): every
 *      volume is written to the cache and published (SYNC) and the binder sees each one.
 *    Reported: time to ready, time until the pipeline is idle again, the binder messages it caused, the
 *    forwarder's peak and settled RSS and heap at that many objects.
 * 3. `BENCH_SCALE_CLAIMS` claims (default 1,000; claim i fits volume i best) created `BENCH_SCALE_CONCURRENCY`
 *    at a time (default 50), budget `BENCH_QPS`/`BENCH_BURST` (default 400/600): claims Bound per second,
 *    latency p50/p99, the emulator's peak request rate (all clients: its request counter sampled every
 *    100 ms, the most in any 1 s), the functions' most requests in one second, the forwarder's peak RSS and
 *    heap, and the per-bind figures (API, messages, DynamoDB). The forwarder runs out of process here, so its
 *    DynamoDB and SNS requests are not metered: the cost line covers the binder and SQS only.
 *
 * fauxqs and dynalite run in their own process unless `BENCH_AWS=embedded`, and the functions in a thread
 * of their own unless `BENCH_FUNCTIONS=inline` (support/harness.ts); the report's `aws` and `functions` say
 * which.
 *
 * Prints one JSON document on stdout and a short summary on stderr.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import type { KubeObject } from '../../infra/local/kube-api/types.ts';
import { WATCHED_KINDS } from '../../lib/runtime/message.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { syncPk } from '../../lib/state/schema.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { AWS_MODE, BenchStack, claimOperation, FUNCTIONS_MODE, OWN_WRITE_HOLD_MS, envNumber, pool, progress, round, runBurst, sleep } from './support/harness.ts';
import { table } from './support/report.ts';

const VOLUMES = envNumber('BENCH_SCALE_VOLUMES', 10_000);
const CLAIMS = envNumber('BENCH_SCALE_CLAIMS', 1000);
const CONCURRENCY = envNumber('BENCH_SCALE_CONCURRENCY', 50);
const START = process.env.BENCH_SCALE_START === 'cold' ? 'cold' : 'warm';
const BUDGET = { qps: envNumber('BENCH_QPS', 400), burst: envNumber('BENCH_BURST', 600) };
const MiB = 1024 * 1024;

interface Memory {
  rssMiB: number;
  heapUsedMiB: number;
}

/** The forwarder (lib/forwarder/main.ts) as a child process against the stack. */
class ForwarderProcess {
  readonly child: ChildProcess;
  port = 0;
  readonly #exited: Promise<void>;

  private constructor(child: ChildProcess) {
    this.child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  static async start(bench: BenchStack): Promise<ForwarderProcess> {
    const { stack } = bench;
    const child = spawn(process.execPath, [fileURLToPath(new URL('../../lib/forwarder/main.ts', import.meta.url))], {
      env: {
        PATH: process.env.PATH ?? '',
        ...stack.env,
        CLUSTER_ID: stack.env.CLUSTER_ID,
        EVENTS_TOPIC_ARN: stack.topicArn,
        CACHE_TABLE: stack.tables.cache,
        CONTROL_TABLE: stack.tables.control,
        KUBECONFIG: stack.kubeconfigPath,
        LEADER_ELECT: 'false',
        HTTP_PORT: '0',
        HEARTBEAT_INTERVAL: '0',
        OWN_WRITE_HOLD: String(OWN_WRITE_HOLD_MS),
        POWERTOOLS_LOG_LEVEL: 'INFO',
        POWERTOOLS_METRICS_DISABLED: 'true',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const forwarder = new ForwarderProcess(child);
    forwarder.port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      const timer = setTimeout(() => reject(new Error('forwarder: no start line within 60 s')), 60_000);
      lines.on('line', (line) => {
        try {
          const entry = JSON.parse(line) as { message?: string; port?: number };
          if (entry.message === 'forwarder started' && entry.port) {
            clearTimeout(timer);
            resolve(entry.port);
          }
        } catch {
          // not a log line of ours
        }
      });
      child.once('exit', (code) => reject(new Error(`forwarder exited with ${code} before it started`)));
    });
    return forwarder;
  }

  async ready(): Promise<boolean> {
    try {
      return (await fetch(`http://127.0.0.1:${this.port}/readyz`)).ok;
    } catch {
      return false;
    }
  }

  async memory(): Promise<Memory> {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
    let heap = NaN;
    try {
      const text = await (await fetch(`http://127.0.0.1:${this.port}/metrics`)).text();
      heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? NaN) / MiB;
    } catch {
      // no metrics: heap unknown
    }
    return { rssMiB: round(rss, 1), heapUsedMiB: round(heap, 1) };
  }

  /** Samples memory every 250 ms until stopped; the peaks. */
  sample(): { stop(): Promise<Memory & { samples: number }> } {
    let peak: Memory = { rssMiB: 0, heapUsedMiB: 0 };
    let samples = 0;
    let running = true;
    const loop = (async () => {
      while (running) {
        const m = await this.memory().catch(() => undefined);
        if (m) {
          samples++;
          peak = { rssMiB: Math.max(peak.rssMiB, m.rssMiB), heapUsedMiB: Math.max(peak.heapUsedMiB, Number.isFinite(m.heapUsedMiB) ? m.heapUsedMiB : 0) };
        }
        await sleep(250);
      }
    })();
    return {
      async stop() {
        running = false;
        await loop;
        return { ...peak, samples };
      },
    };
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.#exited;
    clearTimeout(timer);
  }
}

async function waitReady(forwarder: ForwarderProcess, timeoutMs: number): Promise<number> {
  const started = performance.now();
  while (!(await forwarder.ready())) {
    if (performance.now() - started > timeoutMs) throw new Error(`forwarder not ready within ${timeoutMs} ms`);
    await sleep(50);
  }
  return performance.now() - started;
}

const started = Date.now();
progress(`scale: ${VOLUMES} existing volumes, then ${CLAIMS} claims ${CONCURRENCY} at a time; budget ${BUDGET.qps} QPS / burst ${BUDGET.burst}`);
const bench = await BenchStack.start({ functions: ['binder'], budget: BUDGET });
let forwarder: ForwarderProcess | undefined;
try {
  // 1. baseline
  forwarder = await ForwarderProcess.start(bench);
  await waitReady(forwarder, 60_000);
  await bench.settle();
  await sleep(2000);
  const baseline = await forwarder.memory();
  await forwarder.stop();
  forwarder = undefined;
  for (const kind of WATCHED_KINDS) {
    await bench.stack.dynamodb.doc.send(new DeleteCommand({ TableName: bench.stack.tables.control, Key: { pk: syncPk(bench.stack.env.CLUSTER_ID, kind) } }));
  }

  // 2. the existing volumes, and a cold forwarder
  const store = bench.stack.kubeApi!.store;
  const fillStarted = performance.now();
  for (let i = 0; i < VOLUMES; i++) {
    const created = store.create('/persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `bench-${i}` },
      spec: { capacity: { storage: `${i + 1}Gi` }, accessModes: ['ReadWriteOnce'], storageClassName: 'bench', persistentVolumeReclaimPolicy: 'Retain', hostPath: { path: `/tmp/bench-${i}` } },
    } as KubeObject);
    store.update('/persistentvolumes', { ...created, status: { phase: 'Available' } } as KubeObject, 'status');
  }
  if (START === 'warm') {
    const cluster = bench.stack.env.CLUSTER_ID;
    const cache = new ObjectCache(bench.stack.dynamodb.doc, bench.stack.tables.cache, { indexer: indexAttributes });
    const volumes = store.list('/persistentvolumes');
    await pool(volumes, 50, async (pv) => {
      await cache.put(cluster, 'PersistentVolume', JSON.parse(JSON.stringify(pv)) as KubeObject);
    });
    await new SyncMarkers(bench.stack.dynamodb.doc, bench.stack.tables.control).saveBookmark(cluster, 'PersistentVolume', String(store.revision));
  }
  progress(`scale: ${VOLUMES} volumes written${START === 'warm' ? ' and cached' : ''} in ${round((performance.now() - fillStarted) / 1000, 1)} s; starting the forwarder (${START})`);
  const syncStarted = performance.now();
  const before = bench.pool('binder').tally.get('records');
  const deliveriesBefore = bench.deliveries.length;
  forwarder = await ForwarderProcess.start(bench);
  const syncSampler = forwarder.sample();
  const readyMs = await waitReady(forwarder, 600_000);
  const drained = await bench.settle({ timeoutMs: 900_000 });
  const drainMs = performance.now() - syncStarted;
  const syncPeak = await syncSampler.stop();
  await sleep(2000);
  const atVolumes = await forwarder.memory();
  const syncMessages = bench.pool('binder').tally.get('records') - before;
  const syncByKindAndType: Record<string, number> = {};
  for (const d of bench.deliveries.slice(deliveriesBefore)) {
    const k = `${d.kind} ${d.type}${d.firstReceive ? '' : ' (redelivered)'}`;
    syncByKindAndType[k] = (syncByKindAndType[k] ?? 0) + 1;
  }
  progress(`scale: forwarder (${START}) ready in ${round(readyMs / 1000, 1)} s, pipeline idle after ${round(drainMs / 1000, 1)} s (${syncMessages} binder messages)`);

  // 3. the claims
  const claimSampler = forwarder.sample();
  const names = Array.from({ length: CLAIMS }, (_, i) => `claim-${i}`);
  const burst = await runBurst(bench, names, claimOperation(bench, (_, i) => ({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${i + 1}Gi` } }, storageClassName: 'bench' })), {
    concurrency: CONCURRENCY,
    timeoutMs: 900_000,
  });
  const claimPeak = await claimSampler.stop();
  const afterClaims = await forwarder.memory();

  const report = {
    bench: 'scale',
    volumes: VOLUMES,
    claims: CLAIMS,
    budget: BUDGET,
    aws: AWS_MODE,
    functions: FUNCTIONS_MODE,
    ownWriteHoldMs: OWN_WRITE_HOLD_MS,
    forwarder: {
      process: 'lib/forwarder/main.ts as a child process, single replica, no leader election',
      baselineNearlyEmptyCluster: baseline,
      start: START,
      startAtVolumes: { readyMs: round(readyMs, 0), pipelineIdleAfterMs: round(drainMs, 0), drained, binderMessages: syncMessages, binderMessagesByKindAndType: syncByKindAndType, peak: syncPeak },
      settledAtVolumes: atVolumes,
      duringClaimsPeak: claimPeak,
      afterClaims,
    },
    burst: { ...burst, note: 'the forwarder runs out of process: its DynamoDB and SNS requests are not metered here (see bench:binder)' },
    durationS: round((Date.now() - started) / 1000, 0),
  };
  console.log(JSON.stringify(report, null, 2));
  const b = burst as Record<string, any>;
  process.stderr.write(
    `\n${table(
      ['scale row', 'claims/s', 'p50 ms', 'p99 ms', 'emulator peak req/s', 'fn max req in 1 s', 'forwarder RSS / heap MiB (baseline → at volumes → peak)'],
      [[
        `${VOLUMES} volumes, ${CLAIMS} claims`,
        String(b.throughputPerSecond),
        String(b.latencyMs?.p50),
        String(b.latencyMs?.p99),
        String(b.emulatorPeakRequestsPerSecond),
        String(b.apiBudget?.maxRequestsInOneSecond),
        `${baseline.rssMiB}/${baseline.heapUsedMiB} → ${atVolumes.rssMiB}/${atVolumes.heapUsedMiB} → ${Math.max(syncPeak.rssMiB, claimPeak.rssMiB)}/${Math.max(syncPeak.heapUsedMiB, claimPeak.heapUsedMiB)}`,
      ]],
    )}\n\n`,
  );
} finally {
  await forwarder?.stop();
  await bench.stop();
}
