/**
 * VolumeAttachment (`pkg/registry/storage/volumeattachment/strategy.go`, `ValidateVolumeAttachment*`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectObject } from './common/decode.ts';
import { deepEqual, forbidden, invalid, required } from './common/field.ts';
import { isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, resetObjectMetaForStatus, splitStatus, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

function validateVolumeAttachment(va: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = va.spec ?? {};
  if (!spec.attacher) errs.push(required('spec.attacher'));
  else {
    if (spec.attacher.length > 63) errs.push({ type: 'FieldValueTooLong', field: 'spec.attacher', value: spec.attacher, detail: 'may not be more than 63 characters' });
    for (const m of isDNS1123Subdomain(String(spec.attacher).toLowerCase())) errs.push(invalid('spec.attacher', spec.attacher, m));
  }
  const src = spec.source ?? {};
  const hasName = src.persistentVolumeName !== undefined && src.persistentVolumeName !== null;
  const hasInline = src.inlineVolumeSpec !== undefined && src.inlineVolumeSpec !== null;
  const EXACTLY_ONE = 'must specify exactly one of inlineVolumeSpec and persistentVolumeName';
  if (!hasName && !hasInline) errs.push(required('spec.source', EXACTLY_ONE));
  else if (hasName && hasInline) errs.push(forbidden('spec.source', EXACTLY_ONE));
  else if (hasName && src.persistentVolumeName === '') errs.push(required('spec.source.persistentVolumeName', 'must specify non empty persistentVolumeName'));
  if (!spec.nodeName) errs.push(required('spec.nodeName'));
  else for (const m of isDNS1123Subdomain(spec.nodeName)) errs.push(invalid('spec.nodeName', spec.nodeName, m));
  return errs;
}

/** VolumeAttachment discovery facts, strategy and printer. */
export const volumeAttachments: KindSpec = {
  group: 'storage.k8s.io',
  version: 'v1',
  kind: 'VolumeAttachment',
  plural: 'volumeattachments',
  singular: 'volumeattachment',
  namespaced: false,
  shortNames: [],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (va) => objectMetaFields(va, false),
  table: {
    columns: [
      NAME_COLUMN,
      column('Attacher', 'string', 'Attacher indicates the name of the volume driver that MUST handle this request.'),
      column('PV', 'string', 'Name of the persistent volume to attach.'),
      column('Node', 'string', 'The node that the volume should be attached to.'),
      column('Attached', 'boolean', 'Indicates the volume is successfully attached.'),
      AGE_COLUMN,
    ],
    row: (va, now) => [va.metadata.name, va.spec?.attacher ?? '', va.spec?.source?.persistentVolumeName ?? '', va.spec?.nodeName ?? '',
      va.status?.attached === true, age(va, now)],
  },
  strategy: makeStrategy({
    namespaced: false,
    nameRule: isDNS1123Subdomain,
    decode: (va) => expectObject('VolumeAttachment', va.spec, 'VolumeAttachment.spec', 'v1.VolumeAttachmentSpec'),
    prepareForCreate(va) {
      delete va.status;
    },
    prepareForUpdate(va, old, sub) {
      splitStatus(va, old, sub);
      // volumeAttachmentStatusStrategy.PrepareForUpdate: metav1.ResetObjectMetaForStatus
      if (sub === 'status') resetObjectMetaForStatus(va, old);
    },
    validate: validateVolumeAttachment,
    validateUpdate(va, old, sub) {
      if (sub === 'status') return [];
      const errs = validateVolumeAttachment(va);
      if (!deepEqual(va.spec, old.spec)) errs.push(invalid('spec', va.spec, 'field is immutable'));
      return errs;
    },
  }),
};
