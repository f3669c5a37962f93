/**
 * Namespace (`pkg/registry/core/namespace/strategy.go`, `ValidateNamespace*`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { clone, invalid, notSupported } from './common/field.ts';
import { isDNS1123Label, isQualifiedName } from './common/names.ts';
import { ensure, makeStrategy } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

/** The spec finalizer the namespace controller owns. */
export const FINALIZER_KUBERNETES = 'kubernetes';
/** The label every namespace carries (`SetDefaults_Namespace`). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

function validateSpecFinalizers(ns: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  for (const f of ns.spec?.finalizers ?? []) {
    const msgs = isQualifiedName(f);
    for (const m of msgs) errs.push(invalid('spec.finalizers', f, m));
    if (msgs.length === 0 && !f.includes('/') && f !== FINALIZER_KUBERNETES) {
      errs.push(invalid('spec.finalizers', f, 'name is neither a standard finalizer name nor is it fully qualified'));
    }
  }
  return errs;
}

const PHASES = ['Active', 'Terminating'];

/** Namespace discovery facts, strategy and printer. */
export const namespaces: KindSpec = {
  group: '',
  version: 'v1',
  kind: 'Namespace',
  plural: 'namespaces',
  singular: 'namespace',
  namespaced: false,
  shortNames: ['ns'],
  subresources: ['status'],
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (ns) => ({
    'metadata.name': ns.metadata?.name ?? '',
    'status.phase': ns.status?.phase ?? '',
    // Upstream keeps this for backward compatibility.
    name: ns.metadata?.name ?? '',
  }),
  table: {
    columns: [
      NAME_COLUMN,
      column('Status', 'string', 'The status of the namespace'),
      AGE_COLUMN,
    ],
    row: (ns, now) => [ns.metadata.name, ns.status?.phase ?? '', age(ns, now)],
  },
  strategy: makeStrategy({
    namespaced: false,
    nameRule: isDNS1123Label,
    defaults(ns) {
      if (ns.metadata.name) {
        ns.metadata.labels ??= {};
        ns.metadata.labels[NAMESPACE_NAME_LABEL] = ns.metadata.name;
      }
      ensure(ns, 'status').phase ??= 'Active';
    },
    prepareForCreate(ns) {
      ns.status = { phase: 'Active' };
      const spec = ensure(ns, 'spec');
      const fin: string[] = Array.isArray(spec.finalizers) ? spec.finalizers : [];
      if (!fin.includes(FINALIZER_KUBERNETES)) fin.push(FINALIZER_KUBERNETES);
      spec.finalizers = fin;
    },
    prepareForUpdate(ns, old, subresource) {
      if (subresource === 'status') {
        ns.spec = clone(old.spec ?? {});
        return;
      }
      ensure(ns, 'spec').finalizers = clone(old.spec?.finalizers ?? []);
      if (old.status === undefined) delete ns.status;
      else ns.status = clone(old.status);
    },
    validate: validateSpecFinalizers,
    validateUpdate(ns, _old, subresource) {
      const errs = validateSpecFinalizers(ns);
      if (subresource !== 'status') return errs;
      // ValidateNamespaceStatusUpdate: the phase follows the deletionTimestamp.
      const phase = ns.status?.phase;
      if (phase !== undefined && !PHASES.includes(phase)) errs.push(notSupported('status.phase', phase, PHASES));
      else if (!ns.metadata.deletionTimestamp && phase !== 'Active') {
        errs.push(invalid('status.phase', phase ?? '', "may only be 'Active' if `deletionTimestamp` is empty"));
      } else if (ns.metadata.deletionTimestamp && phase !== 'Terminating') {
        errs.push(invalid('status.phase', phase ?? '', "may only be 'Terminating' if `deletionTimestamp` is not empty"));
      }
      return errs;
    },
  }),
};
