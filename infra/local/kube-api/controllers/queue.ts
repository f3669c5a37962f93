/**
 * A deduplicating work queue driven off the event loop (client-go `workqueue` in miniature): keys added
 * while a write is in progress are processed later, never inside the write that caused them.
 */
import { StatusError } from '../types.ts';

/** Delay before a key that hit a 409 Conflict (or another retryable error) is tried again. */
const RETRY_MS = 5;
const MAX_RETRIES = 20;

/**
 * @example
 * const queue = new WorkQueue('pv-protection', (name) => syncVolume(name));
 * queue.add('pv-1'); queue.add('pv-1'); // processed once, on a later turn of the event loop
 * queue.stop();                         // on controller stop: no more work, timers cleared
 */
export class WorkQueue {
  readonly #pending = new Set<string>();
  readonly #retries = new Map<string, number>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #handler: (key: string) => void;
  readonly #name: string;
  #immediate: NodeJS.Immediate | undefined;
  #stopped = false;

  constructor(name: string, handler: (key: string) => void) {
    this.#name = name;
    this.#handler = handler;
  }

  /** Schedules `key`; a key already pending runs once. */
  add(key: string): void {
    if (this.#stopped) return;
    this.#pending.add(key);
    this.#immediate ??= setImmediate(() => this.#drain());
  }

  /** Stops processing and clears timers. */
  stop(): void {
    this.#stopped = true;
    if (this.#immediate) clearImmediate(this.#immediate);
    this.#immediate = undefined;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#pending.clear();
  }

  #drain(): void {
    this.#immediate = undefined;
    const keys = [...this.#pending];
    this.#pending.clear();
    for (const key of keys) {
      if (this.#stopped) return;
      try {
        this.#handler(key);
        this.#retries.delete(key);
      } catch (err) {
        this.#retry(key, err);
      }
    }
  }

  #retry(key: string, err: unknown): void {
    const n = (this.#retries.get(key) ?? 0) + 1;
    const retryable = err instanceof StatusError && (err.code === 409 || err.code === 429 || err.code >= 500);
    if (!retryable || n > MAX_RETRIES) {
      this.#retries.delete(key);
      process.emitWarning(`kube-api ${this.#name} controller gave up on ${key}: ${(err as Error).message}`);
      return;
    }
    this.#retries.set(key, n);
    const t = setTimeout(() => {
      this.#timers.delete(t);
      this.add(key);
    }, RETRY_MS * n);
    this.#timers.add(t);
  }
}

/** `404 NotFound` is success for a controller deleting or finalizing something already gone. */
export function ignoreNotFound(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof StatusError && err.code === 404)) throw err;
  }
}
