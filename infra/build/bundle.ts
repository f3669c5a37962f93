/**
 * Bundles every function serverless.yml declares (`npm run build`): `functions/<name>.ts` →
 * `.build/<name>/index.mjs` (+ source map), one self-contained ESM file per function, which osls zips
 * alone (`package.individually` and the function's `.build/<name>/**` pattern).
 *
 * The AWS SDK is bundled rather than taken from the `nodejs24.x` runtime: the deployed code then runs
 * exactly the SDK versions the tests ran against the stand-ins (lib-dynamodb marshalling, Powertools
 * idempotency and the SQS JSON protocol are version-sensitive), and a runtime SDK update cannot change
 * behaviour under us. The cost is a larger zip (tree-shaken, a few MB at most) and a slightly longer cold
 * start.
 *
 * @example
 * // node infra/build/bundle.ts [--only binder,resync]
 * const results = await bundleFunctions({ root: process.cwd() });
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { readFunctionSpecs, type FunctionSpec } from './functions.ts';

/** Raised when a declared function has no entry file. */
export class MissingEntryError extends Error {
  constructor(spec: FunctionSpec) {
    super(`function ${spec.name}: entry ${spec.entry} does not exist`);
    this.name = 'MissingEntryError';
  }
}

export interface BundleOptions {
  /** Project root (where serverless.yml is). */
  root?: string;
  /** Only these functions (default: all that serverless.yml declares). */
  only?: readonly string[];
}

export interface BundleResult {
  name: string;
  outfile: string;
  bytes: number;
}

/** The project root: two levels above this file. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Lets CommonJS dependencies inside the ESM bundle call `require()` for Node built-ins, and gives them
 * `__dirname`/`__filename`.
 */
const ESM_SHIMS = [
  "import { createRequire as __cfCreateRequire } from 'node:module';",
  "import { fileURLToPath as __cfFileURLToPath } from 'node:url';",
  "import { dirname as __cfDirname } from 'node:path';",
  'const require = __cfCreateRequire(import.meta.url);',
  'const __filename = __cfFileURLToPath(import.meta.url);',
  'const __dirname = __cfDirname(__filename);',
].join('\n');

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Bundles the functions; throws {@link MissingEntryError} if one has no entry file. */
export async function bundleFunctions(options: BundleOptions = {}): Promise<BundleResult[]> {
  const root = options.root ?? PROJECT_ROOT;
  const specs = (await readFunctionSpecs(root)).filter((s) => !options.only || options.only.includes(s.name));
  for (const spec of specs) if (!(await exists(join(root, spec.entry)))) throw new MissingEntryError(spec);
  const results: BundleResult[] = [];
  for (const spec of specs) {
    const outfile = join(root, spec.outfile);
    await rm(dirname(outfile), { recursive: true, force: true });
    await mkdir(dirname(outfile), { recursive: true });
    await build({
      absWorkingDir: root,
      entryPoints: [join(root, spec.entry)],
      outfile,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node24',
      sourcemap: true,
      sourcesContent: false,
      minify: false,
      treeShaking: true,
      legalComments: 'none',
      mainFields: ['module', 'main'],
      conditions: ['node', 'import'],
      banner: { js: ESM_SHIMS },
      logLevel: 'warning',
    });
    results.push({ name: spec.name, outfile: spec.outfile, bytes: (await stat(outfile)).size });
  }
  return results;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { only: { type: 'string' } } });
  const only = values.only?.split(',').filter(Boolean);
  try {
    const results = await bundleFunctions({ only });
    for (const r of results) console.log(`bundled ${r.name} → ${r.outfile} (${(r.bytes / 1024).toFixed(0)} KiB)`);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  }
}
