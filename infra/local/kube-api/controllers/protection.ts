/**
 * The pvc-protection and pv-protection controllers (`pkg/controller/volume/pvcprotection`,
 * `pvprotection`): they remove the finalizers StorageObjectInUseProtection added, once it is safe.
 */
import type { ClusterController, KubeObject, Store, StoreEvent } from '../types.ts';
import { PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER } from '../admission/storage-object-in-use-protection.ts';
import { subscribeShared } from './hub.ts';
import { ignoreNotFound, WorkQueue } from './queue.ts';

/** Removes `finalizer` from the stored object (read with `peek`: copied here) with an optimistic-concurrency update. */
function removeFinalizer(store: Store, resource: string, obj: KubeObject, finalizer: string): void {
  const next = structuredClone(obj);
  next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== finalizer);
  ignoreNotFound(() => store.update(resource, next));
}

/** `podUsesPVC`: only scheduled pods (spec.nodeName set) block; they block whatever their phase. */
export function podUsesClaim(pod: KubeObject, claimName: string): boolean {
  if (!pod.spec?.nodeName) return false;
  return (pod.spec.volumes ?? []).some((v: { persistentVolumeClaim?: { claimName?: string }; ephemeral?: unknown; name?: string }) =>
    v.persistentVolumeClaim?.claimName === claimName
    || (v.ephemeral !== undefined && `${pod.metadata.name}-${v.name}` === claimName
      && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed'));
}

/** Creates the pvc-protection controller. */
export function pvcProtectionController(): ClusterController {
  let unsubscribe: (() => void) | undefined;
  let queue: WorkQueue | undefined;
  return {
    name: 'pvc-protection',
    start(store: Store): void {
      queue = new WorkQueue('pvc-protection', (key) => {
        const [namespace, name] = key.split('/');
        const pvc = store.peek('/persistentvolumeclaims', namespace, name);
        if (!pvc?.metadata.deletionTimestamp || !pvc.metadata.finalizers?.includes(PVC_PROTECTION_FINALIZER)) return;
        const inUse = store.kinds.has('/pods') && store.list('/pods', namespace).some((p) => podUsesClaim(p, name));
        if (!inUse) removeFinalizer(store, '/persistentvolumeclaims', pvc, PVC_PROTECTION_FINALIZER);
      });
      const q = queue;
      unsubscribe = subscribeShared(store, (e: StoreEvent) => {
        if (e.resource === '/persistentvolumeclaims' && e.type !== 'DELETED') q.add(`${e.object.metadata.namespace}/${e.object.metadata.name}`);
        if (e.resource === '/pods') {
          for (const pod of [e.object, e.previous]) {
            for (const v of pod?.spec?.volumes ?? []) {
              if (v.persistentVolumeClaim?.claimName) q.add(`${pod!.metadata.namespace}/${v.persistentVolumeClaim.claimName}`);
            }
          }
        }
      });
      for (const pvc of store.list('/persistentvolumeclaims')) if (pvc.metadata.deletionTimestamp) q.add(`${pvc.metadata.namespace}/${pvc.metadata.name}`);
    },
    stop(): void {
      unsubscribe?.();
      queue?.stop();
    },
  };
}

/** Creates the pv-protection controller: the finalizer goes once the PV is deleting and not Bound. */
export function pvProtectionController(): ClusterController {
  let unsubscribe: (() => void) | undefined;
  let queue: WorkQueue | undefined;
  return {
    name: 'pv-protection',
    start(store: Store): void {
      queue = new WorkQueue('pv-protection', (name) => {
        const pv = store.peek('/persistentvolumes', '', name);
        if (!pv?.metadata.deletionTimestamp || !pv.metadata.finalizers?.includes(PV_PROTECTION_FINALIZER)) return;
        if (pv.status?.phase !== 'Bound') removeFinalizer(store, '/persistentvolumes', pv, PV_PROTECTION_FINALIZER);
      });
      const q = queue;
      unsubscribe = subscribeShared(store, (e: StoreEvent) => {
        if (e.resource === '/persistentvolumes' && e.type !== 'DELETED') q.add(e.object.metadata.name!);
      });
      for (const pv of store.list('/persistentvolumes')) if (pv.metadata.deletionTimestamp) q.add(pv.metadata.name!);
    },
    stop(): void {
      unsubscribe?.();
      queue?.stop();
    },
  };
}
