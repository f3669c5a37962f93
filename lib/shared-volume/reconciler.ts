/**
 * The shared volume reconciler (api-manager `sharedvolume.Reconciler`): one poll iteration over all shared
 * volumes, one volume at a time, and the loop that repeats it until a deadline (reference storageos.md §1.2).
 *
 * Per volume: a fresh, equal cache entry means no Kubernetes call at all; otherwise the claim must exist
 * (else the volume is skipped and counted), `ensureService` converges the Service and Endpoints, the mount
 * endpoint is published only when it differs from the one the volume carries (with its `version`; a 412
 * re-reads and retries), and only then is the cache entry written. One volume's failure never stops the others.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CoreV1Api } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import type { EventRecorder } from '../kube/recorder.ts';
import { ensureExternalEndpoint } from '../storage/retry.ts';
import type { SharedVolume, SharedVolumeSource } from '../storage/types.ts';
import type { SharedVolumeCache } from './cache.ts';
import { effectiveExpiryMs, type SharedVolumeConfig } from './config.ts';
import { SV_METRIC } from './constants.ts';
import { ensureService } from './ensure-service.ts';
import { claimOwnerReference, needsPublish, sharedVolumeIsEqual } from './objects.ts';

/** The control plane as the reconciler uses it; `reset` is api-manager's `apiReset` (re-login). */
export type SharedVolumeApi = SharedVolumeSource & { reset?(): void };

/** Where counters and durations go (the function adapts Powertools metrics to it). */
export interface SharedVolumeMetricsSink {
  count(name: string, value?: number): void;
  duration(name: string, ms: number): void;
}

/** Minimal structured logger. */
export interface SharedVolumeLogger {
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
}

/** Everything the reconciler needs. */
export interface SharedVolumeReconcilerDeps {
  storage: SharedVolumeApi;
  core: CoreV1Api;
  recorder: EventRecorder;
  cache: SharedVolumeCache;
  config: SharedVolumeConfig;
  metrics?: SharedVolumeMetricsSink;
  logger?: SharedVolumeLogger;
  signal?: AbortSignal;
}

/** What happened to one volume. */
export type VolumeOutcome = 'cached' | 'claim-missing' | 'ready' | 'published' | 'failed';

/** What one poll iteration did. */
export interface PollResult {
  listed: number;
  /** `undefined` when the list failed. */
  outcomes: Map<string, VolumeOutcome> | undefined;
  durationMs: number;
}

const NO_METRICS: SharedVolumeMetricsSink = { count: () => {}, duration: () => {} };
const NO_LOGS: SharedVolumeLogger = { info: () => {}, warn: () => {} };

/** The shared volume reconciler of one cluster. */
export class SharedVolumeReconciler {
  readonly #deps: SharedVolumeReconcilerDeps;
  readonly #metrics: SharedVolumeMetricsSink;
  readonly #logger: SharedVolumeLogger;

  constructor(deps: SharedVolumeReconcilerDeps) {
    this.#deps = deps;
    this.#metrics = deps.metrics ?? NO_METRICS;
    this.#logger = deps.logger ?? NO_LOGS;
  }

  /**
   * One iteration: list the shared volumes and reconcile each. With `only`, just the volumes it selects,
   * ignoring their cache entries (an event said their objects changed). A failed list resets the API
   * client (re-login) and reconciles nothing, as upstream.
   */
  async pollOnce(options: { only?: (volume: SharedVolume) => boolean } = {}): Promise<PollResult> {
    const start = Date.now();
    let volumes: SharedVolume[];
    try {
      volumes = await this.#deps.storage.listSharedVolumes({ signal: this.#deps.signal });
    } catch (error) {
      this.#logger.warn('failed to list shared volumes', { error: String(error) });
      this.#metrics.count(SV_METRIC.listFailed);
      this.#deps.storage.reset?.();
      const durationMs = Date.now() - start;
      this.#metrics.duration(SV_METRIC.pollDuration, durationMs);
      return { listed: 0, outcomes: undefined, durationMs };
    }
    const selected = options.only ? volumes.filter(options.only) : volumes;
    const cached = options.only ? new Map<string, SharedVolume>() : await this.#cachedEntries(selected);
    const outcomes = new Map<string, VolumeOutcome>();
    let hits = 0;
    for (const volume of selected) {
      const hit = cached.get(volume.id);
      if (hit && sharedVolumeIsEqual(hit, volume)) {
        outcomes.set(volume.id, 'cached');
        hits++;
        continue;
      }
      outcomes.set(volume.id, await this.reconcileVolume(volume));
    }
    // One data point per iteration, not per volume (a steady poll of many volumes stays one EMF value).
    if (hits > 0) this.#metrics.count(SV_METRIC.cacheHits, hits);
    const durationMs = Date.now() - start;
    this.#metrics.duration(SV_METRIC.pollDuration, durationMs);
    return { listed: volumes.length, outcomes, durationMs };
  }

