/**
 * The binder's imperative shell: a {@link Controller} for PersistentVolumeClaim and PersistentVolume
 * messages. Per request it loads the snapshot from the DynamoDB object cache (`snapshot.ts`), runs the
 * pure core (`syncClaim` / `syncVolume`), applies the writes to the API server in upstream's order with
 * the resourceVersion each was computed from (`apply.ts`; a 409 or any failure stops the sync and the
 * runtime retries it with backoff — never a blind overwrite), writes every object the API returned back
 * to the cache (as upstream stores its own writes), records the events through the runtime's recorder
 * (source `persistentvolume-controller`) and sends the requeues.
 *
 * A StorageClass message requeues the pending claims it concerns (see {@link reconcileBinder}).
 *
 * Deleted objects (upstream's `deleteClaim` / `deleteVolume`): a deleted claim syncs the volume it was
 * bound to in the same reconcile (so it turns Released now, not at the next resync; requeued if that
 * fails, see releaseInline) and requeues every volume whose claimRef names it (a claim deleted while it
 * binds); a deleted volume requeues its claim (so it turns Lost).
 *
 * Faster than upstream: when a volume is Available and unclaimed after its sync, the pending claims of
 * its class that it could satisfy are requeued at once (Query `byPendingClaim`), instead of waiting for
 * the periodic resync.
 *
 * @example
 * export const handler = createSqsHandler(createBinderController(), { component: COMPONENT });
 */
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createSqsClient } from '../runtime/sqs.ts';
import { isNotFound } from '../kube/errors.ts';
import { KubeJsonApi } from '../kube/json-api.ts';
import { compareQuantities } from '../kube/quantity.ts';
import type { EventRecorder } from '../kube/recorder.ts';
import { MESSAGE_VERSION, type ClusterEvent, type WatchedKind } from '../runtime/message.ts';
import { ENV, type Controller, type ReconcileRequest, type ReconcileResult } from '../runtime/reconcile.ts';
import { singleMetricOf } from '../runtime/observability.ts';
import type { RuntimeContext } from '../runtime/handler.ts';
import { RequeueSender } from '../resync/sender.ts';
import { ObjectCache, cacheKey, type CachedObject } from '../state/cache.ts';
import { WriteBacks } from '../state/write-backs.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import { CLAIM_REF_INDEX, PENDING_CLAIM_INDEX, VOLUME_MATCH_INDEX, claimRefPk, pendingClaimPk } from '../state/schema.ts';
import { BinderApi } from './api.ts';
import { applyActions } from './apply.ts';
import { ANN_BIND_COMPLETED, ANN_STORAGE_PROVISIONER, ClaimPhase, Reason, VolumePhase } from './constants.ts';
import { accessModesIndexKey, checkAccessModes, claimRequest, claimToClaimKey, getPersistentVolumeClaimClass, getPersistentVolumeClass, hasAnnotation, persistentVolumeClaimHasClass } from './helpers.ts';
import { prefetchKey, type PrefetchedItems } from '../state/key-state.ts';
import { findMatchingVolume } from './match.ts';
import { getDefaultClass, isDelayBindingMode } from './provision.ts';
import { BinderMetric } from './metrics.ts';
import { loadClaimSnapshot, loadClasses, loadVolumeSnapshot, prefetchedOrRead, type SnapshotSources, type SnapshotStats } from './snapshot.ts';
import { syncClaim } from './sync-claim.ts';
import { syncVolume } from './sync-volume.ts';
import type { BinderEvent, PersistentVolume, PersistentVolumeClaim, StorageClass, SyncResult } from './types.ts';

/** Everything one reconcile uses; built from the runtime context, or by tests and benches directly. */
export interface BinderDeps {
  cluster: string;
  cache: ObjectCache;
  api: BinderApi;
  recorder: EventRecorder;
  /** Sends a REQUEUE of `kind`/`key` to the binder queue. `nonce` collapses duplicates. */
  enqueue(kind: WatchedKind, key: string, uid: string, resourceVersion: string, nonce: string): Promise<void>;
  metrics?: Metrics;
  logger?: Pick<Logger, 'debug' | 'info' | 'warn'>;
  /**
   * How long a written version waits for the same sync's next write of the object to share its cache
   * write-back, ms. Unset: it follows the table's round trip (lib/state/write-backs.ts `writeBackDeferMs`);
   * set: fixed at this (tests).
   */
  writeBackDeferMs?: number;
  /** Most pending claims requeued when a volume becomes Available (default 10). */
  pendingFanout?: number;
  matchPageSize?: number;
  /**
   * A volume bound on its side to an unbound claim completes the bind in the same reconcile when the
   * claim's own sync would pick that volume (default true); false: requeue the claim, as upstream does.
   */
  inlineBind?: boolean;
  /**
   * A deleted claim's volume is synced (released) in the deletion's reconcile (default true); false:
   * requeue it, as upstream's deleteClaim does.
   */
  inlineRelease?: boolean;
  now?: () => number;
}

