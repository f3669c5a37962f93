/**
 * What the forwarder watches: one entry per kind, with the collection path across all namespaces.
 * Services and Endpoints are watched only through a label selector (by default, those labelled with a
 * StorageOS volume id), for the shared-volume controller.
 */
import type { WatchedKind } from '../runtime/message.ts';

export interface WatchedResource {
  kind: WatchedKind;
  apiVersion: string;
  /** Collection path across all namespaces, e.g. `/api/v1/persistentvolumeclaims`. */
  path: string;
  namespaced: boolean;
  /** Label selector for LIST and WATCH (undefined: every object). */
  labelSelector?: string;
}

/** The label StorageOS puts on the Service/Endpoints of a shared volume. */
export const STORAGEOS_VOLUME_ID_LABEL = 'storageos.com/volume-id';

/** The watched resources; `serviceSelector` filters Services and Endpoints (default: has the volume-id label). */
export function watchedResources(serviceSelector: string = STORAGEOS_VOLUME_ID_LABEL): WatchedResource[] {
  return [
    { kind: 'PersistentVolume', apiVersion: 'v1', path: '/api/v1/persistentvolumes', namespaced: false },
    { kind: 'PersistentVolumeClaim', apiVersion: 'v1', path: '/api/v1/persistentvolumeclaims', namespaced: true },
    { kind: 'Node', apiVersion: 'v1', path: '/api/v1/nodes', namespaced: false },
    { kind: 'StorageClass', apiVersion: 'storage.k8s.io/v1', path: '/apis/storage.k8s.io/v1/storageclasses', namespaced: false },
    { kind: 'VolumeAttachment', apiVersion: 'storage.k8s.io/v1', path: '/apis/storage.k8s.io/v1/volumeattachments', namespaced: false },
    { kind: 'Service', apiVersion: 'v1', path: '/api/v1/services', namespaced: true, labelSelector: serviceSelector },
    { kind: 'Endpoints', apiVersion: 'v1', path: '/api/v1/endpoints', namespaced: true, labelSelector: serviceSelector },
  ];
}
