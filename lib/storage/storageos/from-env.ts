/**
 * Build the StorageOS client from the environment every function and the local stack share
 * (`STORAGE_API_URL`, and the credentials: `STORAGE_API_SECRET_ARN` in AWS, `STORAGE_API_USERNAME`/
 * `STORAGE_API_PASSWORD` locally; see `../credentials.ts` and `lib/runtime/reconcile.ts` ENV).
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ENV } from '../../runtime/reconcile.ts';
import { SecretCredentialsSource, STORAGE_API_SECRET_ARN, type StorageCredentials, type StorageCredentialsSource } from '../credentials.ts';
import { parseClusterStorage, routeByCluster } from '../clusters.ts';
import { StorageError, UnauthorizedError } from '../errors.ts';
import type { CallOptions } from '../types.ts';
import { StorageOSClient } from './client.ts';
import { type ApiResponse, type RequestOptions, StorageOSTransport, type StorageOSTransportOptions } from './transport.ts';

/** Options of {@link CredentialSourceTransport}: the transport's, with credentials from a source. */
export type CredentialSourceTransportOptions = Omit<StorageOSTransportOptions, 'username' | 'password'> & {
  credentials: StorageCredentialsSource;
};

/** A transport built from one set of credentials. */
interface Bound {
  transport: StorageOSTransport;
  credentials: StorageCredentials;
}

/**
 * A {@link StorageOSTransport} whose credentials come from a {@link StorageCredentialsSource} (a
 * Secrets Manager secret). The first call resolves the credentials and builds the real transport, which
 * keeps its own token lifecycle (login, re-login once on 401). When a call still ends in 401 — the login
 * itself was rejected — the source is re-read once: if the credentials changed (the secret was rotated),
 * the transport is rebuilt with them and the call repeated once; otherwise the 401 stands. Concurrent
 * failures share one re-read; a later failure re-reads again.
 */
export class CredentialSourceTransport extends StorageOSTransport {
  #options: Omit<StorageOSTransportOptions, 'username' | 'password'>;
  #source: StorageCredentialsSource;
  #bound: Promise<Bound> | undefined;
  #current: Bound | undefined;
  #renewing: { from: Bound; fresh: Promise<Bound | undefined> } | undefined;
  #retiredLogins = 0;

  constructor(options: CredentialSourceTransportOptions) {
    const { credentials, ...transportOptions } = options;
    // The base only carries the endpoint (baseUrl); every call goes to the bound transport.
    super({ ...transportOptions, username: '', password: '' });
    this.#options = transportOptions;
    this.#source = credentials;
  }

  /** Logins performed so far, across credential renewals. */
  override get logins(): number {
    return this.#retiredLogins + (this.#current?.transport.logins ?? 0);
  }

  /** Whether a token is held. */
  override get authenticated(): boolean {
    return this.#current?.transport.authenticated ?? false;
  }

  override login(options: CallOptions = {}): Promise<string> {
    return this.#call((t) => t.login(options));
  }

  override reset(): void {
    this.#current?.transport.reset();
  }

  override refresh(options: CallOptions = {}): Promise<void> {
    return this.#call((t) => t.refresh(options));
  }

