/**
 * DefaultStorageClass (`plugin/pkg/admission/storage/storageclass/setdefault`): a PVC created without
 * `spec.storageClassName` and without the beta annotation gets the default class. `""` means "no class".
 */
import type { AdmissionPlugin, AdmissionRequest, KubeObject, Store } from '../types.ts';
import { isDefaultStorageClass } from '../kinds/storageclass.ts';
import { BETA_STORAGE_CLASS_ANNOTATION } from '../kinds/common/storage.ts';

/** `GetDefaultClass`: newest default class wins; equal timestamps → lowest name. */
export function getDefaultClass(store: Store): KubeObject | undefined {
  const defaults = store.list('storage.k8s.io/storageclasses').filter(isDefaultStorageClass);
  defaults.sort((a, b) => {
    const ta = Date.parse(a.metadata.creationTimestamp ?? '') || 0;
    const tb = Date.parse(b.metadata.creationTimestamp ?? '') || 0;
    if (ta !== tb) return tb - ta;
    return (a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1;
  });
  return defaults[0];
}

/** `PersistentVolumeClaimHasClass`: the beta annotation or a non-nil `storageClassName` (even `""`). */
export const claimHasClass = (pvc: KubeObject): boolean =>
  BETA_STORAGE_CLASS_ANNOTATION in (pvc.metadata.annotations ?? {}) || (pvc.spec?.storageClassName !== undefined && pvc.spec?.storageClassName !== null);

/** Creates the DefaultStorageClass plugin. */
export function defaultStorageClass(): AdmissionPlugin {
  return {
    name: 'DefaultStorageClass',
    admit(req: AdmissionRequest): void {
      if (req.resource !== '/persistentvolumeclaims' || req.operation !== 'CREATE' || req.subresource) return;
      const pvc = req.object;
      if (claimHasClass(pvc)) return;
      const def = getDefaultClass(req.store);
      if (!def) return;
      pvc.spec ??= {};
      pvc.spec.storageClassName = def.metadata.name;
    },
  };
}
