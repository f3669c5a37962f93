/**
 * The controller benchmarks' harness: the local stack with the binder and/or provisioner run in process
 * as their handlers (built as functions/*.ts build them), every client metered, the per-cluster API
 * budget on, and the figures of a run computed per operation.
 *
 * - **Containers.** Each function runs as a pool of containers, as Lambda runs it: a batch goes to an idle
 *   container or a new one (at most the event source mapping's MaximumConcurrency are busy), and each
 *   container has its own runtime (`createSqsHandler`), Kubernetes clients and {@link ApiBudget} handle on
 *   the cluster's shared bucket, as lib/runtime/handler.ts builds them from `KUBE_API_QPS`/`KUBE_API_BURST`.
 * - **Kubernetes requests** are logged by the functions' own API clients ({@link MeteredKubeClients}) when
 *   the budget lets them go; the emulator's own counts (`api.requests`, by verb and resource, no time, no
 *   client) are kept beside them, and what the functions did not send (the forwarder's LIST/WATCH, the
 *   bench's creates, the seed's node sync) is reported as `unattributed`.
 * - **The forwarder** runs in process on its own metered DynamoDB client (its cache writes are part of
 *   an operation's cost) and publishes through the stack's metered SNS client.
 * - **Messages** are the records delivered to the function (redeliveries included).
 * - **The functions run in a thread of their own** by default (`BENCH_FUNCTIONS=thread`, function-thread.ts):
 *   on AWS they do not share a core with the API server and the forwarder. Their containers are built by the
 *   same code either way (containers.ts); `BENCH_FUNCTIONS=inline` runs them in the main thread (as before
 *   session 9), to compare. The figures come back from the thread with every invocation's answer.
 * - **SQS, SNS and DynamoDB** (fauxqs and dynalite) run in a child process of their own by default
 *   (`BENCH_AWS=process`: the stack's `awsStandIns: 'process'`), so this process's one core goes to the
 *   emulator, the forwarder and the functions, as on AWS. `BENCH_AWS=embedded` runs them in this process (as
 *   before issue #10), to compare. Every count is taken by the clients' middleware in this process either way;
 *   what the pipeline does may still shift with timing (an own write the forwarder publishes before the
 *   writer's write-back tags it reaches the writer as one more message, lib/forwarder/review.ts).
 * - **The forwarder's own-write hold** is its default (100 ms); `BENCH_OWN_WRITE_HOLD=0` (or any duration)
 *   sets it, to compare (the report's `ownWriteHoldMs`).
 */
import { DEFAULT_OWN_WRITE_HOLD_MS, parseDuration } from '../../../lib/forwarder/config.ts';
import { performance } from 'node:perf_hooks';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Logger } from '@aws-lambda-powertools/logger';
import { CoreV1Api, KubeConfig, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { startForwarder, type Forwarder } from '../../../lib/forwarder/forwarder.ts';
import { createDocumentClient, type DocumentClient } from '../../../lib/state/client.ts';
import { startAwsStandInsProcess } from '../../../infra/local/fault-proxy/stand-ins-process.ts';
import { LOCAL_CREDENTIALS } from '../../../infra/local/stack/stack.ts';
import { startDynalite, type Dynalite } from '../../support/dynalite.ts';
import { startTestStack, type Stack } from '../../support/stack.ts';
import type { StoreEvent } from '../../../infra/local/kube-api/types.ts';
import { costPer, PRICES, type CostCounts } from '../prices.ts';
import { containerBuilder, QUEUE_OF, type ContainerSpec, type Delivery, FunctionPool, type FunctionName, type PoolView } from './containers.ts';
import { FunctionThread, threadCpuMs, type RemoteFunctionSpec } from './function-thread.ts';
import { byVerbAndResource, KubeRequestLog, type BucketWrite, maxInWindow, meterDynamo, meterSns, meterSqs, queueName, READ_VERBS, sum, Tally } from './meter.ts';
import { makeBudgetedApiClient } from '../../../lib/kube/client.ts';
import { printTable, steadyOf, type ControllerReport } from './report.ts';

export { timed, type Delivery, type FunctionName } from './containers.ts';

export const round = (n: number, digits = 2): number => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : n);

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A positive number from the environment, else `fallback`. */
export function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return process.env[name] !== undefined && process.env[name] !== '' && Number.isFinite(value) && value >= 0 ? value : fallback;
}

/** A comma-separated list of numbers from the environment (`"100,1000"`), else `fallback`. */
export function envSizes(name: string, fallback: number[]): number[] {
  const text = process.env[name];
  if (!text) return fallback;
  return text.split(',').map((s) => Number(s.trim())).filter((n) => Number.isFinite(n) && n > 0);
}

/** Runs `run` over `items`, at most `width` at a time. */
export async function pool<T>(items: readonly T[], width: number, run: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(width, items.length)) }, async () => {
      while (next < items.length) {
        const i = next++;
        await run(items[i], i);
      }
    }),
  );
}

/**
 * A bench mode from the environment: unset or empty is `modes[0]` (the default); anything not in `modes` is
 * a mistake worth stopping for.
 */
function modeFromEnv<M extends string>(name: string, modes: readonly [M, ...M[]], value = process.env[name]): M {
  if (value === undefined || value === '') return modes[0];
  if ((modes as readonly string[]).includes(value)) return value as M;
  throw new Error(`${name}=${value}: expected ${modes[0]} (default) or ${modes.slice(1).join(' or ')}`);
}

/** Where fauxqs and dynalite run (`BENCH_AWS`): their own child process (default), or this one. */
export type AwsMode = 'process' | 'embedded';
export const AWS_MODE: AwsMode = modeFromEnv<AwsMode>('BENCH_AWS', ['process', 'embedded']);

/** Where the functions' containers run (`BENCH_FUNCTIONS`): a worker thread of their own (default), or the bench's main thread. */
export type FunctionsMode = 'thread' | 'inline';
export const FUNCTIONS_MODE: FunctionsMode = modeFromEnv<FunctionsMode>('BENCH_FUNCTIONS', ['thread', 'inline']);

/**
 * What the emulator speaks over TLS (`BENCH_KUBE_HTTP`): HTTP/2 and HTTP/1.1 by ALPN, as kube-apiserver
 * (default, `2`: the functions', the forwarder's and the bench's clients all take HTTP/2), or HTTPS/1.1
 * alone (`1.1`, every request in flight on a connection of its own, as before session 34).
 */