/** What one reconcile did (returned to tests and the bench). */
export interface BinderOutcome {
  writes: number;
  stats: SnapshotStats;
  enqueued: number;
  result?: SyncResult;
  /** The claim a volume's reconcile bound itself (`ns/name`), see bindClaimInline. */
  inlineBound?: string;
}

export interface BinderControllerOptions {
  sqs?: SQSClient;
  /** Default `BINDER_QUEUE_URL`. */
  queueUrl?: string;
  pendingFanout?: number;
  matchPageSize?: number;
}

const API_VERSION = 'v1';
/** The controller's name, as the runtime, its queue's filter policy and cache write-backs know it. */
export const CONTROLLER_WRITER = 'binder';

/** The binder as a runtime {@link Controller}. */
export function createBinderController(options: BinderControllerOptions = {}): Controller<RuntimeContext> {
  let sqs: SQSClient | undefined;
  return {
    name: CONTROLLER_WRITER,
    kinds: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass'],
    // A claim's class comes with the claim's own entry (the one Query for every class is left for claims
    // with no class, which may need the default); an unbound claim's also with the list of match-index
    // partitions that ever held a volume, so empty access-mode sets are not queried.
    prefetch(request) {
      if (request.kind === 'PersistentVolume') return volumePrefetch(request.event.object as PersistentVolume | undefined);
      if (request.kind !== 'PersistentVolumeClaim') return {};
      const claim = request.event.object as PersistentVolumeClaim | undefined;
      const className = claim?.metadata && claim.spec ? getPersistentVolumeClaimClass(claim) : '';
      const volumeName = claim?.spec?.volumeName;
      const cache: Array<{ kind: WatchedKind; key: string }> = [
        ...(className ? [{ kind: 'StorageClass' as const, key: className }] : []),
        // a bound claim's sync, and its deletion's release, read the volume it names
        ...(volumeName ? [{ kind: 'PersistentVolume' as const, key: volumeName }] : []),
      ];
      return {
        ...(cache.length ? { cache } : {}),
        // a claim the message does not carry (a requeue) may be unbound too
        ...(volumeName ? {} : { partitions: [VOLUME_MATCH_INDEX] }),
      };
    },
    async reconcile(request, ctx): Promise<ReconcileResult> {
      const queueUrl = options.queueUrl ?? process.env[ENV.queueUrl.binder];
      const sender = new RequeueSender((sqs ??= options.sqs ?? createSqsClient()), `binder-${Date.now()}`);
      const deps: BinderDeps = {
        cluster: request.cluster,
        cache: new ObjectCache(ctx.doc, ctx.tables.cache, { indexer: indexAttributes }),
        api: new BinderApi(await ctx.kube.api(request.cluster, KubeJsonApi)),
        recorder: ctx.recorder,
        metrics: ctx.metrics,
        logger: ctx.logger,
        pendingFanout: options.pendingFanout,
        matchPageSize: options.matchPageSize,
        async enqueue(kind, key, uid, resourceVersion, nonce) {
          if (!queueUrl) {
            ctx.logger.warn('no binder queue URL; the resync will pick the key up', { kind, key });
            return;
          }
          await sender.add(queueUrl, requeueEvent(request.cluster, kind, key, uid, resourceVersion), nonce);
        },
      };
      try {
        await reconcileBinder(request, deps);
      } finally {
        await sender.flush();
      }
    },
  };
}

function requeueEvent(cluster: string, kind: WatchedKind, key: string, uid: string, resourceVersion: string): ClusterEvent {
  return {
    v: MESSAGE_VERSION,
    cluster,
    kind,
    type: 'REQUEUE',
    key,
    uid,
    resourceVersion: /^[0-9]+$/.test(resourceVersion) ? resourceVersion : '0',
    observedAt: new Date().toISOString(),
    controller: 'binder',
  };
}

/** One reconcile of a claim or a volume key; throws to make the runtime retry. */
export async function reconcileBinder(request: Pick<ReconcileRequest, 'kind' | 'key' | 'event' | 'cached' | 'prefetched' | 'retry'>, deps: BinderDeps): Promise<BinderOutcome> {
  if (request.kind === 'StorageClass') return reconcileClass(request, deps);
  return request.kind === 'PersistentVolume' ? reconcileVolume(request, deps) : reconcileClaim(request, deps);
}

