/**
 * Counts the requests sent through undici's dispatcher API (`Dispatcher.prototype.request`, which every
 * undici `Agent`, the global one included, inherits), to prove which HTTP path a client takes.
 *
 * The global dispatcher is whichever undici installed it first: Node's own (its `fetch`) when something in
 * the process fetched before the npm package did, an `Agent` of another class then. Its `request` is
 * counted too.
 *
 * @example
 * const probe = countDispatcherRequests();
 * try { await client.send(...); assert.equal(probe.count, 1); } finally { probe.restore(); }
 */
import { Dispatcher, getGlobalDispatcher } from 'undici';

export function countDispatcherRequests(): { readonly count: number; restore(): void } {
  let count = 0;
  const restores: Array<() => void> = [];
  const owners = new Set<object>([Dispatcher.prototype]);
  // The prototype that defines the global dispatcher's `request`, if it is not ours.
  for (let proto: object | null = Object.getPrototypeOf(getGlobalDispatcher()); proto; proto = Object.getPrototypeOf(proto)) {
    if (Object.hasOwn(proto, 'request')) {
      owners.add(proto);
      break;
    }
  }
  for (const owner of owners) {
    const holder = owner as { request: (...args: unknown[]) => unknown };
    const original = holder.request;
    holder.request = function (this: unknown, ...args: unknown[]) {
      count++;
      return original.apply(this, args);
    };
    restores.push(() => void (holder.request = original));
  }
  return {
    get count() {
      return count;
    },
    restore: () => restores.forEach((restore) => restore()),
  };
}
