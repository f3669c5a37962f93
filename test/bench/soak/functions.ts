/**
 * The soak's function sandboxes: each function of serverless.yml in a worker thread (function-host.ts)
 * with its own environment, like the stack's FunctionWorker, but killable: {@link FunctionPool.kill}
 * terminates the worker while its batches run (they fail as a crashed Lambda invocation does, and their
 * messages come back after the queue's visibility timeout) and starts a fresh one (a cold start).
 *
 * The stack is given {@link FunctionPool.handler} for every function; the workers start once the stack
 * has made the functions' environments ({@link FunctionPool.start}), and invocations wait for them.
 */
import { Worker } from 'node:worker_threads';
import type { Context } from 'aws-lambda';

export interface FunctionSpec {
  name: string;
  entry: string;
  exportName: string;
  functionName: string;
  region: string;
  memorySize: number;
  env: Record<string, string>;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/** A worker that can be killed and replaced. */
class Sandbox {
  #worker: Worker | undefined;
  #pending = new Map<number, Pending>();
  #next = 1;
  #ready: Promise<void> | undefined;
  #stopped = false;
  readonly spec: FunctionSpec;
  readonly #onOutput: (name: string, text: string) => void;

  constructor(spec: FunctionSpec, onOutput: (name: string, text: string) => void) {
    this.spec = spec;
    this.#onOutput = onOutput;
  }

  start(): Promise<void> {
    const worker = new Worker(new URL('./function-host.ts', import.meta.url), {
      env: this.spec.env,
      stdout: true,
      stderr: true,
      workerData: { entry: this.spec.entry, exportName: this.spec.exportName, functionName: this.spec.functionName, region: this.spec.region, memorySize: this.spec.memorySize },
    });
    worker.stdout.setEncoding('utf8').on('data', (t: string) => this.#onOutput(this.spec.name, t));
    worker.stderr.setEncoding('utf8').on('data', (t: string) => this.#onOutput(this.spec.name, t));
    const pending = this.#pending;
    worker.on('message', (m: { id?: number; result?: unknown; error?: { name: string; message: string } }) => {
      if (m.id === undefined) return;
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(Object.assign(new Error(m.error.message), { name: m.error.name }));
      else p.resolve(m.result);
    });
    worker.on('exit', (code) => {
      for (const p of pending.values()) p.reject(new Error(`${this.spec.name}: sandbox exited (${code}) during the invocation`));
      pending.clear();
    });
    this.#worker = worker;
    this.#ready = new Promise<void>((ok, fail) => {
      const onMessage = (m: { ready?: boolean }) => {
        if (!m.ready) return;
        worker.off('message', onMessage);
        ok();
      };
      worker.on('message', onMessage);
      worker.once('error', fail);
    });
    return this.#ready;
  }

  async invoke(event: unknown, context: Context): Promise<unknown> {
    if (this.#stopped) throw new Error(`${this.spec.name}: stopped`);
    await this.#ready;
    const worker = this.#worker!;
    const pending = this.#pending;
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, event, deadline: Date.now() + context.getRemainingTimeInMillis() });
    });
  }

  /** Terminates the worker mid-invocation; a fresh one replaces it. Returns the invocations it cut. */
  async kill(): Promise<number> {
    const cut = this.#pending.size;
    const old = this.#worker;
    this.#pending = new Map(); // the old worker's exit rejects what it held
    await this.start();
    await old?.terminate();
    return cut;
  }

  /** Invocations in flight. */
  get busy(): number {
    return this.#pending.size;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#worker?.terminate();
  }
}

/** Every function's sandbox. */
export class FunctionPool {
  readonly #sandboxes = new Map<string, Sandbox>();
  #started!: () => void;
  readonly #startedPromise = new Promise<void>((ok) => (this.#started = ok));
  readonly #onOutput: (name: string, text: string) => void;

  constructor(onOutput: (name: string, text: string) => void = () => {}) {
    this.#onOutput = onOutput;
  }

  /** A Lambda handler for the stack that waits for {@link start} and goes to the current sandbox. */
  handler(name: string): (event: unknown, context: Context) => Promise<any> {
    return async (event, context) => {
      await this.#startedPromise;
      const sandbox = this.#sandboxes.get(name);
      if (!sandbox) throw new Error(`function ${name} is not running`);
      return sandbox.invoke(event, context);
    };
  }

  async start(specs: FunctionSpec[]): Promise<void> {
    for (const spec of specs) {
      const s = new Sandbox(spec, this.#onOutput);
      await s.start();
      this.#sandboxes.set(spec.name, s);
    }
    this.#started();
  }

  names(): string[] {
    return [...this.#sandboxes.keys()];
  }

  busy(name: string): number {
    return this.#sandboxes.get(name)?.busy ?? 0;
  }

  /** Kills the function's sandbox (mid-batch when one runs) and starts a new one; the invocations cut. */
  kill(name: string): Promise<number> {
    const s = this.#sandboxes.get(name);
    if (!s) throw new Error(`function ${name} is not running`);
    return s.kill();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#sandboxes.values()].map((s) => s.stop()));
  }
}
