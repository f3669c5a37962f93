/**
 * rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding, stored as objects
 * (`pkg/registry/rbac/*`, `pkg/apis/rbac/validation`): names are path segments, rules need verbs, a binding
 * needs a roleRef of a kind it may reference and cannot change it. Nothing evaluates them (every request is
 * allowed) and there is no escalation check; ClusterRole aggregation is not run.
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectArray, expectObject } from './common/decode.ts';
import { deepEqual, invalid, notSupported, required } from './common/field.ts';
import { isDNS1123Subdomain, isValidPathSegmentName } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

const GROUP = 'rbac.authorization.k8s.io';

function validateRules(rules: unknown, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  (Array.isArray(rules) ? rules : []).forEach((r: Record<string, any>, i: number) => {
    const f = `rules[${i}]`;
    if (!Array.isArray(r?.verbs) || r.verbs.length === 0) errs.push(required(`${f}.verbs`, 'verbs must contain at least one value'));
    const nonResource = Array.isArray(r?.nonResourceURLs) && r.nonResourceURLs.length > 0;
    if (nonResource && namespaced) errs.push(invalid(`${f}.nonResourceURLs`, r.nonResourceURLs, 'namespaced rules cannot apply to non-resource URLs'));
    if (nonResource && ((r.apiGroups ?? []).length || (r.resources ?? []).length || (r.resourceNames ?? []).length)) {
      errs.push(invalid(`${f}.nonResourceURLs`, r.nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs'));
    }
    if (!nonResource) {
      if (!Array.isArray(r?.apiGroups) || r.apiGroups.length === 0) errs.push(required(`${f}.apiGroups`, 'resource rules must supply at least one api group'));
      if (!Array.isArray(r?.resources) || r.resources.length === 0) errs.push(required(`${f}.resources`, 'resource rules must supply at least one resource'));
    }
  });
  return errs;
}

const SUBJECT_KINDS = ['ServiceAccount', 'User', 'Group'];

function validateBinding(b: KubeObject, roleKinds: string[]): FieldError[] {
  const errs: FieldError[] = [];
  const ref = b.roleRef ?? {};
  if (ref.apiGroup !== GROUP) errs.push(notSupported('roleRef.apiGroup', ref.apiGroup ?? '', [GROUP]));
  if (!roleKinds.includes(ref.kind)) errs.push(notSupported('roleRef.kind', ref.kind ?? '', roleKinds));
  if (!ref.name) errs.push(required('roleRef.name'));
  else for (const m of isValidPathSegmentName(ref.name)) errs.push(invalid('roleRef.name', ref.name, m));
  (Array.isArray(b.subjects) ? b.subjects : []).forEach((s: Record<string, any>, i: number) => {
    const f = `subjects[${i}]`;
    if (!s?.name) errs.push(required(`${f}.name`));
    if (!SUBJECT_KINDS.includes(s?.kind)) {
      errs.push(notSupported(`${f}.kind`, s?.kind ?? '', SUBJECT_KINDS));
      return;
    }
    if (s.kind === 'ServiceAccount') {
      if (s.apiGroup) errs.push(notSupported(`${f}.apiGroup`, s.apiGroup, ['']));
      if (s.name) for (const m of isDNS1123Subdomain(s.name)) errs.push(invalid(`${f}.name`, s.name, m));
    } else if (s.apiGroup !== GROUP) {
      errs.push(notSupported(`${f}.apiGroup`, s.apiGroup ?? '', [GROUP]));
    }
  });
  return errs;
}

function roleRefUnchanged(b: KubeObject, old: KubeObject): FieldError[] {
  return deepEqual(b.roleRef, old.roleRef) ? [] : [invalid('roleRef', b.roleRef, 'cannot change roleRef')];
}

/** The `Created At` column of the role printers. */
const CREATED_AT = column('Created At', 'date', 'CreationTimestamp is a timestamp representing the server time when this object was created.');

const roleTable: KindSpec['table'] = {
  columns: [NAME_COLUMN, CREATED_AT],
  row: (r) => [r.metadata.name, r.metadata.creationTimestamp ?? ''],
};

function subjectsOf(b: KubeObject, kind: string): string {
  const names = (Array.isArray(b.subjects) ? b.subjects : [])
    .filter((s: Record<string, any>) => s?.kind === kind)
    .map((s: Record<string, any>) => (kind === 'ServiceAccount' ? `${s.namespace ?? ''}/${s.name}` : s.name));
  return names.join(', ');
}

const bindingTable: KindSpec['table'] = {
  columns: [
    NAME_COLUMN,
    column('Role', 'string', 'RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.'),
    AGE_COLUMN,
    column('Users', 'string', 'Users in the roleBinding', 1),
    column('Groups', 'string', 'Groups in the roleBinding', 1),
    column('ServiceAccounts', 'string', 'ServiceAccounts in the roleBinding', 1),
  ],
  row: (b, now) => [b.metadata.name, `${b.roleRef?.kind ?? ''}/${b.roleRef?.name ?? ''}`, age(b, now),
    subjectsOf(b, 'User'), subjectsOf(b, 'Group'), subjectsOf(b, 'ServiceAccount')],
};

function spec(kind: string, plural: string, namespaced: boolean, hooks: Parameters<typeof makeStrategy>[0], table: KindSpec['table']): KindSpec {
  return {
    group: GROUP,
    version: 'v1',
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced,
    shortNames: [],
    subresources: [],
    verbs: STANDARD_VERBS,
    returnDeletedObject: false,
    allowUnconditionalUpdate: true,
    allowCreateOnUpdate: true,
    selectableFields: (o) => objectMetaFields(o, namespaced),
    table,
    strategy: makeStrategy(hooks),
  };
}

/** Role. */
export const roles = spec('Role', 'roles', true, {
  namespaced: true,
  nameRule: isValidPathSegmentName,
  decode: (r) => expectArray('Role', r.rules, 'Role.rules', '[]v1.PolicyRule'),
  validate: (r) => validateRules(r.rules, true),
}, roleTable);

/** ClusterRole. */
export const clusterRoles = spec('ClusterRole', 'clusterroles', false, {
  namespaced: false,
  nameRule: isValidPathSegmentName,
  decode(r) {
    expectArray('ClusterRole', r.rules, 'ClusterRole.rules', '[]v1.PolicyRule');
    expectObject('ClusterRole', r.aggregationRule, 'ClusterRole.aggregationRule', 'v1.AggregationRule');
  },
  validate: (r) => validateRules(r.rules, false),
}, roleTable);

/** RoleBinding. */
export const roleBindings = spec('RoleBinding', 'rolebindings', true, {
  namespaced: true,
  nameRule: isValidPathSegmentName,
  decode: (b) => expectObject('RoleBinding', b.roleRef, 'RoleBinding.roleRef', 'v1.RoleRef'),
  validate: (b) => validateBinding(b, ['Role', 'ClusterRole']),
  validateUpdate: (b, old) => [...validateBinding(b, ['Role', 'ClusterRole']), ...roleRefUnchanged(b, old)],
}, bindingTable);

/** ClusterRoleBinding. */
export const clusterRoleBindings = spec('ClusterRoleBinding', 'clusterrolebindings', false, {
  namespaced: false,
  nameRule: isValidPathSegmentName,
  decode: (b) => expectObject('ClusterRoleBinding', b.roleRef, 'ClusterRoleBinding.roleRef', 'v1.RoleRef'),
  validate: (b) => validateBinding(b, ['ClusterRole']),
  validateUpdate: (b, old) => [...validateBinding(b, ['ClusterRole']), ...roleRefUnchanged(b, old)],
}, bindingTable);
