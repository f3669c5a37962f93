/**
 * The RBAC authorizer, evaluated as upstream's (`plugin/pkg/auth/authorizer/rbac/rbac.go`,
 * `pkg/registry/rbac/validation/rule.go`, `pkg/apis/rbac/v1/evaluation_helpers.go`), behind the
 * `system:masters` bypass kube-apiserver puts in front of every authorizer:
 * - the rules that apply to a user in a namespace are those of every ClusterRoleBinding whose subjects
 *   include the user (by name, group, or ServiceAccount `system:serviceaccount:<ns>:<name>`), then — for a
 *   namespaced request — every RoleBinding of that namespace, each pointing at a Role of the namespace or a
 *   ClusterRole; the first rule that allows the request wins;
 * - a rule allows when its verbs hold the verb or `*`, its apiGroups the group or `*`, its resources the
 *   `resource[/subresource]`, `*` or `*`/subresource, and its resourceNames are empty or hold the name;
 *   non-resource requests match `nonResourceURLs` (exact, `*`, or a `prefix*`);
 * - a binding whose role does not exist contributes an error, reported as the denial's reason
 *   (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`), never an allow.
 *
 * Decisions are cached per (user, groups, attributes) and the cache is dropped on any change to a Role,
 * ClusterRole or binding, so repeated requests cost one map lookup.
 */
import type { KubeObject } from '../types.ts';
import type { MemoryStore } from '../store.ts';
import type { RequestAttributes } from './request-info.ts';
import { SYSTEM_MASTERS, splitServiceAccountUsername, type UserInfo } from './user.ts';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const CLUSTER_ROLES = `${RBAC_GROUP}/clusterroles`;
export const CLUSTER_ROLE_BINDINGS = `${RBAC_GROUP}/clusterrolebindings`;
export const ROLES = `${RBAC_GROUP}/roles`;
export const ROLE_BINDINGS = `${RBAC_GROUP}/rolebindings`;

/** `rbacv1.PolicyRule`. */
export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** An authorizer's answer. */
export interface Decision {
  allowed: boolean;
  /** Why (`RBAC: allowed by ...`), or the resolution errors of a denial; '' when none. */
  reason: string;
}

const has = (list: string[] | undefined, value: string): boolean => (list ?? []).includes(value);

/** `VerbMatches`. */
export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return has(rule.verbs, '*') || has(rule.verbs, verb);
}

/** `APIGroupMatches`. */
export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return has(rule.apiGroups, '*') || has(rule.apiGroups, group);
}

/** `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*`/&lt;subresource&gt;. */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    if (subresource !== '' && r === `*/${subresource}`) return true;
  }
  return false;
}

/** `ResourceNameMatches`: no names means every name. */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  return !rule.resourceNames?.length || rule.resourceNames.includes(name);
}

/** `NonResourceURLMatches`: `*`, exact, or a `prefix*`. */
export function nonResourceUrlMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === '*' || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.replace(/\*+$/, ''))) return true;
  }
  return false;
}

/** `RuleAllows`. */
export function ruleAllows(attrs: Omit<RequestAttributes, 'user'>, rule: PolicyRule): boolean {
  if (attrs.resourceRequest) {
    const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    return verbMatches(rule, attrs.verb) && apiGroupMatches(rule, attrs.apiGroup)
      && resourceMatches(rule, combined, attrs.subresource) && resourceNameMatches(rule, attrs.name);
  }
  return verbMatches(rule, attrs.verb) && nonResourceUrlMatches(rule, attrs.path);
}

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

/** `appliesToUser`. */
function appliesToUser(user: UserInfo, subject: Subject, namespace: string): boolean {
  switch (subject.kind) {
    case 'User':
      return user.username === subject.name;
    case 'Group':
      return user.groups.includes(subject.name ?? '');
    case 'ServiceAccount': {
      const ns = subject.namespace || namespace;
      if (!ns) return false;
      const sa = splitServiceAccountUsername(user.username);
      return sa !== undefined && sa[0] === ns && sa[1] === subject.name;
    }
    default:
      return false;
  }
}

/** `describeSubject`. */
function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === 'ServiceAccount') return `${s.kind} ${JSON.stringify(`${s.name}/${s.namespace || bindingNamespace}`)}`;
  return `${s.kind} ${JSON.stringify(s.name)}`;
}

/** Visits each rule (with a description of where it comes from) or resolution error; stop by returning false. */
type Visitor = (source: (() => string) | undefined, rule: PolicyRule | undefined, error: string | undefined) => boolean;

const MAX_CACHED = 20_000;

/**
 * RBAC over the emulator's store, with the `system:masters` bypass.
 *
 * @example
 * const rbac = new RbacAuthorizer(api.store);
 * rbac.authorize({ user, verb: 'list', resourceRequest: true, apiGroup: '', resource: 'pods', ... }).allowed;
 */
export class RbacAuthorizer {
  readonly #store: MemoryStore;
  readonly #cache = new Map<string, Decision>();
  readonly #unsubscribe: () => void;

