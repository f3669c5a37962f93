/**
 * The benchmarks' functions in a thread of their own (`BENCH_FUNCTIONS=thread`, the default): on AWS the
 * functions do not share a core with the API server and the forwarder, so the bench runs every function's
 * containers ({@link FunctionPool}, built by {@link containerBuilder} as in the main thread) in one worker
 * thread, and the main thread keeps the API emulator, the forwarder, the event sources and the bench.
 *
 * Main side: {@link FunctionThread} — one {@link RemotePool} per function, whose handler posts the batch to
 * the thread. The pools' figures come back with every invocation's answer (and on {@link FunctionThread.collect}):
 * tallies whole, and the Kubernetes requests, deliveries and bucket writes recorded since the last answer,
 * their times moved onto the main thread's `performance.now()` clock.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import type { Context, SQSEvent } from 'aws-lambda';
import { lambdaContext } from '../../../infra/local/stack/event-source.ts';
import { containerBuilder, type ContainerSpec, type Delivery, FunctionPool, type FunctionName, type PoolView } from './containers.ts';
import { type BucketWrite, type KubeRequest, KubeRequestLog, Tally } from './meter.ts';

/** One function as the thread runs it. */
export interface RemoteFunctionSpec {
  spec: ContainerSpec;
  memoryMB: number;
  architecture: 'arm64' | 'x86_64';
  queue: string;
  functionName: string;
}

interface Figures {
  /** The thread's `performance.timeOrigin`: its times plus this, minus the main thread's, are main-thread times. */
  origin: number;
  tallies: Record<string, Record<string, number>>;
  requests: KubeRequest[];
  deliveries: Delivery[];
  bucketWrites: BucketWrite[];
  /** The thread's event loop since it started: ms active and idle (`performance.eventLoopUtilization()`). */
  eventLoop: { active: number; idle: number };
  /** The thread's own CPU time since it started, ms user + system (`process.threadCpuUsage()`). */
  cpuMs: number;
}

type ToThread = { type: 'invoke'; id: number; fn: FunctionName; event: SQSEvent; deadline: number } | { type: 'collect'; id: number } | { type: 'stop'; id: number };
type FromThread = { type: 'ready' } | { type: 'done'; id: number; result?: unknown; error?: { name: string; message: string; stack?: string }; figures?: Figures };

/** An error thrown by a function in the thread, rebuilt on this side. */
class ThreadFunctionError extends Error {
  constructor(name: string, message: string, stack?: string) {
    super(message);
    this.name = name;
    if (stack) this.stack = stack;
  }
}

/** A function whose containers run in the functions' thread; its tally mirrors the thread's. */
export class RemotePool implements PoolView {
  readonly name: FunctionName;
  readonly memoryMB: number;
  readonly architecture: 'arm64' | 'x86_64';
  readonly queue: string;
  readonly tally = new Tally();
  inFlight = 0;
  lastActivity = 0;
  readonly #thread: FunctionThread;

  constructor(thread: FunctionThread, f: RemoteFunctionSpec) {
    this.#thread = thread;
    this.name = f.spec.fn;
    this.memoryMB = f.memoryMB;
    this.architecture = f.architecture;
    this.queue = f.queue;
  }

  readonly handler = async (event: SQSEvent, context: Context): Promise<unknown> => {
    this.inFlight++;
    this.lastActivity = performance.now();
    try {
      return await this.#thread.invoke(this.name, event, Date.now() + context.getRemainingTimeInMillis());
    } finally {
      this.inFlight--;
      this.lastActivity = performance.now();
    }
  };
}

/** The main thread's handle on the functions' thread. */
export class FunctionThread {
  readonly pools: RemotePool[];
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly #sinks: { log: KubeRequestLog; deliveries: Delivery[]; bucketWrites: BucketWrite[] };
  #next = 1;
  #exited: Error | undefined;
  /** The thread's event loop since it started, as last reported: ms active and idle. */
  eventLoop = { active: 0, idle: 0 };
  /** The thread's own CPU time since it started, as last reported, ms. */
  cpuMs = 0;

  private constructor(worker: Worker, functions: RemoteFunctionSpec[], sinks: FunctionThread['sinks']) {
    this.#worker = worker;
    this.#sinks = sinks;
    this.pools = functions.map((f) => new RemotePool(this, f));
    worker.on('message', (m: FromThread) => {
      if (m.type !== 'done') return;
      if (m.figures) this.#absorb(m.figures);
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error) p.reject(new ThreadFunctionError(m.error.name, m.error.message, m.error.stack));
      else p.resolve(m.result);
    });
    worker.on('exit', (code) => {
      this.#exited ??= new Error(`the functions' thread exited with code ${code}`);
      for (const p of this.#pending.values()) p.reject(this.#exited);
      this.#pending.clear();
    });
  }

  get sinks(): { log: KubeRequestLog; deliveries: Delivery[]; bucketWrites: BucketWrite[] } {
    return this.#sinks;
  }