/** Where a reconcile reads other cache entries: what the runtime prefetched with its own, else the cache. */
function sourcesOf(request: Pick<ReconcileRequest, 'prefetched'>, deps: BinderDeps): Pick<SnapshotSources, 'cluster' | 'cache' | 'prefetched'> {
  const prefetched = request.prefetched?.cache;
  return { cluster: deps.cluster, cache: deps.cache, ...(prefetched ? { prefetched } : {}) };
}

/** The request's own cache entry: the one the runtime read with the backoff record, else a read now. */
async function cachedEntry(request: Pick<ReconcileRequest, 'key' | 'cached'>, kind: WatchedKind, deps: BinderDeps): Promise<CachedObject | undefined> {
  if (request.cached !== undefined) return request.cached ?? undefined;
  return deps.cache.get(deps.cluster, kind, request.key);
}

/**
 * A StorageClass changed: upstream waits for the next resync; claimflow requeues at once the pending
 * claims of that class (they may now be handed to its provisioner) and, for a default class, the
 * pending claims without any class (they get it retroactively).
 */
async function reconcileClass(request: Pick<ReconcileRequest, 'key' | 'cached'>, deps: BinderDeps): Promise<BinderOutcome> {
  const outcome: BinderOutcome = { writes: 0, stats: { queries: 1, itemsRead: 0 }, enqueued: 0 };
  const hit = await cachedEntry(request, 'StorageClass', deps);
  if (!hit || hit.deleted) return outcome;
  const sc = hit.object as unknown as StorageClass;
  const partitions = [sc.metadata.name];
  if (getDefaultClass([sc])) partitions.push('');
  const limit = 100;
  for (const className of partitions) {
    outcome.stats.queries++;
    for await (const entry of deps.cache.queryIndex(PENDING_CLAIM_INDEX, pendingClaimPk(deps.cluster, className), { limit })) {
      const claim = entry.object as unknown as PersistentVolumeClaim;
      if (className === '' && persistentVolumeClaimHasClass(claim)) continue;
      const key = `${claim.metadata.namespace ?? ''}/${claim.metadata.name}`;
      await deps.enqueue('PersistentVolumeClaim', key, entry.uid, String(entry.rv), `class-${sc.metadata.uid}-${sc.metadata.resourceVersion}`);
      outcome.enqueued++;
    }
  }
  return outcome;
}

