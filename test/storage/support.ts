/**
 * Test helper: the embedded storage control plane on port 0 and a StorageOS client pointed at it, with
 * a fast, jitter-free backoff so retry tests stay quick.
 */
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import type { StorageOSTransportOptions } from '../../lib/storage/storageos/transport.ts';
import { startStorageApi, type StorageApiHandle, type StorageApiOptions } from '../../infra/local/storage-api/server.ts';

/** A running control plane and a client for it. */
export interface StorageFixture {
  api: StorageApiHandle;
  client: StorageOSClient;
  /** Another client against the same control plane. */
  newClient(overrides?: Partial<StorageOSTransportOptions>): StorageOSClient;
  stop(): Promise<void>;
}

/** Start the control plane (port 0) and a client (4 attempts, 5 ms doubling, no jitter, 2 s timeout). */
export async function startStorage(
  options: StorageApiOptions = {},
  clientOptions: Partial<StorageOSTransportOptions> = {},
): Promise<StorageFixture> {
  const api = await startStorageApi({ port: 0, ...options });
  const newClient = (overrides: Partial<StorageOSTransportOptions> = {}): StorageOSClient =>
    new StorageOSClient({
      endpoint: api.url,
      username: options.username ?? 'storageos',
      password: options.password ?? 'storageos',
      timeoutMs: 2_000,
      backoff: { attempts: 4, baseDelayMs: 5, maxDelayMs: 50, jitter: false },
      ...clientOptions,
      ...overrides,
    });
  return { api, client: newClient(), newClient, stop: () => api.stop() };
}

/** CSI labels of a Kubernetes-provisioned volume. */
export function csiLabels(pv: string, pvc: string, namespace: string): Record<string, string> {
  return {
    'csi.storage.k8s.io/pv/name': pv,
    'csi.storage.k8s.io/pvc/name': pvc,
    'csi.storage.k8s.io/pvc/namespace': namespace,
  };
}
