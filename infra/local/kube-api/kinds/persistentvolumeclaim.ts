/**
 * PersistentVolumeClaim (`pkg/registry/core/persistentvolumeclaim/strategy.go`,
 * `ValidatePersistentVolumeClaim*`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { canonicalizeQuantityMap, expectArray, expectObject } from './common/decode.ts';
import { clone, deepEqual, forbidden, immutable, invalid, notSupported, required } from './common/field.ts';
import { isDNS1123Subdomain } from './common/names.ts';
import { validateLabelSelector } from './common/selector.ts';
import { objectMetaFields } from './common/selectable.ts';
import { ensure, makeStrategy, splitStatus, STANDARD_VERBS } from './common/strategy.ts';
import { ACCESS_MODES, accessModesAsString, BETA_STORAGE_CLASS_ANNOTATION, storageClassOf, VOLUME_MODES } from './common/storage.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';
import { betaStorageClassWarning, fractionalBytesWarning } from './common/warnings.ts';
import { compareQuantities } from '../../../../lib/kube/quantity.ts';

const KIND = 'PersistentVolumeClaim';

/** The detail of the PVC spec-immutability error. */
export const PVC_SPEC_IMMUTABLE = 'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims';

/** `ValidatePersistentVolumeClaimSpec`. */
export function validatePersistentVolumeClaimSpec(pvc: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = pvc.spec ?? {};
  const modes: string[] = spec.accessModes ?? [];
  if (modes.length === 0) errs.push(required('spec.accessModes', 'at least 1 access mode is required'));
  for (const m of modes) if (!ACCESS_MODES.includes(m as never)) errs.push(notSupported('spec.accessModes', m, ACCESS_MODES));
  if (modes.includes('ReadWriteOncePod') && modes.length > 1) {
    errs.push(forbidden('spec.accessModes', 'may not use ReadWriteOncePod with other access modes'));
  }
  errs.push(...validateLabelSelector(spec.selector, 'spec.selector'));
  const storage = spec.resources?.requests?.storage;
  if (storage === undefined) errs.push(required('spec.resources[storage]'));
  else if (compareQuantities(storage, '0') <= 0) errs.push(invalid('spec.resources[storage]', storage, 'must be greater than zero'));
  if (spec.storageClassName) {
    for (const m of isDNS1123Subdomain(spec.storageClassName)) errs.push(invalid('spec.storageClassName', spec.storageClassName, m));
  }
  if (spec.volumeMode !== undefined && !VOLUME_MODES.includes(spec.volumeMode)) {
    errs.push(notSupported('spec.volumeMode', spec.volumeMode, VOLUME_MODES));
  }
  for (const key of ['dataSource', 'dataSourceRef'] as const) {
    const ds = spec[key];
    if (!ds) continue;
    if (!ds.name) errs.push(required(`spec.${key}.name`));
    if (!ds.kind) errs.push(required(`spec.${key}.kind`));
    if (!ds.apiGroup && ds.kind && ds.kind !== 'PersistentVolumeClaim') {
      errs.push(invalid(`spec.${key}.kind`, ds.kind, 'must be \'PersistentVolumeClaim\' when referencing the default apiGroup'));
    }
  }
  if (spec.dataSource && spec.dataSourceRef && (spec.dataSource.name !== spec.dataSourceRef.name || spec.dataSource.kind !== spec.dataSourceRef.kind
    || (spec.dataSource.apiGroup ?? '') !== (spec.dataSourceRef.apiGroup ?? '')) && !spec.dataSourceRef.namespace) {
    errs.push(invalid('spec', 'dataSource', 'must match dataSourceRef'));
  }
  return errs;
}

/** A readable `-old`/`+new` diff of two specs, standing in for Go's `cmp.Diff` in the immutability message. */
function specDiff(oldSpec: Record<string, unknown>, newSpec: Record<string, unknown>): string {
  const keys = [...new Set([...Object.keys(oldSpec), ...Object.keys(newSpec)])].sort();
  const lines: string[] = [];
  for (const k of keys) {
    if (deepEqual(oldSpec[k], newSpec[k])) continue;
    if (oldSpec[k] !== undefined) lines.push(`-\t${k}: ${JSON.stringify(oldSpec[k])}`);
    if (newSpec[k] !== undefined) lines.push(`+\t${k}: ${JSON.stringify(newSpec[k])}`);
  }
  return lines.join('\n');
}

