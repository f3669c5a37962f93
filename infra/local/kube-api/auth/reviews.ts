/**
 * The review APIs that answer questions instead of storing objects (`pkg/registry/authorization/*`,
 * `pkg/registry/authentication/*`): `SelfSubjectAccessReview` (`kubectl auth can-i`), `SubjectAccessReview`,
 * `SelfSubjectRulesReview` (`kubectl auth can-i --list`), `SelfSubjectReview` (`kubectl auth whoami`) and
 * `TokenReview`. Each is a POST answered 201 with the request and its `status`; each is authorized like any
 * other create (`system:basic-user` grants the self reviews to every authenticated user).
 */
import { StatusError } from '../types.ts';
import { badRequest, invalid } from '../errors.ts';
import { TOKEN_ISSUER } from '../tokens.ts';
import type { PolicyRule } from './rbac.ts';
import type { RequestAttributes } from './request-info.ts';
import type { UserInfo } from './user.ts';

/** The virtual resources served here: `<group>/<resource>` → kind. */
export const REVIEW_RESOURCES: ReadonlyArray<{ group: string; resource: string; kind: string; namespaced: boolean }> = [
  { group: 'authentication.k8s.io', resource: 'selfsubjectreviews', kind: 'SelfSubjectReview', namespaced: false },
  { group: 'authentication.k8s.io', resource: 'tokenreviews', kind: 'TokenReview', namespaced: false },
  { group: 'authorization.k8s.io', resource: 'localsubjectaccessreviews', kind: 'LocalSubjectAccessReview', namespaced: true },
  { group: 'authorization.k8s.io', resource: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview', namespaced: false },
  { group: 'authorization.k8s.io', resource: 'selfsubjectrulesreviews', kind: 'SelfSubjectRulesReview', namespaced: false },
  { group: 'authorization.k8s.io', resource: 'subjectaccessreviews', kind: 'SubjectAccessReview', namespaced: false },
];

/** What the reviews need from the server. */
export interface ReviewContext {
  /** The requester. */
  user: UserInfo;
  authorize(attrs: RequestAttributes): { allowed: boolean; reason: string; evaluationError?: string };
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[]; incomplete?: boolean };
  authenticateToken(token: string): UserInfo | undefined;
}

type Json = Record<string, any>;

function attributesOf(user: UserInfo, spec: Json, kind: string): RequestAttributes {
  const r = spec.resourceAttributes;
  const n = spec.nonResourceAttributes;
  if ((r && n) || (!r && !n)) {
    throw invalid(kind, 'authorization.k8s.io', '', [{ type: 'FieldValueInvalid', field: 'spec.resourceAttributes', value: r ?? null, detail: 'exactly one of nonResourceAttributes or resourceAttributes must be specified' }]);
  }
  if (r) {
    return {
      user, verb: r.verb ?? '', resourceRequest: true, path: '', apiGroup: r.group ?? '', apiVersion: r.version ?? '',
      namespace: r.namespace ?? '', resource: r.resource ?? '', subresource: r.subresource ?? '', name: r.name ?? '',
    };
  }
  return { user, verb: n.verb ?? '', resourceRequest: false, path: n.path ?? '', apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '' };
}

function accessStatus(d: { allowed: boolean; reason: string; evaluationError?: string }): Json {
  return { allowed: d.allowed, ...(d.reason ? { reason: d.reason } : {}), ...(d.evaluationError ? { evaluationError: d.evaluationError } : {}) };
}

function userInfoJson(u: UserInfo): Json {
  return {
    ...(u.username ? { username: u.username } : {}),
    ...(u.uid ? { uid: u.uid } : {}),
    ...(u.groups.length ? { groups: u.groups } : {}),
    ...(u.extra && Object.keys(u.extra).length ? { extra: u.extra } : {}),
  };
}

function response(group: string, kind: string, body: Json, status: Json, namespace?: string): Json {
  return {
    kind,
    apiVersion: `${group}/v1`,
    metadata: { ...(body.metadata ?? {}), ...(namespace ? { namespace } : {}), creationTimestamp: null },
    ...(body.spec !== undefined || kind !== 'SelfSubjectReview' ? { spec: body.spec ?? {} } : {}),
    status,
  };
}

