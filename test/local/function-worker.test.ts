// The function sandbox on stop: an invocation still running is ended and rejected as stopped (not as a
// crashed worker), a later call is refused the same way, and stopping twice is harmless; a worker that
// really dies still says so.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FunctionStoppedError, FunctionWorker } from '../../infra/local/stack/function-worker.ts';
import { lambdaContext } from '../../infra/local/stack/event-source.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'function-worker-'));
  await writeFile(join(dir, 'fn.mjs'), [
    'export const handler = async (event) => {',
    '  if (event.crash) process.exit(3);',
    '  if (event.forever) await new Promise(() => setInterval(() => {}, 1000));',
    '  return { ok: event.n };',
    '};',
  ].join('\n'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const start = () => FunctionWorker.start({ entry: join(dir, 'fn.mjs'), exportName: 'handler', functionName: 'fn', region: 'eu-west-1', env: {} });
const context = () => lambdaContext('fn', 'eu-west-1', Date.now() + 60_000);

it('stop ends a running invocation with FunctionStoppedError, promptly; stop is idempotent', async () => {
  const worker = await start();
  assert.deepEqual(await worker.handler({ n: 1 }, context()), { ok: 1 });
  const running = assert.rejects(worker.handler({ forever: true }, context()), (err: Error) => err instanceof FunctionStoppedError && !/exited with code/.test(err.message));
  const stopped = Date.now();
  await Promise.all([worker.stop(), worker.stop()]);
  await running;
  assert.ok(Date.now() - stopped < 5_000);
  await assert.rejects(worker.handler({ n: 2 }, context()), FunctionStoppedError);
});

it('a worker that dies on its own is reported as exited', async () => {
  const worker = await start();
  await assert.rejects(worker.handler({ crash: true }, context()), /function worker exited with code 3/);
  await worker.stop();
});
