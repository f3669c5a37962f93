/**
 * ServiceAccount tokens (`serviceaccounts/<name>/token`, TokenRequest; `pkg/registry/core/serviceaccount/
 * storage/token.go`, `pkg/serviceaccount/claims.go`): a JWT signed with the emulator's own key, carrying
 * the claims the apiserver's tokens carry, and the verification a later authenticator uses to map a token
 * back to its ServiceAccount.
 *
 * Format (decided here, documented in README): JWS compact, `alg: ES256` (P-256 key generated when the
 * emulator starts; `kid` = base64url SHA-256 of the public key's DER). Claims: `iss`
 * (`https://kubernetes.default.svc.cluster.local`), `sub` (`system:serviceaccount:<ns>:<name>`), `aud`,
 * `exp`, `iat`, `nbf`, `jti`, and `kubernetes.io: {namespace, serviceaccount: {name, uid}, pod|secret|node?:
 * {name, uid}}`. A token is valid while its signature checks, it has not expired, the ServiceAccount with
 * that uid still exists, and so does a bound object. Keys are not persisted: tokens issued before a restart
 * of the emulator no longer verify (as after a signing-key rotation).
 *
 * @example
 * const { token } = api.tokens.issue(sa, { audiences: ['api'] });
 * api.tokens.verify(token, api.store).username; // 'system:serviceaccount:default:builder'
 */
import { createHash, generateKeyPairSync, randomUUID, sign, verify, type KeyObject } from 'node:crypto';
import type { KubeObject, Store } from './types.ts';

/** The issuer (and default audience) of the tokens, as a default kube-apiserver has it. */
export const TOKEN_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** `spec.expirationSeconds` when the request has none (`SetDefaults_TokenRequestSpec`). */
export const DEFAULT_EXPIRATION_SECONDS = 3600;

/** What a token request asks for. */
export interface TokenSpec {
  audiences?: string[];
  expirationSeconds?: number;
  /** A Pod, Secret or Node the token is bound to (it stops verifying once that object is gone). */
  boundObject?: { kind: string; name: string; uid: string };
}

/** The identity a valid token stands for (an authenticator's `user.Info`). */
export interface TokenIdentity {
  username: string;
  uid: string;
  groups: string[];
  namespace: string;
  serviceAccountName: string;
  audiences: string[];
  expiresAt: Date;
  boundObject?: { kind: string; name: string; uid: string };
}

/** Why a token does not verify. */
export class TokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenError';
  }
}

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

const BOUND_RESOURCES: Record<string, string> = { Pod: '/pods', Secret: '/secrets', Node: '/nodes' };