/** Answers one review; `resource` is one of {@link REVIEW_RESOURCES}. */
export function answerReview(ctx: ReviewContext, group: string, resource: string, body: Json, namespace?: string): Json {
  const spec: Json = body.spec ?? {};
  switch (`${group}/${resource}`) {
    case 'authorization.k8s.io/selfsubjectaccessreviews': {
      const attrs = attributesOf(ctx.user, spec, 'SelfSubjectAccessReview');
      return response(group, 'SelfSubjectAccessReview', body, accessStatus(ctx.authorize(attrs)));
    }
    case 'authorization.k8s.io/subjectaccessreviews':
    case 'authorization.k8s.io/localsubjectaccessreviews': {
      const kind = resource === 'subjectaccessreviews' ? 'SubjectAccessReview' : 'LocalSubjectAccessReview';
      if (!spec.user && !(spec.groups ?? []).length) {
        throw invalid(kind, group, '', [{ type: 'FieldValueInvalid', field: 'spec.user', value: '', detail: 'at least one of user or group must be specified' }]);
      }
      if (kind === 'LocalSubjectAccessReview') {
        if (!spec.resourceAttributes && spec.nonResourceAttributes) {
          throw invalid(kind, group, '', [{ type: 'FieldValueInvalid', field: 'spec.nonResourceAttributes', value: spec.nonResourceAttributes, detail: 'disallowed on this kind of request' }]);
        }
        if (spec.resourceAttributes) {
          const ns = spec.resourceAttributes.namespace ?? '';
          if (ns === '') spec.resourceAttributes.namespace = namespace;
          else if (ns !== namespace) throw badRequest(`spec.resourceAttributes.namespace must match namespace: ${namespace}`);
        }
      }
      const user: UserInfo = { username: spec.user ?? '', uid: spec.uid ?? '', groups: spec.groups ?? [], ...(spec.extra ? { extra: spec.extra } : {}) };
      const attrs = attributesOf(user, spec, kind);
      return response(group, kind, body, accessStatus(ctx.authorize(attrs)), namespace);
    }
    case 'authorization.k8s.io/selfsubjectrulesreviews': {
      const ns = spec.namespace ?? '';
      if (!ns) throw badRequest('no namespace on request');
      const { rules, errors, incomplete } = ctx.rulesFor(ctx.user, ns);
      const resourceRules = rules.filter((r) => (r.resources ?? []).length > 0).map((r) => ({
        verbs: r.verbs,
        ...(r.apiGroups?.length ? { apiGroups: r.apiGroups } : {}),
        ...(r.resources?.length ? { resources: r.resources } : {}),
        ...(r.resourceNames?.length ? { resourceNames: r.resourceNames } : {}),
      }));
      const nonResourceRules = rules.filter((r) => (r.nonResourceURLs ?? []).length > 0).map((r) => ({ verbs: r.verbs, nonResourceURLs: r.nonResourceURLs }));
      return response(group, 'SelfSubjectRulesReview', body, {
        resourceRules, nonResourceRules, incomplete: incomplete ?? false,
        ...(errors.length ? { evaluationError: errors.length === 1 ? errors[0] : `[${[...new Set(errors)].join(', ')}]` } : {}),
      });
    }
    case 'authentication.k8s.io/selfsubjectreviews':
      return { kind: 'SelfSubjectReview', apiVersion: `${group}/v1`, metadata: { ...(body.metadata ?? {}), creationTimestamp: null }, status: { userInfo: userInfoJson(ctx.user) } };
    case 'authentication.k8s.io/tokenreviews': {
      const token = String(spec.token ?? '');
      if (!token) throw invalid('TokenReview', group, '', [{ type: 'FieldValueRequired', field: 'spec.token', detail: 'token is required' }]);
      const user = ctx.authenticateToken(token);
      const status = user
        ? { authenticated: true, user: userInfoJson(user), audiences: spec.audiences?.length ? spec.audiences : [TOKEN_ISSUER] }
        : { user: {}, error: '[invalid bearer token, token lookup failed]' };
      return response(group, 'TokenReview', body, status);
    }
    default:
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource', {});
  }
}
