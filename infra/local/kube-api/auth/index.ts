/**
 * Authentication and authorization of the emulator (off unless asked for, as `npm run kube-api` runs):
 * `--token-auth-file` static tokens and the ServiceAccount tokens the emulator issues, impersonation, and
 * RBAC (or AlwaysAllow) behind the `system:masters` bypass. See `authenticator.ts`, `rbac.ts`,
 * `request-info.ts`, `impersonation.ts`, `reviews.ts`, `bootstrap.ts`.
 */
import { randomBytes } from 'node:crypto';
import type { MemoryStore } from '../store.ts';
import type { TokenIssuer } from '../tokens.ts';
import { Authenticator, readTokenFile, type StaticToken } from './authenticator.ts';
import { ensureBootstrapPolicy } from './bootstrap.ts';
import { RbacAuthorizer, type Decision, type PolicyRule } from './rbac.ts';
import type { RequestAttributes } from './request-info.ts';
import { ALL_AUTHENTICATED, SYSTEM_MASTERS, type UserInfo } from './user.ts';

export { Authenticator, formatTokenFile, parseTokenFile, readTokenFile, TokenFileError, type StaticToken } from './authenticator.ts';
export { RbacAuthorizer, ruleAllows, type Decision, type PolicyRule } from './rbac.ts';
export { requestInfoOf, type RequestAttributes, type RequestInfo } from './request-info.ts';
export { ensureBootstrapPolicy, BOOTSTRAP_CLUSTER_ROLES, BOOTSTRAP_CLUSTER_ROLE_BINDINGS } from './bootstrap.ts';
export * from './user.ts';

/** How the emulator authenticates and authorizes (kube-apiserver's flags of the same names). */
export interface AuthOptions {
  /** `--token-auth-file`: CSV `token,user,uid[,"group1,group2"]`. */
  tokenAuthFile?: string;
  /** Static tokens given in process (added to the file's). */
  tokens?: StaticToken[];
  /** `--authorization-mode` (default RBAC). */
  authorizationMode?: 'RBAC' | 'AlwaysAllow';
  /** `--anonymous-auth` (default false: a request without credentials is 401). */
  anonymous?: boolean;
}

/** The user every request is when authentication is off (the old insecure port's `system:unsecured`). */
export const UNSECURED_USER: UserInfo = { username: 'system:unsecured', uid: '', groups: [SYSTEM_MASTERS, ALL_AUTHENTICATED] };

/** The loopback administrator of an emulator with authentication on (`kubernetes-admin` in `system:masters`). */
export const ADMIN_USER = 'kubernetes-admin';

/** Authentication and authorization of one emulator. */
export class ApiAuth {
  readonly authenticator: Authenticator;
  readonly rbac: RbacAuthorizer | undefined;
  /** A token of {@link ADMIN_USER} (`system:masters`), as kubeadm's admin.conf carries one. */
  readonly adminToken: string;

  constructor(options: AuthOptions, store: MemoryStore, issuer: TokenIssuer) {
    this.adminToken = randomBytes(24).toString('base64url');
    const tokens = [
      { token: this.adminToken, user: ADMIN_USER, uid: ADMIN_USER, groups: [SYSTEM_MASTERS] },
      ...(options.tokenAuthFile ? readTokenFile(options.tokenAuthFile) : []),
      ...(options.tokens ?? []),
    ];
    this.authenticator = new Authenticator({ tokens, issuer, store, anonymous: options.anonymous ?? false });
    if ((options.authorizationMode ?? 'RBAC') === 'RBAC') {
      ensureBootstrapPolicy(store);
      this.rbac = new RbacAuthorizer(store);
    }
  }

  /** The decision for a request (AlwaysAllow without RBAC). */
  authorize(attrs: RequestAttributes): Decision {
    return this.rbac ? this.rbac.authorize(attrs) : { allowed: true, reason: '' };
  }

  /** The rules of a user in a namespace (`SelfSubjectRulesReview`); everything without RBAC. */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[]; incomplete?: boolean } {
    if (!this.rbac) return { rules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }, { verbs: ['*'], nonResourceURLs: ['*'] }], errors: [] };
    return this.rbac.rulesFor(user, namespace);
  }

  close(): void {
    this.rbac?.close();
  }
}
