/**
 * The HTTP transport of the StorageOS v2 client: base URL, JSON bodies, the bearer token and its
 * lifecycle (login, refresh, reset, re-login on 401), per-request timeouts, error mapping, and
 * exponential backoff on 5xx and transport errors. undici's dispatcher API does the HTTP, over undici's global
 * keep-alive pool (as the Kubernetes client does, lib/kube/http.ts): `fetch` would wrap every exchange in
 * WHATWG `Request`, `Headers` and `Response` objects and a web stream, which is most of what a call costs
 * the caller once its connection is pooled. As `fetch` (and Go's client in api-manager) did, it asks for gzip
 * and decompresses a gzipped answer, and keeps the server's reason phrase; unlike `fetch` it follows no
 * redirect (the API answers in place).
 *
 * Token lifecycle (api-manager `client.go`, reference storageos.md §1.13 and §3.1):
 * - the first call logs in (`POST /v2/auth/login`); the token arrives in the `Authorization` response
 *   header as `Bearer <jwt>`;
 * - a 401 on any call drops the token, logs in again and repeats the call **once**; concurrent calls
 *   share one login;
 * - {@link StorageOSTransport.reset} is the `apiReset` path (drop the token, log in on next use);
 *   {@link StorageOSTransport.refresh} is `POST /v2/auth/refresh`, falling back to a login on failure.
 */
import {
  RetriesExhaustedError,
  StorageError,
  StorageTransportError,
  isRetryable,
  mapApiError,
} from '../errors.ts';
import type { CallOptions } from '../types.ts';
import { type BackoffOptions, type Backoff, backoffDelay, resolveBackoff, sleep } from './backoff.ts';
import { API_PREFIX, DEFAULT_API_PORT } from './wire.ts';
import { STATUS_CODES } from 'node:http';
import { request as send, type Dispatcher } from 'undici';
import { decodeBody, joinHeaders } from '../../runtime/undici-answer.ts';

/** How to reach and authenticate to a StorageOS API. */
export interface StorageOSTransportOptions {
  /** `host`, `host:port` or a URL; `http://` and port 5705 are added when missing (api-manager `-api-endpoint`). */
  endpoint: string;
  username: string;
  password: string;
  /** Per-request timeout (default 10 s, api-manager's HTTP timeout). */
  timeoutMs?: number;
  /** Timeout of a login or refresh (default 20 s, api-manager's auth timeout). */
  authTimeoutMs?: number;
  /** Backoff of one call on 5xx and transport errors. */
  backoff?: BackoffOptions;
  /** `User-Agent` header (default `claimflow/0.1 (StorageOS v2 client)`). */
  userAgent?: string;
  /**
   * Called after every HTTP exchange (each attempt, logins included), for metrics in the spirit of
   * api-manager's `storageos_api_requests_total{code,method}` and request duration histogram.
   */
  onRequest?: (event: RequestEvent) => void;
}

/** One HTTP exchange, as reported to {@link StorageOSTransportOptions.onRequest}. */
export interface RequestEvent {
  method: string;
  /** Path under `/v2`, without the query. */
  path: string;
  /** HTTP status; `undefined` when no response arrived. */
  status: number | undefined;
  durationMs: number;
}

/** One request. */
export interface RequestOptions extends CallOptions {
  /** Query parameters; `undefined` values are left out. */
  query?: Record<string, string | undefined>;
  /** JSON body. */
  body?: unknown;
  /** Called before each retry with the error that caused it (1 = first retry). */
  onRetry?: (error: unknown, retry: number) => void;
}

/** Response headers by name (any case); `null` when absent. */
export interface ResponseHeaders {
  get(name: string): string | null;
}

/** A successful response: status, parsed JSON body (`undefined` when empty) and headers. */
export interface ApiResponse {
  status: number;
  body: unknown;
  headers: ResponseHeaders;
}

/** One HTTP exchange, its body read whole. */
interface Answer {
  status: number;
  ok: boolean;
  statusText: string;
  text: string;
  headers: ResponseHeaders;
}

/** Normalise an endpoint as api-manager does: add `http://` and `:5705` when missing; no trailing slash. */
export function normalizeEndpoint(endpoint: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint) ? endpoint : `http://${endpoint}`;
  const url = new URL(withScheme);
  const explicitPort = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?(?:\[[^\]]*\]|[^:/?#]*):\d+/i.test(withScheme);
  if (!explicitPort) url.port = String(DEFAULT_API_PORT);
  return url.toString().replace(/\/+$/, '');
}

/** The token in an `Authorization: Bearer <jwt>` header, or `undefined`. */
export function bearerToken(header: string | null): string | undefined {
  if (header === null) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
  return match?.[1];
}

/**
 * HTTP transport with authentication, timeouts, error mapping and backoff.
 *
 * @example
 * const transport = new StorageOSTransport({ endpoint: 'http://127.0.0.1:5705', username: 'storageos', password: 'storageos' });
 * const { body } = await transport.request('GET', '/namespaces');
 */
export class StorageOSTransport {
  /** Base URL without the `/v2` prefix. */
  readonly baseUrl: string;
  #username: string;
  #password: string;
  #timeoutMs: number;
  #authTimeoutMs: number;
  #backoff: Backoff;
  #userAgent: string;
  #onRequest: ((event: RequestEvent) => void) | undefined;
  #token: string | undefined;
  #pendingLogin: Promise<string> | undefined;
  #logins = 0;

  constructor(options: StorageOSTransportOptions) {
    this.baseUrl = normalizeEndpoint(options.endpoint);
    this.#username = options.username;
    this.#password = options.password;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#authTimeoutMs = options.authTimeoutMs ?? 20_000;
    this.#backoff = resolveBackoff(options.backoff);
    this.#userAgent = options.userAgent ?? 'claimflow/0.1 (StorageOS v2 client)';
    this.#onRequest = options.onRequest;
  }