export type KubeHttpMode = '2' | '1.1';
export const KUBE_HTTP_MODE: KubeHttpMode = modeFromEnv<KubeHttpMode>('BENCH_KUBE_HTTP', ['2', '1.1']);

/**
 * `BENCH_WARM_BURST` (default 1; 0 skips): after the burst, the same burst again on the same stack, new
 * names (`again-<name>`), reported as `warmBurst`. The first burst after a start also pays for the start:
 * V8 compiles the hot code of the emulator, the AWS stand-ins, the forwarder and the function containers
 * while it runs. The second burst is what a stack sees right after its first, and V8 still compiles
 * through it; a cluster's API server and AWS are long warm, the forwarder runs for weeks and a Lambda
 * container serves many batches, which the steady bursts stand for ({@link STEADY_BURSTS}). The first
 * stays the figure compared with earlier runs.
 */
export const WARM_BURST = envNumber('BENCH_WARM_BURST', 1) > 0;

/** The warm burst's names (see {@link WARM_BURST}); none when it is off. */
export function warmBurstNames(names: readonly string[]): string[] {
  return WARM_BURST ? names.map((name) => `again-${name}`) : [];
}

/**
 * `BENCH_STEADY_BURSTS` (default 5; 0 skips): after the warm burst, that many more bursts of the same size
 * on the same stack, each with new names (`steady<round>-<name>`); the one with the median throughput is
 * reported as `steadyBurst`, and every round's p50, rate and CPU in its `rounds`. One burst more is not
 * enough for V8. In a series of ten binder bursts of 100, the second cost 39.7 CPU-ms per bind, 5.7 of
 * them on V8's helper threads (compiling, collecting), and the sixth to ninth 25.0–30.4, 1.6–2.4 of them
 * there. The code still compiles after that: some 250 Maglev and 65 TurboFan compilations per provisioner
 * burst, the AWS SDK's functions deoptimized by the maps of another client's objects. Each round is
 * measured on its own, as the warm burst is, and the row is one of them (report.ts `steadyOf`), every
 * figure of it from the same burst.
 */
export const STEADY_BURSTS = Math.max(0, Math.floor(envNumber('BENCH_STEADY_BURSTS', 5)));

/** Round `round`'s names (0-based) of the steady bursts ({@link STEADY_BURSTS}). */
export function steadyBurstNames(names: readonly string[], round: number): string[] {
  return names.map((name) => `steady${round}-${name}`);
}

/**
 * Runs `run` once per steady round ({@link STEADY_BURSTS}) and returns the median burst by throughput with
 * `rounds`, every round's figures in the order run (report.ts `steadyOf`); undefined when there were none.
 */
export async function runSteadyBursts(bench: string, run: (round: number) => Promise<Record<string, unknown>>, rounds = STEADY_BURSTS): Promise<Record<string, unknown> | undefined> {
  const results: Record<string, unknown>[] = [];
  for (let round = 0; round < rounds; round++) {
    progress(`${bench}: steady burst ${round + 1} of ${rounds}`);
    results.push(await run(round));
  }
  return steadyOf(results);
}

/** The forwarder's own-write hold, ms (`BENCH_OWN_WRITE_HOLD`, a duration; default: the forwarder's). */
export const OWN_WRITE_HOLD_MS: number = process.env.BENCH_OWN_WRITE_HOLD ? parseDuration(process.env.BENCH_OWN_WRITE_HOLD) : DEFAULT_OWN_WRITE_HOLD_MS;

/**
 * The cache and control tables on a dynalite where `BENCH_AWS` says, for a bench without the stack:
 * in this process ({@link startDynalite}), or in the stand-ins' child process (reached directly, no proxy).
 */
export async function startBenchDynalite(): Promise<Pick<Dynalite, 'doc' | 'tables' | 'stop'>> {
  if (AWS_MODE === 'embedded') return startDynalite();
  const aws = await startAwsStandInsProcess();
  try {
    const db = await startDynalite({ endpoint: aws.upstreams.dynamodb, tables: { cache: 'bench-cache', control: 'bench-control' } });
    return {
      doc: db.doc,
      tables: db.tables,
      async stop() {
        await db.stop();
        await aws.stop();
      },
    };
  } catch (error) {
    await aws.stop();
    throw error;
  }
}

/** Stderr progress, so stdout stays one JSON document. */
export function progress(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

export interface BenchStackOptions {
  functions: FunctionName[];
  /** The per-cluster API budget every function container spends (`KUBE_API_QPS`, `KUBE_API_BURST`). */
  budget: { qps: number; burst: number };
  /** Start the embedded storage control plane (and the seed: Node `local-node`, default class `local`). */
  storageApi?: boolean;
}

/** Everything a run compares before and after. */
export interface Snapshot {
  at: number;
  logIndex: number;
  deliveryIndex: number;
  fns: Record<string, Record<string, number>>;
  aws: Record<string, number>;
  emulator: Record<string, number>;
  /** What the bench itself sent to the API. */
  bench: Record<string, number>;
  storage: number;
  /** Messages waiting in subscribed queues no function of this bench consumes. */
  unconsumedDepth: Record<string, number>;
  /**
   * CPU time (ms, user + system) of this process, of its main thread and of the functions' thread (when
   * they run there), and of the AWS stand-ins' process (when it runs apart).
   */
  cpuMs: { bench: number; mainThread: number; functionsThread?: number; awsStandIns?: number };
  /** Event-loop time (ms active, idle) of the main thread and of the functions' thread (when they run there). */
  eventLoop: { main: { active: number; idle: number }; functions?: { active: number; idle: number } };
}

/** User + system CPU time of a process in ms, from /proc (Linux); undefined where it cannot be read. */
async function processCpuMs(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) start after the last ')': utime and stime are 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
/** Linux's USER_HZ (what /proc/<pid>/stat counts CPU time in) is 100 on every mainstream build. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * When each operation of a run started and was done (`performance.now()`), by name: the start is marked by
 * the operation ({@link BenchOperation.start}), the end by the subclass that watches for it.
 */
export abstract class CompletionTracker {
  readonly created = new Map<string, number>();
  readonly done = new Map<string, number>();

  protected markDone(name: string): void {
    if (!this.done.has(name)) this.done.set(name, performance.now());
  }

  async waitAll(names: readonly string[], timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (names.some((n) => !this.done.has(n))) {
      if (performance.now() > deadline) return false;
      await sleep(20);
    }
    return true;
  }

  latencies(names: readonly string[]): number[] {
    return names.filter((n) => this.done.has(n) && this.created.has(n)).map((n) => this.done.get(n)! - this.created.get(n)!);
  }

  abstract stop(): void;
}

/** Observes claims reach Bound in the emulator's store (reading its events uncopied, as watches do: no cost of ours in the figures). */
export class BoundTracker extends CompletionTracker {
  readonly #unsubscribe: () => void;

  constructor(stack: Stack) {
    super();
    this.#unsubscribe = stack.kubeApi!.store.watchRaw((e) => {
      const name = e.object.metadata?.name;
      if (e.resource !== '/persistentvolumeclaims' || !name) return;
      if ((e.object as { status?: { phase?: string } }).status?.phase === 'Bound') this.markDone(name);
    });
  }

  stop(): void {
    this.#unsubscribe();
  }
}