  override request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.#call((t) => t.request(method, path, options));
  }

  async #call<T>(call: (transport: StorageOSTransport) => Promise<T>): Promise<T> {
    const bound = await this.#bind();
    try {
      return await call(bound.transport);
    } catch (err) {
      if (!(err instanceof UnauthorizedError)) throw err;
      const fresh = await this.#renew(bound);
      if (fresh === undefined) throw err;
      return call(fresh.transport);
    }
  }

  #bind(): Promise<Bound> {
    this.#bound ??= this.#source.get().then(
      (credentials) => this.#install(credentials),
      (err: unknown) => {
        this.#bound = undefined;
        throw err;
      },
    );
    return this.#bound;
  }

  #install(credentials: StorageCredentials): Bound {
    if (this.#current !== undefined) this.#retiredLogins += this.#current.transport.logins;
    const bound = { credentials, transport: new StorageOSTransport({ ...this.#options, ...credentials }) };
    this.#current = bound;
    this.#bound = Promise.resolve(bound);
    return bound;
  }

  /** Re-read the credentials after `from` was rejected; the new binding, or `undefined` if unchanged. */
  #renew(from: Bound): Promise<Bound | undefined> {
    if (this.#current !== undefined && this.#current !== from) return Promise.resolve(this.#current);
    if (this.#renewing?.from === from) return this.#renewing.fresh;
    const fresh = (async () => {
      const credentials = await this.#source.reread();
      if (credentials === undefined) return undefined;
      if (credentials.username === from.credentials.username && credentials.password === from.credentials.password) return undefined;
      return this.#install(credentials);
    })();
    this.#renewing = { from, fresh };
    // Only failures while this read is in flight share it; a later failure re-reads again.
    const done = () => {
      if (this.#renewing?.fresh === fresh) this.#renewing = undefined;
    };
    fresh.then(done, done);
    return fresh;
  }
}

/** Extra options of {@link createStorageClientFromEnv}. */
export interface StorageClientFromEnvOptions extends Partial<StorageOSTransportOptions> {
  /** Secrets Manager client for `STORAGE_API_SECRET_ARN` (default: the function's region and role). */
  secretsManager?: Pick<SecretsManagerClient, 'send'>;
}

/**
 * A {@link StorageOSClient} configured from `env`. The URL is required. With `STORAGE_API_SECRET_ARN`
 * set, the credentials come from that secret (`{ "username", "password" }`, read once per client and
 * re-read when a login is rejected); otherwise from `STORAGE_API_USERNAME`/`STORAGE_API_PASSWORD`,
 * defaulting to `storageos`/`storageos` (the local control plane's defaults). Explicit `username` and
 * `password` in `overrides` win over both.
 *
 * When `CLUSTERS` gives some cluster a `storage` endpoint (`../clusters.ts`), the client routes each call
 * made inside `runWithStorageCluster(cluster, …)` to that cluster's control plane (its own credentials,
 * else the ones above); other calls go to `STORAGE_API_URL`, which may then be unset (such a call fails
 * with a {@link StorageError}).
 */
export function createStorageClientFromEnv(
  env: Record<string, string | undefined> = process.env,
  overrides: StorageClientFromEnvOptions = {},
): StorageOSClient {
  const perCluster = parseClusterStorage(env[ENV.clusters]);
  const endpoint = env[ENV.storageApiUrl];
  const hasDefault = endpoint !== undefined && endpoint !== '';
  if (Object.keys(perCluster).length === 0) {
    if (!hasDefault) throw new StorageError(`${ENV.storageApiUrl} is not set`);
    return clientFor(endpoint, env, overrides);
  }
  const fallback = hasDefault ? clientFor(endpoint, env, overrides) : unconfiguredClient();
  return routeByCluster(fallback, (cluster) => {
    const entry = perCluster[cluster];
    if (entry === undefined) return undefined;
    const own = {
      ...env,
      [STORAGE_API_SECRET_ARN]: entry.secretArn ?? (entry.username !== undefined ? undefined : env[STORAGE_API_SECRET_ARN]),
      [ENV.storageApiUsername]: entry.username ?? env[ENV.storageApiUsername],
      [ENV.storageApiPassword]: entry.password ?? env[ENV.storageApiPassword],
    };
    return clientFor(entry.url, own, overrides);
  });
}

/** The single-endpoint client (the behaviour without per-cluster endpoints). */
function clientFor(endpoint: string, env: Record<string, string | undefined>, overrides: StorageClientFromEnvOptions): StorageOSClient {
  const { secretsManager, ...transportOverrides } = overrides;
  const secretId = env[STORAGE_API_SECRET_ARN];
  if (secretId !== undefined && secretId !== '' && transportOverrides.username === undefined && transportOverrides.password === undefined) {
    const credentials = new SecretCredentialsSource({ secretId, ...(secretsManager ? { client: secretsManager } : {}) });
    return new StorageOSClient({ transport: new CredentialSourceTransport({ endpoint, ...transportOverrides, credentials }) });
  }
  return new StorageOSClient({
    endpoint,
    username: env[ENV.storageApiUsername] ?? 'storageos',
    password: env[ENV.storageApiPassword] ?? 'storageos',
    ...transportOverrides,
  });
}

/** Stands for `STORAGE_API_URL` when only per-cluster endpoints are configured: every call fails. */
function unconfiguredClient(): StorageOSClient {
  const fail = (): never => {
    throw new StorageError(`${ENV.storageApiUrl} is not set and the call was made outside a cluster with a CLUSTERS storage endpoint`);
  };
  return new Proxy({} as StorageOSClient, { get: (_t, prop) => (prop === 'then' ? undefined : () => Promise.resolve().then(fail)) });
}
