/**
 * The provisioner's imperative shell: upstream's ProvisionController as a {@link Controller} for the
 * runtime. Per request it loads the snapshot (the DynamoDB object cache, the per-claim record), runs the
 * pure core (`syncClaim` / `syncVolume`) around the Provisioner, and applies the outcome: API writes
 * (conditional on resourceVersion), events through the recorder, metrics, the per-claim record, and the
 * result for the runtime (done, `requeueAfterMs`, or an error it retries with backoff).
 *
 * Keys: a claim request is `namespace/name`; its per-claim state and provisioning lease are keyed by the
 * claim UID (`lease#provision#<cluster>#<uid>`), so a long or duplicated provision never runs twice and a
 * claim re-created under the same name starts afresh. StorageClass events need no work (upstream has no
 * handler): a claim waiting for its class is retried by backoff. A PV that a VolumeAttachment names is
 * never deleted (csi-provisioner's `canDeleteVolume`); when such an attachment is gone, its VolumeAttachment
 * event sends the PV's key back to the queue (`reconcileAttachment`), in the PV's own message group.
 *
 * @example
 * const controller = createProvisionerController({ options: provisionerOptionsFromEnv(), provisioner });
 * export const handler = createSqsHandler(controller, runtimeOptionsFor(options));
 */
import { randomUUID } from 'node:crypto';
import type { InvolvedObject } from '../kube/recorder.ts';
import type { RuntimeContext, SqsHandlerOptions } from '../runtime/handler.ts';
import { TerminalError, type Controller, type ReconcileRequest, type ReconcileResult } from '../runtime/reconcile.ts';
import { findError, SOON_MS } from '../runtime/job.ts';
import { UnknownClusterError } from '../kube/client.ts';
import { BudgetTimeoutError } from '../state/bucket.ts';
import { retryAfterMs } from '../kube/errors.ts';
import { LeaseHeldError, type Lease } from '../state/lease.ts';
import { ObjectCache, type CachedObject } from '../state/cache.ts';
import { SyncMarkers } from '../state/sync.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import { KubeJsonApi } from '../kube/json-api.ts';
import {
  getClaimClass, inProgressSuperseded, isProvisioningCandidate, resolveClaim, storeMessages, volumeName, type ClaimOutcome, type CoreConfig,
} from './claim.ts';
import { EventReason } from './constants.ts';
import { KubeWriter, PROVISIONER_WRITER } from './kube-writer.ts';
import { emitObservations } from './metrics.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../kube/objects.ts';
import { coreConfig, createProvisionedPVBackoff, DEFAULTS, timeMarginMsFromEnv, type ProvisionerOptions } from './options.ts';
import { ClaimRecords, claimRecordPk, type ClaimRecord, type ClaimRecordChange } from './records.ts';
import { prefetchKey } from '../state/key-state.ts';
import { BackoffStore, QueueStore } from './store.ts';
import { syncClaim, type VolumeStore } from './sync-claim.ts';
import { syncVolume } from './sync-volume.ts';
import { BackoffStore as KeyBackoff, backoffIdPk, type BackoffId } from '../state/backoff.ts';
import { CachedVolumeAttachments, canDeleteVolume, detachedVolumeName } from './attachments.ts';
import { volumeRequeuerFromEnv, type VolumeRequeuer } from './requeue.ts';
import { planVolumeSync } from './volume.ts';
import type { MetricObservation, ProvisionerEvent, Provisioner, VolumeNameHook } from './types.ts';

export interface ProvisionerControllerDeps {
  options: ProvisionerOptions;
  provisioner: Provisioner;
  /**
   * Puts a PV key back on the provisioner queue when the VolumeAttachment that held its deletion back is
   * gone (default: over SQS to `PROVISIONER_QUEUE_URL`; `null`: never, the PV's backoff retries it).
   */
  volumeRequeuer?: VolumeRequeuer | null;
  /** [`VolumeName`] hook; default `pvc-<uid>`. */
  volumeNameHook?: VolumeNameHook;
  /** Observations go here as well as to EMF (tests, benchmarks). */
  onMetric?: (observation: MetricObservation) => void;
  /** Epoch ms; injectable for tests. */
  clock?: () => number;
  /** The runtime's time margin (default `TIME_MARGIN_MS`, else 5 s): PV save retries stop two margins before the Lambda timeout. */
  timeMarginMs?: number;
}