async function reconcileClaim(request: Pick<ReconcileRequest, 'key' | 'event' | 'cached' | 'prefetched' | 'retry'>, deps: BinderDeps): Promise<BinderOutcome> {
  const outcome: BinderOutcome = { writes: 0, stats: { queries: 1, itemsRead: 0 }, enqueued: 0 };
  const hit = await cachedEntry(request, 'PersistentVolumeClaim', deps);
  if (overtakenByDeletion(request, hit)) return outcome;
  if (!hit || hit.deleted) {
    // deleteClaim: the volume it was bound to is released now rather than at the next resync.
    const last = (hit?.object ?? request.event.object) as PersistentVolumeClaim | undefined;
    const volumeName = last?.spec?.volumeName;
    if (volumeName) {
      const volume = await prefetchedOrRead(sourcesOf(request, deps), 'PersistentVolume', volumeName);
      if (volume && !volume.deleted && !(await releaseInline(request, volumeName, volume, deps, outcome, hit))) {
        await deps.enqueue('PersistentVolume', volumeName, volume.uid, String(volume.rv), `claim-deleted-${last?.metadata?.uid}`);
        outcome.enqueued++;
      }
    }
    outcome.enqueued += await enqueueVolumesNamingClaim(request.key, last?.metadata?.uid || hit?.uid || request.event.uid, volumeName, deps);
    return outcome;
  }
  const claim = hit.object as unknown as PersistentVolumeClaim;
  const classes = prefetchedClasses(request, claim) ?? (await loadClasses(deps.cache, deps.cluster));
  outcome.stats.queries++;
  const partitions = request.prefetched?.partitions?.get(VOLUME_MATCH_INDEX);
  const sources = {
    ...sourcesOf(request, deps),
    api: deps.api,
    matchPageSize: deps.matchPageSize,
    ...(partitions?.complete ? { matchPartitions: partitions.pks } : {}),
  };
  const snapshot = await loadClaimSnapshot(sources, claim, classes, outcome.stats);
  let result = syncClaim(snapshot);
  if (result.actions.some((a) => a.action === 'event' && a.reason === Reason.WaitForFirstConsumer)) {
    // Pods are only needed to tell WaitForFirstConsumer from WaitForPodScheduled: read them only then.
    const pods = await deps.api.listPods(claim.metadata.namespace ?? '');
    result = syncClaim({ ...snapshot, pods });
  }
  outcome.result = result;
  let written: Array<PersistentVolume | PersistentVolumeClaim>;
  try {
    written = await apply(result, deps, outcome);
  } catch (error) {
    // The claim is gone from the API while the cache still has it: its deletion is on its way and
    // releases the volume (deleteClaim above). Upstream does not retry a failed claim sync either.
    if (!isNotFound(error) || !failedWriteIsClaim(result, outcome.writes, claim)) throw error;
    deps.logger?.info('claim deleted during its sync; its deletion event releases the volume', { claim: request.key });
    return outcome;
  }
  // Upstream's sync after a retroactive default class comes from the claim's update event; that event is the
  // binder's own write here (its queue leaves it out), so the claim is requeued at the version written.
  const latestClaim = (written.filter((o) => o.metadata.namespace === claim.metadata.namespace && o.metadata.name === claim.metadata.name).pop() ?? claim) as PersistentVolumeClaim;
  if (result.actions.some((a) => a.action === 'write' && a.purpose === 'assignDefaultStorageClass')) {
    const rv = latestClaim.metadata.resourceVersion ?? '0';
    await deps.enqueue('PersistentVolumeClaim', request.key, latestClaim.metadata.uid ?? '', rv, `default-class-${rv}`);
    outcome.enqueued++;
  }
  // A retry that finds the claim bound (by this sync, or meanwhile by a volume's inline bind): an earlier
  // attempt may have written a volume's side of a bind whose claim write then failed, and that volume's own
  // requeue may have run (and found the claim undecided) before the claim was decided. Every other volume
  // naming this claim is requeued so its sync unbinds or releases it.
  const boundTo = latestClaim.spec?.volumeName;
  if (request.retry && boundTo) {
    outcome.enqueued += await enqueueVolumesNamingClaim(request.key, claim.metadata.uid, boundTo, deps, 'claim-bound-elsewhere');
  }
  return outcome;
}

/**
 * Faster than upstream, same decision: upstream's deleteClaim puts the claim's volume on the volume queue
 * and the volume's sync releases it (after its live GET finds the claim gone). Here that sync runs now, in
 * the deletion's reconcile, over the volume's cached entry: no requeue message and no hop. Its writes are
 * conditional on the version read like every other, so a sync of the volume running meanwhile in its own
 * message group makes one of them fail. Answers false when it failed: the caller requeues the volume as
 * upstream does (nothing is lost; the volume's own sync decides).
 */
async function releaseInline(
  request: Pick<ReconcileRequest, 'key' | 'event'>,
  volumeName: string,
  volume: CachedObject,
  deps: BinderDeps,
  outcome: BinderOutcome,
  claimTombstone: CachedObject | undefined,
): Promise<boolean> {
  if (deps.inlineRelease === false) return false;
  try {
    const event: ClusterEvent = { ...request.event, kind: 'PersistentVolume', type: 'REQUEUE', key: volumeName, uid: volume.uid, resourceVersion: String(volume.rv) };
    // The claim's tombstone, just read, is what the volume's sync would read again.
    const prefetched: PrefetchedItems | undefined = claimTombstone
      ? { cache: new Map([[prefetchKey('PersistentVolumeClaim', request.key), claimTombstone]]), control: new Map() }
      : undefined;
    const inner = await reconcileVolume({ key: volumeName, event, cached: volume, ...(prefetched ? { prefetched } : {}) }, deps);
    outcome.writes += inner.writes;
    outcome.enqueued += inner.enqueued;
    outcome.stats.queries += inner.stats.queries;
    outcome.stats.itemsRead += inner.stats.itemsRead;
    deps.metrics?.addMetric(BinderMetric.inlineReleases, MetricUnit.Count, 1);
    return true;
  } catch (error) {
    deps.logger?.info('syncing the deleted claim’s volume failed; the volume is requeued', { volume: volumeName, error: String(error) });
    return false;
  }
}

/**
 * A change of an object whose deletion the cache already holds (a tombstone at a newer version): the
 * deletion's own DELETED message comes after it in the same message group and does the deletion's work
 * (release the volume, turn the claim Lost), so this one does nothing instead of doing it first and then
 * again. A claim's or volume's last change before its deletion (the deletion timestamp, a finalizer
 * removed) usually reaches the binder after the object is gone.
 */
