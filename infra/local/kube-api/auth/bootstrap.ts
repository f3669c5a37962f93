/**
 * The RBAC objects every kube-apiserver creates at start (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/
 * policy.go`, reconciled by the `rbac/bootstrap-roles` post-start hook), limited to those a user of kubectl
 * and claimflow meets: `cluster-admin` (bound to `system:masters`), `system:discovery` and
 * `system:basic-user` (bound to `system:authenticated`), `system:public-info-viewer` (authenticated and
 * unauthenticated) and `system:service-account-issuer-discovery` (every ServiceAccount). The emulator creates
 * the missing ones at start; existing objects (a `--data` file) are left as they are.
 */
import type { KubeObject } from '../types.ts';
import type { MemoryStore } from '../store.ts';
import { CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, RBAC_GROUP, type PolicyRule } from './rbac.ts';
import { ALL_AUTHENTICATED, ALL_SERVICE_ACCOUNTS, ALL_UNAUTHENTICATED, SYSTEM_MASTERS } from './user.ts';

const META = {
  labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
  annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
};

function clusterRole(name: string, rules: PolicyRule[]): KubeObject {
  return { apiVersion: `${RBAC_GROUP}/v1`, kind: 'ClusterRole', metadata: { name, ...structuredClone(META) }, rules };
}

function clusterRoleBinding(name: string, role: string, groups: string[]): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name, ...structuredClone(META) },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: groups.map((g) => ({ apiGroup: RBAC_GROUP, kind: 'Group', name: g })),
  };
}

/** The bootstrap ClusterRoles. */
export const BOOTSTRAP_CLUSTER_ROLES: KubeObject[] = [
  clusterRole('cluster-admin', [
    { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
    { nonResourceURLs: ['*'], verbs: ['*'] },
  ]),
  clusterRole('system:discovery', [
    { nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/openapi', '/openapi/*', '/version', '/version/'], verbs: ['get'] },
  ]),
  clusterRole('system:public-info-viewer', [
    { nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'], verbs: ['get'] },
  ]),
  clusterRole('system:basic-user', [
    { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] },
    { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
  ]),
  clusterRole('system:service-account-issuer-discovery', [
    { nonResourceURLs: ['/.well-known/openid-configuration', '/.well-known/openid-configuration/', '/openid/v1/jwks', '/openid/v1/jwks/'], verbs: ['get'] },
  ]),
];

/** The bootstrap ClusterRoleBindings. */
export const BOOTSTRAP_CLUSTER_ROLE_BINDINGS: KubeObject[] = [
  clusterRoleBinding('cluster-admin', 'cluster-admin', [SYSTEM_MASTERS]),
  clusterRoleBinding('system:discovery', 'system:discovery', [ALL_AUTHENTICATED]),
  clusterRoleBinding('system:public-info-viewer', 'system:public-info-viewer', [ALL_AUTHENTICATED, ALL_UNAUTHENTICATED]),
  clusterRoleBinding('system:basic-user', 'system:basic-user', [ALL_AUTHENTICATED]),
  clusterRoleBinding('system:service-account-issuer-discovery', 'system:service-account-issuer-discovery', [ALL_SERVICE_ACCOUNTS]),
];

/** Creates the bootstrap roles and bindings that do not exist yet. */
export function ensureBootstrapPolicy(store: MemoryStore): void {
  if (!store.kinds.has(CLUSTER_ROLES) || !store.kinds.has(CLUSTER_ROLE_BINDINGS)) return;
  for (const [resource, objects] of [[CLUSTER_ROLES, BOOTSTRAP_CLUSTER_ROLES], [CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLE_BINDINGS]] as const) {
    for (const obj of objects) {
      if (!store.peek(resource, '', obj.metadata.name!)) store.createObject(resource, structuredClone(obj));
    }
  }
}