/** The controller's name: its backoff records, metrics dimension and REQUEUE address. */
export const CONTROLLER_NAME = PROVISIONER_WRITER;

/**
 * How long after the runtime's own retry a deleted claim's parked reminder comes due, and how far apart
 * the sweep sends it again (see reconcileClaim): the runtime's retry usually finishes the claim first.
 */
export const DELETED_CLAIM_REMINDER_MS = 60_000;

/**
 * How many times the sweep sends a deleted claim's reminder again, a reminder interval apart: a day's worth,
 * as long as its record lives after its last park. A send the key's own wait holds back is not a run, and
 * a claim failing under the same name keeps that wait up; every run ends the reminder, counts a failure
 * toward its threshold, or parks it anew.
 */
export const DELETED_CLAIM_REARMS = (24 * 3600_000) / DELETED_CLAIM_REMINDER_MS;
const reminderRearming = { rearms: DELETED_CLAIM_REARMS, rearmEveryMs: DELETED_CLAIM_REMINDER_MS };

/** A deleted claim's reminder: the key's backoff record scoped by the claim's UID (see reconcileClaim). */
export function reminderId(cluster: string, key: string, uid: string): BackoffId {
  return { controller: CONTROLLER_NAME, cluster, kind: 'PersistentVolumeClaim', key, scope: uid };
}

/** Requeue delay when another invocation holds the claim's provisioning lease and is still renewing it. */
const LEASE_BUSY_REQUEUE_MS = 5_000;

/**
 * How often a provisioning renews its lease: every third of its length, but at least every 15 s, so a
 * holder that stopped is told from a running one within 35 s (see {@link leaseBusyDelayMs}); only a
 * provisioning that runs longer than that renews at all (one UpdateItem per 15 s).
 */
const leaseRenewalMs = (leaseMs: number): number => Math.max(1000, Math.min(15_000, Math.floor(leaseMs / 3)));

/**
 * How long to wait for a provisioning lease someone else holds. A holder that is running renews it every
 * {@link leaseRenewalMs}, so its lease always has more than `leaseMs - renewal` left; with less than
 * `leaseMs - 2 × renewal` (and a poll of slack) the holder missed two renewals in a row, which a slow or
 * failed renewal, a version renewing less often or a few seconds of clock skew do not explain: it stopped
 * (killed, timed out, or it saved its PV and kept the lease). Nothing frees such a lease before it lapses,
 * so the claim waits for its expiry in one step instead of polling it every few seconds (about six
 * DynamoDB requests a poll).
 */
export function leaseBusyDelayMs(leaseMs: number, expiresAt: number | undefined, now: number): number {
  const poll = Math.min(LEASE_BUSY_REQUEUE_MS, leaseMs);
  const left = (expiresAt ?? 0) - now;
  const renewedWithin = leaseMs - 2 * leaseRenewalMs(leaseMs) - poll;
  return left > 0 && left < renewedWithin ? left + poll : poll;
}

/** `lease#provision#<cluster>#<uid>`: the name of a claim's provisioning lease. */
export const provisioningLeaseName = (cluster: string, uid: string): string => `provision#${cluster}#${uid}`;

const claimRefOf = (claim: PersistentVolumeClaim): InvolvedObject => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: claim.metadata });
const volumeRefOf = (pv: PersistentVolume): InvolvedObject => ({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: pv.metadata });

function timeoutSignal(ms: number): AbortSignal | undefined {
  return ms > 0 ? AbortSignal.timeout(ms) : undefined;
}

/**
 * The runtime options that carry upstream's retry semantics: the per-key limiter (15 s doubling to
 * 1000 s, or the configured `RateLimiter`, or a flat 15 s) and the failure threshold
 * (`FailedProvisionThreshold` + 1 attempts; the runtime counts failures including the current one).
 * The runtime has one threshold per function: the larger of the claim and volume thresholds applies,
 * and 0 on either side means retry forever.
 */
export function runtimeOptionsFor(options: ProvisionerOptions): Pick<SqsHandlerOptions<RuntimeContext>, 'limiter' | 'maxFailures'> {
  const base = options.retryIntervalStartMs ?? DEFAULTS.retryIntervalStartMs;
  const max = options.retryIntervalStartMs !== undefined ? options.retryIntervalMaxMs! : options.exponentialBackOffOnError ? DEFAULTS.retryIntervalMaxMs : base;
  const forever = options.failedProvisionThreshold === 0 || options.failedDeleteThreshold === 0;
  return {
    limiter: { baseDelayMs: base, maxDelayMs: max },
    maxFailures: forever ? 0 : Math.max(options.failedProvisionThreshold, options.failedDeleteThreshold) + 1,
  };
}