  constructor(store: MemoryStore) {
    this.#store = store;
    this.#unsubscribe = store.watchRaw((e) => {
      if (e.resource.startsWith(`${RBAC_GROUP}/`)) this.#cache.clear();
    });
  }

  /** Stops following RBAC changes. */
  close(): void {
    this.#unsubscribe();
    this.#cache.clear();
  }

  /** Decisions held in the cache (for tests). */
  get cached(): number {
    return this.#cache.size;
  }

  /** The decision for a request: `system:masters` first, then RBAC. */
  authorize(attrs: RequestAttributes): Decision {
    if (attrs.user.groups.includes(SYSTEM_MASTERS)) return { allowed: true, reason: '' };
    const u = attrs.user;
    const key = [u.username, u.groups.join('\u0001'), attrs.verb, attrs.resourceRequest ? 'r' : 'n', attrs.path, attrs.apiGroup,
      attrs.namespace, attrs.resource, attrs.subresource, attrs.name].join('\u0000');
    const hit = this.#cache.get(key);
    if (hit) return hit;
    const decision = this.#evaluate(attrs);
    if (this.#cache.size >= MAX_CACHED) this.#cache.clear();
    this.#cache.set(key, decision);
    return decision;
  }

  /** Every rule that applies to `user` in `namespace`, and the errors met resolving them (`RulesFor`). */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[] } {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    this.#visitRulesFor(user, namespace, (_s, rule, error) => {
      if (rule) rules.push(rule);
      if (error) errors.push(error);
      return true;
    });
    return { rules, errors };
  }

  #evaluate(attrs: RequestAttributes): Decision {
    let allowedBy: string | undefined;
    const errors: string[] = [];
    const { user: _user, ...request } = attrs;
    this.#visitRulesFor(attrs.user, attrs.namespace, (source, rule, error) => {
      if (rule && ruleAllows(request, rule)) {
        allowedBy = source?.() ?? '';
        return false;
      }
      if (error) errors.push(error);
      return true;
    });
    if (allowedBy !== undefined) return { allowed: true, reason: `RBAC: allowed by ${allowedBy}` };
    return { allowed: false, reason: errors.length ? `RBAC: ${aggregate(errors)}` : '' };
  }

  #visitRulesFor(user: UserInfo, namespace: string, visit: Visitor): void {
    const store = this.#store;
    if (!store.kinds.has(CLUSTER_ROLE_BINDINGS)) return;
    for (const binding of store.scan(CLUSTER_ROLE_BINDINGS)) {
      const subject = firstApplying(user, binding, '');
      if (!subject) continue;
      const resolved = this.#roleRules(binding.roleRef, '');
      if ('error' in resolved) {
        if (!visit(undefined, undefined, resolved.error)) return;
        continue;
      }
      const source = (): string =>
        `ClusterRoleBinding ${JSON.stringify(binding.metadata.name)} of ${binding.roleRef?.kind} ${JSON.stringify(binding.roleRef?.name)} to ${describeSubject(subject, '')}`;
      for (const rule of resolved.rules) if (!visit(source, rule, undefined)) return;
    }
    if (!namespace) return;
    for (const binding of store.scan(ROLE_BINDINGS, namespace)) {
      const subject = firstApplying(user, binding, namespace);
      if (!subject) continue;
      const resolved = this.#roleRules(binding.roleRef, namespace);
      if ('error' in resolved) {
        if (!visit(undefined, undefined, resolved.error)) return;
        continue;
      }
      const source = (): string =>
        `RoleBinding ${JSON.stringify(`${binding.metadata.name}/${namespace}`)} of ${binding.roleRef?.kind} ${JSON.stringify(binding.roleRef?.name)} to ${describeSubject(subject, namespace)}`;
      for (const rule of resolved.rules) if (!visit(source, rule, undefined)) return;
    }
  }

  /** `GetRoleReferenceRules`. */
  #roleRules(roleRef: { kind?: string; name?: string } | undefined, namespace: string): { rules: PolicyRule[] } | { error: string } {
    const name = roleRef?.name ?? '';
    if (roleRef?.kind === 'Role') {
      const role = namespace ? this.#store.peek(ROLES, namespace, name) : undefined;
      return role ? { rules: rulesOf(role) } : { error: `role.${RBAC_GROUP} ${JSON.stringify(name)} not found` };
    }
    if (roleRef?.kind === 'ClusterRole') {
      const role = this.#store.peek(CLUSTER_ROLES, '', name);
      return role ? { rules: rulesOf(role) } : { error: `clusterrole.${RBAC_GROUP} ${JSON.stringify(name)} not found` };
    }
    return { error: `unsupported role reference kind: ${JSON.stringify(roleRef?.kind ?? '')}` };
  }
}

function rulesOf(role: KubeObject): PolicyRule[] {
  return Array.isArray(role.rules) ? role.rules : [];
}

function firstApplying(user: UserInfo, binding: KubeObject, namespace: string): Subject | undefined {
  const subjects: Subject[] = Array.isArray(binding.subjects) ? binding.subjects : [];
  return subjects.find((s) => appliesToUser(user, s, namespace));
}

/** `utilerrors.NewAggregate(errs).Error()`: one message alone, several in brackets, duplicates once. */
export function aggregate(messages: string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
}
