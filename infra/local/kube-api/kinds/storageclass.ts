/**
 * StorageClass (`pkg/registry/storage/storageclass/strategy.go`, `pkg/apis/storage/validation`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { deepEqual, forbidden, immutable, invalid, notSupported, required, tooLong } from './common/field.ts';
import { isDNS1123Subdomain, isQualifiedName } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

/** The default-class annotations (GA and beta) the admission plugin and the printer honour. */
export const IS_DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
export const BETA_IS_DEFAULT_CLASS_ANNOTATION = 'storageclass.beta.kubernetes.io/is-default-class';

/** `IsDefaultAnnotation`: either annotation is exactly `"true"`. */
export function isDefaultStorageClass(sc: KubeObject): boolean {
  const a = sc.metadata?.annotations ?? {};
  return a[IS_DEFAULT_CLASS_ANNOTATION] === 'true' || a[BETA_IS_DEFAULT_CLASS_ANNOTATION] === 'true';
}

const RECLAIM = ['Delete', 'Retain'];
const BINDING = ['Immediate', 'WaitForFirstConsumer'];
const MAX_PARAMETERS = 512;
const MAX_PARAMETERS_SIZE = 256 * 1024;

/** `ValidateStorageClass`. */
export function validateStorageClass(sc: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const p = sc.provisioner;
  if (!p) errs.push(required('provisioner', ''));
  else for (const m of isQualifiedName(String(p).toLowerCase())) errs.push(invalid('provisioner', p, m));
  const params: Record<string, string> = sc.parameters ?? {};
  const keys = Object.keys(params);
  if (keys.length > MAX_PARAMETERS) errs.push({ type: 'FieldValueTooMany', field: 'parameters', value: keys.length, detail: `must have at most ${MAX_PARAMETERS} items` });
  let size = 0;
  for (const k of keys) {
    if (k.length === 0) errs.push(invalid('parameters', k, 'field can not be empty.'));
    size += k.length + String(params[k]).length;
  }
  if (size > MAX_PARAMETERS_SIZE) errs.push(tooLong('parameters', '', MAX_PARAMETERS_SIZE));
  if (sc.reclaimPolicy !== undefined && !RECLAIM.includes(sc.reclaimPolicy)) errs.push(notSupported('reclaimPolicy', sc.reclaimPolicy, RECLAIM));
  if (sc.volumeBindingMode === undefined) errs.push(required('volumeBindingMode', ''));
  else if (!BINDING.includes(sc.volumeBindingMode)) errs.push(notSupported('volumeBindingMode', sc.volumeBindingMode, BINDING));
  for (const [i, o] of (sc.mountOptions ?? []).entries()) {
    if (typeof o !== 'string' || o === '') errs.push(required(`mountOptions[${i}]`));
  }
  return errs;
}

/** `ValidateStorageClassUpdate`: parameters, provisioner, reclaimPolicy, volumeBindingMode immutable. */
export function validateStorageClassUpdate(sc: KubeObject, old: KubeObject): FieldError[] {
  const errs = validateStorageClass(sc);
  if (!deepEqual(sc.parameters ?? {}, old.parameters ?? {})) errs.push(forbidden('parameters', 'updates to parameters are forbidden.'));
  if (sc.provisioner !== old.provisioner) errs.push(forbidden('provisioner', 'updates to provisioner are forbidden.'));
  if (sc.reclaimPolicy !== old.reclaimPolicy) errs.push(forbidden('reclaimPolicy', 'updates to reclaimPolicy are forbidden.'));
  errs.push(...immutable('volumeBindingMode', sc.volumeBindingMode, old.volumeBindingMode));
  return errs;
}

/** StorageClass discovery facts, strategy and printer. */
export const storageClasses: KindSpec = {
  group: 'storage.k8s.io',
  version: 'v1',
  kind: 'StorageClass',
  plural: 'storageclasses',
  singular: 'storageclass',
  namespaced: false,
  shortNames: ['sc'],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (sc) => objectMetaFields(sc, false),
  table: {
    columns: [
      NAME_COLUMN,
      column('Provisioner', 'string', 'Indicates the type of the provisioner.'),
      column('ReclaimPolicy', 'string', 'Indicates the type of the reclaim policy.'),
      column('VolumeBindingMode', 'string', 'Indicates how PersistentVolumeClaims should be provisioned and bound.'),
      column('AllowVolumeExpansion', 'string', 'Indicates whether the storage class allow volume expand.'),
      AGE_COLUMN,
    ],
    row(sc, now) {
      const name = isDefaultStorageClass(sc) ? `${sc.metadata.name} (default)` : sc.metadata.name;
      return [name, sc.provisioner ?? '', sc.reclaimPolicy ?? 'Delete', sc.volumeBindingMode ?? 'Immediate', sc.allowVolumeExpansion === true, age(sc, now)];
    },
  },
  strategy: makeStrategy({
    namespaced: false,
    nameRule: isDNS1123Subdomain,
    defaults(sc) {
      sc.reclaimPolicy ??= 'Delete';
      sc.volumeBindingMode ??= 'Immediate';
    },
    validate: validateStorageClass,
    validateUpdate: validateStorageClassUpdate,
  }),
};