/** Builds the provisioner {@link Controller}. */
export function createProvisionerController(deps: ProvisionerControllerDeps): Controller<RuntimeContext> {
  const { options, provisioner } = deps;
  const config: CoreConfig = { ...coreConfig(options), ...(deps.volumeNameHook ? { volumeNameHook: deps.volumeNameHook } : {}) };
  const clock = deps.clock ?? Date.now;
  const timeMarginMs = deps.timeMarginMs ?? timeMarginMsFromEnv();
  const runtimeOptions = runtimeOptionsFor(options);

  const report = async (ctx: RuntimeContext, involved: { claim?: PersistentVolumeClaim; volume?: PersistentVolume }, events: ProvisionerEvent[], metrics: MetricObservation[]): Promise<void> => {
    for (const e of events) {
      const target = e.on === 'claim' ? involved.claim && claimRefOf(involved.claim) : involved.volume && volumeRefOf(involved.volume);
      if (target) await ctx.recorder.event(target, e.type, e.reason, e.message);
    }
    emitObservations(ctx.metrics, metrics);
    for (const m of metrics) deps.onMetric?.(m);
  };

  /**
   * Whether a claim that is gone, with no in-progress record, may have a backend volume and no PV: its
   * last state (the tombstone) still asked us to provision, no PV of its name was ever cached, and its
   * provisioning lease was taken and never released. Every provisioning runs under that lease and releases
   * it unless it saved its PV, so a holder left on it is an invocation that stopped between the backend call
   * and the end of the sync (a Lambda killed or timed out): the volume may exist, and nothing else would
   * ever reclaim it. Upstream loses its in-memory `claimsInProgress` the same way when the process dies;
   * here the lease is durable, so the claim is provisioned to the end and its PV released and reclaimed.
   * A saved PV is cached only once the forwarder sees it (the provisioner leaves what it creates to the
   * watch, kube-writer.ts), so with no entry the API is asked before a kept lease is taken for a dead one:
   * a claim deleted right after its provisioning would otherwise store an in-progress record, wait out the
   * 5-minute lease, and then provision again (adopting the backend volume, meeting its PV) only to stop.
   * An answer other than the PV or 404 is taken as before this lookup: cut short (nothing is lost that way;
   * the wait and the sync then find or adopt the PV).
   * Costs two reads (three with no PV cached), only for a claim deleted before it was bound.
   */
  async function provisioningCutShort(ctx: RuntimeContext, request: ReconcileRequest, cache: ObjectCache, leaseName: string, uid: string, lastState: PersistentVolumeClaim): Promise<boolean> {
    if (lastState.metadata.uid !== uid || !isProvisioningCandidate(config, lastState)) return false;
    const lease = await ctx.leases.get(leaseName);
    if (!lease?.holder) return false;
    // A PV entry, even a tombstone, means the volume was saved (a kept lease) and is reclaimed through it;
    // so does a PV of this claim's that the API has and the forwarder has not cached yet.
    // (A volumeNameHook naming PVs by claim name gives a re-created claim the same PV name: its cached PV
    // then hides an earlier claim's unsaved volume from this check.)
    // The runtime's prefetch is good enough here: a PV saved since is found by the sync's own read.
    const pvName = volumeName(config, lastState);
    const prefetched = request.prefetched?.cache.get(prefetchKey('PersistentVolume', pvName));
    const entry = prefetched !== undefined ? (prefetched ?? undefined) : await cache.get(request.cluster, 'PersistentVolume', pvName);
    if (entry) return false;
    try {
      const writer = new KubeWriter(await ctx.kube.api(request.cluster, KubeJsonApi), undefined, request.cluster);
      const live = await writer.getVolume(pvName);
      return live === undefined || (live.spec?.claimRef?.uid !== undefined && live.spec.claimRef.uid !== uid);
    } catch (err) {
      // The budget's wait and an unknown cluster go to the runtime as anywhere else.
      if (findError(err, BudgetTimeoutError) || findError(err, UnknownClusterError)) throw err;
      ctx.logger.warn('could not ask the API for the PV of a deleted claim: taken as a provisioning cut short', { uid, pv: pvName, error: String(err) });
      return true;
    }
  }

  /**
   * A message about an earlier claim of this name (deleted and created again before the message's turn, e.g.
   * a StatefulSet's claim): the cache entry is the new claim's. When that earlier claim left work to finish
   * under its UID (an unsaved PV, an in-progress record, or a provisioning cut short: a DELETED message's
   * copy of the claim stands in for the tombstone the new claim overwrote), the message finishes it as a
   * deleted claim; otherwise it reconciles the current claim, as any message for the name does.
   */
  async function earlierClaim(
    ctx: RuntimeContext, request: ReconcileRequest, cache: ObjectCache, found: CachedObject | undefined, readRecord: (uid: string) => Promise<ClaimRecord>,
  ): Promise<{ uid: string; record: ClaimRecord; lastState?: PersistentVolumeClaim; cutShort: boolean } | undefined> {
    const uid = request.event.uid;
    if (!uid || !found?.uid || uid === found.uid) return undefined;
    const record = await readRecord(uid);
    const sent = request.event.type === 'DELETED' ? request.event.object as PersistentVolumeClaim | undefined : undefined;
    const lastState = sent?.metadata?.uid === uid ? sent : undefined;
    const cutShort = !record.pendingVolume && !record.inProgress && lastState !== undefined
      && await provisioningCutShort(ctx, request, cache, provisioningLeaseName(request.cluster, uid), uid, lastState);
    if (!record.pendingVolume && !record.inProgress && !cutShort) return undefined;
    ctx.logger.info('message about an earlier claim of this name, which left provisioning to finish: handled as deleted', { uid, current: found.uid });
    return { uid, record, ...(lastState ? { lastState } : {}), cutShort };
  }

  /**
   * A claim's reconcile. When it works on a claim that is gone (deleted: from its tombstone, or an earlier
   * claim of the name, {@link earlierClaim}) under the message's UID and that has to wait (a failure, or a
   * dead holder's lease), the wait is also parked as a reminder under that UID (a backoff record of the key
   * scoped by it): the runtime's record of the key is shared by every claim of the name, and a new claim's
   * success clears it, wait and all. The reminder comes due a minute after the runtime's own retry would
   * (by the reminder's own failure count), and the per-minute sweep sends the key with that UID then and
   * again every minute ({@link DELETED_CLAIM_REARMS}), so a message the key's own wait holds back still
   * comes again. It ends when a message with that UID ends without a wait (finished, stopped, or nothing
   * left of it: the runtime's prefetch says whether one exists, so this costs no extra request), at a
   * terminal error, or at the failure threshold (kept with its count and no longer sent, as the runtime
   * gives up on a key).
   */
  async function reconcileClaim(request: ReconcileRequest, ctx: RuntimeContext): Promise<ReconcileResult> {
    const seen: { goneUid?: string } = {};
    const uid = request.event.uid;
    const id = uid ? reminderId(request.cluster, request.key, uid) : undefined;
    const backoff = () => new KeyBackoff({ doc: ctx.doc, table: ctx.tables.control, now: clock, limiter: runtimeOptions.limiter! });
    let result: ReconcileResult;
    try {
      result = await reconcileClaimOnce(request, ctx, seen);
    } catch (error) {
      if (id && seen.goneUid === uid) {
        await remindAfterFailure(backoff(), id, uid, error).catch((err: unknown) =>
          ctx.logger.warn('finishing a deleted claim failed, and so did parking its reminder: the runtime\'s retry of the key is all that is left', { uid, error: String(err) }));
      }
      throw error;
    }
    if (!id) return result;
    if (seen.goneUid === uid && result && 'requeueAfterMs' in result) {
      await backoff().park(id, clock() + result.requeueAfterMs + DELETED_CLAIM_REMINDER_MS, { uid }, reminderRearming);
    } else {
      // Read with the runtime's prefetch when it asked (a DELETED or a REQUEUE); a watch event of a live
      // claim never ends one. Without a prefetch (a direct call), read here.
      const prefetched = request.prefetched?.control;
      const pk = backoffIdPk(id);
      const exists = prefetched ? prefetched.has(pk) && prefetched.get(pk) !== null : (await backoff().get(id)) !== undefined;
      if (exists) await backoff().clear(id);
    }
    return result;
  }

  /**
   * A failed finishing of a deleted claim: its reminder counts the failure and waits as the runtime does. A
   * wait for API budget is no failure to the runtime (a one-second wait, gate `budget`), so it is none to the
   * reminder either: parked as the runtime waits, its count left as it was, so a saturated budget never
   * makes it give up.
   */
  async function remindAfterFailure(store: KeyBackoff, id: BackoffId, uid: string, error: unknown): Promise<void> {
    // Not retried by the runtime either.
    if (findError(error, UnknownClusterError) || error instanceof TerminalError) return store.clear(id);
    if (findError(error, BudgetTimeoutError)) {
      // A reminder given up stays so (kept, never parked): a wait for budget is no reason to send it again.
      if ((await store.get(id))?.givenUp) return;
      await store.park(id, clock() + SOON_MS + DELETED_CLAIM_REMINDER_MS, { uid }, reminderRearming);
      return;
    }
    const { record, delayMs } = await store.recordFailure(id, error instanceof Error ? error.message : String(error), { uid }, undefined, runtimeOptions.maxFailures ?? 0);
    if (record.givenUp) return;
    await store.park(id, clock() + Math.max(delayMs, retryAfterMs(error) ?? 0) + DELETED_CLAIM_REMINDER_MS, { uid }, reminderRearming);
  }

  async function reconcileClaimOnce(request: ReconcileRequest, ctx: RuntimeContext, seen: { goneUid?: string }): Promise<ReconcileResult> {
    const { cluster } = request;
    const cache = new ObjectCache(ctx.doc, ctx.tables.cache, { indexer: indexAttributes });
    // The runtime read the entry (and the prefetched items) in one request just before this reconcile.
    const found = request.cached !== undefined ? (request.cached ?? undefined) : await cache.get(cluster, 'PersistentVolumeClaim', request.key);
    const records = new ClaimRecords(ctx.doc, ctx.tables.control, clock);
    const readRecord = (uid: string): Promise<ClaimRecord> => {
      const prefetched = request.prefetched?.control.get(claimRecordPk(cluster, uid));
      return prefetched !== undefined ? Promise.resolve(ClaimRecords.fromItem(prefetched)) : records.get(cluster, uid);
    };
    const earlier = await earlierClaim(ctx, request, cache, found, readRecord);
    const entry = earlier ? undefined : found;
    const cached = entry && !entry.deleted ? (entry.object as PersistentVolumeClaim) : undefined;
    // A deleted claim: the tombstone (or the message) still names its UID, which keys its in-progress record.
    const uid = earlier?.uid ?? cached?.metadata.uid ?? (entry?.uid || request.event.uid);
    if (!uid) return;
    // Anything below works on a claim that is gone (see reconcileClaim's reminder).
    if (!cached) seen.goneUid = uid;
    let record = earlier?.record ?? await readRecord(uid);
    if (earlier?.cutShort && earlier.lastState) {
      // The DELETED message is the only copy of that claim: stored as its in-progress record at once, so a
      // wait for the dead holder's lease (a park, which the new claim's success would clear) loses nothing,
      // and any later message with its UID finishes it.
      await records.apply(cluster, uid, { inProgress: earlier.lastState });
      record = { ...record, inProgress: earlier.lastState };
    }

    // A PV provisioned earlier but not saved yet (the queue store, or the backoff store out of Lambda time)
    // is saved before anything else, even when its claim is gone meanwhile: its volume exists, and the PV
    // is what releases and reclaims it (upstream's unsaved-PV queue is keyed by PV, not by claim).
    if (record.pendingVolume) {
      const writer = new KubeWriter(await ctx.kube.api(cluster, KubeJsonApi), cache, cluster);
      // Saved without the provisioning lease (the sync that parked it released it): written back, so the
      // claim's next sync finds it even before the forwarder has cached it.
      await writer.createVolume(record.pendingVolume, { writeBack: true });
      await records.apply(cluster, uid, { pendingVolume: null, ...(record.inProgress ? { inProgress: null } : {}) });
      // Upstream's queue store records the success only on a claim that still exists.
      if (cached) await report(ctx, { claim: cached }, [{ on: 'claim', type: 'Normal', reason: EventReason.ProvisioningSucceeded, message: storeMessages.succeeded(record.pendingVolume.metadata.name ?? '') }], []);
      return;
    }

    const lastState = earlier ? earlier.lastState : entry?.deleted ? (entry.object as PersistentVolumeClaim) : undefined;
    const leaseName = provisioningLeaseName(cluster, uid);
    let claim = resolveClaim(cached, record.inProgress);
    // (An earlier claim cut short has its record by now.)
    if (!claim && lastState && !earlier && await provisioningCutShort(ctx, request, cache, leaseName, uid, lastState)) {
      ctx.logger.info('claim deleted while its provisioning was cut short: provisioning it to the end so its volume is reclaimed', { uid });
      claim = lastState;
      // Its tombstone is the only copy: stored as the in-progress record before any wait for the dead
      // holder's lease, as a claim created again under the name overwrites the tombstone.
      await records.apply(cluster, uid, { inProgress: lastState });
      record = { ...record, inProgress: lastState };
    }
    if (!claim) {
      ctx.logger.debug('claim in work queue no longer exists', { uid });
      return;
    }

    // Bound, or not asking for us: shouldProvision says no, so the lease and the lookups are skipped; the
    // sync ends without error, so the claim leaves claimsInProgress as upstream's does. A deleted claim
    // whose last state (the tombstone) was bound elsewhere is not resumed from its in-progress copy.
    if (!isProvisioningCandidate(config, claim) || (!cached && inProgressSuperseded(config, lastState, record.inProgress))) {
      if (record.inProgress) await records.apply(cluster, uid, { inProgress: null });
      return;
    }
    const writer = new KubeWriter(await ctx.kube.api(cluster, KubeJsonApi), cache, cluster);

    const holder = randomUUID();
    let lease: Lease | undefined;
    try {
      lease = await ctx.leases.acquire(leaseName, holder, options.provisionLeaseMs);
    } catch (err) {
      if (!(err instanceof LeaseHeldError)) throw err;
      const requeueAfterMs = leaseBusyDelayMs(options.provisionLeaseMs, err.expiresAt, clock());
      ctx.logger.info('another invocation is provisioning this claim', { uid, requeueAfterMs });
      return { requeueAfterMs };
    }
    // Kept after a provisioning that saved its PV: the claim binds next and asks for nothing more, and the
    // lease lapses by itself (one DynamoDB write less per claim); a duplicate or stale message meanwhile waits.
    let keepLease = false;
    const renewal = setInterval(() => {
      if (lease) ctx.leases.renew(lease, options.provisionLeaseMs).then((l) => { lease = l; }, (err: unknown) => ctx.logger.warn('provisioning lease not renewed', { error: String(err) }));
    }, leaseRenewalMs(options.provisionLeaseMs));
    renewal.unref();
    try {
      // A class's provisioner, parameters and policies are immutable: the copy read before the lease will do.
      const prefetchedClass = request.prefetched?.cache.get(prefetchKey('StorageClass', getClaimClass(claim)));
      const classEntry = prefetchedClass !== undefined ? (prefetchedClass ?? undefined) : await cache.get(cluster, 'StorageClass', getClaimClass(claim));
      // The PV read before the lease is good when this is the lease's first holder ever (token 1): every
      // provisioning runs under the lease, so none can have created the PV since that read.
      const pvName = volumeName(config, claim);
      const prefetchedVolume = lease.token === 1 ? request.prefetched?.cache.get(prefetchKey('PersistentVolume', pvName)) : undefined;
      const volumeEntry = prefetchedVolume !== undefined ? (prefetchedVolume ?? undefined) : await cache.get(cluster, 'PersistentVolume', pvName);
      const pending = records.pendingVolumesOf(cluster, uid);
      const lambda = ctx.lambdaContext;
      const store: VolumeStore = options.volumeStore === 'queue'
        ? new QueueStore(writer, pending)
        : new BackoffStore({
          creator: writer, provisioner, backoff: createProvisionedPVBackoff(options), pending,
          // One margin for the save attempt after the last wait, one to hand the PV over and finish.
          ...(lambda ? { timeLeftMs: () => lambda.getRemainingTimeInMillis() - 2 * timeMarginMs } : {}),
        });

      // `Provisioning` goes out through the recorder before the backend call, as upstream records it.
      const recordEvents = (events: ProvisionerEvent[]): Promise<void> => report(ctx, { claim }, events, []);
      let outcome: ClaimOutcome = await syncClaim(
        { config, provisioner, store, slowRetryPeriodMs: options.slowRetryPeriodMs, clock, recordEvents, timeoutMs: options.provisionTimeoutMs },
        {
          claim,
          ...(classEntry && !classEntry.deleted ? { storageClass: classEntry.object as StorageClass } : {}),
          ...(volumeEntry && !volumeEntry.deleted ? { existingVolume: volumeEntry.object as PersistentVolume } : {}),
          ...(record.slowRetry ? { slowRetry: record.slowRetry } : {}),
          now: clock(),
        },
      );
      if (outcome.updateClaim) {
        try {
          await writer.updateClaim(outcome.updateClaim);
        } catch (err) {
          ctx.logger.warn('reschedule: claim update failed', { error: String(err) });
          outcome = { ...outcome, result: 'requeue', error: outcome.rescheduleError, inProgress: 'delete' };
        }
      }
      // A claim that is gone is provisioned to the end because its volume may exist: every failed attempt
      // stores its in-progress record (upstream drops it on a ProvisioningFinished error, and leaks the
      // volume of a create whose answer was lost if the retry fails before the create, e.g. listing the
      // nodes; a resumed claim whose class is gone would otherwise keep no record at all). Only success, a
      // stop (the PV exists) or a reschedule ends it.
      if (!cached && outcome.result === 'requeue' && outcome.inProgress !== 'store' && !outcome.updateClaim && !outcome.rescheduleError) {
        outcome = { ...outcome, inProgress: 'store' };
      }
      const change: ClaimRecordChange = {};
      if (outcome.inProgress === 'store') change.inProgress = claim;
      else if (outcome.inProgress === 'delete' && record.inProgress) change.inProgress = null;
      if (outcome.slowRetry === 'drop') change.slowRetry = null;
      else if (outcome.slowRetry) change.slowRetry = outcome.slowRetry.add;
      try {
        await records.apply(cluster, uid, change);
      } catch (err) {
        // The in-progress record is the only trace of a volume that may exist: with it unwritten, the lease
        // (taken, not released) is kept as that trace until it lapses (see provisioningCutShort).
        if (change.inProgress) keepLease = true;
        throw err;
      }
      await report(ctx, { claim }, outcome.events, outcome.metrics);
      if (outcome.result === 'requeue') throw outcome.error ?? new Error('provisioning failed');
      if (outcome.result === 'stop') ctx.logger.info('provisioning stopped', { reason: outcome.error?.message });
      if (pending.parked) {
        ctx.logger.info('provisioned PV not saved yet: kept in the claim record, saved first on the next reconcile', { uid, pv: volumeName(config, claim) });
        return { requeueAfterMs: runtimeOptionsFor(options).limiter!.baseDelayMs };
      }
      keepLease = outcome.result === 'done' && outcome.events.some((e) => e.reason === EventReason.ProvisioningSucceeded);
      return;
    } finally {
      clearInterval(renewal);
      if (lease && !keepLease) await ctx.leases.release(lease).catch(() => false);
    }
  }

  async function reconcileVolume(request: ReconcileRequest, ctx: RuntimeContext): Promise<ReconcileResult> {
    const { cluster } = request;
    const cache = new ObjectCache(ctx.doc, ctx.tables.cache, { indexer: indexAttributes });
    const entry = request.cached !== undefined ? (request.cached ?? undefined) : await cache.get(cluster, 'PersistentVolume', request.key);
    const pv = entry && !entry.deleted ? (entry.object as PersistentVolume) : undefined;
    if (!pv) return;
    const writer = new KubeWriter(await ctx.kube.api(cluster, KubeJsonApi), cache, cluster);
    const attachments = new CachedVolumeAttachments(cache, cluster, new SyncMarkers(ctx.doc, ctx.tables.control, { reader: ctx.reader }));
    const signal = timeoutSignal(options.deletionTimeoutMs);
    const outcome = await syncVolume({ config, provisioner, writer, attachments, clock, ...(signal ? { signal } : {}) }, pv);
    await report(ctx, { volume: pv }, outcome.events, outcome.metrics);
    if (outcome.result === 'requeue') throw outcome.error ?? new Error('volume deletion failed');
  }

  let requeuer: VolumeRequeuer | null | undefined = deps.volumeRequeuer;
  const volumeRequeuer = (): VolumeRequeuer | null => (requeuer === undefined ? (requeuer = volumeRequeuerFromEnv() ?? null) : requeuer);

  /**
   * A VolumeAttachment changed. Once it is gone, the PV it named may be deletable at last: when that PV
   * is ours, wants deleting, and no other attachment names it, its key goes back to the queue in the PV's
   * own message group, its backoff forgotten first (else the runtime's backoff gate would hold the
   * REQUEUE until the retry scheduled after the "still attached" failure). The PV itself is only read
   * here, never synced, so one PV is never reconciled by two workers at once.
   */
  async function reconcileAttachment(request: ReconcileRequest, ctx: RuntimeContext): Promise<ReconcileResult> {
    const { cluster } = request;
    const cache = new ObjectCache(ctx.doc, ctx.tables.cache, { indexer: indexAttributes });
    const entry = request.cached !== undefined ? (request.cached ?? undefined) : await cache.get(cluster, 'VolumeAttachment', request.key);
    const pvName = detachedVolumeName(entry, request.event.type === 'DELETED' ? request.event.object : undefined);
    if (!pvName) return;
    const pvEntry = await cache.get(cluster, 'PersistentVolume', pvName);
    if (!pvEntry || pvEntry.deleted) return;
    const pv = pvEntry.object as PersistentVolume;
    if (!planVolumeSync(config, provisioner, { signal: new AbortController().signal }, pv).delete) return;
    if (canDeleteVolume(pv, await new CachedVolumeAttachments(cache, cluster, new SyncMarkers(ctx.doc, ctx.tables.control, { reader: ctx.reader })).list(pvName))) return;
    const target = volumeRequeuer();
    if (!target) {
      ctx.logger.warn('attachment gone but no provisioner queue to requeue its volume; the volume’s backoff retries it', { pv: pvName });
      return;
    }
    await new KeyBackoff({ doc: ctx.doc, table: ctx.tables.control }).clear({ controller: CONTROLLER_NAME, cluster, kind: 'PersistentVolume', key: pvName });
    const cause = `detached-${entry?.uid || request.event.uid || request.key}-${entry?.rv ?? request.event.resourceVersion}`;
    await target.requeue({ cluster, name: pvName, uid: pvEntry.uid, resourceVersion: String(pvEntry.rv), cause });
    ctx.logger.info('attachment gone: volume requeued for deletion', { pv: pvName });
  }

  return {
    name: CONTROLLER_NAME,
    // VolumeAttachment: the delete guard reads them, so their initial LIST gates the controller too
    // (the runtime's sync gate defaults to these kinds); their deletions requeue the PV they held.
    kinds: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment'],
    // A claim's in-progress record (by the uid the message names), its class and its PV come with the
    // claim's own entry; the PV read is used only by the lease's first holder (see reconcileClaim).
    prefetch(request) {
      if (request.kind !== 'PersistentVolumeClaim') return {};
      const claim = request.event.object as PersistentVolumeClaim | undefined;
      const className = claim?.metadata && claim.spec ? getClaimClass(claim) : '';
      let pvName = '';
      try {
        pvName = claim?.metadata?.uid && claim.spec ? volumeName(config, claim) : '';
      } catch {
        // a naming hook that cannot name this claim: the reconcile reads the PV itself
      }
      return {
        control: request.event.uid ? [
          claimRecordPk(request.cluster, request.event.uid),
          // whether a reminder of it is parked (reconcileClaim): only a deleted claim's has one, so only
          // the messages that end one ask (its DELETED, a requeue: the reminder's own, a parked retry)
          ...(request.event.type === 'DELETED' || request.event.type === 'REQUEUE' ? [backoffIdPk(reminderId(request.cluster, request.key, request.event.uid))] : []),
        ] : [],
        cache: [
          ...(className ? [{ kind: 'StorageClass', key: className }] : []),
          ...(pvName ? [{ kind: 'PersistentVolume', key: pvName }] : []),
        ],
      };
    },
    async reconcile(request, ctx) {
      if (request.kind === 'PersistentVolumeClaim') return reconcileClaim(request, ctx);
      if (request.kind === 'PersistentVolume') return reconcileVolume(request, ctx);
      if (request.kind === 'VolumeAttachment') return reconcileAttachment(request, ctx);
      return undefined;
    },
  };
}