/**
 * Polls `doneNow` every `everyMs` (in process, no request: the embedded storage control plane's state, say)
 * for the names of the operations that are done by now. An end is seen up to `everyMs` late (half of it on
 * average, added to each latency; {@link BoundTracker} sees the store's event itself), and each tick's read
 * is CPU of this process, counted in the run's CPU per operation.
 */
export class PollingTracker extends CompletionTracker {
  readonly #timer: NodeJS.Timeout;

  constructor(doneNow: () => Iterable<string>, everyMs = 10) {
    super();
    this.#timer = setInterval(() => {
      for (const name of doneNow()) if (this.created.has(name)) this.markDone(name);
    }, everyMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** What one operation of a controller bench is: how it starts, how its end is seen, which writes are the bench's. */
export interface BenchOperation {
  /** What the table and the JSON call the operations (`claims`, `volumes`, `nodes`). */
  noun: string;
  /** The kind of the message that starts an operation in the pipeline (for where its time went). */
  kind: string;
  /** A tracker for one run, started before its first operation. */
  tracker(): CompletionTracker;
  /** Starts operation `index` called `name`; sets `tracker.created` just before its first request. */
  start(tracker: CompletionTracker, name: string, index: number): Promise<void>;
  /** The emulator's store writes that are the bench's own (its creates), not the functions'. */
  isBenchWrite(event: StoreEvent): boolean;
}

/** A claim created through the API (`specFor`), done when the emulator's store holds it Bound. */
export function claimOperation(bench: BenchStack, specFor: (name: string, index: number) => ClaimSpec): BenchOperation {
  return {
    noun: 'claims',
    kind: 'PersistentVolumeClaim',
    tracker: () => new BoundTracker(bench.stack),
    start: (tracker, name, index) => bench.createClaim(tracker, name, specFor(name, index)),
    isBenchWrite: (e) => e.type === 'ADDED' && e.resource === '/persistentvolumeclaims',
  };
}

/** Samples the emulator's request counter; the peak number of requests it received in one second. */
export function sampleEmulatorRate(stack: Stack, everyMs = 100): { stop(): { peakRequestsPerSecond: number; samples: number } } {
  const totals: number[] = [];
  const timer = setInterval(() => totals.push(sum(stack.kubeApi!.requests.snapshot())), everyMs);
  totals.push(sum(stack.kubeApi!.requests.snapshot()));
  return {
    stop() {
      clearInterval(timer);
      totals.push(sum(stack.kubeApi!.requests.snapshot()));
      const span = Math.round(1000 / everyMs);
      let peak = 0;
      for (let i = 0; i < totals.length; i++) peak = Math.max(peak, totals[Math.min(totals.length - 1, i + span)] - totals[i]);
      return { peakRequestsPerSecond: peak, samples: totals.length };
    },
  };
}

/** The local stack with metered, budgeted controller functions. */
export class BenchStack {
  readonly stack: Stack;
  readonly options: BenchStackOptions;
  readonly core: CoreV1Api;
  readonly log: KubeRequestLog;
  readonly deliveries: Delivery[];
  /** Successful writes of the API budget's bucket by any function container. */
  readonly bucketWrites: BucketWrite[];
  readonly pools: PoolView[];
  /** The functions' own thread (`BENCH_FUNCTIONS=thread`), when they run there. */
  readonly functionThread: FunctionThread | undefined;
  /** The event source mappings' SQS calls, the forwarder's SNS publishes and DynamoDB requests. */
  readonly aws = new Tally();
  /** What the bench itself sent to the API (creates). */
  readonly benchRequests = new Tally();
  forwarder?: Forwarder;
  readonly #forwarderDoc: DocumentClient;
  readonly #extraClients: Array<{ destroy(): void }> = [];

  private constructor(stack: Stack, options: BenchStackOptions, parts: { pools: PoolView[]; functionThread?: FunctionThread; forwarderDoc: DocumentClient; log: KubeRequestLog; deliveries: Delivery[]; bucketWrites: BucketWrite[] }) {
    this.bucketWrites = parts.bucketWrites;
    this.functionThread = parts.functionThread;
    this.stack = stack;
    this.options = options;
    this.pools = parts.pools;
    this.log = parts.log;
    this.deliveries = parts.deliveries;
    this.#forwarderDoc = parts.forwarderDoc;
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfigPath);
    this.core = makeBudgetedApiClient(kc, CoreV1Api);
  }

