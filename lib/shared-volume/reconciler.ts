/**
 * The shared volume reconciler (api-manager `sharedvolume.Reconciler`): one poll iteration over all shared
 * volumes, one volume at a time, and the loop that repeats it until a stop time (reference storageos.md §1.2).
 *
 * Per volume: a fresh, equal cache entry means no Kubernetes call at all; otherwise the claim must exist (else the
 * volume is skipped and counted), `ensureService` converges the Service and Endpoints (read from the object cache,
 * a GET on a miss), the mount endpoint is published only when it differs from the one the volume carries (with
 * its `version`; a 412 re-reads and retries), and only then is the cache entry written. Before its first write
 * the step takes the volume's lease (volume-lease.ts); another invocation holding it makes the volume `busy`:
 * nothing written, retried by the next pass (poll) or a short requeue (event path). One volume's failure never
 * stops the others.
 *
 * Time: a pass and each volume step have a deadline. No volume is started with less than
 * {@link startReserveMs} (1 s) left (`deferred`: the next pass takes it), and every storage and Kubernetes call
 * carries a signal that aborts at the step's deadline, so a slow API ends the step cleanly instead of running
 * into the Lambda timeout. Work cut short is `deferred`, never `failed`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CoreV1Api } from '@kubernetes/client-node';
import type { EventRecorder } from '../kube/recorder.ts';
import { withBudgetDeadline } from '../state/bucket.ts';
import type { ObjectCache } from '../state/cache.ts';
import type { LeaseStore } from '../state/lease.ts';
import { ensureExternalEndpoint } from '../storage/retry.ts';
import type { SharedVolume, SharedVolumeSource } from '../storage/types.ts';
import type { SharedVolumeCache } from './cache.ts';
import { effectiveExpiryMs, type SharedVolumeConfig } from './config.ts';
import { FINAL_PASS_MIN_GAP_MS, SV_METRIC, startReserveMs, VOLUME_LEASE_SLACK_MS, VOLUME_STEP_SLACK_MS } from './constants.ts';
import { isOutOfTime, signalUntil } from './deadline.ts';
import { ensureService } from './ensure-service.ts';
import { VolumeBusyError } from './errors.ts';
import { claimOwnerReference, needsPublish, sharedVolumeIsEqual } from './objects.ts';
import { ObjectReads, type ReadStats } from './reads.ts';
import { VolumeLease } from './volume-lease.ts';

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
  /** Aborts everything (in addition to the deadlines). */
  signal?: AbortSignal;
  /** The object cache the claim, Service and Endpoints are read from (a GET on a miss); without it, GETs only. */
  objects?: ObjectCache;
  /** Per-volume leases, so that two invocations never reconcile one volume at once; without them, no exclusion. */
  leases?: LeaseStore;
  /** The cluster id of the object cache and lease keys (required with `objects` or `leases`). */
  cluster?: string;
  /** The wait between passes of {@link SharedVolumeReconciler.pollUntil} (default: a timer; tests make it late). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * What happened to one volume. `busy`: another invocation held its lease (nothing done); `deferred`: too little
 * time left before the deadline, or the step was cut short by it (retried by the next pass).
 */
export type VolumeOutcome = 'cached' | 'claim-missing' | 'ready' | 'published' | 'failed' | 'busy' | 'deferred';

/** What one poll iteration did. */
export interface PollResult {
  listed: number;
  /** `undefined` when the list failed or was cut short by the deadline. */
  outcomes: Map<string, VolumeOutcome> | undefined;
  durationMs: number;
  /** The deadline stopped the pass (the list, or volumes left `deferred`). */
  deadlineReached: boolean;
  /** Object-cache hits, API GETs and entries taken as absent, of this pass. */
  reads: ReadStats;
}

/** Options of one pass. */
export interface PollOnceOptions {
  /** Just these volumes, ignoring their cache entries (an event said their objects changed). */
  only?: (volume: SharedVolume) => boolean;
  /** Epoch ms by which the pass must be over (default: none). */
  deadline?: number;
}

const NO_METRICS: SharedVolumeMetricsSink = { count: () => {}, duration: () => {} };
const NO_LOGS: SharedVolumeLogger = { info: () => {}, warn: () => {} };
const timerSleep = (ms: number, signal?: AbortSignal): Promise<void> => sleep(ms, undefined, signal ? { signal } : undefined);

/** The shared volume reconciler of one cluster. */
export class SharedVolumeReconciler {
  readonly #deps: SharedVolumeReconcilerDeps;
  readonly #metrics: SharedVolumeMetricsSink;
  readonly #logger: SharedVolumeLogger;
  readonly #reads: ReadStats = { cacheHits: 0, apiGets: 0, cacheAbsent: 0 };

