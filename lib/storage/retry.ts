/**
 * Optimistic-concurrency helpers: re-read and retry on a stale `version` (HTTP 412).
 *
 * Upstream api-manager retries a stale write on the next poll or requeue; a function can do the
 * re-read at once and save a whole reconcile. The re-read must happen inside `attempt`, so each try
 * computes its write from fresh state.
 */
import { StaleVersionError } from './errors.ts';
import type { CallOptions, SharedVolumeSource, VolumeRef } from './types.ts';

/** Default number of attempts of {@link retryOnStaleVersion}. */
export const DEFAULT_STALE_ATTEMPTS = 3;

/**
 * Run `attempt` (which reads, decides and writes) and run it again after each {@link StaleVersionError},
 * at most `attempts` times in all; the last `StaleVersionError` is rethrown. Other errors pass through.
 *
 * @example
 * await retryOnStaleVersion(async () => {
 *   const node = (await storage.listNodes()).find((n) => n.name === 'worker-1')!;
 *   await storage.setComputeOnly({ id: node.id, computeOnly: true, version: node.version });
 * });
 */
export async function retryOnStaleVersion<T>(attempt: (n: number) => Promise<T>, attempts = DEFAULT_STALE_ATTEMPTS): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!(err instanceof StaleVersionError) || n >= attempts) throw err;
    }
  }
}

/** What {@link ensureExternalEndpoint} did. */
export type EnsureEndpointOutcome = 'unchanged' | 'updated' | 'not-shared';

/**
 * api-manager `SetExternalEndpoint` with the re-read built in: read the volume, do nothing when its
 * published endpoint already equals `endpoint`, else write it with the version just read; on 412 read
 * again and retry. `not-shared` when the volume no longer qualifies (e.g. failing over).
 */
export async function ensureExternalEndpoint(
  source: SharedVolumeSource,
  ref: VolumeRef,
  endpoint: string,
  options: CallOptions & { attempts?: number } = {},
): Promise<EnsureEndpointOutcome> {
  return retryOnStaleVersion(async () => {
    const volume = await source.getSharedVolume(ref, options);
    if (volume === undefined) return 'not-shared';
    if (volume.externalEndpoint === endpoint) return 'unchanged';
    await source.setExternalEndpoint(
      { id: ref.id, namespace: ref.namespace, namespaceID: volume.namespaceID, endpoint, version: volume.version },
      options,
    );
    return 'updated';
  }, options.attempts);
}
