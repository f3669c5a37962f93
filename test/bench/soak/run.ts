/**
 * `runSoak({ minutes, seed })`: two emulated clusters served by one deployment under overlapping faults,
 * then faults off, the system settles, and the invariants are checked per cluster.
 *
 * - Cluster A is the stack's emulator and storage control plane; cluster B a second pair (clusters.ts).
 *   One set of topic/queues/tables/functions; each function's `CLUSTERS` names both clusters (its own
 *   identity in each, and each cluster's control plane as the entry's `storage` field).
 * - Both forwarders are child processes (cluster ids `local` and `b`), SIGKILLable.
 * - The functions run in killable worker sandboxes (functions.ts); the timeouts and visibility timeouts
 *   are shortened (SOAK_PARAMS) so a killed batch comes back within the run.
 * - SQS, SNS and DynamoDB are a fauxqs and a dynalite started here, behind the fault proxy
 *   (infra/local/fault-proxy), whose URL is the stack's `awsEndpoint`: the functions, both forwarders, the
 *   event source mappings and the checker all reach them through it.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { PROJECT_ROOT } from '../../../infra/build/bundle.ts';
import { kebabCase } from '../../../infra/build/functions.ts';
import { startFaultProxy, type FaultProxy } from '../../../infra/local/fault-proxy/proxy.ts';
import { startAwsStandIns } from '../../../infra/local/fault-proxy/stand-ins.ts';
import { startStack, type Stack } from '../../../infra/local/stack/stack.ts';
import { compileTemplate } from '../../../infra/local/stack/template.ts';
import { readWiring } from '../../../infra/local/stack/wiring.ts';
import { checkBudget, checkDlqs, checkIsolation, checkState, type InvariantResult } from './checker.ts';
import { clusterFromStack, ForwarderProcess, startSecondCluster, type SoakCluster } from './clusters.ts';
import { planFaults, type FaultKind, type PlannedFault } from './faults.ts';
import { FunctionPool, type FunctionSpec } from './functions.ts';
import { Random } from './random.ts';
import { Workload } from './workload.ts';

/** Stage parameters of the soak: short timeouts so batches cut by a kill come back within the run. */
export const SOAK_PARAMS: Record<string, string> = {
  // at least twice the runtime's start margin (5 s): below it the margin shrinks to half the timeout, with a warning
  binderTimeout: '12',
  binderVisibilityTimeout: '72',
  provisionerTimeout: '20',
  provisionerVisibilityTimeout: '120',
  labelSyncTimeout: '12',
  labelSyncVisibilityTimeout: '72',
};
/** Functions the fault plan may kill (shared-volume's scheduled poll runs for most of a minute: not killed). */
const KILLABLE = ['binder', 'provisioner', 'labelSync'];
const BUDGET = { qps: 20, burst: 30 };

export interface SoakOptions {
  minutes: number;
  seed: number;
  /** Workload operations started per second per cluster (default 4). */
  opsPerSecond?: number;
  /** Mean faults per second, both clusters together (default 0.4). */
  faultRate?: number;
  /** Functions the plan may kill mid-batch (default binder, provisioner, labelSync; [] = none). */
  killable?: string[];
  /** SQS/SNS/DynamoDB faults through the fault proxy (default true). */
  awsFaults?: boolean;
  /** Stage parameters over {@link SOAK_PARAMS} (e.g. `{ binderTimeout: '5' }`). */
  params?: Record<string, string>;
  /** Longest wait for convergence after the faults (default 300 s). */
  settleTimeoutMs?: number;
  /** Where logs go (default: a temp dir, removed unless `keepLogs`). */
  stateDir?: string;
  keepLogs?: boolean;
  /** Progress lines (default: none). */
  progress?: (line: string) => void;
}

export interface ClusterReport {
  id: string;
  operations: Record<string, number>;
  totalOperations: number;
  workloadRetries: number;
  invariants: InvariantResult[];
  maxFunctionRequestsPerSecond: number;
  functionRequests: number;
}

