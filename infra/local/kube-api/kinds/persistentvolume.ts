/**
 * PersistentVolume (`pkg/registry/core/persistentvolume/strategy.go`, `ValidatePersistentVolume*`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { canonicalizeQuantityMap, expectArray, expectObject } from './common/decode.ts';
import { deepEqual, forbidden, immutable, invalid, notSupported, required } from './common/field.ts';
import { isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { ensure, makeStrategy, splitStatus, STANDARD_VERBS } from './common/strategy.ts';
import { ACCESS_MODES, accessModesAsString, rfc3339, storageClassOf, VOLUME_MODES } from './common/storage.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';
import { betaStorageClassWarning, deprecatedNodeLabelWarnings } from './common/warnings.ts';
import { compareQuantities } from '../../../../lib/kube/quantity.ts';

const KIND = 'PersistentVolume';

/** Every volume source a PV spec may carry (`PersistentVolumeSource`). */
export const PV_SOURCES = [
  'gcePersistentDisk', 'awsElasticBlockStore', 'hostPath', 'glusterfs', 'nfs', 'rbd', 'iscsi', 'cinder', 'cephfs',
  'fc', 'flocker', 'flexVolume', 'azureFile', 'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk',
  'portworxVolume', 'scaleIO', 'local', 'storageos', 'csi',
] as const;

const RECLAIM_POLICIES = ['Delete', 'Recycle', 'Retain'];

/** The PV's single volume source key(s) present in `spec`. */
export const pvSources = (spec: Record<string, unknown> | undefined): string[] =>
  PV_SOURCES.filter((s) => spec?.[s] !== undefined && spec?.[s] !== null);

/** `SetDefaults_PersistentVolume`. */
function defaults(pv: KubeObject): void {
  const spec = ensure(pv, 'spec');
  spec.persistentVolumeReclaimPolicy ??= 'Retain';
  spec.volumeMode ??= 'Filesystem';
  const status = ensure(pv, 'status');
  status.phase ??= 'Pending';
}

/** `ValidatePersistentVolumeSpec` (the parts storage controllers reach). */
export function validatePersistentVolumeSpec(pv: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = pv.spec ?? {};
  const modes: string[] = spec.accessModes ?? [];
  if (modes.length === 0) errs.push(required('spec.accessModes'));
  for (const m of modes) if (!ACCESS_MODES.includes(m as never)) errs.push(notSupported('spec.accessModes', m, ACCESS_MODES));
  if (modes.includes('ReadWriteOncePod') && modes.length > 1) {
    errs.push(forbidden('spec.accessModes', 'may not use ReadWriteOncePod with other access modes'));
  }
  const capacity: Record<string, string> = spec.capacity ?? {};
  const keys = Object.keys(capacity);
  if (keys.length === 0) errs.push(required('spec.capacity'));
  if (keys.length > 0 && (keys.length > 1 || keys[0] !== 'storage')) errs.push(notSupported('spec.capacity', capacity, ['storage']));
  for (const k of keys) {
    if (compareQuantities(capacity[k], '0') <= 0) errs.push(invalid(`spec.capacity[${k}]`, capacity[k], 'must be greater than zero'));
  }
  if (spec.persistentVolumeReclaimPolicy !== undefined && !RECLAIM_POLICIES.includes(spec.persistentVolumeReclaimPolicy)) {
    errs.push(notSupported('spec.persistentVolumeReclaimPolicy', spec.persistentVolumeReclaimPolicy, RECLAIM_POLICIES));
  }
  if (spec.storageClassName) {
    for (const m of isDNS1123Subdomain(spec.storageClassName)) errs.push(invalid('spec.storageClassName', spec.storageClassName, m));
  }
  if (spec.volumeMode !== undefined && !VOLUME_MODES.includes(spec.volumeMode)) {
    errs.push(notSupported('spec.volumeMode', spec.volumeMode, VOLUME_MODES));
  }
  const sources = pvSources(spec);
  if (sources.length === 0) errs.push(required('spec', 'must specify a volume type'));
  else if (sources.length > 1) errs.push(forbidden(`spec.${sources[1]}`, 'may not specify more than 1 volume type'));
  if (spec.local !== undefined && spec.local !== null) {
    if (!spec.local.path) errs.push(required('spec.local.path'));
    if (!spec.nodeAffinity) errs.push(required('spec.nodeAffinity', 'Local volume requires node affinity'));
  }
  if (spec.hostPath !== undefined && spec.hostPath !== null && !spec.hostPath.path) errs.push(required('spec.hostPath.path'));
  if (spec.nfs !== undefined && spec.nfs !== null) {
    if (!spec.nfs.server) errs.push(required('spec.nfs.server'));
    if (!spec.nfs.path) errs.push(required('spec.nfs.path'));
    else if (!String(spec.nfs.path).startsWith('/')) errs.push(invalid('spec.nfs.path', spec.nfs.path, 'must be an absolute path'));
  }
  if (spec.csi !== undefined && spec.csi !== null) errs.push(...validateCSI(spec.csi));
  if (spec.nodeAffinity) {
    const terms = spec.nodeAffinity.required?.nodeSelectorTerms;
    if (!spec.nodeAffinity.required) errs.push(required('spec.nodeAffinity.required', 'must specify required node constraints'));
    else if (!Array.isArray(terms) || terms.length === 0) errs.push(required('spec.nodeAffinity.required.nodeSelectorTerms', 'must have at least one node selector term'));
  }
  for (const [i, o] of (spec.mountOptions ?? []).entries()) {
    if (typeof o !== 'string' || o === '') errs.push(required(`spec.mountOptions[${i}]`));
  }
  return errs;
}