function overtakenByDeletion(request: Pick<ReconcileRequest, 'event'>, hit: CachedObject | undefined): boolean {
  const type = request.event.type;
  return hit?.deleted === true && (type === 'ADDED' || type === 'MODIFIED') && Number(request.event.resourceVersion) < hit.rv;
}

/**
 * A claim that names a class needs only that class (upstream reads the others only to find the default
 * class for a claim with no `storageClassName` at all): when the runtime prefetched it, it is the whole
 * list; otherwise (no class, another class than the message named, not prefetched) undefined.
 */
function prefetchedClasses(request: Pick<ReconcileRequest, 'prefetched'>, claim: PersistentVolumeClaim): StorageClass[] | undefined {
  const className = getPersistentVolumeClaimClass(claim);
  if (!className) return undefined;
  const entry = request.prefetched?.cache.get(prefetchKey('StorageClass', className));
  if (entry === undefined) return undefined;
  return entry && !entry.deleted ? [entry.object as unknown as StorageClass] : [];
}

/** Whether the write that failed (the `attempted`-th) was a write of `claim` itself. */
function failedWriteIsClaim(result: SyncResult, attempted: number, claim: PersistentVolumeClaim): boolean {
  const failed = result.actions.filter((a) => a.action === 'write')[attempted - 1];
  return failed?.kind === 'PersistentVolumeClaim' && failed.object.metadata.name === claim.metadata.name && failed.object.metadata.namespace === claim.metadata.namespace;
}

/**
 * Faster than upstream, for a claim deleted while it binds: its volume may already name it in
 * `spec.claimRef` (bound on the volume side, phase Pending or Bound) while the claim never got
 * `spec.volumeName`. Upstream's deleteClaim enqueues only `spec.volumeName` and leaves such a volume to
 * its periodic resync of every PV; the binder's resync reads a sparse index without Pending or Bound
 * volumes, so the deletion requeues every volume whose claimRef names this claim (`byClaimRef`, one small
 * Query) and this uid (any uid when it is unknown). syncVolume then releases it after its live GET.
 */
async function enqueueVolumesNamingClaim(key: string, uid: string | undefined, alreadyEnqueued: string | undefined, deps: BinderDeps, why = 'claim-deleted'): Promise<number> {
  const slash = key.indexOf('/');
  const namespace = slash < 0 ? '' : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  let sent = 0;
  for await (const entry of deps.cache.queryIndex(CLAIM_REF_INDEX, claimRefPk(deps.cluster, namespace, name))) {
    const volume = entry.object as unknown as PersistentVolume;
    const ref = volume.spec?.claimRef;
    if (!ref?.uid || (uid && ref.uid !== uid) || volume.metadata.name === alreadyEnqueued) continue;
    await deps.enqueue('PersistentVolume', volume.metadata.name, entry.uid, String(entry.rv), `${why}-${ref.uid}`);
    sent++;
  }
  return sent;
}

async function reconcileVolume(request: Pick<ReconcileRequest, 'key' | 'event' | 'cached' | 'prefetched'>, deps: BinderDeps): Promise<BinderOutcome> {
  const outcome: BinderOutcome = { writes: 0, stats: { queries: 1, itemsRead: 0 }, enqueued: 0 };
  const hit = await cachedEntry(request, 'PersistentVolume', deps);
  if (overtakenByDeletion(request, hit)) return outcome;
  if (!hit || hit.deleted) {
    // deleteVolume: its claim turns Lost now rather than at the next resync.
    const last = (hit?.object ?? request.event.object) as PersistentVolume | undefined;
    const ref = last?.spec?.claimRef;
    if (ref?.name) {
      const key = `${ref.namespace ?? ''}/${ref.name}`;
      const claim = await prefetchedOrRead(sourcesOf(request, deps), 'PersistentVolumeClaim', key);
      if (claim && !claim.deleted) {
        await deps.enqueue('PersistentVolumeClaim', key, claim.uid, String(claim.rv), `volume-deleted-${last?.metadata?.uid}`);
        outcome.enqueued++;
      }
    }
    return outcome;
  }
  const volume = hit.object as unknown as PersistentVolume;
  const snapshot = await loadVolumeSnapshot({ ...sourcesOf(request, deps), api: deps.api }, volume);
  const result = syncVolume(snapshot);
  outcome.result = result;
  // The claim requeue of a volume bound on its side only: completed here when the claim's sync would bind
  // this volume anyway (see bindClaimInline), else sent as upstream sends it.
  const claim = snapshot.claim;
  const claimKey = claim && claimToClaimKey(claim);
  const requeuesClaim = (a: SyncResult['actions'][number]): boolean => a.action === 'enqueue' && a.kind === 'PersistentVolumeClaim' && a.key === claimKey;
  const inline = deps.inlineBind !== false && claim !== undefined && result.actions.some(requeuesClaim);
  const actions = inline ? result.actions.filter((a) => !requeuesClaim(a)) : result.actions;
  const written = await apply({ ...result, actions }, deps, outcome, { volume, ...(claim ? { claim } : {}) });
  const latest = (written.filter((o) => o.metadata.name === volume.metadata.name).pop() as PersistentVolume | undefined) ?? volume;
  if (inline && !(await bindClaimInline(request, latest, claim, deps, outcome))) {
    await deps.enqueue('PersistentVolumeClaim', claimToClaimKey(claim), claim.metadata.uid ?? '', claim.metadata.resourceVersion ?? '0', `inline-${latest.metadata.resourceVersion ?? 0}`);
    outcome.enqueued++;
  }
  if (latest.status?.phase === VolumePhase.Available && !latest.spec.claimRef) {
    outcome.enqueued += await enqueuePendingClaims(latest, deps);
  }
  return outcome;
}