  constructor(deps: SharedVolumeReconcilerDeps) {
    if ((deps.objects || deps.leases) && !deps.cluster) throw new TypeError('SharedVolumeReconciler: cluster is required with objects or leases');
    this.#deps = deps;
    this.#metrics = deps.metrics ?? NO_METRICS;
    this.#logger = deps.logger ?? NO_LOGS;
  }

  /** Object-cache hits, API GETs and entries taken as absent, of this reconciler so far. */
  get reads(): ReadStats {
    return { ...this.#reads };
  }

  /**
   * One iteration: list the shared volumes and reconcile each. With `only`, just the volumes it selects,
   * ignoring their cache entries. A failed list resets the API client (re-login) and reconciles nothing, as
   * upstream; a list cut short by the deadline does neither.
   */
  async pollOnce(options: PollOnceOptions = {}): Promise<PollResult> {
    const start = Date.now();
    const readsBefore = this.reads;
    const deadline = options.deadline ?? Infinity;
    const signal = signalUntil(deadline, this.#deps.signal);
    const finish = (listed: number, outcomes: Map<string, VolumeOutcome> | undefined, deadlineReached: boolean): PollResult => {
      const durationMs = Date.now() - start;
      this.#metrics.duration(SV_METRIC.pollDuration, durationMs);
      const reads = { cacheHits: this.#reads.cacheHits - readsBefore.cacheHits, apiGets: this.#reads.apiGets - readsBefore.apiGets, cacheAbsent: this.#reads.cacheAbsent - readsBefore.cacheAbsent };
      return { listed, outcomes, durationMs, deadlineReached, reads };
    };
    let volumes: SharedVolume[];
    try {
      volumes = await this.#deps.storage.listSharedVolumes({ signal });
    } catch (error) {
      if (isOutOfTime(error, signal)) {
        this.#logger.info('shared volume list cut short by the deadline', { error: String(error) });
        return finish(0, undefined, true);
      }
      this.#logger.warn('failed to list shared volumes', { error: String(error) });
      this.#metrics.count(SV_METRIC.listFailed);
      this.#deps.storage.reset?.();
      return finish(0, undefined, false);
    }
    const selected = options.only ? volumes.filter(options.only) : volumes;
    const cached = options.only ? new Map<string, SharedVolume>() : await this.#cachedEntries(selected);
    const outcomes = new Map<string, VolumeOutcome>();
    let hits = 0;
    let deadlineReached = false;
    for (const volume of selected) {
      const hit = cached.get(volume.id);
      if (hit && sharedVolumeIsEqual(hit, volume)) {
        outcomes.set(volume.id, 'cached');
        hits++;
        continue;
      }
      const outcome = await this.reconcileVolume(volume, { deadline });
      outcomes.set(volume.id, outcome);
      // A step cut short by its own bound (a hung call) is deferred too, but leaves the pass time for the others.
      if (outcome === 'deferred' && deadline - Date.now() < startReserveMs(this.#deps.config.pollIntervalMs)) deadlineReached = true;
    }
    // One data point per iteration, not per volume (a steady poll of many volumes stays one EMF value).
    if (hits > 0) this.#metrics.count(SV_METRIC.cacheHits, hits);
    return finish(volumes.length, outcomes, deadlineReached);
  }

  /**
   * Polls until `stopAt` (epoch ms), when every call still in flight is aborted: a pass, then a sleep of the
   * poll interval measured from its end, as long as another pass (as long as the last one) fits before the
   * stop. When the next regular pass would not fit, one last pass runs as late as still fits, so that the gap
   * to the next invocation's first pass stays short (it runs even when the timer for it fires late).
   */
  async pollUntil(stopAt: number): Promise<PollResult[]> {
    const results: PollResult[] = [];
    const { pollIntervalMs } = this.#deps.config;
    const reserve = startReserveMs(pollIntervalMs);
    const signal = this.#deps.signal;
    const wait = this.#deps.sleep ?? timerSleep;
    for (let final = false; ; ) {
      // The sleep before the final pass was to end `reserve` before the stop, but a timer fires late (under load,
      // by more than the last pass took) or a millisecond early: the pass it was for still runs, bounded by the
      // stop (`pollOnce`'s deadline); only a stop already past skips it.
      const left = stopAt - Date.now();
      if (signal?.aborted || left <= 0 || (!final && left < reserve)) return results;
      const result = await this.pollOnce({ deadline: stopAt });
      results.push(result);
      if (result.deadlineReached || signal?.aborted) return results;
      const now = Date.now();
      const latestStart = stopAt - result.durationMs - reserve;
      let wakeAt: number;
      if (now + pollIntervalMs <= latestStart) [wakeAt, final] = [now + pollIntervalMs, false];
      else if (latestStart - now >= Math.min(FINAL_PASS_MIN_GAP_MS, pollIntervalMs)) [wakeAt, final] = [latestStart, true];
      else return results;
      await wait(wakeAt - now, signal).catch(() => {});
    }
  }

  /**
   * One volume, cache not consulted: claim, ensureService, publish (the lease before the first write), then
   * cache. Never throws. The step ends by `deadline` (and by the create wait plus {@link VOLUME_STEP_SLACK_MS});
   * with less than {@link startReserveMs} left it is not started (`deferred`).
   */
  async reconcileVolume(volume: SharedVolume, options: { deadline?: number } = {}): Promise<VolumeOutcome> {
    const now = Date.now();
    const deadline = Math.min(options.deadline ?? Infinity, now + this.#deps.config.createWaitMs + VOLUME_STEP_SLACK_MS);
    const context = { volumeId: volume.id, namespace: volume.namespace, serviceName: volume.serviceName };
    if (deadline - now < startReserveMs(this.#deps.config.pollIntervalMs) || this.#deps.signal?.aborted) {
      this.#metrics.count(SV_METRIC.deferred);
      return 'deferred';
    }
    const lease = new VolumeLease({ leases: this.#deps.leases, cluster: this.#deps.cluster ?? '', volumeId: volume.id, until: deadline + VOLUME_LEASE_SLACK_MS });
    const signal = signalUntil(deadline, this.#deps.signal);
    const reads = new ObjectReads({
      core: this.#deps.core,
      objects: this.#deps.objects,
      cluster: this.#deps.cluster ?? '',
      signal,
      onCacheError: (error, operation) => this.#logger.warn(`object cache ${operation} failed; reading from the API server`, { error: String(error) }),
    });
    try {
      const step = () => this.#steps(volume, reads, lease, signal, context);
      const outcome = Number.isFinite(deadline) ? await withBudgetDeadline(deadline, step) : await step();
      if (outcome === 'deferred') this.#metrics.count(SV_METRIC.deferred);
      if (outcome === 'busy') this.#metrics.count(SV_METRIC.busy);
      return outcome;
    } finally {
      this.#reads.cacheHits += reads.stats.cacheHits;
      this.#reads.apiGets += reads.stats.apiGets;
      this.#reads.cacheAbsent += reads.stats.cacheAbsent;
      await lease.release().catch((error: unknown) => this.#logger.warn('shared volume lease not released', { ...context, error: String(error) }));
    }
  }

  async #steps(volume: SharedVolume, reads: ObjectReads, lease: VolumeLease, signal: AbortSignal | undefined, context: Record<string, string>): Promise<VolumeOutcome> {
    /** `busy` or `deferred` for an error that says so; otherwise logged and counted as `failed`. */
    const failure = (message: string, error: unknown, extra: Record<string, string> = {}): VolumeOutcome => {
      if (error instanceof VolumeBusyError) {
        this.#logger.info('shared volume is being reconciled by another invocation', context);
        return 'busy';
      }
      if (isOutOfTime(error, signal)) {
        this.#logger.info(`${message}: cut short by the deadline`, { ...context, error: String(error) });
        return 'deferred';
      }
      this.#logger.warn(message, { ...context, ...extra, error: String(error) });
      this.#metrics.count(SV_METRIC.failed);
      return 'failed';
    };
    let claim;
    try {
      await reads.prefetch(volume.namespace, volume.pvcName, volume.serviceName);
      claim = await reads.claim(volume.namespace, volume.pvcName);
    } catch (error) {
      return failure('failed to fetch pvc for shared volume', error, { pvc: volume.pvcName });
    }
    if (claim === undefined) {
      this.#logger.warn('failed to fetch pvc for shared volume', { ...context, pvc: volume.pvcName, error: 'not found' });
      this.#metrics.count(SV_METRIC.claimMissing);
      return 'claim-missing';
    }
    this.#metrics.count(SV_METRIC.reconciled);
    let endpoint: string;
    try {
      const ensured = await ensureService(
        {
          core: this.#deps.core,
          reads,
          recorder: this.#deps.recorder,
          createPollIntervalMs: this.#deps.config.createPollIntervalMs,
          createWaitMs: this.#deps.config.createWaitMs,
          signal,
          beforeWrite: () => lease.beforeWrite(),
        },
        volume,
        claimOwnerReference(claim),
      );
      endpoint = ensured.endpoint;
    } catch (error) {
      return failure('shared volume create/update failed', error);
    }
    let outcome: VolumeOutcome = 'ready';
    if (needsPublish(volume, endpoint)) {
      try {
        await lease.beforeWrite();
        const published = await ensureExternalEndpoint(this.#deps.storage, { namespace: volume.namespace, id: volume.id }, endpoint, { signal });
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
        return failure('shared volume external endpoint update failed', error);
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
