/**
 * Gate `synced`: nothing runs before the forwarder marked the initial LIST of every kind the controller reads
 * complete (`sync#<cluster>#<Kind>`, `listComplete`); until then the record waits `syncWaitMs`
 * (`CacheNotSynced`). A complete answer is remembered for 30 s per cluster, and the records of a batch that
 * arrive while a cluster's markers are being read share that one read.
 *
 * @example
 * // markers incomplete ⇒ { kind: 'wait', delayMs: 2000 }
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { parsedOf, type Gate } from '../job.ts';
import { METRIC } from '../observability.ts';
import type { SqsRuntime } from '../runtime.ts';

const SYNC_CACHE_MS = 30_000;

/** Cluster → the markers read in progress. */
const reading = new WeakMap<object, Map<string, Promise<boolean>>>();

async function readMarkers<Ctx>(rt: SqsRuntime<Ctx>, cluster: string): Promise<boolean> {
  const synced = await rt.services.sync.isListComplete(cluster, rt.requiresSynced);
  if (synced) rt.syncedUntil.set(cluster, rt.now() + SYNC_CACHE_MS);
  return synced;
}

function isSynced<Ctx>(rt: SqsRuntime<Ctx>, cluster: string): Promise<boolean> {
  const until = rt.syncedUntil.get(cluster);
  if (until !== undefined && until > rt.now()) return Promise.resolve(true);
  let inFlight = reading.get(rt);
  if (!inFlight) reading.set(rt, (inFlight = new Map()));
  let read = inFlight.get(cluster);
  if (!read) {
    const pending = inFlight;
    inFlight.set(cluster, (read = readMarkers(rt, cluster).finally(() => pending.delete(cluster))));
  }
  return read;
}

export function synced<Ctx>(rt: SqsRuntime<Ctx>): Gate {
  return async (job, next) => {
    if (await isSynced(rt, parsedOf(job).event.cluster)) return next();
    rt.metrics.addMetric(METRIC.cacheNotSynced, MetricUnit.Count, 1);
    return { kind: 'wait', delayMs: rt.syncWaitMs, why: 'cache not synced: the initial LIST is not complete' };
  };
}