/**
 * What a volume's message reads with its own entry: the claim its claimRef names (its sync reads it), and
 * while the volume is not Bound yet, its class, which a claim that binds it names too (bindClaimInline).
 */
function volumePrefetch(volume: PersistentVolume | undefined): { cache?: Array<{ kind: WatchedKind; key: string }> } {
  const ref = volume?.spec?.claimRef;
  if (!ref?.name || !ref.uid) return {};
  const cache: Array<{ kind: WatchedKind; key: string }> = [{ kind: 'PersistentVolumeClaim', key: `${ref.namespace ?? ''}/${ref.name}` }];
  const className = getPersistentVolumeClass(volume!);
  if (volume!.status?.phase !== VolumePhase.Bound && className) cache.push({ kind: 'StorageClass', key: className });
  return { cache };
}

/**
 * Faster than upstream, same decision: a volume bound on its side to a claim that is not (a provisioned
 * volume, or a volume pre-bound by its author) makes upstream's syncVolume requeue the claim, and the
 * claim's sync then binds the volume pre-bound to it if it is a match. Here, when this volume is such a
 * match for the claim read with it (findMatchingVolume over it alone answers it, as the claim's sync
 * returns a pre-bound match as soon as it meets one), the claim's sync runs now over that snapshot, its
 * writes conditional on the versions read like every other. Answers false, having written nothing or
 * stopped at a refused write, when it did not bind: the caller requeues the claim, and the claim's own sync
 * decides over everything.
 */
async function bindClaimInline(
  request: Pick<ReconcileRequest, 'prefetched'>,
  volume: PersistentVolume,
  claim: PersistentVolumeClaim,
  deps: BinderDeps,
  outcome: BinderOutcome,
): Promise<boolean> {
  if ((claim.spec.volumeName ?? '') !== '' || hasAnnotation(claim.metadata, ANN_BIND_COMPLETED) || claim.metadata.deletionTimestamp) return false;
  if (!volume.spec.claimRef?.uid || volume.spec.claimRef.uid !== claim.metadata.uid) return false;
  const classes = prefetchedClasses(request, claim) ?? (await loadClasses(deps.cache, deps.cluster));
  let delayBinding: boolean;
  try {
    delayBinding = isDelayBindingMode(claim, classes);
  } catch {
    return false; // the claim's own sync reports the class error
  }
  // Upstream reads access-mode sets fewest modes first and stops at the first match: only a volume in the
  // claim's own set is certain to win over every free volume (review: a RWO+ROX pre-bound volume loses to a
  // free RWO one).
  if (accessModesIndexKey(volume.spec.accessModes) !== accessModesIndexKey(claim.spec.accessModes)) return false;
  if (findMatchingVolume(claim, [volume], delayBinding)?.metadata.name !== volume.metadata.name) return false;
  const result = syncClaim({ claim, volumes: [volume], classes });
  const binds = result.actions.some((a) => a.action === 'write' && a.kind === 'PersistentVolumeClaim' && (a.object as PersistentVolumeClaim).spec?.volumeName === volume.metadata.name);
  if (result.error || !binds) return false;
  const inner: BinderOutcome = { writes: 0, stats: { queries: 0, itemsRead: 0 }, enqueued: 0 };
  try {
    await apply(result, deps, inner, { volume, claim });
  } catch (error) {
    deps.logger?.info('binding the claim with its volume failed; the claim and the volume are requeued', { claim: claimToClaimKey(claim), volume: volume.metadata.name, error: String(error) });
    // apply requeued the volume if its write landed before the claim's failed.
    outcome.writes += inner.writes;
    outcome.enqueued += inner.enqueued;
    return false;
  }
  outcome.writes += inner.writes;
  outcome.enqueued += inner.enqueued;
  outcome.inlineBound = claimToClaimKey(claim);
  deps.metrics?.addMetric(BinderMetric.inlineBinds, MetricUnit.Count, 1);
  return true;
}

