/**
 * The provisioner's level-triggered resync (upstream: the informers' `ResyncPeriod`, default 15 min,
 * which hands every claim and every volume back to the ProvisionController). It is what brings back a
 * key the runtime gave up on after its failure threshold, and what applies a changed configuration to
 * objects no event touches (e.g. `AddFinalizer` switched on: existing Bound PVs get the finalizer). At
 * most once per `resyncPeriodMs` per cluster it re-enqueues to the provisioner queue
 * - every PersistentVolumeClaim whose class (`volume.beta.kubernetes.io/storage-class`, else
 *   `spec.storageClassName`) is a cached StorageClass of one of our provisioners, or whose
 *   storage-provisioner annotation names one of ours (bound claims too: upstream hands them over
 *   and `shouldProvision` stops at their `spec.volumeName`), and
 * - every PersistentVolume upstream's `syncVolume` acts on ({@link isProvisionerForVolume}: provisioned
 *   by, or migrated to, one of our names, or a CSI volume of our driver), in every phase.
 * Both kinds are listed with one paginated Query of their cache partition each (`<cluster>#<Kind>`, no
 * Scan): no cache index holds bound claims or PVs by provisioner.
 *
 * The resync function runs more often than the period; the period per cluster lives in the control table
 * (`resync#provisioner#<cluster>`). A run first takes the period with a conditional write (`runStartedAt`,
 * held until `runUntil`, so of two concurrent invocations only one lists), and records it done
 * (`lastRunAt` = when that run started) only after every key it yielded was sent. A run that fails
 * partway gives the period back, so the next invocation lists again; one that dies (Lambda timeout)
 * holds it until `runUntil`. A period of 0 turns the resync off (as upstream). functions/resync.ts wires
 * the source when `PROVISIONER_QUEUE_URL` is set.
 *
 * @example
 * const source = createProvisionerResync(() => provisionerOptionsFromEnv(process.env));
 * for await (const item of source('c1', cache, { doc, tables })) console.log(item.kind, item.key);
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ResyncItem, ResyncServices, ResyncSource } from '../resync/source.ts';
import type { ObjectCache } from '../state/cache.ts';
import type { DocumentClient } from '../state/client.ts';
import { getClaimClass, getStorageProvisioner, knownProvisioner, type CoreConfig } from './claim.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../kube/objects.ts';
import { isProvisionerForVolume } from './volume.ts';

/** What the resync needs to know: our names and the period. */
export interface ProvisionerResyncConfig {
  provisionerName: string;
  additionalProvisionerNames: readonly string[];
  resyncPeriodMs: number;
}

/** Control-table key holding the provisioner resync period of `cluster`. */
export const provisionerResyncPk = (cluster: string): string => `resync#provisioner#${cluster}`;

/**
 * How long a started run holds the period before another invocation may take it over: the longest a
 * Lambda function can run, so a live run is never overtaken and a dead one blocks at most this long.
 */
export const RESYNC_RUN_LEASE_MS = 15 * 60_000;

/** One run's hold on its period. */
export interface ResyncRun {
  cluster: string;
  /** Epoch ms the run started; identifies it in the record. */
  startedAt: number;
}

