/**
 * The provisioner's level-triggered resync (upstream: the informers' `ResyncPeriod`, default 15 min,
 * which hands every claim and volume back to the ProvisionController). After its failure threshold the
 * runtime drops a key; this source is what brings it back: at most once per `resyncPeriodMs` per cluster
 * it re-enqueues to the provisioner queue
 * - every pending claim (the cache's `byPendingClaim` index) whose StorageClass names one of our
 *   provisioners, and
 * - every Released PersistentVolume with the `Delete` policy that one of our names provisioned
 *   (`pv.kubernetes.io/provisioned-by`, see {@link isProvisionerForVolume}).
 *
 * The resync function runs more often than the period; the last run time per cluster lives in the
 * control table (`resync#provisioner#<cluster>`) and is taken with a conditional write, so of two
 * concurrent invocations only one lists and enqueues. A period of 0 turns the resync off (as upstream).
 * The module registers the source at load when `PROVISIONER_QUEUE_URL` is set.
 *
 * @example
 * // Registered only where the provisioner queue is configured (every deployed resync function has it:
// serverless.yml sets PROVISIONER_QUEUE_URL for all functions); without it there is nowhere to enqueue.
if (process.env[ENV.queueUrl.provisioner]) {
  registerResync('provisioner', createProvisionerResync(() => provisionerOptionsFromEnv(process.env)));
}
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ResyncItem, ResyncServices, ResyncSource } from '../resync/registry.ts';
import { registerResync } from '../resync/registry.ts';
import { ENV } from '../runtime/reconcile.ts';
import type { ObjectCache } from '../state/cache.ts';
import type { DocumentClient } from '../state/client.ts';
import { PENDING_CLAIM_INDEX, pendingClaimPk } from '../state/schema.ts';
import { knownProvisioner, type CoreConfig } from './claim.ts';
import type { PersistentVolume } from './objects.ts';
import { provisionerOptionsFromEnv } from './options.ts';
import { isProvisionerForVolume } from './volume.ts';

/** What the resync needs to know: our names and the period. */
export interface ProvisionerResyncConfig {
  provisionerName: string;
  additionalProvisionerNames: readonly string[];
  resyncPeriodMs: number;
}

/** Control-table key holding the last provisioner resync of `cluster`. */
export const provisionerResyncPk = (cluster: string): string => `resync#provisioner#${cluster}`;

/**
 * Takes this period's resync slot for `cluster`: true when no run is recorded or the last one started at
 * least `periodMs` before `now` (the write records `now`); false when another run holds the period.
 */
export async function claimResyncSlot(doc: DocumentClient, table: string, cluster: string, periodMs: number, now: number): Promise<boolean> {
  try {
    // UpdateItem (not PutItem): the resync function's role may update control items, not put them.
    await doc.send(new UpdateCommand({
      TableName: table,
      Key: { pk: provisionerResyncPk(cluster) },
      UpdateExpression: 'SET lastRunAt = :now',
      ConditionExpression: 'attribute_not_exists(pk) OR lastRunAt <= :cutoff',
      ExpressionAttributeValues: { ':now': now, ':cutoff': now - periodMs },
    }));
    return true;
  } catch (error) {
    if ((error as { name?: string } | null)?.name === 'ConditionalCheckFailedException') return false;
    throw error;
  }
}

/** Names of the cached StorageClasses whose provisioner is one of ours. */
async function ourClasses(cluster: string, cache: ObjectCache, config: CoreConfig): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of cache.list(cluster, 'StorageClass')) {
    const provisioner = (entry.object as { provisioner?: unknown }).provisioner;
    if (typeof provisioner === 'string' && knownProvisioner(config, provisioner)) names.push(String(entry.object.metadata?.name ?? ''));
  }
  return names;
}

/** The keys the provisioner wants looked at again in `cluster` (no period check). */
export async function* provisionerResyncItems(cluster: string, cache: ObjectCache, config: CoreConfig): AsyncIterable<ResyncItem> {
  for (const className of await ourClasses(cluster, cache, config)) {
    for await (const entry of cache.queryIndex(PENDING_CLAIM_INDEX, pendingClaimPk(cluster, className))) {
      const meta = entry.object.metadata ?? {};
      yield { kind: 'PersistentVolumeClaim', key: `${meta.namespace ?? ''}/${meta.name ?? ''}`, uid: entry.uid, resourceVersion: String(entry.rv) };
    }
  }
  for await (const entry of cache.list(cluster, 'PersistentVolume')) {
    const pv = entry.object as PersistentVolume;
    if (pv.status?.phase !== 'Released' || pv.spec?.persistentVolumeReclaimPolicy !== 'Delete') continue;
    if (!pv.metadata || !isProvisionerForVolume(config, pv)) continue;
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
    if (!(await claimResyncSlot(services.doc, services.tables.control, cluster, resyncPeriodMs, now()))) return;
    yield* provisionerResyncItems(cluster, cache, { provisionerName, additionalProvisionerNames: [...additionalProvisionerNames], addFinalizer: false });
  };
}

// Registered only where the provisioner queue is configured (every deployed resync function has it:
// serverless.yml sets PROVISIONER_QUEUE_URL for all functions); without it there is nowhere to enqueue.
if (process.env[ENV.queueUrl.provisioner]) {
  registerResync('provisioner', createProvisionerResync(() => provisionerOptionsFromEnv(process.env)));
}