function validateCSI(csi: Record<string, any>): FieldError[] {
  const errs: FieldError[] = [];
  if (!csi.driver) errs.push(required('spec.csi.driver'));
  else {
    if (csi.driver.length > 63) errs.push({ type: 'FieldValueTooLong', field: 'spec.csi.driver', value: csi.driver, detail: 'may not be more than 63 characters' });
    for (const m of isDNS1123Subdomain(String(csi.driver).toLowerCase())) errs.push(invalid('spec.csi.driver', csi.driver, m));
  }
  if (!csi.volumeHandle) errs.push(required('spec.csi.volumeHandle'));
  for (const ref of ['controllerPublishSecretRef', 'nodeStageSecretRef', 'nodePublishSecretRef', 'controllerExpandSecretRef', 'nodeExpandSecretRef']) {
    const r = csi[ref];
    if (!r) continue;
    if (!r.name) errs.push(required(`spec.csi.${ref}.name`));
    if (!r.namespace) errs.push(required(`spec.csi.${ref}.namespace`));
  }
  return errs;
}

/** `ValidatePersistentVolumeUpdate`: source and volumeMode immutable, nodeAffinity immutable once set. */
function validateUpdate(pv: KubeObject, old: KubeObject, subresource?: 'status'): FieldError[] {
  if (subresource === 'status') return validateStatus(pv);
  const errs = validatePersistentVolumeSpec(pv);
  const oldSpec = old.spec ?? {};
  const spec = pv.spec ?? {};
  const pick = (s: Record<string, unknown>) => Object.fromEntries(PV_SOURCES.filter((k) => s[k] !== undefined).map((k) => [k, s[k]]));
  const [before, after] = [pick(oldSpec), pick(spec)];
  if (!deepEqual(after, before)) {
    const diff = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => !deepEqual(before[k], after[k]))
      .flatMap((k) => [
        ...(before[k] !== undefined ? [`-\t${k}: ${JSON.stringify(before[k])}`] : []),
        ...(after[k] !== undefined ? [`+\t${k}: ${JSON.stringify(after[k])}`] : []),
      ]).join('\n');
    errs.push(forbidden('spec.persistentvolumesource', `spec.persistentvolumesource is immutable after creation\n${diff}`));
  }
  // Upstream names these paths without the "spec." prefix.
  errs.push(...immutable('volumeMode', spec.volumeMode, oldSpec.volumeMode));
  if (oldSpec.nodeAffinity) errs.push(...immutable('nodeAffinity', spec.nodeAffinity, oldSpec.nodeAffinity));
  return errs;
}

const PV_PHASES = ['Pending', 'Available', 'Bound', 'Released', 'Failed'];

function validateStatus(pv: KubeObject): FieldError[] {
  const phase = pv.status?.phase;
  if (phase !== undefined && phase !== '' && !PV_PHASES.includes(phase)) return [notSupported('status.phase', phase, PV_PHASES)];
  return [];
}

