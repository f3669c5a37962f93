/**
 * apimachinery `wait.Poll(interval, timeout, condition)` semantics (reference §1.8): the first check comes
 * after one interval, and one last check runs when the timeout fires; an interval longer than the timeout
 * means exactly one check, at the timeout.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Calls `condition` as `wait.Poll` does until it returns a value; `undefined` when the timeout passed
 * without one. Errors from `condition` abort the wait.
 *
 * @example
 * const ip = await pollUntil(1000, 20_000, undefined, async () => (await read()).clusterIP || undefined);
 */
export async function pollUntil<T>(
  intervalMs: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  condition: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return undefined;
    // A timer may fire a millisecond before Date.now() reaches the deadline; the check after the sleep that
    // ran to the deadline is the last one, whatever the clock then reads.
    const last = remaining <= intervalMs;
    await sleep(last ? remaining : intervalMs, undefined, signal ? { signal } : undefined);
    const value = await condition();
    if (value !== undefined || last) return value;
  }
}