/** `ValidatePersistentVolumeClaimUpdate` (RecoverVolumeExpansionFailure GA: may shrink down to above status.capacity). */
export function validatePersistentVolumeClaimUpdate(pvc: KubeObject, old: KubeObject): FieldError[] {
  const errs = validatePersistentVolumeClaimSpec(pvc);
  const oldSpec = clone(old.spec ?? {});
  const newSpec = clone(pvc.spec ?? {});
  const oldAnn = old.metadata.annotations ?? {};
  const newAnn = pvc.metadata.annotations ?? {};
  if (!oldSpec.volumeName) oldSpec.volumeName = newSpec.volumeName;
  const oldHasAnn = BETA_STORAGE_CLASS_ANNOTATION in oldAnn;
  const upgradeFromAnnotation = oldHasAnn && oldSpec.storageClassName === undefined && newSpec.storageClassName !== undefined
    && oldAnn[BETA_STORAGE_CLASS_ANNOTATION] === newSpec.storageClassName
    && (!(BETA_STORAGE_CLASS_ANNOTATION in newAnn) || newAnn[BETA_STORAGE_CLASS_ANNOTATION] === oldAnn[BETA_STORAGE_CLASS_ANNOTATION]);
  if (upgradeFromAnnotation) {
    delete newSpec.storageClassName;
  } else {
    errs.push(...immutable(`metadata.annotations.${BETA_STORAGE_CLASS_ANNOTATION}`, newAnn[BETA_STORAGE_CLASS_ANNOTATION] ?? '', oldAnn[BETA_STORAGE_CLASS_ANNOTATION] ?? ''));
    if (!oldHasAnn && old.spec?.storageClassName === undefined && newSpec.storageClassName) delete newSpec.storageClassName;
  }
  if (pvc.status?.phase === 'Bound' && newSpec.resources?.requests) {
    if (oldSpec.resources?.requests?.storage === undefined) delete newSpec.resources.requests.storage;
    else newSpec.resources.requests.storage = oldSpec.resources.requests.storage;
  }
  delete oldSpec.volumeAttributesClassName;
  delete newSpec.volumeAttributesClassName;
  if (!deepEqual(newSpec, oldSpec)) {
    errs.push(forbidden('spec', `${PVC_SPEC_IMMUTABLE}\n${specDiff(oldSpec, newSpec)}`));
  }
  const newSize = pvc.spec?.resources?.requests?.storage ?? '0';
  const oldSize = old.spec?.resources?.requests?.storage ?? '0';
  const statusSize = old.status?.capacity?.storage ?? '0';
  if (compareQuantities(newSize, oldSize) < 0 && compareQuantities(newSize, statusSize) <= 0) {
    errs.push(forbidden('spec.resources.requests.storage', 'field can not be less than status.capacity'));
  }
  errs.push(...immutable('volumeMode', pvc.spec?.volumeMode, old.spec?.volumeMode));
  return errs;
}

const PVC_PHASES = ['Pending', 'Bound', 'Lost'];

function validateStatus(pvc: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const phase = pvc.status?.phase;
  if (phase !== undefined && phase !== '' && !PVC_PHASES.includes(phase)) errs.push(notSupported('status.phase', phase, PVC_PHASES));
  for (const [k, v] of Object.entries(pvc.status?.capacity ?? {})) {
    if (compareQuantities(v as string, '0') < 0) errs.push(invalid(`status.capacity[${k}]`, v, 'must be greater than or equal to 0'));
  }
  return errs;
}

/** The PVC strategy. */
export const persistentVolumeClaimStrategy = makeStrategy({
  namespaced: true,
  nameRule: isDNS1123Subdomain,
  decode(pvc) {
    expectObject(KIND, pvc.spec, 'PersistentVolumeClaim.spec', 'v1.PersistentVolumeClaimSpec');
    expectArray(KIND, pvc.spec?.accessModes, 'PersistentVolumeClaimSpec.spec.accessModes', '[]v1.PersistentVolumeAccessMode');
    canonicalizeQuantityMap(KIND, pvc.spec?.resources?.requests);
    canonicalizeQuantityMap(KIND, pvc.spec?.resources?.limits);
    canonicalizeQuantityMap(KIND, pvc.status?.capacity);
    canonicalizeQuantityMap(KIND, pvc.status?.allocatedResources);
  },
  defaults(pvc) {
    ensure(pvc, 'spec').volumeMode ??= 'Filesystem';
    ensure(pvc, 'status').phase ??= 'Pending';
  },
  prepareForCreate(pvc) {
    // Status reset; the defaults then give phase Pending, as the object read back from storage shows.
    pvc.status = { phase: 'Pending' };
  },
  prepareForUpdate: splitStatus,
  validate: validatePersistentVolumeClaimSpec,
  warnings: (pvc) => [
    ...betaStorageClassWarning(pvc),
    ...fractionalBytesWarning(pvc.spec?.resources?.requests?.storage, 'spec.resources.requests[storage]'),
    ...fractionalBytesWarning(pvc.spec?.resources?.limits?.storage, 'spec.resources.limits[storage]'),
  ],
  validateUpdate(pvc, old, subresource) {
    return subresource === 'status' ? validateStatus(pvc) : validatePersistentVolumeClaimUpdate(pvc, old);
  },
});

/** PersistentVolumeClaim discovery facts, strategy and printer. */
export const persistentVolumeClaims: KindSpec = {
  group: '',
  version: 'v1',
  kind: KIND,
  plural: 'persistentvolumeclaims',
  singular: 'persistentvolumeclaim',
  namespaced: true,
  shortNames: ['pvc'],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (pvc) => objectMetaFields(pvc, true),
  table: {
    columns: [
      NAME_COLUMN,
      column('Status', 'string', 'phase represents the current phase of PersistentVolumeClaim.'),
      column('Volume', 'string', 'volumeName is the binding reference to the PersistentVolume backing this claim.'),
      column('Capacity', 'string', 'capacity represents the actual resources of the underlying volume.'),
      column('Access Modes', 'string', 'accessModes contains the desired access modes the volume should have.'),
      column('StorageClass', 'string', 'storageClassName is the name of the StorageClass required by the claim.'),
      column('VolumeAttributesClass', 'string', 'volumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim.'),
      AGE_COLUMN,
      column('VolumeMode', 'string', 'volumeMode defines what type of volume is required by the claim.', 1),
    ],
    row(pvc, now) {
      const spec = pvc.spec ?? {};
      const phase = pvc.metadata.deletionTimestamp ? 'Terminating' : String(pvc.status?.phase ?? '');
      const bound = Boolean(spec.volumeName);
      return [
        pvc.metadata.name, phase, spec.volumeName ?? '', bound ? String(pvc.status?.capacity?.storage ?? '0') : '',
        bound ? accessModesAsString(pvc.status?.accessModes) : '', storageClassOf(pvc), spec.volumeAttributesClassName || '<unset>',
        age(pvc, now), spec.volumeMode || '<unset>',
      ];
    },
  },
  strategy: persistentVolumeClaimStrategy,
};
