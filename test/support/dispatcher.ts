/**
 * Counts the requests sent through undici's dispatcher API (`Dispatcher.prototype.request`, which every
 * undici `Agent`, the global one included, inherits), to prove which HTTP path a client takes.
 *
 * @example
 * const probe = countDispatcherRequests();
 * try { await client.send(...); assert.equal(probe.count, 1); } finally { probe.restore(); }
 */
import { Dispatcher } from 'undici';

export function countDispatcherRequests(): { readonly count: number; restore(): void } {
  const original = Dispatcher.prototype.request;
  let count = 0;
  Dispatcher.prototype.request = function (this: Dispatcher, ...args: unknown[]) {
    count++;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return {
    get count() {
      return count;
    },
    restore: () => void (Dispatcher.prototype.request = original),
  };
}
