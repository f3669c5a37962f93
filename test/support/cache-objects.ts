/**
 * PersistentVolume and PersistentVolumeClaim builders for cache tests (the index table and the cache's own
 * tests): a name, a resourceVersion and the few fields the indexes read.
 */
import type { CacheableObject } from '../../lib/state/cache.ts';

export const PV = 'PersistentVolume';
export const PVC = 'PersistentVolumeClaim';

export function volume(name: string, rv: number, mods: { size?: string; cls?: string; modes?: string[]; phase?: string; claim?: string; deleting?: boolean; uid?: string } = {}): CacheableObject {
  return {
    apiVersion: 'v1',
    kind: PV,
    metadata: {
      name,
      uid: mods.uid ?? `uid-${name}`,
      resourceVersion: String(rv),
      managedFields: [{ manager: 'kubectl', operation: 'Update' }],
      ...(mods.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: {
      capacity: { storage: mods.size ?? '1Gi' },
      accessModes: mods.modes ?? ['ReadWriteOnce'],
      ...(mods.cls !== undefined ? { storageClassName: mods.cls } : {}),
      ...(mods.claim ? { claimRef: { namespace: 'ns', name: mods.claim, uid: 'c' } } : {}),
    },
    status: mods.phase === undefined ? {} : { phase: mods.phase },
  };
}

export function claim(name: string, rv: number, mods: { size?: string; cls?: string; beta?: string; volumeName?: string; deleting?: boolean } = {}): CacheableObject {
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: String(rv),
      ...(mods.beta !== undefined ? { annotations: { 'volume.beta.kubernetes.io/storage-class': mods.beta } } : {}),
      ...(mods.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: {
      resources: { requests: { storage: mods.size ?? '1Gi' } },
      ...(mods.cls !== undefined ? { storageClassName: mods.cls } : {}),
      ...(mods.volumeName ? { volumeName: mods.volumeName } : {}),
    },
  };
}
