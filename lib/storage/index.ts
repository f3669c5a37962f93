/**
 * The storage control plane: interfaces, errors, helpers and the StorageOS v2 client.
 */
export * from './types.ts';
export * from './errors.ts';
export { isReservedLabel, parseBool } from './labels.ts';
export { splitHostPort, toSharedVolume, type HostPort } from './shared-volume.ts';
export { retryOnStaleVersion, ensureExternalEndpoint, DEFAULT_STALE_ATTEMPTS, type EnsureEndpointOutcome } from './retry.ts';
export { StorageOSClient, toNode, toVolume, type StorageOSClientOptions } from './storageos/client.ts';
export { StorageOSTransport, normalizeEndpoint, bearerToken, type StorageOSTransportOptions, type RequestOptions, type RequestEvent } from './storageos/transport.ts';
export { DEFAULT_BACKOFF, type BackoffOptions } from './storageos/backoff.ts';
export { createStorageClientFromEnv } from './storageos/from-env.ts';
export { parseClusterStorage, runWithStorageCluster, storageCluster, routeByCluster, ClusterStorageConfigError, type ClusterStorageEndpoint } from './clusters.ts';
