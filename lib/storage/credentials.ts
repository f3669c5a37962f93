/**
 * Where the StorageOS API credentials come from.
 *
 * - In AWS: a Secrets Manager secret (`STORAGE_API_SECRET_ARN`) holding the JSON
 *   `{ "username": "…", "password": "…" }` — the shape api-manager reads from its Kubernetes secret
 *   (`username`/`password` keys). It is read once per container and cached; {@link SecretCredentialsSource.reread}
 *   reads it again (after the API rejected a login, so a rotated secret is picked up).
 * - Locally: `STORAGE_API_USERNAME`/`STORAGE_API_PASSWORD` (default `storageos`/`storageos`, the local
 *   control plane's defaults), set by the local stack.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { z } from 'zod';
import { ENV } from '../runtime/reconcile.ts';
import { StorageError } from './errors.ts';
import { sdkClientConfig } from '../runtime/sdk-client.ts';

/** Environment variable naming the Secrets Manager secret with the storage API credentials. */
export const STORAGE_API_SECRET_ARN = 'STORAGE_API_SECRET_ARN';

/** Username and password of the StorageOS API. */
export interface StorageCredentials {
  username: string;
  password: string;
}

/** A source of {@link StorageCredentials}. */
export interface StorageCredentialsSource {
  /** The credentials (cached by sources that fetch them). */
  get(): Promise<StorageCredentials>;
  /**
   * Fetch the credentials again, bypassing any cache; `undefined` when the source cannot change
   * (environment variables).
   */
  reread(): Promise<StorageCredentials | undefined>;
}

/** The credentials could not be read or the secret is not `{ "username", "password" }`. */
export class StorageCredentialsError extends StorageError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageCredentialsError';
  }
}

const SecretSchema = z.object({ username: z.string().min(1), password: z.string().min(1) });

/** Parse a secret string `{ "username", "password" }` (other keys are ignored). */
export function parseStorageSecret(secretString: string, secretId: string): StorageCredentials {
  let json: unknown;
  try {
    json = JSON.parse(secretString);
  } catch {
    // no cause: JSON.parse's message quotes the text, which is the password
    throw new StorageCredentialsError(`secret ${secretId} is not JSON`);
  }
  const parsed = SecretSchema.safeParse(json);
  if (!parsed.success) throw new StorageCredentialsError(`secret ${secretId} lacks a non-empty "username" and "password"`);
  return { username: parsed.data.username, password: parsed.data.password };
}

/** Fixed credentials (environment variables); nothing to re-read. */
export class StaticCredentialsSource implements StorageCredentialsSource {
  readonly #credentials: StorageCredentials;

  constructor(credentials: StorageCredentials) {
    this.#credentials = { ...credentials };
  }

  get(): Promise<StorageCredentials> {
    return Promise.resolve({ ...this.#credentials });
  }

  reread(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
}

/** Options of {@link SecretCredentialsSource}. */
export interface SecretCredentialsSourceOptions {
  /** ARN (or name) of the secret. */
  secretId: string;
  /** The Secrets Manager client (default: one for the function's region and role). */
  client?: Pick<SecretsManagerClient, 'send'>;
}

/**
 * Credentials from a Secrets Manager secret, read on first use and cached for the life of the
 * container. Concurrent callers share one read; a failed read is not cached.
 */
export class SecretCredentialsSource implements StorageCredentialsSource {
  readonly secretId: string;
  #client: Pick<SecretsManagerClient, 'send'> | undefined;
  #cached: Promise<StorageCredentials> | undefined;
  #reads = 0;

  constructor(options: SecretCredentialsSourceOptions) {
    if (options.secretId === '') throw new StorageCredentialsError('secret id is empty');
    this.secretId = options.secretId;
    this.#client = options.client;
  }

  /** Secrets Manager reads so far. */
  get reads(): number {
    return this.#reads;
  }

  get(): Promise<StorageCredentials> {
    this.#cached ??= this.#read();
    return this.#cached;
  }

  /** Read the secret again, bypassing the cache, and cache the answer. */
  reread(): Promise<StorageCredentials> {
    this.#cached = this.#read();
    return this.#cached;
  }

  #read(): Promise<StorageCredentials> {
    this.#reads++;
    const client = (this.#client ??= new SecretsManagerClient(sdkClientConfig()));
    const read = (async () => {
      let secretString: string | undefined;
      try {
        const out = await client.send(new GetSecretValueCommand({ SecretId: this.secretId }));
        secretString = out.SecretString;
      } catch (err) {
        throw new StorageCredentialsError(`reading secret ${this.secretId}: ${(err as Error).message}`, { cause: err });
      }
      if (secretString === undefined) throw new StorageCredentialsError(`secret ${this.secretId} has no SecretString`);
      return parseStorageSecret(secretString, this.secretId);
    })();
    // A failed read is forgotten so the next call tries again.
    read.catch(() => {
      if (this.#cached === read) this.#cached = undefined;
    });
    return read;
  }
}

/**
 * The credentials source `env` describes: the secret named by `STORAGE_API_SECRET_ARN` when set,
 * else `STORAGE_API_USERNAME`/`STORAGE_API_PASSWORD` (default `storageos`/`storageos`).
 */
export function storageCredentialsFromEnv(
  env: Record<string, string | undefined> = process.env,
  client?: Pick<SecretsManagerClient, 'send'>,
): StorageCredentialsSource {
  const secretId = env[STORAGE_API_SECRET_ARN];
  if (secretId !== undefined && secretId !== '') return new SecretCredentialsSource({ secretId, ...(client ? { client } : {}) });
  return new StaticCredentialsSource({
    username: env[ENV.storageApiUsername] ?? 'storageos',
    password: env[ENV.storageApiPassword] ?? 'storageos',
  });
}
