/**
 * Worker-thread side of the soak's function sandboxes ({@link FunctionPool}): loads one function's module
 * and runs each invocation inside `runWithStorageCluster(<the records' cluster>)`, so the per-cluster
 * storage endpoints of `CLUSTERS` (lib/storage/clusters.ts) are used. A batch holding records of several
 * clusters is run as one sub-batch per cluster, in order, and their failures are merged.
 *
 * This stands in for the runtime marking the cluster of each record itself (see the soak README): the
 * functions and lib/runtime are the deployed code, unchanged.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { lambdaContext } from '../../../infra/local/stack/event-source.ts';
import { runWithStorageCluster } from '../../../lib/storage/clusters.ts';

interface HostData {
  entry: string;
  exportName: string;
  functionName: string;
  region: string;
  memorySize: number;
}

type Handler = (event: unknown, context: unknown) => Promise<any>;
type SqsRecord = { body?: string; messageId: string };

const data = workerData as HostData;
const mod = (await import(pathToFileURL(data.entry).href)) as Record<string, unknown>;
const handler = mod[data.exportName] as Handler;
if (typeof handler !== 'function') throw new TypeError(`${data.entry} does not export a function named ${data.exportName}`);

const clusterOf = (record: SqsRecord): string | undefined => {
  try {
    const c = (JSON.parse(record.body ?? '') as { cluster?: unknown }).cluster;
    return typeof c === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
};

async function invoke(event: any, context: unknown): Promise<unknown> {
  if (Array.isArray(event?.Records)) {
    const groups = new Map<string | undefined, SqsRecord[]>();
    for (const r of event.Records as SqsRecord[]) {
      const c = clusterOf(r);
      groups.set(c, [...(groups.get(c) ?? []), r]);
    }
    if (groups.size === 1) {
      const [cluster] = groups.keys();
      return cluster === undefined ? handler(event, context) : runWithStorageCluster(cluster, () => handler(event, context));
    }
    const failures: { itemIdentifier: string }[] = [];
    for (const [cluster, records] of groups) {
      const sub = { ...event, Records: records };
      const out = (cluster === undefined ? await handler(sub, context) : await runWithStorageCluster(cluster, () => handler(sub, context))) as
        | { batchItemFailures?: { itemIdentifier: string }[] }
        | undefined;
      failures.push(...(out?.batchItemFailures ?? []));
    }
    return { batchItemFailures: failures };
  }
  const cluster = typeof event?.cluster === 'string' ? (event.cluster as string) : undefined;
  return cluster === undefined ? handler(event, context) : runWithStorageCluster(cluster, () => handler(event, context));
}

parentPort!.on('message', (req: { id: number; event: unknown; deadline: number }) => {
  const context = lambdaContext(data.functionName, data.region, req.deadline, data.memorySize);
  invoke(req.event, context).then(
    (result) => parentPort!.postMessage({ id: req.id, result }),
    (error: unknown) => {
      const e = error instanceof Error ? error : new Error(String(error));
      parentPort!.postMessage({ id: req.id, error: { name: e.name, message: e.message, stack: e.stack } });
    },
  );
});
parentPort!.postMessage({ ready: true });
