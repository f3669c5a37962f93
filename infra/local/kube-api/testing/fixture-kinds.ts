/**
 * Minimal {@link KindSpec}s for testing the generic machinery on its own (no per-kind validation,
 * admission or controllers): a strategy that only splits status and requires a name.
 */
import type { FieldError, KindSpec, KindStrategy, KubeObject } from '../types.ts';

function strategy(opts: { status: boolean; resetStatusOnCreate: boolean }): KindStrategy {
  const nameRequired = (obj: KubeObject): FieldError[] => (obj.metadata.name ? [] : [{ type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required' }]);
  return {
    decode(obj) {
      if (obj.spec !== undefined && (obj.spec === null || typeof obj.spec !== 'object' || Array.isArray(obj.spec))) {
        throw Object.assign(new Error('bad spec'), { code: 400 });
      }
    },
    defaults() {},
    prepareForCreate(obj) {
      if (opts.resetStatusOnCreate) obj.status = { phase: 'Pending' };
    },
    prepareForUpdate(obj, old, subresource) {
      if (!opts.status) return;
      if (subresource === 'status') obj.spec = structuredClone(old.spec);
      else if (old.status === undefined) delete obj.status;
      else obj.status = structuredClone(old.status);
    },
    validate(obj) {
      const errs = nameRequired(obj);
      if (obj.spec?.invalid) errs.push({ type: 'FieldValueInvalid', field: 'spec.invalid', value: obj.spec.invalid, detail: 'must not be set' });
      return errs;
    },
    validateUpdate(obj) {
      return this.validate(obj);
    },
    warnings(obj) {
      return obj.data?.deprecated !== undefined ? ['data.deprecated is deprecated; use data.current'] : [];
    },
  };
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

const metaFields = (namespaced: boolean) => (obj: KubeObject): Record<string, string> => ({
  'metadata.name': obj.metadata.name ?? '',
  ...(namespaced ? { 'metadata.namespace': obj.metadata.namespace ?? '' } : {}),
});

function kind(k: Partial<KindSpec> & Pick<KindSpec, 'kind' | 'plural' | 'namespaced'>): KindSpec {
  const status = (k.subresources ?? []).includes('status');
  return {
    group: '', version: 'v1', singular: k.kind.toLowerCase(), shortNames: [], subresources: [], verbs: VERBS,
    returnDeletedObject: false, allowUnconditionalUpdate: true, allowCreateOnUpdate: false,
    selectableFields: metaFields(k.namespaced),
    strategy: strategy({ status, resetStatusOnCreate: status }),
    ...k,
  };
}

/** Namespaces, PVs, PVCs, ConfigMaps, Leases and StorageClasses with generic behaviour only. */
export function fixtureKinds(): KindSpec[] {
  return [
    kind({ kind: 'Namespace', plural: 'namespaces', namespaced: false, shortNames: ['ns'] }),
    kind({ kind: 'PersistentVolume', plural: 'persistentvolumes', namespaced: false, shortNames: ['pv'], subresources: ['status'], returnDeletedObject: true }),
    kind({
      kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', namespaced: true, shortNames: ['pvc'], subresources: ['status'], returnDeletedObject: true,
      table: {
        columns: [
          { name: 'Name', type: 'string', format: 'name', description: 'name', priority: 0 },
          { name: 'Status', type: 'string', format: '', description: 'phase', priority: 0 },
        ],
        row: (o) => [o.metadata.name, o.status?.phase ?? ''],
      },
    }),
    kind({ kind: 'ConfigMap', plural: 'configmaps', namespaced: true, shortNames: ['cm'] }),
    kind({
      kind: 'Node', plural: 'nodes', namespaced: false, shortNames: ['no'], subresources: ['status'],
      selectableFields: (o) => ({ 'metadata.name': o.metadata.name ?? '', 'spec.unschedulable': String(o.spec?.unschedulable ?? false) }),
    }),
    kind({ group: 'coordination.k8s.io', kind: 'Lease', plural: 'leases', namespaced: true, allowUnconditionalUpdate: false, allowCreateOnUpdate: true }),
    kind({ group: 'storage.k8s.io', kind: 'StorageClass', plural: 'storageclasses', namespaced: false, shortNames: ['sc'], returnDeletedObject: true }),
  ];
}
