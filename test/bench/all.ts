/**
 * `npm run bench`: runs every benchmark in test/bench/ (each `*.ts` but this file and helpers whose name
 * starts with `_`), one after another in its own process so they do not disturb each other, with their
 * output passed through; then prints a JSON summary of exit codes and durations. Exits non-zero if any
 * benchmark failed. Extra arguments go to every benchmark.
 */
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const benches = (await readdir(here)).filter((f) => f.endsWith('.ts') && f !== 'all.ts' && !f.startsWith('_') && !f.endsWith('.d.ts')).sort();

const results: { bench: string; exitCode: number | null; durationMs: number }[] = [];
for (const file of benches) {
  const started = Date.now();
  console.error(`== bench ${file}`);
  const exitCode = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [join(here, file), ...process.argv.slice(2)], { stdio: 'inherit' });
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null)));
  });
  results.push({ bench: file.replace(/\.ts$/, ''), exitCode, durationMs: Date.now() - started });
}
console.log(JSON.stringify({ benches: results }, null, 2));
if (results.some((r) => r.exitCode !== 0)) process.exitCode = 1;
