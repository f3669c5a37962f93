/**
 * User impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-<key>`;
 * `k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`), so `kubectl --as=<user> --as-group=<group>`
 * and `kubectl auth can-i --as=...` work. Each thing impersonated must be allowed to the requester with the
 * `impersonate` verb: `users`/`groups` (core group), `serviceaccounts` in the ServiceAccount's namespace for a
 * `system:serviceaccount:<ns>:<name>` user, `uids` and `userextras/<key>` in `authentication.k8s.io`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { StatusError } from '../types.ts';
import type { RequestAttributes } from './request-info.ts';
import { ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, serviceAccountGroups, serviceAccountUsername, splitServiceAccountUsername, type UserInfo } from './user.ts';

const EXTRA_PREFIX = 'impersonate-extra-';

const headerValues = (headers: IncomingHttpHeaders, name: string): string[] => {
  const v = headers[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((x) => x !== '');
};

/** Whether the request asks to impersonate anyone. */
export function wantsImpersonation(headers: IncomingHttpHeaders): boolean {
  return Object.keys(headers).some((h) => h.startsWith('impersonate-'));
}

/**
 * The impersonated user, after checking each impersonation with `authorize`; throws 403 (or 500 for groups,
 * extras or a uid without a user, as upstream) otherwise.
 */
export function impersonate(
  headers: IncomingHttpHeaders,
  requestor: UserInfo,
  authorize: (attrs: RequestAttributes) => { allowed: boolean; reason: string },
  forbidden: (attrs: RequestAttributes, reason: string) => StatusError,
): UserInfo {
  const requestedUser = headerValues(headers, 'impersonate-user')[0] ?? '';
  const requestedGroups = headerValues(headers, 'impersonate-group').flatMap((g) => g.split(',').map((x) => x.trim()).filter(Boolean));
  const requestedUid = headerValues(headers, 'impersonate-uid')[0] ?? '';
  const extras: Array<[string, string]> = [];
  for (const name of Object.keys(headers)) {
    if (!name.startsWith(EXTRA_PREFIX)) continue;
    const key = decodeURIComponent(name.slice(EXTRA_PREFIX.length)).toLowerCase();
    for (const value of headerValues(headers, name)) extras.push([key, value]);
  }
  if (!requestedUser && (requestedGroups.length || extras.length || requestedUid)) {
    throw new StatusError(500, 'InternalError', `Internal error occurred: requested impersonation of groups, extras or a uid without impersonating a user`);
  }
  const base = { user: requestor, resourceRequest: true, path: '', apiVersion: '', subresource: '', namespace: '', verb: 'impersonate' };
  const check = (attrs: RequestAttributes): void => {
    const d = authorize(attrs);
    if (!d.allowed) throw forbidden(attrs, d.reason);
  };
  let groups: string[] = [];
  const sa = splitServiceAccountUsername(requestedUser);
  if (sa) {
    check({ ...base, apiGroup: '', resource: 'serviceaccounts', namespace: sa[0], name: sa[1] });
    if (requestedGroups.length === 0) groups = serviceAccountGroups(sa[0]);
  } else {
    check({ ...base, apiGroup: '', resource: 'users', name: requestedUser });
  }
  for (const g of requestedGroups) {
    check({ ...base, apiGroup: '', resource: 'groups', name: g });
    groups.push(g);
  }
  const extra: Record<string, string[]> = {};
  for (const [key, value] of extras) {
    check({ ...base, apiGroup: 'authentication.k8s.io', resource: 'userextras', subresource: key, name: value });
    (extra[key] ??= []).push(value);
  }
  if (requestedUid) check({ ...base, apiGroup: 'authentication.k8s.io', resource: 'uids', name: requestedUid });
  const username = sa ? serviceAccountUsername(sa[0], sa[1]) : requestedUser;
  if (username === ANONYMOUS) {
    if (!groups.includes(ALL_UNAUTHENTICATED)) groups.push(ALL_UNAUTHENTICATED);
  } else if (!groups.includes(ALL_AUTHENTICATED) && !groups.includes(ALL_UNAUTHENTICATED)) {
    groups.push(ALL_AUTHENTICATED);
  }
  return { username, uid: requestedUid, groups, ...(Object.keys(extra).length ? { extra } : {}) };
}
