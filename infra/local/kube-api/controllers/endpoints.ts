/**
 * The endpoints controller's cleanup half (`pkg/controller/endpoint/endpoints_controller.go` syncService):
 * once a Service is gone, the Endpoints of the same namespace/name are deleted, selector or not.
 */
import type { ClusterController, Store, StoreEvent } from '../types.ts';
import { subscribeShared } from './hub.ts';
import { ignoreNotFound, WorkQueue } from './queue.ts';

/** Creates the endpoints controller. */
export function endpointsController(): ClusterController {
  let unsubscribe: (() => void) | undefined;
  let queue: WorkQueue | undefined;
  return {
    name: 'endpoints',
    start(store: Store): void {
      queue = new WorkQueue('endpoints', (key) => {
        const [namespace, name] = key.split('/');
        if (store.get({ resource: '/services', namespace, name })) return;
        if (!store.get({ resource: '/endpoints', namespace, name })) return;
        ignoreNotFound(() => store.delete({ resource: '/endpoints', namespace, name }));
      });
      const q = queue;
      unsubscribe = subscribeShared(store, (e: StoreEvent) => {
        if (e.resource === '/services' && e.type === 'DELETED') q.add(`${e.object.metadata.namespace}/${e.object.metadata.name}`);
      });
    },
    stop(): void {
      unsubscribe?.();
      queue?.stop();
    },
  };
}
