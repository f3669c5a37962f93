/**
 * Worker-thread side of the soak's function sandboxes ({@link FunctionPool}): loads one function's module
 * and runs each invocation as Lambda would. The per-cluster storage endpoints of `CLUSTERS`
 * (lib/storage/clusters.ts) are the product's own doing: the runtime runs each record's reconcile marked with
 * its cluster, and the scheduled shared-volume poll and label resync each cluster under its own mark.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { lambdaContext } from '../../../infra/local/stack/event-source.ts';

interface HostData {
  entry: string;
  exportName: string;
  functionName: string;
  region: string;
  memorySize: number;
}

type Handler = (event: unknown, context: unknown) => Promise<any>;

const data = workerData as HostData;
const mod = (await import(pathToFileURL(data.entry).href)) as Record<string, unknown>;
const handler = mod[data.exportName] as Handler;
if (typeof handler !== 'function') throw new TypeError(`${data.entry} does not export a function named ${data.exportName}`);

/** The invocation as Lambda makes it: the runtime and the poller mark each record's cluster themselves. */
function invoke(event: unknown, context: unknown): Promise<unknown> {
  return handler(event, context);
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
