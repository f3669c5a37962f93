/**
 * One storage control plane per cluster. Real StorageOS runs one control plane in each cluster, so a
 * deployment serving several clusters needs the endpoint of each. It is an optional `storage` field of a
 * cluster's `CLUSTERS` entry (the entry `lib/kube/client.ts` reads for the Kubernetes side, which ignores
 * the field):
 *
 * ```json
 * { "a": { "kubeconfig": "/a.yaml", "storage": { "url": "http://10.0.0.1:5705" } },
 *   "b": { "eks": { "name": "b" }, "storage": { "url": "http://10.1.0.1:5705", "secretArn": "arn:…" } } }
 * ```
 *
 * A client made by `createStorageClientFromEnv` routes each call to the control plane of the cluster
 * whose record is being reconciled: the caller marks it with {@link runWithStorageCluster} (an
 * AsyncLocalStorage, so every call made inside, however deep, is routed). Outside such a scope, and for a
 * cluster without a `storage` field, calls go to `STORAGE_API_URL` as before. Without any `storage` field
 * in `CLUSTERS` nothing changes: the plain single-URL client is returned.
 *
 * @example
 * const storage = createStorageClientFromEnv(process.env);
 * await runWithStorageCluster(record.cluster, () => storage.listNodes());
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { z } from 'zod';
import { StorageError } from './errors.ts';

/** Where one cluster's control plane is, and how to log in (credentials default to the function's). */
export interface ClusterStorageEndpoint {
  url: string;
  username?: string;
  password?: string;
  /** A Secrets Manager secret `{ "username", "password" }` (as `STORAGE_API_SECRET_ARN`). */
  secretArn?: string;
}

const EndpointSchema = z.object({
  url: z.string().min(1),
  username: z.string().optional(),
  password: z.string().optional(),
  secretArn: z.string().min(1).optional(),
});
// Only the `storage` field is read here; the rest of each entry belongs to lib/kube/client.ts.
const ClustersSchema = z.record(z.string(), z.object({ storage: EndpointSchema.optional() }).passthrough());

/** `CLUSTERS` holds a `storage` field that is not valid. */
export class ClusterStorageConfigError extends StorageError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ClusterStorageConfigError';
  }
}

/**
 * The `storage` endpoints of `CLUSTERS` by cluster id (clusters without one are absent). Empty when
 * `CLUSTERS` is unset or empty. Throws {@link ClusterStorageConfigError} for invalid JSON or an invalid field.
 */
export function parseClusterStorage(json: string | undefined): Record<string, ClusterStorageEndpoint> {
  if (json === undefined || json.trim() === '') return {};
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new ClusterStorageConfigError('CLUSTERS is not JSON', { cause: error });
  }
  const parsed = ClustersSchema.safeParse(raw);
  if (!parsed.success) throw new ClusterStorageConfigError(`CLUSTERS has an invalid storage field: ${parsed.error.message}`);
  const out: Record<string, ClusterStorageEndpoint> = {};
  for (const [cluster, entry] of Object.entries(parsed.data)) if (entry.storage) out[cluster] = entry.storage;
  return out;
}

const currentCluster = new AsyncLocalStorage<string>();

/** Runs `fn` with `cluster` as the cluster storage calls are routed to (see the module's doc). */
export function runWithStorageCluster<T>(cluster: string, fn: () => T): T {
  return currentCluster.run(cluster, fn);
}

/** The cluster set by the innermost {@link runWithStorageCluster}, if any. */
export function storageCluster(): string | undefined {
  return currentCluster.getStore();
}

/**
 * A client that forwards every property access to the client of the current cluster
 * ({@link storageCluster}), made on first use by `clientFor`, or to `fallback` outside a cluster scope or
 * for a cluster `clientFor` has none for (`undefined`). Methods are bound to the real client, so its
 * private state (tokens, namespace IDs) stays per control plane.
 */
export function routeByCluster<T extends object>(fallback: T, clientFor: (cluster: string) => T | undefined): T {
  const clients = new Map<string, T | undefined>();
  const pick = (): T => {
    const cluster = storageCluster();
    if (cluster === undefined) return fallback;
    if (!clients.has(cluster)) clients.set(cluster, clientFor(cluster));
    return clients.get(cluster) ?? fallback;
  };
  return new Proxy(fallback, {
    get(_target, prop) {
      const client = pick();
      const value = Reflect.get(client, prop, client) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(client) : value;
    },
  });
}
