/**
 * Build the StorageOS client from the environment every function and the local stack share
 * (`STORAGE_API_URL`, `STORAGE_API_USERNAME`, `STORAGE_API_PASSWORD`; see `lib/runtime/reconcile.ts` ENV).
 */
import { ENV } from '../../runtime/reconcile.ts';
import { StorageError } from '../errors.ts';
import { StorageOSClient } from './client.ts';
import type { StorageOSTransportOptions } from './transport.ts';

/**
 * A {@link StorageOSClient} configured from `env`. The URL is required; username and password default
 * to `storageos`/`storageos` (the local control plane's defaults).
 */
export function createStorageClientFromEnv(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<StorageOSTransportOptions> = {},
): StorageOSClient {
  const endpoint = env[ENV.storageApiUrl];
  if (endpoint === undefined || endpoint === '') throw new StorageError(`${ENV.storageApiUrl} is not set`);
  return new StorageOSClient({
    endpoint,
    username: env[ENV.storageApiUsername] ?? 'storageos',
    password: env[ENV.storageApiPassword] ?? 'storageos',
    ...overrides,
  });
}