  /** Starts the stack and the functions; the forwarder is started by {@link startForwarder}. */
  static async start(options: BenchStackOptions): Promise<BenchStack> {
    const deliveries: Delivery[] = [];
    const handlers: Partial<Record<FunctionName, PoolView>> = {};
    const stack = await startTestStack({
      withForwarder: false,
      storageApi: options.storageApi ?? false,
      // BENCH_RBAC=off: the emulator without authentication, RBAC and TLS (to compare with builds before them)
      rbac: process.env.BENCH_RBAC !== 'off',
      awsStandIns: AWS_MODE,
      ...(KUBE_HTTP_MODE === '1.1' ? { kubeApiOptions: { http1: true } } : {}),
      functions: Object.fromEntries(options.functions.map((fn) => [fn, (event: SQSEvent, context: Context) => handlers[fn]!.handler(event, context)])),
    });
    const extra: Array<{ destroy(): void }> = [];
    let functionThread: FunctionThread | undefined;
    try {
      const region = stack.env.AWS_REGION ?? 'eu-west-1';
      const clientConfig = { region, credentials: LOCAL_CREDENTIALS };
      const forwarderDoc = createDocumentClient({ ...clientConfig, endpoint: stack.dynamodb.endpoint });
      extra.push(forwarderDoc);
      const log = new KubeRequestLog();
      const bucketWrites: BucketWrite[] = [];
      const functions: RemoteFunctionSpec[] = options.functions.map((fn) => {
        const def = stack.wiring.functions.find((f) => f.name === fn)!;
        const architectures = (stack.template.Resources?.[def.logicalId] as { Properties?: { Architectures?: string[] } } | undefined)?.Properties?.Architectures;
        const queueUrl = stack.queues[QUEUE_OF[fn].queue].url;
        const spec: ContainerSpec = {
          fn,
          region,
          kubeconfigPath: stack.kubeconfigPath,
          tables: stack.tables,
          dynamodbEndpoint: stack.dynamodb.endpoint,
          sqsEndpoint: stack.sqs.endpoint,
          queueUrl,
          dlqUrl: stack.queues[QUEUE_OF[fn].dlq].url,
          env: stack.functionEnv[fn],
          budget: options.budget,
          ...(stack.storageApi ? { storageApiUrl: stack.storageApi.url } : {}),
        };
        return { spec, memoryMB: def.memorySize, architecture: architectures?.[0] === 'x86_64' ? 'x86_64' : 'arm64', queue: queueName(queueUrl), functionName: def.functionName };
      });
      let pools: PoolView[];
      if (FUNCTIONS_MODE === 'thread') {
        functionThread = await FunctionThread.start(functions, { log, deliveries, bucketWrites });
        pools = functionThread.pools;
      } else {
        pools = functions.map((f) => {
          const tally = new Tally();
          const { build, clients } = containerBuilder(f.spec, { tally, log, bucketWrites });
          extra.push(...clients);
          return new FunctionPool({ name: f.spec.fn, memoryMB: f.memoryMB, architecture: f.architecture, queue: f.queue, build, deliveries, tally });
        });
      }
      for (const pool of pools) handlers[pool.name] = pool;
      const bench = new BenchStack(stack, options, { pools, ...(functionThread ? { functionThread } : {}), forwarderDoc, log, deliveries, bucketWrites });
      bench.#extraClients.push(...extra);
      meterSqs(stack.sqs.client, bench.aws);
      meterSns(stack.sns.client, bench.aws);
      meterDynamo(forwarderDoc, bench.aws, 'forwarder dynamo ');
      return bench;
    } catch (error) {
      await functionThread?.stop();
      for (const c of extra) c.destroy();
      await stack.stop();
      throw error;
    }
  }

  /** Starts the forwarder (as the stack would: single replica, no lease) and waits for its initial sync. */
  async startForwarder(): Promise<void> {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(this.stack.kubeconfigPath);
    this.forwarder = await startForwarder({
      cluster: this.stack.env.CLUSTER_ID,
      kubeConfig,
      sns: this.stack.sns.client,
      topicArn: this.stack.topicArn,
      doc: this.#forwarderDoc,
      tables: this.stack.tables,
      lease: false,
      ownWriteHoldMs: OWN_WRITE_HOLD_MS,
      logger: new Logger({ serviceName: 'claimflow-forwarder', logLevel: 'SILENT' }),
    });
    const deadline = performance.now() + 60_000;
    while (!this.forwarder.isReady()) {
      if (performance.now() > deadline) throw new Error('forwarder: initial sync not complete after 60 s');
      await sleep(25);
    }
  }

  pool(fn: FunctionName): PoolView {
    const p = this.pools.find((x) => x.name === fn);
    if (!p) throw new Error(`function ${fn} is not running in this bench`);
    return p;
  }

