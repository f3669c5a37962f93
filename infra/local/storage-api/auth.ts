/**
 * Users and sessions of the embedded control plane: one configured user, opaque bearer tokens that
 * expire after a TTL (401 afterwards), login, refresh and a switch to expire every token at once.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiFailure } from './errors.ts';

/** A session handed out by a login or refresh. */
export interface Session {
  token: string;
  username: string;
  expiresAt: number;
}

/**
 * Session store.
 *
 * @example
 * const auth = new AuthStore('storageos', 'storageos', 300_000);
 * const session = auth.login('storageos', 'storageos');
 * auth.authenticate(`Bearer ${session.token}`);
 */
export class AuthStore {
  readonly username: string;
  readonly ttlMs: number;
  #password: string;
  #sessions = new Map<string, Session>();
  #userID = '00000000-0000-4000-8000-000000000001';
  #logins = 0;

  constructor(username: string, password: string, ttlMs: number) {
    this.username = username;
    this.#password = password;
    this.ttlMs = ttlMs;
  }

  /** The user's ID. */
  get userID(): string {
    return this.#userID;
  }

  /** Successful logins so far. */
  get logins(): number {
    return this.#logins;
  }

  /** Check credentials and open a session; 401 when they are wrong. */
  login(username: string, password: string): Session {
    if (username !== this.username || !sameText(password, this.#password)) throw new ApiFailure(401, 'invalid credentials');
    this.#logins++;
    return this.#open(username);
  }

  /** Validate an `Authorization` header; 401 when missing, unknown or expired. */
  authenticate(header: string | undefined): Session {
    const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header.trim());
    if (match === null) throw new ApiFailure(401, 'authentication required');
    const session = this.#sessions.get(match[1]);
    if (session === undefined) throw new ApiFailure(401, 'invalid token');
    if (session.expiresAt <= Date.now()) {
      this.#sessions.delete(session.token);
      throw new ApiFailure(401, 'token expired');
    }
    return session;
  }

  /** Exchange a valid session for a new one (the old token stays valid until it expires). */
  refresh(session: Session): Session {
    return this.#open(session.username);
  }

  /** Expire every session now: the next call with any token gets 401. */
  expireAll(): void {
    this.#sessions.clear();
  }

  #open(username: string): Session {
    const now = Date.now();
    for (const [token, s] of this.#sessions) if (s.expiresAt <= now) this.#sessions.delete(token);
    const session: Session = { token: randomBytes(24).toString('base64url'), username, expiresAt: now + this.ttlMs };
    this.#sessions.set(session.token, session);
    return session;
  }
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