/** Issues and verifies ServiceAccount tokens with one signing key. */
export class TokenIssuer {
  readonly #privateKey: KeyObject;
  readonly #publicKey: KeyObject;
  readonly keyId: string;
  /** Tokens whose signature already checked out (bounded): the signature is verified once per token. */
  readonly #verified = new Set<string>();

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = privateKey;
    this.#publicKey = publicKey;
    this.keyId = b64url(createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest());
  }

  /** A signed token for `serviceAccount` (a stored ServiceAccount). */
  issue(serviceAccount: KubeObject, spec: TokenSpec = {}, now: Date = new Date()): { token: string; expirationTimestamp: Date } {
    const ns = serviceAccount.metadata.namespace ?? '';
    const name = serviceAccount.metadata.name ?? '';
    const iat = Math.floor(now.getTime() / 1000);
    const exp = iat + (spec.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS);
    const audiences = spec.audiences?.length ? spec.audiences : [TOKEN_ISSUER];
    const kubernetes: Record<string, unknown> = { namespace: ns, serviceaccount: { name, uid: serviceAccount.metadata.uid } };
    if (spec.boundObject) kubernetes[spec.boundObject.kind.toLowerCase()] = { name: spec.boundObject.name, uid: spec.boundObject.uid };
    const claims = { aud: audiences, exp, iat, iss: TOKEN_ISSUER, jti: randomUUID(), 'kubernetes.io': kubernetes, nbf: iat, sub: `system:serviceaccount:${ns}:${name}` };
    const signingInput = `${b64url(JSON.stringify({ alg: 'ES256', kid: this.keyId }))}.${b64url(JSON.stringify(claims))}`;
    const signature = sign('sha256', Buffer.from(signingInput), { key: this.#privateKey, dsaEncoding: 'ieee-p1363' });
    return { token: `${signingInput}.${b64url(signature)}`, expirationTimestamp: new Date(exp * 1000) };
  }

  /**
   * The identity of a token issued by this emulator; throws {@link TokenError} when the signature, the
   * expiry, the audience (when `audience` is given), the ServiceAccount or the bound object does not hold.
   */
  verify(token: string, store: Pick<Store, 'get' | 'kinds'>, options: { audience?: string; now?: Date } = {}): TokenIdentity {
    const parts = token.split('.');
    if (parts.length !== 3) throw new TokenError('not a JWT');
    let header: { alg?: string; kid?: string };
    let claims: Record<string, any>;
    try {
      header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
      claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    } catch {
      throw new TokenError('malformed token');
    }
    if (header.alg !== 'ES256' || header.kid !== this.keyId) throw new TokenError('token not signed by this issuer');
    if (!this.#verified.has(token)) {
      const ok = verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), { key: this.#publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(parts[2], 'base64url'));
      if (!ok) throw new TokenError('invalid signature');
      if (this.#verified.size >= 10_000) this.#verified.clear();
      this.#verified.add(token);
    }
    if (claims.iss !== TOKEN_ISSUER) throw new TokenError('invalid signature');
    const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
    if (typeof claims.exp !== 'number' || now >= claims.exp) throw new TokenError('token has expired');
    if (typeof claims.nbf === 'number' && now < claims.nbf) throw new TokenError('token is not valid yet');
    const audiences: string[] = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (options.audience !== undefined && !audiences.includes(options.audience)) throw new TokenError('token audience does not match');
    const k = claims['kubernetes.io'] ?? {};
    const namespace = String(k.namespace ?? '');
    const name = String(k.serviceaccount?.name ?? '');
    const uid = String(k.serviceaccount?.uid ?? '');
    const sa = store.get({ resource: '/serviceaccounts', namespace, name });
    if (!sa) throw new TokenError(`service account ${namespace}/${name} has been deleted`);
    if (sa.metadata.uid !== uid) throw new TokenError(`service account UID (${uid}) does not match claim (${sa.metadata.uid})`);
    let boundObject: TokenIdentity['boundObject'];
    for (const [kind, resource] of Object.entries(BOUND_RESOURCES)) {
      const ref = k[kind.toLowerCase()];
      if (!ref) continue;
      boundObject = { kind, name: String(ref.name), uid: String(ref.uid) };
      const obj = store.kinds.has(resource) ? store.get({ resource, namespace: kind === 'Node' ? '' : namespace, name: boundObject.name }) : undefined;
      if (!obj || obj.metadata.uid !== boundObject.uid || obj.metadata.deletionTimestamp) throw new TokenError(`${kind.toLowerCase()} ${boundObject.name} bound to the token is gone`);
    }
    return {
      username: `system:serviceaccount:${namespace}:${name}`,
      uid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      namespace,
      serviceAccountName: name,
      audiences,
      expiresAt: new Date(claims.exp * 1000),
      ...(boundObject ? { boundObject } : {}),
    };
  }

  /** The public key as a JWK set (`/openid/v1/jwks`). */
  jwks(): { keys: Array<Record<string, unknown>> } {
    const jwk = this.#publicKey.export({ format: 'jwk' });
    return { keys: [{ ...jwk, use: 'sig', kid: this.keyId, alg: 'ES256' }] };
  }
}

/** The resource of a kind a token may be bound to, or undefined. */
export function boundResourceOf(kind: string): string | undefined {
  return BOUND_RESOURCES[kind];
}