  /** Creates a claim through the API (the bench's own client, not metered as a function's). */
  async createClaim(tracker: CompletionTracker, name: string, spec: V1PersistentVolumeClaim['spec']): Promise<void> {
    tracker.created.set(name, performance.now());
    await this.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name }, spec } });
    this.benchRequests.add('create persistentvolumeclaims');
  }

  async #depth(url: string): Promise<{ visible: number; inFlight: number }> {
    const out = await this.stack.sqs.client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    return {
      visible: Number(out.Attributes?.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }

  /** Subscribed queues (logical ids) with and without a function in this bench. */
  #queues(): { consumed: string[]; unconsumed: string[] } {
    const subscribed = [...new Set(this.stack.wiring.subscriptions.map((s) => s.queue))];
    const consumed: string[] = this.pools.map((p) => QUEUE_OF[p.name].queue);
    return { consumed, unconsumed: subscribed.filter((q) => !consumed.includes(q)) };
  }

  async snapshot(): Promise<Snapshot> {
    await this.functionThread?.collect();
    // Right after the functions' thread reported its clock, so that no thread's time falls between them.
    const cpuMs = await this.#cpuMs();
    const unconsumedDepth: Record<string, number> = {};
    for (const q of this.#queues().unconsumed) unconsumedDepth[queueName(this.stack.queues[q].url)] = (await this.#depth(this.stack.queues[q].url)).visible;
    return {
      at: performance.now(),
      logIndex: this.log.requests.length,
      deliveryIndex: this.deliveries.length,
      fns: Object.fromEntries(this.pools.map((p) => [p.name, p.tally.snapshot()])),
      aws: this.aws.snapshot(),
      emulator: this.stack.kubeApi!.requests.snapshot(),
      bench: this.benchRequests.snapshot(),
      storage: this.stack.storageApi?.requests.total() ?? 0,
      unconsumedDepth,
      cpuMs,
      eventLoop: {
        main: (({ active, idle }) => ({ active, idle }))(performance.eventLoopUtilization()),
        ...(this.functionThread ? { functions: { ...this.functionThread.eventLoop } } : {}),
      },
    };
  }

  async #cpuMs(): Promise<Snapshot['cpuMs']> {
    const own = process.cpuUsage();
    const mainThread = threadCpuMs();
    const awsStandIns = this.stack.awsStandInsPid === undefined ? undefined : await processCpuMs(this.stack.awsStandInsPid);
    return {
      bench: (own.user + own.system) / 1000,
      mainThread,
      ...(this.functionThread ? { functionsThread: this.functionThread.cpuMs } : {}),
      ...(awsStandIns !== undefined ? { awsStandIns } : {}),
    };
  }

  /**
   * Waits until the pipeline is idle: the forwarder has published what it saw, the functions' queues are
   * empty (nothing visible, nothing in flight), no invocation runs, and nothing happened for `quietMs`.
   * The forwarder's backlog is watched, not flushed: a flush saves its bookmarks at once, which a quiet
   * cluster's forwarder would not (the one-at-a-time runs would count the bench's saves).
   */
  async settle(options: { quietMs?: number; timeoutMs?: number } = {}): Promise<boolean> {
    const quietMs = options.quietMs ?? 1500;
    const deadline = performance.now() + (options.timeoutMs ?? 120_000);
    const urls = this.#queues().consumed.map((q) => this.stack.queues[q].url);
    while (performance.now() < deadline) {
      const busy = (this.forwarder?.backlog ?? 0) > 0 || this.pools.some((p) => p.inFlight > 0 || performance.now() - p.lastActivity < quietMs);
      if (!busy) {
        const depths = await Promise.all(urls.map((u) => this.#depth(u)));
        if (depths.every((d) => d.visible === 0 && d.inFlight === 0)) {
          await sleep(quietMs);
          const again = await Promise.all(urls.map((u) => this.#depth(u)));
          if (again.every((d) => d.visible === 0 && d.inFlight === 0) && this.pools.every((p) => p.inFlight === 0 && performance.now() - p.lastActivity >= quietMs)) return true;
        }
      }
      await sleep(100);
    }
    return false;
  }

  async stop(): Promise<void> {
    await this.forwarder?.stop();
    await this.functionThread?.stop();
    await this.stack.stop();
    for (const c of this.#extraClients) c.destroy();
  }
}

/**
 * CPU time per operation on this machine: this process (the API emulator, the forwarder, every function
 * and the bench itself) and the AWS stand-ins' process, and the rate the machine's cores could sustain at
 * that cost if they did nothing else (`ceilingOpsPerSecond`): a latency or throughput figure near it is
 * the machine's limit, not the pipeline's.
 */
function cpuFigures(before: Snapshot, after: Snapshot, n: number): Record<string, unknown> {
  const own = after.cpuMs.bench - before.cpuMs.bench;
  const aws = after.cpuMs.awsStandIns !== undefined && before.cpuMs.awsStandIns !== undefined ? after.cpuMs.awsStandIns - before.cpuMs.awsStandIns : undefined;
  const total = own + (aws ?? 0);
  const cores = availableParallelism();
  const busy = (a?: { active: number; idle: number }, b?: { active: number; idle: number }): number | undefined => {
    if (!a || !b) return undefined;
    const active = b.active - a.active;
    const all = active + (b.idle - a.idle);
    return all > 0 ? round(active / all, 3) : undefined;
  };
  const functionsThread = busy(before.eventLoop.functions, after.eventLoop.functions);
  const mainThread = after.cpuMs.mainThread - before.cpuMs.mainThread;
  const functions = after.cpuMs.functionsThread !== undefined && before.cpuMs.functionsThread !== undefined ? after.cpuMs.functionsThread - before.cpuMs.functionsThread : undefined;
  return {
    msPerOp: { thisProcess: round(own / n, 1), ...(aws !== undefined ? { awsStandIns: round(aws / n, 1) } : {}), total: round(total / n, 1) },
    // Where this process's share ran: the main thread (the API emulator, the forwarder, the bench; the
    // functions too with BENCH_FUNCTIONS=inline, the stand-ins with BENCH_AWS=embedded), the functions'
    // thread (their containers and the local SQS poller that feeds them), and the rest: V8's compiler and
    // garbage-collector helper threads, libuv's pool.
    msPerOpByThread: {
      mainThread: round(mainThread / n, 1),
      ...(functions !== undefined ? { functionsThread: round(functions / n, 1) } : {}),
      otherThreads: round((own - mainThread - (functions ?? 0)) / n, 1),
    },
    // Share of the run each event loop was busy: one near 1 is the bench's limit, whatever the cores say.
    eventLoopBusy: { mainThread: busy(before.eventLoop.main, after.eventLoop.main), ...(functionsThread !== undefined ? { functionsThread } : {}) },
    cores,
    ceilingOpsPerSecond: total > 0 ? round((cores * 1000 * n) / total, 1) : null,
  };
}

/** The figures of one run, per operation, from two snapshots. */
export function measure(bench: BenchStack, before: Snapshot, after: Snapshot, run: {
  operations: number;
  latencies: number[];
  /** First create → last Bound (ms). */
  elapsedMs: number;
  complete: boolean;
}): Record<string, unknown> {
  const n = run.operations;
  const per = (x: number, digits = 2) => round(x / n, digits);
  /** The counts whose key starts with `prefix`, by the rest of the key, largest first, per operation. */
  const perOpByUse = (counts: Record<string, number>, prefix: string): Record<string, number> =>
    Object.fromEntries(Object.entries(counts).filter(([k]) => k.startsWith(prefix)).sort(([, a], [, b]) => b - a).map(([k, v]) => [k.slice(prefix.length), per(v)]));
  const requests = bench.log.requests.slice(before.logIndex, after.logIndex);
  const reads = requests.filter((r) => READ_VERBS.has(r.verb)).length;
  const writes = requests.length - reads;
  const throughput = (n / run.elapsedMs) * 1000;
  const delta = (a: Record<string, number>, b: Record<string, number>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if ((a[k] ?? 0) - (b[k] ?? 0) !== 0) out[k] = (a[k] ?? 0) - (b[k] ?? 0);
    return out;
  };
  const fns = Object.fromEntries(bench.pools.map((p) => [p.name, delta(after.fns[p.name], before.fns[p.name])]));
  const aws = delta(after.aws, before.aws);
  const emulator = delta(after.emulator, before.emulator);

  // Kubernetes: what the functions sent, and what the emulator received that they did not.
  const functionCounts = byVerbAndResource(requests);
  const benchSent = delta(after.bench, before.bench);
  const unattributed: Record<string, number> = {};
  for (const k of new Set([...Object.keys(emulator), ...Object.keys(functionCounts)])) {
    const rest = (emulator[k] ?? 0) - (functionCounts[k] ?? 0) - (benchSent[k] ?? 0);
    if (rest !== 0) unattributed[k] = rest;
  }

  // Messages and SQS: per function queue, SNS deliveries are first receives minus the function's own requeues.
  let deliveries = 0;
  let sqsBillable = 0;
  const perFunction: Record<string, unknown> = {};
  let lambdaInvocations = 0;
  let gbSeconds = 0;
  let rru = 0;
  let wru = 0;
  let dynamoRequests = 0;
  let itemsScanned = 0;
  let itemsReturned = 0;
  for (const p of bench.pools) {
    const t = fns[p.name];
    // requeues any function sent to this queue (REQUEUE events) arrive as first receives too
    const requeued = bench.pools.reduce((m, q) => m + (fns[q.name][`sent ${p.queue}`] ?? 0), 0);
    const fromSns = (t.firstReceives ?? 0) - requeued;
    deliveries += Math.max(0, fromSns);
    const billable = sum(aws, (k) => k === `billable ${p.queue}`) + sum(t, (k) => k.startsWith('billable '));
    sqsBillable += billable + Math.max(0, fromSns);
    const fnGbSeconds = ((t.billedMs ?? 0) / 1000) * (p.memoryMB / 1024);
    const fnReq = sum(t, (k) => k.startsWith('dynamo request '));
    lambdaInvocations += t.invocations ?? 0;
    gbSeconds += fnGbSeconds;
    rru += t['dynamo rru'] ?? 0;
    wru += t['dynamo wru'] ?? 0;
    itemsScanned += t['dynamo itemsScanned'] ?? 0;
    itemsReturned += t['dynamo itemsReturned'] ?? 0;
    dynamoRequests += fnReq;
    const fnRequests = requests.filter((r) => r.fn === p.name);
    const fnReads = fnRequests.filter((r) => READ_VERBS.has(r.verb)).length;
    perFunction[p.name] = {
      messagesPerOp: per(t.records ?? 0),
      messagesByKindAndTypePerOp: Object.fromEntries(
        Object.entries(
          bench.deliveries.slice(before.deliveryIndex, after.deliveryIndex).filter((d) => d.fn === p.name).reduce<Record<string, number>>((acc, d) => {
            const k = `${d.kind} ${d.type}${d.firstReceive ? '' : ' (redelivered)'}`;
            acc[k] = (acc[k] ?? 0) + 1;
            return acc;
          }, {}),
        ).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, per(v)]),
      ),
      invocationsPerOp: per(t.invocations ?? 0),
      recordsPerInvocation: round((t.records ?? 0) / Math.max(1, t.invocations ?? 0)),
      containersStarted: t.containers ?? 0,
      apiReadsPerOp: per(fnReads),
      apiWritesPerOp: per(fnRequests.length - fnReads),
      dynamoRequestsPerOp: per(fnReq),
      dynamoRequestsByCommandPerOp: Object.fromEntries(
        Object.entries(t).filter(([k]) => k.startsWith('dynamo request ')).map(([k, v]) => [k.slice('dynamo request '.length).replace(/Command$/, ''), per(v)]),
      ),
      dynamoRequestsByUsePerOp: perOpByUse(t, 'dynamo use '),
      dynamoReadUnitsPerOp: per(t['dynamo rru'] ?? 0),
      dynamoWriteUnitsPerOp: per(t['dynamo wru'] ?? 0),
      dynamoConditionalFailuresPerOp: per(t['dynamo conditionalFailures'] ?? 0),
      dynamoConditionalFailuresByUsePerOp: perOpByUse(t, 'dynamo failedUse '),
      sqsBillableRequestsPerOp: per(billable + Math.max(0, fromSns)),
      lambdaGBSecondsPerOp: per(fnGbSeconds, 4),
      billedMsPerInvocation: round((t.billedMs ?? 0) / Math.max(1, t.invocations ?? 0), 1),
      ...(t['storage calls'] ? { storageCallsPerOp: per(t['storage calls']), storageMsPerOp: per(t['storage ms'] ?? 0, 1) } : {}),
    };
  }
  const unconsumed = delta(after.unconsumedDepth, before.unconsumedDepth);
  const unconsumedDeliveries = sum(unconsumed);
  deliveries += unconsumedDeliveries;
  sqsBillable += unconsumedDeliveries;
  const published = aws.published ?? 0;
  const avgMessageBytes = published > 0 ? (aws.publishedBytes ?? 0) / published : 0;
  const fwdRru = aws['forwarder dynamo rru'] ?? 0;
  const fwdWru = aws['forwarder dynamo wru'] ?? 0;
  const counts: CostCounts = {
    snsPublishRequests: aws.billablePublish ?? 0,
    snsPublishBytes: aws.publishedBytes ?? 0,
    snsDeliveries: deliveries,
    snsDeliveryBytes: deliveries * avgMessageBytes,
    sqsRequests: sqsBillable,
    lambdaInvocations,
    lambdaGBSeconds: gbSeconds,
    lambdaArchitecture: bench.pools[0]?.architecture ?? 'arm64',
    dynamoReadUnits: rru + fwdRru,
    dynamoWriteUnits: wru + fwdWru,
  };
  const messages = bench.pools.reduce((m, p) => m + (fns[p.name].records ?? 0), 0);
  const budget = bench.options.budget;
  const windowMax = maxInWindow(requests.map((r) => r.at));
  const ceiling = requests.length > 0 ? budget.qps / (requests.length / n) : Infinity;
  const granted = bench.bucketWrites.filter((g) => g.at >= before.at && g.at <= after.at).reduce((t, g) => t + g.granted, 0);
  return {
    operations: n,
    complete: run.complete,
    latencyMs: { p50: round(percentile(run.latencies, 50), 0), p99: round(percentile(run.latencies, 99), 0), max: round(Math.max(...run.latencies), 0) },
    throughputPerSecond: round(throughput),
    elapsedMs: round(run.elapsedMs, 0),
    api: {
      requestsPerOp: per(requests.length),
      readsPerOp: per(reads),
      writesPerOp: per(writes),
      byVerbAndResourcePerOp: Object.fromEntries(Object.entries(functionCounts).map(([k, v]) => [k, per(v)])),
      emulatorUnattributed: unattributed,
    },
    messagesPerOp: per(messages),
    dynamo: {
      functions: {
        requestsPerOp: per(dynamoRequests),
        readUnitsPerOp: per(rru),
        writeUnitsPerOp: per(wru),
        capacityUnitsPerOp: per(rru + wru),
        queryItemsScannedPerOp: per(itemsScanned),
        queryItemsReturnedPerOp: per(itemsReturned),
      },
      forwarder: {
        requestsPerOp: per(sum(aws, (k) => k.startsWith('forwarder dynamo request '))),
        readUnitsPerOp: per(fwdRru),
        writeUnitsPerOp: per(fwdWru),
        conditionalFailuresPerOp: per(aws['forwarder dynamo conditionalFailures'] ?? 0),
        requestsByUsePerOp: perOpByUse(aws, 'forwarder dynamo use '),
        conditionalFailuresByUsePerOp: perOpByUse(aws, 'forwarder dynamo failedUse '),
      },
    },
    sns: { publishedPerOp: per(published), publishRequestsPerOp: per(aws.publishRequests ?? 0), avgMessageBytes: round(avgMessageBytes, 0), deliveriesPerOp: per(deliveries) },
    sqsBillableRequestsPerOp: per(sqsBillable),
    deliveriesToQueuesWithoutConsumerPerOp: Object.fromEntries(Object.entries(unconsumed).map(([k, v]) => [k, per(v)])),
    lambda: { invocationsPerOp: per(lambdaInvocations), gbSecondsPerOp: per(gbSeconds, 4) },
    storageCallsPerOp: bench.stack.storageApi ? per(after.storage - before.storage) : undefined,
    cpu: cpuFigures(before, after, n),
    functions: perFunction,
    costPer1000OpsUsd: costPer(counts, n),
    apiBudget: {
      qps: budget.qps,
      burst: budget.burst,
      maxRequestsInOneSecond: windowMax.max,
      limitQpsPlusBurst: budget.qps + budget.burst,
      withinLimit: windowMax.max <= budget.qps + budget.burst,
      ceilingOpsPerSecond: round(ceiling),
      throughputToCeiling: round(throughput / ceiling, 3),
      tokensGrantedPerOp: per(granted),
      tokensUnusedShare: granted > 0 ? round(1 - requests.length / granted, 3) : 0,
    },
  };
}

/** The price table, for the JSON. */
export const priceTable = PRICES;

type ClaimSpec = V1PersistentVolumeClaim['spec'];

/**
 * One operation at a time, each on a fresh object: start → done (a claim: create → Bound), then wait for the
 * pipeline to go idle before the next. Reported: latency per operation (median and all), the records each
 * function received between start and done (the hops), and the per-operation figures over all of them.
 */
export async function runSingles(bench: BenchStack, names: readonly string[], op: BenchOperation, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  const tracker = op.tracker();
  try {
    await bench.settle();
    const before = await bench.snapshot();
    const hops: Record<string, number[]> = Object.fromEntries(bench.pools.map((p) => [p.name, []]));
    let complete = true;
    for (const [i, name] of names.entries()) {
      await bench.settle();
      const from = bench.deliveries.length;
      await op.start(tracker, name, i);
      if (!(await tracker.waitAll([name], timeoutMs))) {
        complete = false;
        progress(`single ${name}: not done within ${timeoutMs} ms`);
        continue;
      }
      const doneAt = tracker.done.get(name)!;
      for (const p of bench.pools) hops[p.name].push(bench.deliveries.slice(from).filter((d) => d.fn === p.name && d.at <= doneAt).length);
    }
    await bench.settle();
    const after = await bench.snapshot();
    const latencies = tracker.latencies(names);
    const figures = measure(bench, before, after, { operations: names.length, latencies, elapsedMs: latencies.reduce((a, b) => a + b, 0), complete });
    delete figures.throughputPerSecond;
    delete figures.elapsedMs;
    delete figures.apiBudget;
    delete figures.cpu; // one at a time, the settles between them dominate
    return {
      repetitions: names.length,
      ...figures,
      latencyMs: { median: round(percentile(latencies, 50), 0), p99: round(percentile(latencies, 99), 0), all: latencies.map((l) => round(l, 0)) },
      // named for the claims it was first written for: the records before the operation was done
      recordsBeforeBound: Object.fromEntries(Object.entries(hops).map(([fn, h]) => [fn, { median: percentile(h, 50), all: h }])),
    };
  } finally {
    tracker.stop();
  }
}

/**
 * Where an operation's time went, p50 over the operations: start → its first message (of `kind`, keyed by the
 * operation's name) accepted by a function's queue (the watch, the forwarder, SNS), → that message handed to
 * the function (the queue), → done (the functions, and whatever messages followed).
 */
function operationStages(deliveries: readonly Delivery[], tracker: CompletionTracker, names: readonly string[], kind: string): Record<string, number> {
  const first = new Map<string, Delivery>();
  for (const d of deliveries) {
    if (d.kind !== kind || !d.firstReceive) continue;
    const name = d.key.split('/').pop()!;
    if (!first.has(name)) first.set(name, d);
  }
  const toQueue: number[] = [];
  const inQueue: number[] = [];
  const toDone: number[] = [];
  for (const name of names) {
    const created = tracker.created.get(name);
    const done = tracker.done.get(name);
    const d = first.get(name);
    if (created === undefined || done === undefined || !d) continue;
    toQueue.push(d.sentAt - created);
    inQueue.push(d.at - d.sentAt);
    toDone.push(done - d.at);
  }
  return {
    createToQueued: round(percentile(toQueue, 50), 0),
    queuedToDelivered: round(percentile(inQueue, 50), 0),
    // named for the claims it was first written for: first message handed over → done
    deliveredToBound: round(percentile(toDone, 50), 0),
  };
}

/** The forwarder's publish-lag histogram (seen → accepted by the topic): cumulative count per bucket bound in ms. */
async function publishLagBuckets(forwarder: Forwarder | undefined): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!forwarder) return out;
  for (const v of (await forwarder.metrics.publishLag.get()).values) {
    if (!v.metricName?.endsWith('_bucket')) continue;
    const le = v.labels.le === '+Inf' ? Infinity : Number(v.labels.le) * 1000;
    out.set(le, v.value);
  }
  return out;
}

