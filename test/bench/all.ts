/**
 * `npm run bench`: every benchmark, one after another, each in its own process (so they do not disturb
 * each other); each bench's progress and table go to stderr as it runs. At the end: one JSON document on
 * stdout (every bench's own JSON under `results`, the price table, the machine) and a short table of the
 * key figures on stderr. `BENCH_JSON=<file>` also writes the document to a file. Exits non-zero if any
 * benchmark failed.
 *
 * Sizes come from each bench's environment variables (see each file), which pass through; `BENCH_ONLY`
 * (comma-separated names) runs a subset; `BENCH_AWS=embedded` runs fauxqs and dynalite inside the binder,
 * provisioner and scale benches' process instead of their own, and `BENCH_FUNCTIONS=inline` runs their
 * functions in the main thread instead of a thread of their own (support/harness.ts). At the defaults the
 * whole run takes 11–14 minutes on a 2-core machine.
 *
 * | bench | npm script | what |
 * |---|---|---|
 * | binder | `bench:binder` | static binds: one alone, 100 at once (budget 400/600) and 100 more on the warm stack, 100 and 1,000 at KCM's budget (20/30) |
 * | provisioner | `bench:provisioner` | default-class claims provisioned and bound: one alone, 100 at once, 100 more warm, the first 100's deletion, 100 at KCM's budget |
 * | scale | `bench:scale` | 10,000 existing volumes, 1,000 claims at once; emulator peak request rate; forwarder memory |
 * | pipeline | `bench:pipeline` | one pipeline hop (API write → reconcile start) |
 * | shared-volume | `bench:shared-volume` | volumes attached as shared → endpoint published: one alone, 100 at once, 100 more warm, 100 at KCM's budget; steady-state polls and their cost |
 * | label-sync | `bench:label-sync` | node label changes → storage node: one alone, 100 at once, 100 more warm, 100 at KCM's budget; a resync with nothing to do |
 * | kube-api | `bench:kube-api` | the API emulator itself |
 * | aws-sdk | `bench:aws-sdk` | CPU per AWS SDK call: the SDK's default client, claimflow's, the SDK without transport |
 * | cold-start | `bench:cold-start` | each function's bundle: its size, and its import in a new process (the code's part of a cold start) |
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PRICES } from './prices.ts';
import { CONTROLLER_HEADER, controllerRows, table, type ControllerReport } from './support/report.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BENCHES = ['binder', 'provisioner', 'scale', 'pipeline', 'shared-volume', 'label-sync', 'kube-api', 'aws-sdk', 'cold-start'];
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean);
const selected = only ? BENCHES.filter((b) => only.includes(b)) : BENCHES;

/** The last top-level JSON document a bench printed (it starts at a line that is just `{`). */
function lastJson(text: string): unknown {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i] !== '{') continue;
    try {
      return JSON.parse(lines.slice(i).join('\n'));
    } catch {
      // a `{` line inside another document: keep looking
    }
  }
  return undefined;
}

interface Result {
  exitCode: number | null;
  durationS: number;
  report?: any;
}

const started = new Date();
const loadAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
const results: Record<string, Result> = {};
for (const name of selected) {
  const t0 = Date.now();
  process.stderr.write(`\n== bench ${name} (npm run bench:${name})\n`);
  let stdout = '';
  const exitCode = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [join(here, `${name}.ts`), ...process.argv.slice(2)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (stdout += chunk));
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null)));
  });
  results[name] = { exitCode, durationS: Math.round((Date.now() - t0) / 1000), report: lastJson(stdout) };
  if (exitCode !== 0) process.stderr.write(`bench ${name} exited with ${exitCode}\n`);
}

