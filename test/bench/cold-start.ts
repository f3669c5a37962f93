/**
 * `npm run bench:cold-start`: what a Lambda cold start spends loading each function's code.
 *
 * Every function is bundled as `npm run build` bundles it (infra/build/bundle.ts, into a folder of its own),
 * then each bundle is imported in `BENCH_COLD_STARTS` new Node processes (default 15), one after another,
 * with serverless.yml's `NODE_OPTIONS` (`--enable-source-maps`): the wall time of the `import()` and the
 * process's CPU meanwhile, median, lowest and highest. Nothing is run but the module's top level (the
 * runtime is built at the first invocation), so this is the part of Lambda's Init Duration that the code
 * decides, on this machine's cores: a 512 MB function has a fraction of a core and takes longer. Also each
 * bundle's size. Prints one JSON document.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { bundleFunctions } from '../../infra/build/bundle.ts';

const run = promisify(execFile);
const STARTS = Number(process.env.BENCH_COLD_STARTS ?? 15);
/** serverless.yml's provider NODE_OPTIONS. */
const NODE_OPTIONS = ['--enable-source-maps'];

const IMPORT = (url: string) =>
  [
    'const t0 = performance.now(); const c0 = process.cpuUsage();',
    `await import(${JSON.stringify(url)});`,
    'const c = process.cpuUsage(c0);',
    'console.log(JSON.stringify({ ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 }));',
  ].join('\n');

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 10) / 10;
  return { median: round(sorted[Math.floor(sorted.length / 2)]!), min: round(sorted[0]!), max: round(sorted.at(-1)!) };
};

const dir = await mkdtemp(join(tmpdir(), 'claimflow-cold-start-'));
try {
  const bundles = await bundleFunctions({ outDir: dir });
  const samples = new Map(bundles.map((b) => [b.name, { ms: [] as number[], cpuMs: [] as number[] }]));
  // Round after round over the functions, so a busy moment of the machine touches each alike.
  for (let i = 0; i < STARTS; i++) {
    for (const bundle of bundles) {
      const { stdout } = await run(process.execPath, [...NODE_OPTIONS, '--input-type=module', '-e', IMPORT(pathToFileURL(bundle.outfile).href)], {
        env: { PATH: process.env.PATH ?? '' },
      });
      const sample = JSON.parse(stdout.trim().split('\n').at(-1)!) as { ms: number; cpuMs: number };
      samples.get(bundle.name)!.ms.push(sample.ms);
      samples.get(bundle.name)!.cpuMs.push(sample.cpuMs);
    }
    process.stderr.write(`[cold-start] round ${i + 1}/${STARTS}\n`);
  }
  const functions = Object.fromEntries(
    bundles.map((b) => [b.name, { bundleKiB: Math.round(b.bytes / 1024), importMs: stats(samples.get(b.name)!.ms), importCpuMs: stats(samples.get(b.name)!.cpuMs) }]),
  );
  process.stderr.write(
    `${bundles.map((b) => `${b.name.padEnd(13)} ${String(functions[b.name]!.bundleKiB).padStart(5)} KiB  import ${functions[b.name]!.importMs.median} ms (CPU ${functions[b.name]!.importCpuMs.median} ms)`).join('\n')}\n`,
  );
  console.log(JSON.stringify({ bench: 'cold-start', startsPerFunction: STARTS, nodeOptions: NODE_OPTIONS, functions }, null, 2));
} finally {
  await rm(dir, { recursive: true, force: true });
}