/**
 * A forwarder counter by outcome, summed over kinds: its own-write holds by how they ended (`held`: tagged,
 * superseded, untagged, full), or its writes of events no write-back had written (`cacheWrites`: written,
 * unchanged, stale, failed).
 */
async function outcomes(forwarder: Forwarder | undefined, counter: 'held' | 'cacheWrites'): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (!forwarder) return out;
  for (const v of (await forwarder.metrics[counter].get()).values) out[String(v.labels.outcome)] = (out[String(v.labels.outcome)] ?? 0) + v.value;
  return out;
}

/** The upper bound (ms) of the bucket holding the p-th percentile of what was observed between two snapshots. */
function bucketPercentile(before: Map<number, number>, after: Map<number, number>, p: number): number {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  if (total <= 0) return NaN;
  for (const le of bounds) if ((after.get(le) ?? 0) - (before.get(le) ?? 0) >= (p / 100) * total) return le;
  return Infinity;
}

/**
 * `names.length` operations started `concurrency` at a time, as fast as the API takes them; then the time
 * until every one is done and the per-operation figures (counted until the pipeline is idle again).
 */
export async function runBurst(
  bench: BenchStack,
  names: readonly string[],
  op: BenchOperation,
  options: { concurrency: number; timeoutMs: number },
): Promise<Record<string, unknown>> {
  const tracker = op.tracker();
  try {
    await bench.settle();
    const before = await bench.snapshot();
    const connectionsBefore = bench.stack.kubeApi!.connectionsAccepted();
    const rate = sampleEmulatorRate(bench.stack);
    // Server side: the emulator's store records every write it applied; all but the bench's own are the functions'
    // (read uncopied: the bench's bookkeeping is not the system's CPU).
    const writesApplied: number[] = [];
    const unsubscribe = bench.stack.kubeApi!.store.watchRaw((e) => {
      if (!op.isBenchWrite(e)) writesApplied.push(performance.now());
    });
    const lagBefore = await publishLagBuckets(bench.forwarder);
    const heldBefore = await outcomes(bench.forwarder, 'held');
    const writesBefore = await outcomes(bench.forwarder, 'cacheWrites');
    const started = performance.now();
    await pool(names, options.concurrency, (name, i) => op.start(tracker, name, i));
    const createdIn = performance.now() - started;
    const complete = await tracker.waitAll(names, options.timeoutMs);
    if (!complete) progress(`${names.filter((n) => !tracker.done.has(n)).length} of ${names.length} ${op.noun} not done within ${options.timeoutMs} ms`);
    const lastDone = Math.max(...names.map((n) => tracker.done.get(n) ?? -Infinity));
    const settled = await bench.settle();
    const peak = rate.stop();
    const connectionsOpened = bench.stack.kubeApi!.connectionsAccepted() - connectionsBefore;
    unsubscribe();
    const after = await bench.snapshot();
    const doneCount = names.filter((n) => tracker.done.has(n)).length;
    const stages = operationStages(bench.deliveries.slice(before.deliveryIndex), tracker, names, op.kind);
    stages.forwarderSeenToPublished = bucketPercentile(lagBefore, await publishLagBuckets(bench.forwarder), 50);
    const figures = measure(bench, before, after, { operations: doneCount || names.length, latencies: tracker.latencies(names), elapsedMs: lastDone - started, complete });
    const heldAfter = await outcomes(bench.forwarder, 'held');
    const writesAfter = await outcomes(bench.forwarder, 'cacheWrites');
    const operations = doneCount || names.length;
    // Events the forwarder held for their writer's tag, per operation, by how each hold ended.
    const perOp = (after: Record<string, number>, before: Record<string, number>) => Object.fromEntries(Object.entries(after).map(([outcome, n]) => [outcome, round((n - (before[outcome] ?? 0)) / operations)]));
    const forwarderHeldPerOp = perOp(heldAfter, heldBefore);
    // Volume and claim events the forwarder wrote to the cache before sending them, no write-back having
    // written them (lib/forwarder/publisher.ts `write`), by outcome.
    const forwarderCacheWritesPerOp = perOp(writesAfter, writesBefore);
    return {
      // `claims` and `bound` for every operation: the table and earlier reports read these names
      claims: names.length,
      bound: doneCount,
      createConcurrency: options.concurrency,
      createsPerSecond: round((names.length / createdIn) * 1000),
      settled,
      ...figures,
      stagesP50Ms: stages,
      forwarderHeldPerOp,
      forwarderCacheWritesPerOp,
      emulatorPeakRequestsPerSecond: peak.peakRequestsPerSecond,
      // TCP (TLS) connections the emulator accepted in the run: the functions', the forwarder's and the bench's
      // own clients' (BENCH_KUBE_HTTP)
      emulatorConnectionsOpened: connectionsOpened,
      apiBudget: {
        ...(figures.apiBudget as Record<string, unknown>),
        // the same window as the emulator saw it: the writes it applied other than the bench's own
        emulatorWritesApplied: writesApplied.length,
        emulatorMaxWritesAppliedInOneSecond: maxInWindow(writesApplied).max,
      },
    };
  } finally {
    tracker.stop();
  }
}

/**
 * A controller bench's end: the report with the harness's modes (`aws`, `functions`, `ownWriteHoldMs`) and the
 * run's duration since `startedAt` (epoch ms), printed as one JSON document on stdout and a table on stderr.
 */
export function emitControllerReport(
  fields: { bench: string; operation: string; budget: { qps: number; burst: number }; kcmBudget: Record<string, unknown>[]; [run: string]: unknown },
  startedAt: number,
): ControllerReport {
  const { bench, operation, budget, ...runs } = fields;
  const report: ControllerReport = {
    bench,
    operation,
    budget,
    aws: AWS_MODE,
    functions: FUNCTIONS_MODE,
    // BENCH_RBAC=off serves plain http, HTTP/1.1 whatever BENCH_KUBE_HTTP says
    kubeHttp: process.env.BENCH_RBAC === 'off' ? 'http (no TLS)' : KUBE_HTTP_MODE,
    ownWriteHoldMs: OWN_WRITE_HOLD_MS,
    ...runs,
    kcmBudget: fields.kcmBudget,
    durationS: round((Date.now() - startedAt) / 1000, 0),
  };
  console.log(JSON.stringify(report, null, 2));
  printTable([report]);
  return report;
}
