/**
 * Event expiry (`kube-apiserver --event-ttl`, default 1 h): upstream stores every Event write under an
 * etcd lease, so an Event disappears one TTL after its last write. Here a sweep deletes Events whose
 * last write is older than the TTL; Events found at start count from the start.
 */
import type { ClusterController, Store, StoreEvent } from '../types.ts';
import { subscribeShared } from './hub.ts';
import { ignoreNotFound } from './queue.ts';

/** The kube-apiserver default `--event-ttl`. */
export const DEFAULT_EVENT_TTL_MS = 60 * 60 * 1000;

/** Creates the event-ttl controller. */
export function eventTtlController(ttlMs: number = DEFAULT_EVENT_TTL_MS): ClusterController {
  let unsubscribe: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Map<string, number>();
  return {
    name: 'event-ttl',
    start(store: Store): void {
      if (!store.kinds.has('/events')) return;
      const now = Date.now();
      for (const e of store.list('/events')) expiry.set(`${e.metadata.namespace}/${e.metadata.name}`, now + ttlMs);
      unsubscribe = subscribeShared(store, (e: StoreEvent) => {
        if (e.resource !== '/events') return;
        const key = `${e.object.metadata.namespace}/${e.object.metadata.name}`;
        if (e.type === 'DELETED') expiry.delete(key);
        else expiry.set(key, Date.now() + ttlMs);
      });
      timer = setInterval(() => {
        const t = Date.now();
        for (const [key, at] of expiry) {
          if (at > t) continue;
          expiry.delete(key);
          const [namespace, name] = key.split('/');
          try {
            ignoreNotFound(() => store.delete({ resource: '/events', namespace, name }));
          } catch (err) {
            process.emitWarning(`kube-api event-ttl could not expire ${key}: ${(err as Error).message}`);
          }
        }
      }, Math.max(10, Math.min(Math.floor(ttlMs / 10), 60_000)));
      timer.unref();
    },
    stop(): void {
      unsubscribe?.();
      if (timer) clearInterval(timer);
      timer = undefined;
      expiry.clear();
    },
  };
}
