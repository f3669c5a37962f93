/**
 * Runs one function's module in a worker thread with the function's own environment, and exposes it as
 * an in-process async handler (for {@link SqsEventSource} and the scheduler).
 *
 * @example
 * const fn = await FunctionWorker.start({ entry: '/work/main/functions/binder.ts', exportName: 'handler', functionName: 'claimflow-local-binder', region, env });
 * await fn.handler(event, context);
 * await fn.stop();
 */
import { Worker } from 'node:worker_threads';
import type { Context } from 'aws-lambda';

/** An error thrown by the function inside its worker, rebuilt on this side. */
export class FunctionError extends Error {
  constructor(name: string, message: string, stack?: string) {
    super(message);
    this.name = name;
    if (stack) this.stack = stack;
  }
}

export interface FunctionWorkerOptions {
  /** Absolute path of the module (TypeScript source or bundle). */
  entry: string;
  exportName: string;
  functionName: string;
  region: string;
  memorySize?: number;
  /** The function's whole environment (becomes the worker's `process.env`). */
  env: Record<string, string>;
  /** Receives what the function writes to stdout/stderr (its logs) instead of the host's streams. */
  onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
}

/**
 * The invocation was running when the stack stopped the function (its sandbox was shut down): not a failure
 * of the function, and not reported as one.
 */
export class FunctionStoppedError extends Error {
  constructor(functionName: string) {
    super(`${functionName}: the function was stopped while this invocation was running`);
    this.name = 'FunctionStoppedError';
  }
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/** One function's sandbox. */
export class FunctionWorker {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #next = 1;
  #exited: Error | undefined;
  #stopping: Promise<void> | undefined;
  readonly #functionName: string;

  private constructor(worker: Worker, functionName: string) {
    this.#worker = worker;
    this.#functionName = functionName;
    worker.on('message', (m: { id?: number; result?: unknown; error?: { name: string; message: string; stack?: string } }) => {
      if (m.id === undefined) return;
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error) p.reject(new FunctionError(m.error.name, m.error.message, m.error.stack));
      else p.resolve(m.result);
    });
    worker.on('exit', (code) => {
      this.#exited = this.#stopping ? new FunctionStoppedError(this.#functionName) : new Error(`function worker exited with code ${code}`);
      for (const p of this.#pending.values()) p.reject(this.#exited);
      this.#pending.clear();
    });
  }

  /** Starts the worker and waits until the module has loaded. */
  static async start(options: FunctionWorkerOptions): Promise<FunctionWorker> {
    const worker = new Worker(new URL('./function-host.ts', import.meta.url), {
      env: options.env,
      ...(options.onOutput ? { stdout: true, stderr: true } : {}),
      workerData: {
        entry: options.entry,
        exportName: options.exportName,
        functionName: options.functionName,
        region: options.region,
        memorySize: options.memorySize ?? 512,
      },
    });
    if (options.onOutput) {
      const out = options.onOutput;
      worker.stdout.setEncoding('utf8').on('data', (text: string) => out('stdout', text));
      worker.stderr.setEncoding('utf8').on('data', (text: string) => out('stderr', text));
    }
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: { ready?: boolean }): void => {
        if (!m.ready) return;
        worker.off('error', reject);
        worker.off('message', onMessage);
        resolve();
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
    return new FunctionWorker(worker, options.functionName);
  }

  /** The function as an async handler; the deadline comes from the caller's context. */
  readonly handler = (event: unknown, context: Context): Promise<any> => {
    if (this.#exited) return Promise.reject(this.#exited);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, event, deadline: Date.now() + context.getRemainingTimeInMillis() });
    });
  };

  /** Invocations still running are ended and rejected with {@link FunctionStoppedError}. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#exited ??= new FunctionStoppedError(this.#functionName);
      for (const p of this.#pending.values()) p.reject(this.#exited);
      this.#pending.clear();
      await this.#worker.terminate();
    })();
    return this.#stopping;
  }
}
