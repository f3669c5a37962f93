/**
 * One store subscription shared by every controller on that store, without the copy a subscription makes
 * of each event (`watchRaw`): the controllers only read an event while it is dispatched (a key to queue,
 * an owner index), and read the object again from the store when their queue runs. Shared listeners must
 * treat the event as read-only and keep none of its objects.
 */
import type { Store, StoreEvent } from '../types.ts';

type Listener = (event: StoreEvent) => void;

interface Hub {
  listeners: Set<Listener>;
  unsubscribe: () => void;
}

const hubs = new WeakMap<Store, Hub>();

/** Subscribes `listener` to `store` through the shared subscription; returns the unsubscribe function. */
export function subscribeShared(store: Store, listener: Listener): () => void {
  let hub = hubs.get(store);
  if (!hub) {
    const listeners = new Set<Listener>();
    const unsubscribe = store.watchRaw((e) => {
      for (const l of listeners) {
        try {
          l(e);
        } catch (err) {
          process.emitWarning(`kube-api controller listener failed: ${(err as Error).message}`);
        }
      }
    });
    hub = { listeners, unsubscribe };
    hubs.set(store, hub);
  }
  const h = hub;
  h.listeners.add(listener);
  return () => {
    h.listeners.delete(listener);
    if (h.listeners.size === 0) {
      h.unsubscribe();
      hubs.delete(store);
    }
  };
}