  /** Logins performed so far (for tests and metrics). */
  get logins(): number {
    return this.#logins;
  }

  /** Whether a token is held. */
  get authenticated(): boolean {
    return this.#token !== undefined;
  }

  /**
   * Log in and keep the token. Concurrent callers share one login. A 401 means bad credentials
   * (`UnauthorizedError`).
   */
  login(options: CallOptions = {}): Promise<string> {
    // The shared login runs under its own timeout only: one caller aborting must not fail the others.
    this.#pendingLogin ??= this.#doLogin({}).finally(() => {
      this.#pendingLogin = undefined;
    });
    return untilAborted(this.#pendingLogin, options.signal);
  }

  /** Drop the token; the next call logs in again (api-manager's `apiReset`). */
  reset(): void {
    this.#token = undefined;
  }

  /**
   * `POST /v2/auth/refresh` with the current token and swap in the new one. Without a token, or when the
   * refresh fails for any reason, log in instead (api-manager PR #38). A response without a token keeps
   * the old one.
   */
  async refresh(options: CallOptions = {}): Promise<void> {
    const token = this.#token;
    if (token === undefined) {
      await this.login(options);
      return;
    }
    try {
      const response = await this.#send('POST', '/auth/refresh', {}, token, this.#authTimeoutMs);
      if (!response.ok) throw mapApiError(response.status, errorMessage(response.text, response.statusText), 'POST /v2/auth/refresh');
      const fresh = bearerToken(response.headers.get('authorization'));
      if (fresh !== undefined && this.#token === token) this.#token = fresh;
    } catch (err) {
      if (options.signal?.aborted) throw err;
      this.#token = undefined;
      await this.login(options);
    }
  }

  /**
   * Send one API call (`path` is relative to `/v2`): authenticated, re-logging in once on 401, retried
   * with backoff on 5xx and transport errors. Non-2xx answers throw the mapped error; when retries run
   * out, {@link RetriesExhaustedError} with the last error as `cause`.
   */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const operation = `${method} ${API_PREFIX}${path}`;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#authorized(method, path, options, operation);
      } catch (err) {
        if (!isRetryable(err) || options.signal?.aborted) throw err;
        if (attempt >= this.#backoff.attempts) {
          throw attempt === 1 ? err : new RetriesExhaustedError(operation, attempt, err);
        }
        options.onRetry?.(err, attempt);
        await sleep(backoffDelay(this.#backoff, attempt - 1), options.signal);
      }
    }
  }

  async #authorized(method: string, path: string, options: RequestOptions, operation: string): Promise<ApiResponse> {
    let token = this.#token ?? (await this.login(options));
    let response = await this.#send(method, path, options, token, this.#timeoutMs, operation);
    if (response.status === 401) {
      if (this.#token === token) this.#token = undefined;
      token = this.#token ?? (await this.login(options));
      response = await this.#send(method, path, options, token, this.#timeoutMs, operation);
    }
    if (!response.ok) throw mapApiError(response.status, errorMessage(response.text, response.statusText), operation);
    return { status: response.status, body: parseBody(response.text, operation), headers: response.headers };
  }

  async #doLogin(options: CallOptions): Promise<string> {
    const operation = `POST ${API_PREFIX}/auth/login`;
    const response = await this.#send(
      'POST',
      '/auth/login',
      { ...options, body: { username: this.#username, password: this.#password } },
      undefined,
      this.#authTimeoutMs,
      operation,
    );
    // a server that echoes the request must not put the password into an error message
    if (!response.ok) throw mapApiError(response.status, redact(errorMessage(response.text, response.statusText), this.#password), operation);
    const token = bearerToken(response.headers.get('authorization'));
    if (token === undefined) throw new StorageError(`${operation}: no auth token in the response's Authorization header`);
    this.#token = token;
    this.#logins++;
    return token;
  }

  async #send(
    method: string,
    path: string,
    options: RequestOptions,
    token: string | undefined,
    timeoutMs: number,
    operation = `${method} ${API_PREFIX}${path}`,
  ): Promise<Answer> {
    const url = new URL(`${this.baseUrl}${API_PREFIX}${path}`);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': 'gzip', 'user-agent': this.#userAgent };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    const started = performance.now();
    let status: number | undefined;
    try {
      const response = await send(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal,
      });
      const answered = joinHeaders(response.headers);
      // Read the body now, under the same timeout, so a stalled body is a transport error too.
      const text = (await decodeBody(await response.body.arrayBuffer(), answered)).toString('utf8');
      status = response.statusCode;
      return {
        status,
        ok: status >= 200 && status < 300,
        statusText: response.statusText || (STATUS_CODES[status] ?? ''),
        text: status === 204 ? '' : text,
        headers: { get: (name) => (Object.hasOwn(answered, name.toLowerCase()) ? answered[name.toLowerCase()]! : null) },
      };
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw new StorageTransportError(operation, timeout.aborted, { cause: err });
    } finally {
      this.#onRequest?.({ method, path, status, durationMs: performance.now() - started });
    }
  }
}

/** `promise`, or the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

function parseBody(text: string, operation: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new StorageError(`${operation}: response body is not JSON`, { cause: err });
  }
}

/** `text` with every occurrence of `secret` replaced. */
function redact(text: string, secret: string): string {
  return secret.length >= 3 ? text.split(secret).join('[REDACTED]') : text;
}

function errorMessage(text: string, fallback: string): string {
  if (text !== '') {
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { error?: unknown }).error === 'string') {
        return (parsed as { error: string }).error;
      }
    } catch {
      return text.slice(0, 500);
    }
    return text.slice(0, 500);
  }
  return fallback;
}