/**
 * Applies a sync result: writes (written back to the cache), events, requeues; throws the sync's error.
 * A requeue names the version of the object this reconcile last saw (`seen`, then what it wrote), read
 * from the cache only for an object it did not see.
 */
async function apply(
  result: SyncResult,
  deps: BinderDeps,
  outcome: BinderOutcome,
  seen: { volume?: PersistentVolume; claim?: PersistentVolumeClaim } = {},
): Promise<Array<PersistentVolume | PersistentVolumeClaim>> {
  const before = deps.api.writes;
  const latest = new Map<string, PersistentVolume | PersistentVolumeClaim>();
  const remember = (kind: string, object: PersistentVolume | PersistentVolumeClaim) => latest.set(`${kind}/${cacheKey(object)}`, object);
  if (seen.volume) remember('PersistentVolume', seen.volume);
  if (seen.claim) remember('PersistentVolumeClaim', seen.claim);
  // One write-back per object when its writes come quickly: a version a later write of this sync replaces
  // (a bind's update, then its updateStatus) is named on the last one's (lib/state/write-backs.ts).
  const writeIds = result.actions.flatMap((a) => (a.action === 'write' ? [`${a.kind}/${cacheKey(a.object)}`] : []));
  const backs = new WriteBacks(
    // Tagged with the writer: the forwarder's events for these versions then skip the binder's queue.
    (kind, object, earlier) => deps.cache.put(deps.cluster, kind, object, { writer: CONTROLLER_WRITER, classify: false, earlier }),
    {
      ...(deps.writeBackDeferMs !== undefined ? { deferMs: deps.writeBackDeferMs } : {}),
      onError: (error, kind, object) =>
        deps.logger?.warn('writing back a version the binder wrote failed; its watch event will reach the binder', { kind, name: object.metadata?.name, error: String(error) }),
    },
  );
  let writeIndex = 0;
  const applied = await applyActions(result, {
    write: async (w) => {
      const id = writeIds[writeIndex++]!;
      const returned = await deps.api.write(w);
      remember(w.kind, returned);
      backs.wrote(w.kind, returned, { more: writeIds.includes(id, writeIndex) });
      recordWriteMetrics(w.purpose, w.kind, returned, deps);
      return returned;
    },
    event: (e) => deps.recorder.event(involvedObject(e), e.type, e.reason, e.message),
    enqueue: async (q) => {
      const known = latest.get(`${q.kind}/${q.key}`);
      const hit = known ? { uid: known.metadata.uid ?? '', rv: known.metadata.resourceVersion ?? '0' } : await deps.cache.get(deps.cluster, q.kind, q.key);
      await deps.enqueue(q.kind, q.key, hit?.uid ?? '', String(hit?.rv ?? 0), `enqueue-${hit?.rv ?? 0}`);
      outcome.enqueued++;
    },
  }).finally(() => backs.settle());
  outcome.writes = deps.api.writes - before;
  deps.metrics?.addMetric(BinderMetric.apiWrites, MetricUnit.Count, outcome.writes);
  if (applied.writeFailed) outcome.enqueued += await requeueVolumesWrittenBeforeClaim(result, applied.written, deps);
  if (applied.error) {
    const failed = result.actions.find((a) => a.action === 'write' && a.purpose === 'assignDefaultStorageClass');
    if (applied.writeFailed && failed) {
      count(deps, BinderMetric.retroactiveStorageClassTotal);
      count(deps, BinderMetric.retroactiveStorageClassErrorsTotal);
    }
    if (applied.writeFailed && result.actions.some((a) => a.action === 'write' && a.purpose === 'bindVolumeToClaim')) {
      count(deps, BinderMetric.volumeOperationTotalErrors, { operation_name: 'bind' });
    }
    throw applied.error;
  }
  return applied.written;
}

/**
 * A bind writes the volume first and the claim after it. When the claim's write fails, the volume's
 * writes have landed: tagged as the binder's own, their events skip its queue, and a Bound volume is not
 * in the resync index either, so nothing would revisit a volume bound to a claim that then bound
 * elsewhere (upstream's periodic resync of every volume would). Each such volume is requeued at the
 * version written, and its own sync decides (completes, or unbinds it).
 */