  /** Starts the thread with every function's containers; figures land in `sinks` (the harness's own log and arrays). */
  static async start(functions: RemoteFunctionSpec[], sinks: FunctionThread['sinks']): Promise<FunctionThread> {
    const worker = new Worker(new URL(import.meta.url), { workerData: { functions } });
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: FromThread): void => {
        if (m.type !== 'ready') return;
        worker.off('error', reject);
        worker.off('message', onMessage);
        resolve();
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
    return new FunctionThread(worker, functions, sinks);
  }

  invoke(fn: FunctionName, event: SQSEvent, deadline: number): Promise<unknown> {
    return this.#call({ type: 'invoke', id: 0, fn, event, deadline });
  }

  /** Brings every pool's figures up to date (after the pipeline settled, before a snapshot). */
  async collect(): Promise<void> {
    await this.#call({ type: 'collect', id: 0 });
  }

  async stop(): Promise<void> {
    if (!this.#exited) await this.#call({ type: 'stop', id: 0 }).catch(() => undefined);
    this.#exited ??= new Error("the functions' thread was stopped");
    await this.#worker.terminate();
  }

  #call(message: ToThread): Promise<unknown> {
    if (this.#exited) return Promise.reject(this.#exited);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ ...message, id });
    });
  }

  #absorb(figures: Figures): void {
    const shift = figures.origin - performance.timeOrigin;
    this.eventLoop = figures.eventLoop;
    this.cpuMs = figures.cpuMs;
    for (const pool of this.pools) {
      const tally = figures.tallies[pool.name];
      if (!tally) continue;
      pool.tally.counts.clear();
      for (const [k, v] of Object.entries(tally)) pool.tally.counts.set(k, v);
    }
    for (const r of figures.requests) this.#sinks.log.requests.push({ ...r, at: r.at + shift });
    for (const d of figures.deliveries) this.#sinks.deliveries.push({ ...d, at: d.at + shift, sentAt: d.sentAt + shift });
    for (const w of figures.bucketWrites) this.#sinks.bucketWrites.push({ ...w, at: w.at + shift });
  }
}

/** The thread's side: builds the pools, runs invocations, answers with what was recorded since the last answer. */
async function serve(functions: RemoteFunctionSpec[]): Promise<void> {
  const port = parentPort!;
  const log = new KubeRequestLog();
  const deliveries: Delivery[] = [];
  const bucketWrites: BucketWrite[] = [];
  const shipped = { requests: 0, deliveries: 0, bucketWrites: 0 };
  const clients: Array<{ destroy(): void }> = [];
  const pools = new Map<FunctionName, { pool: FunctionPool; functionName: string; region: string }>();
  for (const f of functions) {
    const tally = new Tally();
    const { build, clients: own } = containerBuilder(f.spec, { tally, log, bucketWrites });
    clients.push(...own);
    pools.set(f.spec.fn, {
      pool: new FunctionPool({ name: f.spec.fn, memoryMB: f.memoryMB, architecture: f.architecture, queue: f.queue, build, deliveries, tally }),
      functionName: f.functionName,
      region: f.spec.region,
    });
  }
  const figures = (): Figures => {
    const out: Figures = {
      origin: performance.timeOrigin,
      tallies: Object.fromEntries([...pools].map(([fn, p]) => [fn, p.pool.tally.snapshot()])),
      requests: log.requests.slice(shipped.requests),
      deliveries: deliveries.slice(shipped.deliveries),
      bucketWrites: bucketWrites.slice(shipped.bucketWrites),
      eventLoop: (({ active, idle }) => ({ active, idle }))(performance.eventLoopUtilization()),
      cpuMs: threadCpuMs(),
    };
    shipped.requests = log.requests.length;
    shipped.deliveries = deliveries.length;
    shipped.bucketWrites = bucketWrites.length;
    return out;
  };
  port.on('message', (m: ToThread) => {
    if (m.type === 'collect') {
      port.postMessage({ type: 'done', id: m.id, figures: figures() } satisfies FromThread);
      return;
    }
    if (m.type === 'stop') {
      for (const c of clients) c.destroy();
      port.postMessage({ type: 'done', id: m.id } satisfies FromThread);
      return;
    }
    const entry = pools.get(m.fn);
    if (!entry) {
      port.postMessage({ type: 'done', id: m.id, error: { name: 'Error', message: `function ${m.fn} is not in this thread` } } satisfies FromThread);
      return;
    }
    const context = lambdaContext(entry.functionName, entry.region, m.deadline, entry.pool.memoryMB);
    entry.pool.handler(m.event, context).then(
      (result) => port.postMessage({ type: 'done', id: m.id, result, figures: figures() } satisfies FromThread),
      (error: unknown) => {
        const e = error instanceof Error ? error : new Error(String(error));
        port.postMessage({ type: 'done', id: m.id, error: { name: e.name, message: e.message, stack: e.stack }, figures: figures() } satisfies FromThread);
      },
    );
  });
  port.postMessage({ type: 'ready' } satisfies FromThread);
}

if (!isMainThread && (workerData as { functions?: unknown } | undefined)?.functions) await serve((workerData as { functions: RemoteFunctionSpec[] }).functions);

/** This thread's CPU time, ms user + system. */
export function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}