const isConditionFailure = (error: unknown): boolean =>
  (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

/**
 * Takes this period's resync of `cluster`: succeeds when no completed run is recorded or the last one
 * started at least `periodMs` before `now`, and no other run holds the period (or its hold expired).
 * Returns the run, or undefined when the period is not due or taken.
 */
export async function beginResyncRun(
  doc: DocumentClient, table: string, cluster: string, periodMs: number, now: number, leaseMs: number = RESYNC_RUN_LEASE_MS,
): Promise<ResyncRun | undefined> {
  try {
    // UpdateItem (not PutItem): the resync function's role may update control items, not put them.
    await doc.send(new UpdateCommand({
      TableName: table,
      Key: { pk: provisionerResyncPk(cluster) },
      UpdateExpression: 'SET runStartedAt = :now, runUntil = :until',
      ConditionExpression: '(attribute_not_exists(lastRunAt) OR lastRunAt <= :cutoff) AND (attribute_not_exists(runUntil) OR runUntil <= :now)',
      ExpressionAttributeValues: { ':now': now, ':until': now + leaseMs, ':cutoff': now - periodMs },
    }));
    return { cluster, startedAt: now };
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/** Records `run` done: the period counts from its start. False when the run no longer held the period. */
export async function completeResyncRun(doc: DocumentClient, table: string, run: ResyncRun): Promise<boolean> {
  return endRun(doc, table, run, 'SET lastRunAt = :started REMOVE runStartedAt, runUntil');
}

/** Gives the period back after a failed run, so the next invocation lists again. */
export async function abandonResyncRun(doc: DocumentClient, table: string, run: ResyncRun): Promise<boolean> {
  return endRun(doc, table, run, 'REMOVE runStartedAt, runUntil');
}

async function endRun(doc: DocumentClient, table: string, run: ResyncRun, update: string): Promise<boolean> {
  try {
    await doc.send(new UpdateCommand({
      TableName: table,
      Key: { pk: provisionerResyncPk(run.cluster) },
      UpdateExpression: update,
      ConditionExpression: 'runStartedAt = :started',
      ExpressionAttributeValues: { ':started': run.startedAt },
    }));
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Names of the cached StorageClasses whose provisioner is one of ours. */
async function ourClasses(cluster: string, cache: ObjectCache, config: CoreConfig): Promise<Set<string>> {
  const names = new Set<string>();
  for await (const entry of cache.list(cluster, 'StorageClass')) {
    const provisioner = (entry.object as { provisioner?: unknown }).provisioner;
    if (typeof provisioner === 'string' && knownProvisioner(config, provisioner)) names.add(String(entry.object.metadata?.name ?? ''));
  }
  return names;
}

/** Is `claim` one the provisioner looks after: of one of `ourClasses`, or asking for one of our names? */
export function isClaimOfProvisioner(config: CoreConfig, ourClasses: ReadonlySet<string>, claim: PersistentVolumeClaim): boolean {
  if (ourClasses.has(getClaimClass(claim))) return true;
  const requested = getStorageProvisioner(claim);
  return requested !== undefined && knownProvisioner(config, requested);
}

/** The keys the provisioner wants looked at again in `cluster` (no period check). */
export async function* provisionerResyncItems(cluster: string, cache: ObjectCache, config: CoreConfig): AsyncIterable<ResyncItem> {
  const classes = await ourClasses(cluster, cache, config);
  for await (const entry of cache.list(cluster, 'PersistentVolumeClaim')) {
    const claim = entry.object as PersistentVolumeClaim;
    if (!claim.metadata || !claim.spec || !isClaimOfProvisioner(config, classes, claim)) continue;
    yield { kind: 'PersistentVolumeClaim', key: `${claim.metadata.namespace ?? ''}/${claim.metadata.name ?? ''}`, uid: entry.uid, resourceVersion: String(entry.rv) };
  }
  for await (const entry of cache.list(cluster, 'PersistentVolume')) {
    const pv = entry.object as PersistentVolume;
    if (!pv.metadata || !pv.spec || !isProvisionerForVolume(config, pv)) continue;
    yield { kind: 'PersistentVolume', key: String(pv.metadata.name), uid: entry.uid, resourceVersion: String(entry.rv) };
  }
}

/**
 * A resync source for the provisioner. `config` is read on every run (the registered source reads the
 * `PROVISIONER_*` environment then, so a bad value fails that run, reported by the resync function).
 */
export function createProvisionerResync(config: () => ProvisionerResyncConfig, now: () => number = Date.now): ResyncSource {
  return async function* provisionerResync(cluster: string, cache: ObjectCache, services: ResyncServices): AsyncIterable<ResyncItem> {
    const { provisionerName, additionalProvisionerNames, resyncPeriodMs } = config();
    if (resyncPeriodMs <= 0) return;
    const { doc, tables } = services;
    const run = await beginResyncRun(doc, tables.control, cluster, resyncPeriodMs, now());
    if (!run) return;
    let completed = false;
    try {
      yield* provisionerResyncItems(cluster, cache, { provisionerName, additionalProvisionerNames: [...additionalProvisionerNames], addFinalizer: false });
      // Done means sent: the items above may still sit in the runner's batch.
      await services.flush?.();
      await completeResyncRun(doc, tables.control, run);
      completed = true;
    } finally {
      // A listing, send or record failure (or the runner stopping early) leaves the period to the next run.
      if (!completed) await abandonResyncRun(doc, tables.control, run).catch(() => false);
    }
  };
}