const fmt = (v: unknown): string => (v === undefined || v === null ? '–' : typeof v === 'number' ? String(Math.round(v * 100) / 100) : String(v));
const figures: string[][] = [];
const add = (bench: string, figure: string, value: unknown, command: string) => figures.push([bench, figure, fmt(value), command]);
const r = (name: string): any => results[name]?.report;
if (r('scale')) {
  const s = r('scale');
  const b = s.burst ?? {};
  const f = s.forwarder ?? {};
  add('scale', `${s.volumes} volumes + ${s.claims} claims at once: claims Bound/s`, b.throughputPerSecond, 'npm run bench:scale');
  add('scale', 'latency p50 / p99 ms', `${fmt(b.latencyMs?.p50)} / ${fmt(b.latencyMs?.p99)}`, 'npm run bench:scale');
  add('scale', 'emulator peak requests/s (all clients)', b.emulatorPeakRequestsPerSecond, 'npm run bench:scale');
  add('scale', `forwarder RSS / heap MiB: empty → ${s.volumes} objects → peak`, `${fmt(f.baselineNearlyEmptyCluster?.rssMiB)}/${fmt(f.baselineNearlyEmptyCluster?.heapUsedMiB)} → ${fmt(f.settledAtVolumes?.rssMiB)}/${fmt(f.settledAtVolumes?.heapUsedMiB)} → ${fmt(Math.max(f.startAtVolumes?.peak?.rssMiB ?? 0, f.duringClaimsPeak?.rssMiB ?? 0))}/${fmt(Math.max(f.startAtVolumes?.peak?.heapUsedMiB ?? 0, f.duringClaimsPeak?.heapUsedMiB ?? 0))}`, 'npm run bench:scale');
}
if (r('pipeline')) {
  const p = r('pipeline');
  add('pipeline', 'one hop (API write → reconcile start) p50 / p99 ms', `${fmt(p.latencyMs?.p50)} / ${fmt(p.latencyMs?.p99)}`, 'npm run bench:pipeline');
  add('pipeline', 'changes/s end to end; messages delivered per change', `${fmt(p.changesPerSecondEndToEnd)}; ${fmt(p.perChange?.messagesDelivered)}`, 'npm run bench:pipeline');
}
if (r('shared-volume')) {
  const v = r('shared-volume');
  add('shared-volume', 'polling cost per month USD', v.steadyState?.pollingCostPerMonthUsd?.total, 'npm run bench:shared-volume');
  add('shared-volume', 'DynamoDB requests per volume, a poll after the cache expired', v.steadyState?.poll?.afterCacheExpiry?.perVolume?.dynamoRequests, 'npm run bench:shared-volume');
}
if (r('label-sync')) {
  const l = r('label-sync');
  add('label-sync', 'control-plane calls per changed node (burst)', l.burst?.controlPlane?.callsPerChangedNode, 'npm run bench:label-sync');
  add('label-sync', 'control-plane calls of a resync with nothing to do', l.resyncWithNothingToDo?.controlPlaneCalls, 'npm run bench:label-sync');
}
if (r('kube-api')) {
  const k = r('kube-api');
  add('kube-api', 'updates/s (1 / 8 clients)', `${fmt(k.updatesPerSecond?.oneClient)} / ${fmt(k.updatesPerSecond?.eightClients)}`, 'npm run bench:kube-api');
  add('kube-api', 'watch delivery p99 ms (100 watchers)', k.watchDeliveryMs?.p99, 'npm run bench:kube-api');
}
if (r('aws-sdk')) {
  const a = r('aws-sdk');
  add('aws-sdk', 'CPU µs per GetItem: SDK default / claimflow / no transport', `${fmt(a.cpuUsPerCall?.sdkDefault?.get)} / ${fmt(a.cpuUsPerCall?.claimflow?.get)} / ${fmt(a.cpuUsPerCall?.noTransport?.get)}`, 'npm run bench:aws-sdk');
}

if (r('cold-start')) {
  for (const [name, f] of Object.entries((r('cold-start').functions ?? {}) as Record<string, any>)) {
    add('cold-start', `${name}: bundle KiB; import ms (CPU ms), median of ${fmt(r('cold-start').startsPerFunction)} new processes`, `${fmt(f.bundleKiB)}; ${fmt(f.importMs?.median)} (${fmt(f.importCpuMs?.median)})`, 'npm run bench:cold-start');
  }
}

const controllers = ['binder', 'provisioner', 'shared-volume', 'label-sync'].map((n) => r(n) as ControllerReport | undefined).filter((x): x is ControllerReport => x !== undefined);
process.stderr.write(`\none run, ${cpus().length} CPUs, load average (1 min) ${loadAtStart[0]} at start, ${Math.round(loadavg()[0] * 100) / 100} at end\n`);
process.stderr.write(`\n${table(CONTROLLER_HEADER, controllers.flatMap(controllerRows))}\n\n${table(['bench', 'figure', 'value', 'command'], figures)}\n\n`);

const document = {
  bench: 'all',
  startedAt: started.toISOString(),
  durationS: Math.round((Date.now() - started.getTime()) / 1000),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    loadAverage1m5m15m: { atStart: loadAtStart, atEnd: loadavg().map((l) => Math.round(l * 100) / 100) },
    note: 'one run on a shared machine: latencies and rates are noisy, counts and ratios are what to compare',
  },
  prices: PRICES,
  results,
};
const text = JSON.stringify(document, null, 2);
console.log(text);
if (process.env.BENCH_JSON) await writeFile(process.env.BENCH_JSON, `${text}\n`);
if (Object.values(results).some((x) => x.exitCode !== 0)) process.exitCode = 1;