  /**
   * Polls until `deadline` (epoch ms): an iteration, then a sleep of the poll interval measured from its end,
   * as long as the next iteration would start before the deadline.
   */
  async pollUntil(deadline: number): Promise<PollResult[]> {
    const results: PollResult[] = [];
    for (;;) {
      results.push(await this.pollOnce());
      if (Date.now() + this.#deps.config.pollIntervalMs >= deadline || this.#deps.signal?.aborted) return results;
      await sleep(this.#deps.config.pollIntervalMs, undefined, this.#deps.signal ? { signal: this.#deps.signal } : undefined).catch(() => {});
      if (this.#deps.signal?.aborted) return results;
    }
  }

  /** One volume, cache not consulted: claim, ensureService, publish, then cache. Never throws. */
  async reconcileVolume(volume: SharedVolume): Promise<VolumeOutcome> {
    const context = { volumeId: volume.id, namespace: volume.namespace, service: volume.serviceName };
    let claim;
    try {
      claim = await this.#deps.core.readNamespacedPersistentVolumeClaim({ name: volume.pvcName, namespace: volume.namespace });
    } catch (error) {
      this.#logger.warn('failed to fetch pvc for shared volume', { ...context, pvc: volume.pvcName, error: String(error) });
      if (isNotFound(error)) {
        this.#metrics.count(SV_METRIC.claimMissing);
        return 'claim-missing';
      }
      this.#metrics.count(SV_METRIC.failed);
      return 'failed';
    }
    this.#metrics.count(SV_METRIC.reconciled);
    let endpoint: string;
    try {
      const ensured = await ensureService(
        {
          core: this.#deps.core,
          recorder: this.#deps.recorder,
          createPollIntervalMs: this.#deps.config.createPollIntervalMs,
          createWaitMs: this.#deps.config.createWaitMs,
          signal: this.#deps.signal,
        },
        volume,
        claimOwnerReference(claim),
      );
      endpoint = ensured.endpoint;
    } catch (error) {
      this.#logger.warn('shared volume create/update failed', { ...context, error: String(error) });
      this.#metrics.count(SV_METRIC.failed);
      return 'failed';
    }
    let outcome: VolumeOutcome = 'ready';
    if (needsPublish(volume, endpoint)) {
      try {
        const published = await ensureExternalEndpoint(this.#deps.storage, { namespace: volume.namespace, id: volume.id }, endpoint, {
          signal: this.#deps.signal,
        });
        if (published === 'not-shared') {
          this.#logger.warn('shared volume external endpoint update failed', { ...context, error: 'volume no longer shared' });
          this.#metrics.count(SV_METRIC.failed);
          return 'failed';
        }
        if (published === 'updated') {
          this.#metrics.count(SV_METRIC.published);
          outcome = 'published';
        }
      } catch (error) {
        this.#logger.warn('shared volume external endpoint update failed', { ...context, error: String(error) });
        this.#metrics.count(SV_METRIC.failed);
        return 'failed';
      }
      this.#logger.info('shared volume ready for use', { ...context, endpoint });
    }
    try {
      await this.#deps.cache.set({ ...volume, externalEndpoint: endpoint }, effectiveExpiryMs(this.#deps.config));
    } catch (error) {
      // The volume is converged; a lost cache write only costs a repeat on the next poll.
      this.#logger.warn('shared volume cache write failed', { ...context, error: String(error) });
    }
    return outcome;
  }

  async #cachedEntries(volumes: readonly SharedVolume[]): Promise<Map<string, SharedVolume>> {
    try {
      return await this.#deps.cache.getMany(volumes.map((v) => v.id));
    } catch (error) {
      this.#logger.warn('shared volume cache read failed', { error: String(error) });
      return new Map();
    }
  }
}
