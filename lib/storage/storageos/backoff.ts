/**
 * Exponential backoff for one API call: bounded attempts, doubling delay with a cap, full jitter.
 * Beyond these attempts the function runtime retries the whole reconcile with its own backoff.
 */

/** Backoff settings of one call. */
export interface BackoffOptions {
  /** Total attempts including the first (default 4). */
  attempts?: number;
  /** Delay before the first retry, before jitter (default 200 ms). */
  baseDelayMs?: number;
  /** Cap of the delay (default 5 s). */
  maxDelayMs?: number;
  /** Growth factor per retry (default 2). */
  factor?: number;
  /** Randomise each delay in [delay/2, delay] (default true). */
  jitter?: boolean;
}

/** {@link BackoffOptions} with every field set. */
export type Backoff = Required<BackoffOptions>;

/** The defaults: 4 attempts, 200 ms doubling to at most 5 s, with jitter. */
export const DEFAULT_BACKOFF: Backoff = { attempts: 4, baseDelayMs: 200, maxDelayMs: 5_000, factor: 2, jitter: true };

/** Fill in the defaults. */
export function resolveBackoff(options: BackoffOptions = {}): Backoff {
  const merged = { ...DEFAULT_BACKOFF, ...options };
  if (!Number.isInteger(merged.attempts) || merged.attempts < 1) throw new RangeError('backoff attempts must be an integer >= 1');
  return merged;
}

/** Delay before retry number `retry` (0 = the first retry). */
export function backoffDelay(backoff: Backoff, retry: number): number {
  const delay = Math.min(backoff.maxDelayMs, backoff.baseDelayMs * backoff.factor ** retry);
  return backoff.jitter ? delay / 2 + Math.random() * (delay / 2) : delay;
}

/** Resolve after `ms`, or reject with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