export interface SoakReport {
  seed: number;
  minutes: number;
  durationMs: number;
  faults: Record<string, number>;
  faultsByCluster: Record<string, number>;
  /** AWS requests the fault proxy failed, delayed or cut, by `service operation kind`. */
  awsRequestsHit: Record<string, number>;
  /** Batches cut by sandbox kills. */
  invocationsCut: number;
  lastFaultAtMs: number;
  /** From the end of the last fault to every invariant holding; undefined when they never did. */
  convergeMs?: number;
  clusters: ClusterReport[];
  dlq: InvariantResult;
  ok: boolean;
  logDir?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const progress = options.progress ?? (() => {});
  const windowMs = Math.round(options.minutes * 60_000);
  const stateDir = options.stateDir ?? (await mkdtemp(join(tmpdir(), 'claimflow-soak-')));
  await mkdir(stateDir, { recursive: true });
  const log = createWriteStream(join(stateDir, 'soak.log'));
  const write = (text: string) => log.write(text.endsWith('\n') ? text : `${text}\n`);
  const random = new Random(options.seed);
  const pool = new FunctionPool((fn, text) => write(`[${fn}] ${text}`));
  const stops: (() => Promise<unknown>)[] = [];
  const started = Date.now();

  try {
    const params = { ...SOAK_PARAMS, ...options.params };
    const template = await compileTemplate({ root: PROJECT_ROOT, stage: 'local', params });
    const wiring = readWiring(template);
    const functions = wiring.functions.filter((f) => existsSync(join(PROJECT_ROOT, 'functions', `${kebabCase(f.name)}.ts`)));
    progress('starting fauxqs, dynalite and the fault proxy …');
    const aws = await startAwsStandIns({ region: 'eu-west-1' });
    stops.push(() => aws.stop());
    const proxy: FaultProxy = await startFaultProxy({ upstreams: aws.upstreams, seed: options.seed });
    stops.push(() => proxy.stop());
    progress('starting the stack (cluster A) …');
    const stack: Stack = await startStack({
      awsEndpoint: proxy.url,
      region: 'eu-west-1',
      params,
      stateDir: join(stateDir, 'stack'),
      storageNodeAnnotation: true,
      functions: Object.fromEntries(functions.map((f) => [f.name, pool.handler(f.name)])),
      warn: (m) => write(`[stack] ${m}`),
    });
    stops.push(() => stack.stop());
    const first = wiring.functions[0];
    const stackName = first.functionName.slice(0, -(first.name.length + 1));
    const a = await clusterFromStack(stack, stack.env.CLUSTER_ID, 'a', join(stateDir, 'stack'));
    progress('starting cluster B …');
    const bStarted = await startSecondCluster({ id: 'b', prefix: 'b', wiring, stackName, stateDir });
    stops.push(() => bStarted.stop());
    const b: SoakCluster = bStarted;
    const clusters = [a, b];

    // one deployment, two clusters: each function's CLUSTERS names both, with both control planes
    const specs: FunctionSpec[] = functions.map((f) => {
      const env = { ...stack.functionEnv[f.name] };
      const entry = (c: SoakCluster) => ({ kubeconfig: c.functionKubeconfigs[f.name] ?? join(stateDir, 'no-access-entry'), storage: { url: c.storage.url } });
      env.CLUSTERS = JSON.stringify(Object.fromEntries(clusters.map((c) => [c.id, entry(c)])));
      env.POWERTOOLS_LOG_LEVEL = process.env.SOAK_FUNCTION_LOG_LEVEL ?? "WARN";
      env.POWERTOOLS_METRICS_DISABLED = 'true';
      return {
        name: f.name,
        entry: join(PROJECT_ROOT, 'functions', `${kebabCase(f.name)}.ts`),
        exportName: f.exportName,
        functionName: f.functionName,
        region: env.AWS_REGION,
        memorySize: f.memorySize,
        env: { ...(Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !k.startsWith('AWS_'))) as Record<string, string>), ...env },
      };
    });
    await pool.start(specs);
    stops.push(() => pool.stop());

    const forwarders = clusters.map((c) => new ForwarderProcess({ cluster: c.id, kubeconfig: c.forwarderKubeconfig, stack, log: write }));
    stops.push(() => Promise.all(forwarders.map((f) => f.stop())));
    await Promise.all(forwarders.map((f) => f.start()));
    progress('forwarders ready; setting up the workload …');

    const workloads = clusters.map((c, i) => new Workload(c, random.fork(100 + i)));
    await Promise.all(workloads.map((w) => w.setup(3)));

    // --- the run: workload all along, faults in the first 80% of the window
    const faultWindowMs = Math.round(windowMs * 0.8);
    const plan = planFaults({ seed: options.seed, windowMs: faultWindowMs, rate: options.faultRate ?? 0.4, killable: options.killable ?? KILLABLE, killWindowMs: Math.round(windowMs * 0.5), aws: options.awsFaults !== false });
    const faults: Record<string, number> = {};
    const faultsByCluster: Record<string, number> = {};
    let invocationsCut = 0;
    let lastFaultEnd = 0;
    const t0 = Date.now();
    const apply = async (f: PlannedFault): Promise<void> => {
      faults[f.kind] = (faults[f.kind] ?? 0) + 1;
      if (f.aws) {
        faultsByCluster.aws = (faultsByCluster.aws ?? 0) + 1;
        write(`[fault +${Date.now() - t0} ms] aws ${f.kind} ${JSON.stringify(f.aws)}${f.durationMs ? ` for ${f.durationMs} ms` : ''}`);
        const id = proxy.faults.add(f.aws);
        if (f.durationMs !== undefined) {
          await sleep(f.durationMs);
          proxy.faults.remove(id);
          write(`[fault +${Date.now() - t0} ms] aws ${f.kind} over`);
        }
        lastFaultEnd = Date.now();
        return;
      }
      const c = clusters[f.cluster];
      faultsByCluster[c.id] = (faultsByCluster[c.id] ?? 0) + 1;
      write(`[fault +${Date.now() - t0} ms] ${c.id} ${f.kind} ${JSON.stringify(f.kube ?? f.storage ?? f.function ?? f.goneResource ?? '')}`);
      if (f.kube) c.kubeApi.faults.inject(f.kube);
      if (f.storage) c.storage.faults.add(f.storage);
      if (f.function) invocationsCut += await pool.kill(f.function);
      if (f.cutWatches) write(`[fault +${Date.now() - t0} ms] ${c.id} watch streams cut: ${c.kubeApi.cutWatches()}`);
      if (f.downMs !== undefined) {
        const fw = forwarders[f.cluster];
        if (fw.running) {
          fw.kill();
          await sleep(f.downMs);
          if (f.goneResource) c.kubeApi.faults.inject({ verb: 'watch', resource: f.goneResource, count: 1, status: 410 });
          await fw.start(60_000).catch((e: unknown) => write(`[forwarder ${c.id}] restart: ${(e as Error).message}`));
        }
      }
      lastFaultEnd = Date.now();
    };
    const running = new Set<Promise<unknown>>();
    let next = 0;
    const opInterval = 1000 / (options.opsPerSecond ?? 4);
    let ops = 0;
    let lastProgress = t0;
    while (Date.now() - t0 < windowMs) {
      const now = Date.now() - t0;
      while (next < plan.length && plan[next].atMs <= now) {
        const p = apply(plan[next++]).catch((e: unknown) => write(`[fault] ${(e as Error).message}`));
        running.add(p);
        void p.finally(() => running.delete(p));
      }
      while (ops * opInterval <= now) {
        for (const w of workloads) w.step();
        ops++;
      }
      if (Date.now() - lastProgress > 15_000) {
        lastProgress = Date.now();
        progress(`+${Math.round(now / 1000)} s: ${ops} steps per cluster, ${next}/${plan.length} faults`);
      }
      await sleep(20);
    }
    progress('workload done; faults off; settling …');
    await Promise.all([...running]);
    await Promise.all(workloads.map((w) => w.drain()));
    for (const c of clusters) {
      c.kubeApi.faults.clear();
      c.storage.faults.clear();
    }
    if (proxy.faults.rules.length > 0) lastFaultEnd = Date.now();
    proxy.faults.clear();
    for (const f of forwarders) if (!f.running) await f.start(60_000);
    const faultsOff = Date.now();
    const lastFaultAtMs = lastFaultEnd > 0 ? lastFaultEnd - t0 : 0;
    const quietFrom = Math.max(lastFaultEnd, t0);

    // --- settle: until every state invariant holds (or the timeout)
    const settleTimeoutMs = options.settleTimeoutMs ?? 300_000;
    let convergeMs: number | undefined;
    let states: InvariantResult[][] = [];
    let dlq: InvariantResult;
    // What still fails, logged when it changes and every 30 s while it does not: a slow convergence names
    // what it waits on (each invariant still false and its first violation).
    let pending = '';
    let pendingLoggedAt = 0;
    while (true) {
      states = await Promise.all(clusters.map((c, i) => checkState(c, workloads[i].state)));
      dlq = await checkDlqs(stack.sqs.client, stack.queues);
      if (states.every((s) => s.every((r) => r.ok)) && dlq.ok) {
        convergeMs = Date.now() - quietFrom;
        break;
      }
      const failing = [
        ...clusters.flatMap((c, i) => states[i].filter((r) => !r.ok).map((r) => ({ name: `${c.id}: ${r.name}`, first: r.violations[0] ?? '' }))),
        ...(dlq.ok ? [] : [{ name: dlq.name, first: dlq.violations[0] ?? '' }]),
      ];
      const names = failing.map((f) => f.name).join('|');
      const now = Date.now();
      if (names !== pending || now - pendingLoggedAt >= 30_000) {
        progress(`settling ${Math.round((now - faultsOff) / 1000)} s: ${failing.length} invariant(s) still false: ${failing.map((f) => `${f.name} (${f.first})`).join('; ')}`);
        pending = names;
        pendingLoggedAt = now;
      }
      if (now - faultsOff > settleTimeoutMs) break;
      await sleep(2000);
    }
    progress(convergeMs === undefined ? 'did not converge' : `converged ${Math.round(convergeMs / 1000)} s after the last fault`);

    const reports: ClusterReport[] = clusters.map((c, i) => {
      const other = clusters[1 - i];
      const budget = checkBudget(c, BUDGET);
      const operations = workloads[i].state.operations;
      return {
        id: c.id,
        operations,
        totalOperations: Object.entries(operations).filter(([k]) => !k.startsWith('failed')).reduce((s, [, n]) => s + n, 0),
        workloadRetries: workloads[i].state.retries,
        invariants: [...states[i], checkIsolation(c, { prefix: other.prefix, workload: workloads[1 - i].state }), budget],
        maxFunctionRequestsPerSecond: budget.maxPerSecond,
        functionRequests: budget.total,
      };
    });
    const ok = convergeMs !== undefined && reports.every((r) => r.invariants.every((x) => x.ok)) && dlq!.ok;
    return {
      seed: options.seed,
      minutes: options.minutes,
      durationMs: Date.now() - started,
      faults: faults as Record<FaultKind, number>,
      faultsByCluster,
      awsRequestsHit: { ...proxy.injected },
      invocationsCut,
      lastFaultAtMs,
      ...(convergeMs !== undefined ? { convergeMs } : {}),
      clusters: reports,
      dlq: dlq!,
      ok,
      ...(options.keepLogs || !ok || options.stateDir ? { logDir: stateDir } : {}),
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch((e: unknown) => write(`[stop] ${(e as Error).message}`));
    await new Promise<void>((ok) => log.end(() => ok()));

  }
}
