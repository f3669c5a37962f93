/**
 * The namespace controller (`pkg/controller/namespace/deletion`): empties a deleting namespace, then
 * drops the `kubernetes` spec finalizer through the `finalize` subresource so the namespace goes.
 */
import type { ClusterController, KubeObject, Store, StoreEvent } from '../types.ts';
import { FINALIZER_KUBERNETES } from '../kinds/namespace.ts';
import { subscribeShared } from './hub.ts';
import { ignoreNotFound, WorkQueue } from './queue.ts';

/** The namespaced resources that hold content (conversion views such as events.k8s.io excluded). */
function contentResources(store: Store): string[] {
  return [...store.kinds].filter(([, spec]) => spec.namespaced && !spec.storedAs).map(([resource]) => resource);
}

/** Creates the namespace controller. */
export function namespaceController(): ClusterController {
  let unsubscribe: (() => void) | undefined;
  let queue: WorkQueue | undefined;
  return {
    name: 'namespace',
    start(store: Store): void {
      queue = new WorkQueue('namespace', (name) => {
        const ns = store.get({ resource: '/namespaces', namespace: '', name });
        if (!ns?.metadata.deletionTimestamp) return;
        if (ns.status?.phase !== 'Terminating') {
          const next = structuredClone(ns);
          next.status = { ...(next.status ?? {}), phase: 'Terminating' };
          store.update('/namespaces', next, 'status');
          return;
        }
        let remaining = 0;
        for (const resource of contentResources(store)) {
          for (const obj of store.list(resource, name)) {
            remaining++;
            if (!obj.metadata.deletionTimestamp) {
              ignoreNotFound(() => store.delete({ resource, namespace: name, name: obj.metadata.name! }, {
                propagationPolicy: 'Background', preconditions: { uid: obj.metadata.uid! },
              }));
            }
          }
        }
        if (remaining > 0) return;
        const finalizers: string[] = ns.spec?.finalizers ?? [];
        if (!finalizers.includes(FINALIZER_KUBERNETES)) return;
        const next: KubeObject = structuredClone(ns);
        next.spec = { ...(next.spec ?? {}), finalizers: finalizers.filter((f) => f !== FINALIZER_KUBERNETES) };
        ignoreNotFound(() => store.update('/namespaces', next, 'finalize'));
      });
      const q = queue;
      unsubscribe = subscribeShared(store, (e: StoreEvent) => {
        if (e.resource === '/namespaces') {
          if (e.type !== 'DELETED' && e.object.metadata.deletionTimestamp) q.add(e.object.metadata.name!);
          return;
        }
        const ns = e.object.metadata.namespace;
        if (ns && e.type === 'DELETED') {
          const owner = store.get({ resource: '/namespaces', namespace: '', name: ns });
          if (owner?.metadata.deletionTimestamp) q.add(ns);
        }
      });
      for (const ns of store.list('/namespaces')) if (ns.metadata.deletionTimestamp) q.add(ns.metadata.name!);
    },
    stop(): void {
      unsubscribe?.();
      queue?.stop();
    },
  };
}
