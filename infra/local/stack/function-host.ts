/**
 * Worker-thread side of {@link FunctionWorker}: loads one function's module and invokes its handler for
 * each request the stack posts. A worker has its own `process.env` (the function's environment from the
 * template), so functions run side by side in one process, each seeing only its own configuration — as
 * separate Lambda sandboxes would.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { lambdaContext } from './event-source.ts';

interface HostData {
  entry: string;
  exportName: string;
  functionName: string;
  region: string;
  memorySize: number;
}

interface InvokeRequest {
  id: number;
  event: unknown;
  deadline: number;
}

const data = workerData as HostData;
const mod = (await import(pathToFileURL(data.entry).href)) as Record<string, unknown>;
const handler = mod[data.exportName];
if (typeof handler !== 'function') throw new TypeError(`${data.entry} does not export a function named ${data.exportName}`);

parentPort!.on('message', (req: InvokeRequest) => {
  const context = lambdaContext(data.functionName, data.region, req.deadline, data.memorySize);
  Promise.resolve()
    .then(() => (handler as (e: unknown, c: unknown) => unknown)(req.event, context))
    .then(
      (result) => parentPort!.postMessage({ id: req.id, result }),
      (error: unknown) => {
        const e = error instanceof Error ? error : new Error(String(error));
        parentPort!.postMessage({ id: req.id, error: { name: e.name, message: e.message, stack: e.stack } });
      },
    );
});
parentPort!.postMessage({ ready: true });