async function requeueVolumesWrittenBeforeClaim(result: SyncResult, written: Array<PersistentVolume | PersistentVolumeClaim>, deps: BinderDeps): Promise<number> {
  const writes = result.actions.filter((a) => a.action === 'write');
  if (writes[written.length]?.kind !== 'PersistentVolumeClaim') return 0;
  // the last version written of each volume
  const volumes = new Map<string, PersistentVolume>();
  written.forEach((object, i) => writes[i]!.kind === 'PersistentVolume' && volumes.set(object.metadata.name, object as PersistentVolume));
  for (const volume of volumes.values()) {
    const rv = volume.metadata.resourceVersion ?? '0';
    await deps.enqueue('PersistentVolume', volume.metadata.name, volume.metadata.uid ?? '', rv, `claim-write-failed-${rv}`);
  }
  return volumes.size;
}

function recordWriteMetrics(purpose: string, kind: string, returned: PersistentVolume | PersistentVolumeClaim, deps: BinderDeps): void {
  if (purpose === 'assignDefaultStorageClass') count(deps, BinderMetric.retroactiveStorageClassTotal);
  if (kind === 'PersistentVolumeClaim' && purpose === 'updateClaimStatus' && returned.status?.phase === ClaimPhase.Bound && deps.metrics) {
    const created = Date.parse(String(returned.metadata.creationTimestamp ?? ''));
    if (Number.isFinite(created)) {
      const provisioner = returned.metadata.annotations?.[ANN_STORAGE_PROVISIONER];
      const metric = singleMetricOf(deps.metrics);
      metric.addDimension('plugin_name', provisioner || 'N/A');
      metric.addDimension('operation_name', provisioner ? 'provision' : 'bind');
      metric.addMetric(BinderMetric.volumeOperationTotalSeconds, MetricUnit.Seconds, ((deps.now ?? Date.now)() - created) / 1000);
    }
  }
}

function count(deps: BinderDeps, name: string, dimensions: Record<string, string> = {}): void {
  if (!deps.metrics) return;
  const metric = Object.keys(dimensions).length ? singleMetricOf(deps.metrics) : deps.metrics;
  for (const [k, v] of Object.entries(dimensions)) metric.addDimension(k, v);
  metric.addMetric(name, MetricUnit.Count, 1);
}

function involvedObject(e: BinderEvent) {
  const { name, namespace, uid, resourceVersion, creationTimestamp } = e.object.metadata;
  // creationTimestamp is not part of the Event: it tells the recorder a new object has no event state yet.
  return { apiVersion: API_VERSION, kind: e.kind, metadata: { name, ...(namespace ? { namespace } : {}), uid, resourceVersion, ...(creationTimestamp ? { creationTimestamp } : {}) } };
}

/**
 * Requeues pending claims of the volume's class that it could satisfy (request ≤ capacity, modes
 * contained), smallest requests first, at most `pendingFanout`. Duplicates for the same volume version
 * collapse in the FIFO deduplication window.
 */
async function enqueuePendingClaims(volume: PersistentVolume, deps: BinderDeps): Promise<number> {
  const fanout = deps.pendingFanout ?? 10;
  if (fanout <= 0) return 0;
  const capacity = volume.spec.capacity?.storage ?? '0';
  let sent = 0;
  for await (const entry of deps.cache.queryIndex(PENDING_CLAIM_INDEX, pendingClaimPk(deps.cluster, getPersistentVolumeClass(volume)), { limit: fanout * 4 })) {
    const claim = entry.object as unknown as PersistentVolumeClaim;
    let fits: boolean;
    try {
      fits = compareQuantities(capacity, claimRequest(claim)) >= 0;
    } catch {
      fits = false;
    }
    if (!fits) break; // ascending by request: nothing further fits either
    if (!checkAccessModes(claim, volume) || (claim.status?.phase ?? ClaimPhase.Pending) !== ClaimPhase.Pending) continue;
    const key = `${claim.metadata.namespace ?? ''}/${claim.metadata.name}`;
    await deps.enqueue('PersistentVolumeClaim', key, entry.uid, String(entry.rv), `available-${volume.metadata.uid}-${volume.metadata.resourceVersion}`);
    if (++sent >= fanout) break;
  }
  if (sent) deps.metrics?.addMetric(BinderMetric.pendingClaimsEnqueued, MetricUnit.Count, sent);
  return sent;
}
