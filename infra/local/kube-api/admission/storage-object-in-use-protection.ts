/**
 * StorageObjectInUseProtection (`plugin/pkg/admission/storage/storageobjectinuseprotection`): new PVCs get
 * `kubernetes.io/pvc-protection`, new PVs `kubernetes.io/pv-protection`. The protection controllers
 * (`controllers/pvc-protection.ts`, `controllers/pv-protection.ts`) remove them.
 */
import type { AdmissionPlugin, AdmissionRequest } from '../types.ts';

export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';
export const PV_PROTECTION_FINALIZER = 'kubernetes.io/pv-protection';

const FINALIZER_BY_RESOURCE: Record<string, string> = {
  '/persistentvolumeclaims': PVC_PROTECTION_FINALIZER,
  '/persistentvolumes': PV_PROTECTION_FINALIZER,
};

/** Creates the StorageObjectInUseProtection plugin. */
export function storageObjectInUseProtection(): AdmissionPlugin {
  return {
    name: 'StorageObjectInUseProtection',
    admit(req: AdmissionRequest): void {
      const finalizer = FINALIZER_BY_RESOURCE[req.resource];
      if (!finalizer || req.operation !== 'CREATE' || req.subresource) return;
      const meta = req.object.metadata;
      meta.finalizers ??= [];
      if (!meta.finalizers.includes(finalizer)) meta.finalizers.push(finalizer);
    },
  };
}
