/**
 * Bearer token authentication as kube-apiserver's authenticator chain does it
 * (`k8s.io/apiserver/pkg/authentication/request/bearertoken`, `token/tokenfile`, the ServiceAccount token
 * authenticator, `group.AuthenticatedGroupAdder`, and the anonymous authenticator behind `FailOnError`):
 * - `Authorization: Bearer <token>` (scheme in any case). A token in the static token file
 *   (`--token-auth-file`: CSV `token,user,uid[,"group1,group2"]`) or a ServiceAccount token this emulator
 *   issued (valid signature, not expired, audience = the API audience, its ServiceAccount still there)
 *   gives a user; `system:authenticated` is added to every authenticated user.
 * - A bearer token that nothing accepts is 401 Unauthorized, with or without anonymous access.
 * - No credentials (or a non-bearer Authorization header): `system:anonymous` in `system:unauthenticated`
 *   when anonymous access is on, else 401.
 */
import { readFileSync } from 'node:fs';
import type { Store } from '../types.ts';
import { TOKEN_ISSUER, TokenError, type TokenIssuer } from '../tokens.ts';
import { ALL_UNAUTHENTICATED, ANONYMOUS, withAuthenticatedGroup, type UserInfo } from './user.ts';

/** One line of a static token file. */
export interface StaticToken {
  token: string;
  user: string;
  uid: string;
  groups?: string[];
}

/** The token file cannot be read or has a record with fewer than 3 columns. */
export class TokenFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenFileError';
  }
}

/** Splits CSV text into records as Go's `encoding/csv` reads them (quotes, `""` escapes, blank lines skipped). */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let fieldStarted = false;
  const endRecord = (): void => {
    if (record.length === 0 && !fieldStarted && field === '') return; // blank line
    record.push(field);
    records.push(record);
    record = [];
    field = '';
    fieldStarted = false;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
      continue;
    }
    if (c === '"' && field === '') {
      quoted = true;
      fieldStarted = true;
    } else if (c === ',') {
      record.push(field);
      field = '';
      fieldStarted = true;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRecord();
    } else {
      field += c;
      fieldStarted = true;
    }
  }
  if (quoted) throw new TokenFileError('extraneous or missing " in quoted-field');
  endRecord();
  return records;
}

/** Parses a `--token-auth-file` (`tokenfile.NewCSV`): records with an empty token are skipped. */
export function parseTokenFile(text: string, path = '(token file)'): StaticToken[] {
  const tokens: StaticToken[] = [];
  for (const record of parseCsv(text)) {
    if (record.length < 3) throw new TokenFileError(`token file '${path}' must have at least 3 columns (token, user name, user uid), found ${record.length}`);
    if (record[0] === '') continue;
    tokens.push({ token: record[0], user: record[1], uid: record[2], ...(record.length >= 4 ? { groups: record[3].split(',') } : {}) });
  }
  return tokens;
}

/** Reads and parses a token file. */
export function readTokenFile(path: string): StaticToken[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TokenFileError(`cannot read token file '${path}': ${(err as Error).message}`);
  }
  return parseTokenFile(text, path);
}

/** Formats static tokens as a token file (CSV), the inverse of {@link parseTokenFile}. */
export function formatTokenFile(tokens: StaticToken[]): string {
  const quote = (v: string): string => (/[",\r\n]/.test(v) || v.startsWith(' ') ? `"${v.replace(/"/g, '""')}"` : v);
  return tokens.map((t) => [t.token, t.user, t.uid, ...(t.groups ? [t.groups.join(',')] : [])].map(quote).join(',')).join('\n') + '\n';
}

/** The outcome of authenticating one request. */
export type Authentication = { user: UserInfo } | { unauthorized: true };

export interface AuthenticatorOptions {
  tokens: StaticToken[];
  issuer: TokenIssuer;
  store: Pick<Store, 'get' | 'kinds'>;
  /** Requests without credentials are `system:anonymous` (default false: 401). */
  anonymous?: boolean;
}

/** The emulator's authenticator chain. */
export class Authenticator {
  readonly #tokens = new Map<string, UserInfo>();
  readonly #issuer: TokenIssuer;
  readonly #store: Pick<Store, 'get' | 'kinds'>;
  readonly #anonymous: boolean;

  constructor(options: AuthenticatorOptions) {
    for (const t of options.tokens) this.#tokens.set(t.token, { username: t.user, uid: t.uid, groups: t.groups ?? [] });
    this.#issuer = options.issuer;
    this.#store = options.store;
    this.#anonymous = options.anonymous ?? false;
  }

  /** Adds (or replaces) a static token. */
  addToken(token: StaticToken): void {
    this.#tokens.set(token.token, { username: token.user, uid: token.uid, groups: token.groups ?? [] });
  }

  /** The user of a bearer token, or undefined when no authenticator accepts it (`TokenReview`). */
  authenticateToken(token: string): UserInfo | undefined {
    const known = this.#tokens.get(token);
    if (known) return withAuthenticatedGroup(known);
    if (token.split('.').length !== 3) return undefined;
    try {
      const id = this.#issuer.verify(token, this.#store, { audience: TOKEN_ISSUER });
      return withAuthenticatedGroup({ username: id.username, uid: id.uid, groups: id.groups });
    } catch (err) {
      if (err instanceof TokenError) return undefined;
      throw err;
    }
  }

  /** Authenticates a request from its `Authorization` header. */
  authenticate(authorization: string | undefined): Authentication {
    const header = (authorization ?? '').trim();
    const parts = header.split(' ');
    if (header !== '' && parts.length >= 2 && parts[0].toLowerCase() === 'bearer' && parts[1] !== '') {
      const user = this.authenticateToken(parts[1]);
      return user ? { user } : { unauthorized: true };
    }
    if (this.#anonymous) return { user: { username: ANONYMOUS, uid: '', groups: [ALL_UNAUTHENTICATED] } };
    return { unauthorized: true };
  }
}
