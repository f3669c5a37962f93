/**
 * PersistentVolumeClaimResize (`plugin/pkg/admission/storage/persistentvolume/resize`): growing a claim's
 * storage request needs a Bound claim whose StorageClass sets `allowVolumeExpansion: true`.
 *
 * Upstream runs validating admission after the strategy's ValidateUpdate; the emulator's store admits
 * before validating, so an update the strategy rejects is left for that 422.
 */
import type { AdmissionPlugin, AdmissionRequest, KubeObject, Store } from '../types.ts';
import { storageClassOf } from '../kinds/common/storage.ts';
import { compareQuantities } from '../../../../lib/kube/quantity.ts';
import { forbiddenError } from './forbidden.ts';

/** `allowResize`: same non-empty class before and after, and that class allows expansion. */
function allowResize(store: Store, pvc: KubeObject, old: KubeObject): boolean {
  const cls = storageClassOf(pvc);
  if (cls === '' || cls !== storageClassOf(old)) return false;
  const sc = store.get({ resource: 'storage.k8s.io/storageclasses', namespace: '', name: cls });
  return sc?.allowVolumeExpansion === true;
}

/** Creates the PersistentVolumeClaimResize plugin. */
export function persistentVolumeClaimResize(): AdmissionPlugin {
  return {
    name: 'PersistentVolumeClaimResize',
    admit(req: AdmissionRequest): void {
      if (req.resource !== '/persistentvolumeclaims' || req.operation !== 'UPDATE' || req.subresource || !req.old) return;
      const pvc = req.object;
      const old = req.old;
      const size = pvc.spec?.resources?.requests?.storage;
      const oldSize = old.spec?.resources?.requests?.storage;
      if (size === undefined || compareQuantities(size, oldSize ?? '0') <= 0) return;
      const spec = req.store.kinds.get(req.resource);
      if (spec && spec.strategy.validateUpdate(structuredClone(pvc), old).length > 0) return;
      const name = pvc.metadata.name ?? '';
      if (old.status?.phase !== 'Bound') throw forbiddenError(req.resource, name, 'Only bound persistent volume claims can be expanded');
      if (!allowResize(req.store, pvc, old)) {
        throw forbiddenError(req.resource, name, 'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize');
      }
    },
  };
}
