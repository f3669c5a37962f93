/**
 * Who is asking (`k8s.io/apiserver/pkg/authentication/user.Info`) and the well-known user and group
 * names of `pkg/authentication/user/user.go` and `serviceaccount/util.go`.
 */

/** An authenticated (or anonymous) requester. */
export interface UserInfo {
  username: string;
  uid: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** Members of this group bypass authorization (`user.SystemPrivilegedGroup`). */
export const SYSTEM_MASTERS = 'system:masters';
export const ALL_AUTHENTICATED = 'system:authenticated';
export const ALL_UNAUTHENTICATED = 'system:unauthenticated';
export const ANONYMOUS = 'system:anonymous';
export const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';
export const ALL_SERVICE_ACCOUNTS = 'system:serviceaccounts';

/** `system:serviceaccount:<ns>:<name>`. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${SERVICE_ACCOUNT_PREFIX}${namespace}:${name}`;
}

/** The groups every ServiceAccount is in (`serviceaccount.MakeGroupNames`). */
export function serviceAccountGroups(namespace: string): string[] {
  return [ALL_SERVICE_ACCOUNTS, `${ALL_SERVICE_ACCOUNTS}:${namespace}`];
}

/** `[namespace, name]` of a ServiceAccount username, or undefined (`serviceaccount.SplitUsername`). */
export function splitServiceAccountUsername(username: string): [string, string] | undefined {
  if (!username.startsWith(SERVICE_ACCOUNT_PREFIX)) return undefined;
  const parts = username.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return undefined;
  return [parts[0], parts[1]];
}

/**
 * `system:authenticated` added to an authenticated user that lacks it (`group.AuthenticatedGroupAdder`,
 * which kube-apiserver wraps around every authenticator): the static token file need not list it.
 */
export function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (user.username === ANONYMOUS || user.groups.some((g) => g === ALL_AUTHENTICATED || g === ALL_UNAUTHENTICATED)) return user;
  return { ...user, groups: [...user.groups, ALL_AUTHENTICATED] };
}