/** The PV strategy. */
export const persistentVolumeStrategy = makeStrategy({
  namespaced: false,
  nameRule: isDNS1123Subdomain,
  decode(pv) {
    expectObject(KIND, pv.spec, 'PersistentVolume.spec', 'v1.PersistentVolumeSpec');
    expectArray(KIND, pv.spec?.accessModes, 'PersistentVolumeSpec.spec.accessModes', '[]v1.PersistentVolumeAccessMode');
    canonicalizeQuantityMap(KIND, pv.spec?.capacity);
    canonicalizeQuantityMap(KIND, pv.status?.capacity);
  },
  defaults,
  prepareForCreate(pv) {
    pv.status = { phase: 'Pending', lastPhaseTransitionTime: rfc3339() };
  },
  prepareForUpdate(pv, old, subresource) {
    splitStatus(pv, old, subresource);
    if (subresource !== 'status') return;
    const status = ensure(pv, 'status');
    const oldStatus = old.status ?? {};
    const phase = status.phase ?? 'Pending';
    const oldPhase = oldStatus.phase ?? 'Pending';
    if (phase === oldPhase && !status.lastPhaseTransitionTime) {
      if (oldStatus.lastPhaseTransitionTime) status.lastPhaseTransitionTime = oldStatus.lastPhaseTransitionTime;
    } else if (phase !== oldPhase && (!status.lastPhaseTransitionTime || status.lastPhaseTransitionTime === oldStatus.lastPhaseTransitionTime)) {
      status.lastPhaseTransitionTime = rfc3339();
    }
  },
  validate: validatePersistentVolumeSpec,
  validateUpdate,
  warnings(pv) {
    const w = betaStorageClassWarning(pv);
    if (pv.spec?.persistentVolumeReclaimPolicy === 'Recycle') {
      w.push('spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.');
    }
    w.push(...deprecatedNodeLabelWarnings(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms, 'spec.nodeAffinity.required.nodeSelectorTerms'));
    for (const [source, since] of [['cephfs', 'v1.28, non-functional in v1.31+'], ['rbd', 'v1.28, non-functional in v1.31+'],
      ['photonPersistentDisk', 'v1.11, non-functional in v1.16+'], ['scaleIO', 'v1.16, non-functional in v1.22+'],
      ['storageos', 'v1.22, non-functional in v1.25+'], ['glusterfs', 'v1.25, non-functional in v1.26+']] as const) {
      if (pv.spec?.[source]) w.push(`spec.${source}: deprecated in ${since}`);
    }
    return w;
  },
});

const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** PersistentVolume discovery facts, strategy and printer. */
export const persistentVolumes: KindSpec = {
  group: '',
  version: 'v1',
  kind: KIND,
  plural: 'persistentvolumes',
  singular: 'persistentvolume',
  namespaced: false,
  shortNames: ['pv'],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (pv) => objectMetaFields(pv, false),
  table: {
    columns: [
      NAME_COLUMN,
      column('Capacity', 'string', 'capacity is the description of the persistent volume\'s resources and capacity.'),
      column('Access Modes', 'string', 'accessModes contains all ways the volume can be mounted.'),
      column('Reclaim Policy', 'string', 'persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.'),
      column('Status', 'string', 'phase indicates if a volume is available, bound to a claim, or released by a claim.'),
      column('Claim', 'string', 'claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.'),
      column('StorageClass', 'string', 'storageClassName is the name of StorageClass to which this persistent volume belongs.'),
      column('VolumeAttributesClass', 'string', 'Name of VolumeAttributesClass to which this persistent volume belongs.'),
      column('Reason', 'string', 'reason is a brief CamelCase string that describes any failure.'),
      AGE_COLUMN,
      column('VolumeMode', 'string', 'volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.', 1),
    ],
    row(pv, now) {
      const spec = pv.spec ?? {};
      const claimRef = spec.claimRef ? `${spec.claimRef.namespace ?? ''}/${spec.claimRef.name ?? ''}` : '';
      const phase = pv.metadata.deletionTimestamp ? 'Terminating' : str(pv.status?.phase);
      return [
        pv.metadata.name, String(spec.capacity?.storage ?? '0'), accessModesAsString(spec.accessModes), str(spec.persistentVolumeReclaimPolicy),
        phase, claimRef, storageClassOf(pv), spec.volumeAttributesClassName || '<unset>', str(pv.status?.reason), age(pv, now),
        spec.volumeMode || '<unset>',
      ];
    },
  },
  strategy: persistentVolumeStrategy,
};
