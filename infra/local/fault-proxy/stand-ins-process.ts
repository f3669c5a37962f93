/**
 * fauxqs (SQS, SNS) and dynalite (DynamoDB) in a child process (stand-ins-main.ts), behind one URL, so a
 * process that runs the stack (the benchmarks) does not spend its own CPU answering SQS, SNS and DynamoDB:
 * on AWS those are not in the functions' process either. The child is tied to this process: `stop()` ends
 * it, and it exits by itself when this process exits or dies (its IPC channel closes).
 *
 * @example
 * const aws = await startAwsStandInsProcess({ region: 'eu-west-1' });
 * const stack = await startStack({ awsEndpoint: aws.url });
 * // ...
 * await stack.stop();
 * await aws.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AwsService } from './errors.ts';
import type { StandInsReady } from './stand-ins-main.ts';

const ENTRY = fileURLToPath(new URL('./stand-ins-main.ts', import.meta.url));

/** How long stop() waits for the child to exit after SIGTERM before it kills it. */
const STOP_TIMEOUT_MS = 5_000;

export interface AwsStandInsProcessOptions {
  /** fauxqs's default region (default eu-west-1). */
  region?: string;
  /** How long to wait for the child to serve (default 30 s). */
  startTimeoutMs?: number;
  /** Told when the child exits before `stop()` (default: a warning on stderr). */
  onUnexpectedExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

export interface AwsStandInsProcess {
  /** One URL for SQS, SNS and DynamoDB (the child's rule-less proxy): `startStack({ awsEndpoint })`. */
  url: string;
  /** fauxqs and dynalite themselves, by service (no proxy hop). */
  upstreams: Record<AwsService, string>;
  pid: number;
  /** Ends the child (SIGTERM, then SIGKILL after 5 s) and waits until it is gone. */
  stop(): Promise<void>;
}

/** Starts the child and resolves once it serves; rejects (the child killed) if it does not. */
export async function startAwsStandInsProcess(options: AwsStandInsProcessOptions = {}): Promise<AwsStandInsProcess> {
  // no execArgv: the parent may run under `--test` or a profiler; stdout ignored so a bench's JSON stays clean
  const child: ChildProcess = spawn(process.execPath, [ENTRY, '--region', options.region ?? 'eu-west-1'], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let stopping = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // also on a plain process.exit() of the parent, which closes the channel only as the process goes
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);

  let ready: StandInsReady;
  try {
    ready = await new Promise<StandInsReady>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`aws stand-ins process: not serving after ${options.startTimeoutMs ?? 30_000} ms`)), options.startTimeoutMs ?? 30_000);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`aws stand-ins process: exited before serving (code ${code}, signal ${signal})`));
      });
      child.once('message', (message: StandInsReady) => {
        clearTimeout(timer);
        resolve(message);
      });
    });
  } catch (error) {
    process.removeListener('exit', killOnExit);
    child.kill('SIGKILL');
    throw error;
  }
  child.once('exit', (code, signal) => {
    process.removeListener('exit', killOnExit);
    if (stopping) return;
    (options.onUnexpectedExit ?? ((c, s) => console.warn(`aws stand-ins process ${child.pid}: exited unexpectedly (code ${c}, signal ${s})`)))(code, signal);
  });
  // the child must not keep this process alive: when it ends, the channel closes and the child exits
  child.unref();
  child.channel?.unref();

  return {
    url: ready.url,
    upstreams: ready.upstreams,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      stopping = true;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const slow = new Promise<'slow'>((resolve) => {
        timer = setTimeout(() => resolve('slow'), STOP_TIMEOUT_MS);
      });
      if ((await Promise.race([exited, slow])) === 'slow') {
        child.kill('SIGKILL');
        await exited;
      }
      clearTimeout(timer);
    },
  };
}
