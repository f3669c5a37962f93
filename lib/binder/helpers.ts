/**
 * Small predicates over PVs and PVCs (`component-helpers/storage/volume` and `pv_controller.go`):
 * classes, pre-binding, volume modes, access modes, label selectors.
 */
import { deepCopy } from '../kube/objects.ts';
import { ACCESS_MODE_ORDER, ANN_BETA_STORAGE_CLASS } from './constants.ts';
import { InvalidSelectorError } from './errors.ts';
import type { LabelSelector, PersistentVolume, PersistentVolumeClaim } from './types.ts';

/** `ns/name` of a claim (upstream's `claimToClaimKey`). */
export const claimToClaimKey = (claim: PersistentVolumeClaim): string =>
  `${claim.metadata.namespace ?? ''}/${claim.metadata.name}`;

/** `ns/name` a volume's claimRef points to (upstream's `claimrefToClaimKey`). */
export const claimrefToClaimKey = (volume: PersistentVolume): string =>
  `${volume.spec.claimRef?.namespace ?? ''}/${volume.spec.claimRef?.name ?? ''}`;

export const hasAnnotation = (meta: { annotations?: Record<string, string> }, key: string): boolean =>
  meta.annotations !== undefined && Object.hasOwn(meta.annotations, key);

/** `GetPersistentVolumeClaimClass`: the beta annotation wins, then `spec.storageClassName`, else `""`. */
export { getPersistentVolumeClaimClass } from '../kube/objects.ts';

/** `PersistentVolumeClaimHasClass`: the annotation is present or `storageClassName` is set (`""` counts). */
export function persistentVolumeClaimHasClass(claim: PersistentVolumeClaim): boolean {
  if (hasAnnotation(claim.metadata, ANN_BETA_STORAGE_CLASS)) return true;
  return claim.spec.storageClassName !== undefined && claim.spec.storageClassName !== null;
}

/** `GetPersistentVolumeClass`: the beta annotation wins over `spec.storageClassName`. */
export function getPersistentVolumeClass(volume: PersistentVolume): string {
  const ann = volume.metadata.annotations;
  if (ann && Object.hasOwn(ann, ANN_BETA_STORAGE_CLASS)) return ann[ANN_BETA_STORAGE_CLASS];
  return volume.spec.storageClassName ?? '';
}

/** `IsVolumeBoundToClaim`: claimRef names the claim and its uid is empty or the claim's. */
export function isVolumeBoundToClaim(volume: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = volume.spec.claimRef;
  if (!ref) return false;
  if (claim.metadata.name !== ref.name || (claim.metadata.namespace ?? '') !== (ref.namespace ?? '')) return false;
  return !ref.uid || ref.uid === claim.metadata.uid;
}

/** `CheckVolumeModeMismatches`: nil means Filesystem on both sides. */
export function checkVolumeModeMismatches(claim: PersistentVolumeClaim, volume: PersistentVolume): boolean {
  return (claim.spec.volumeMode || 'Filesystem') !== (volume.spec.volumeMode || 'Filesystem');
}

/** `CheckAccessModes`: every requested mode is one of the volume's. */
export function checkAccessModes(claim: PersistentVolumeClaim, volume: PersistentVolume): boolean {
  const have = new Set(volume.spec.accessModes ?? []);
  return (claim.spec.accessModes ?? []).every((mode) => have.has(mode));
}

/** The index key of a mode set in upstream's canonical order (`RWO,ROX,RWX,RWOP`; unknown modes last). */
export function accessModesIndexKey(modes: readonly string[] | undefined): string {
  const rank = (m: string): number => {
    const i = (ACCESS_MODE_ORDER as readonly string[]).indexOf(m);
    return i < 0 ? ACCESS_MODE_ORDER.length : i;
  };
  return [...new Set(modes ?? [])].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).join(',');
}

/** The requested storage of a claim (`spec.resources.requests.storage`), `'0'` when absent. */
export const claimRequest = (claim: PersistentVolumeClaim): string => claim.spec.resources?.requests?.storage ?? '0';

/** The storage capacity of a volume, `undefined` when absent. */
export const volumeCapacity = (volume: PersistentVolume): string | undefined => volume.spec.capacity?.storage;

/**
 * `metav1.LabelSelectorAsSelector(...).Matches(labels)`: matchLabels and matchExpressions
 * (In, NotIn, Exists, DoesNotExist). An empty selector matches everything.
 */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string> | undefined, claimKey: string): boolean {
  const set = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (set[key] !== value) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(set, req.key);
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
        if (values.length === 0) throw invalid(claimKey, `values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty`);
        if (!has || !values.includes(set[req.key])) return false;
        break;
      case 'NotIn':
        if (values.length === 0) throw invalid(claimKey, `values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty`);
        if (has && values.includes(set[req.key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        throw invalid(claimKey, `"${req.operator}" is not a valid label selector operator`);
    }
  }
  return true;
}

const invalid = (claimKey: string, why: string): InvalidSelectorError =>
  new InvalidSelectorError(`error creating internal label selector for claim: ${claimKey}: ${why}`);

/** A deep copy of a JSON object (objects in a snapshot are never mutated). */
export const clone = <T>(obj: T): T => deepCopy(obj);
