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
 * @kubernetes/client-node is bundled as free of side effects ({@link SIDE_EFFECT_FREE}): its package does not
 * say so, and esbuild then keeps every module it imports, which through its `KubeConfig` is the whole
 * generated client, every API group and model (3.5 MB, most of each bundle). Its one module imported for
 * its effect alone is a polyfill of `File` for Node 18, a global on Node 24. Only the shared-volume function,
 * which calls the generated `CoreV1Api` (lib/kube/core-v1.ts), still carries it. A smaller bundle is a
 * shorter cold start: with minification (below) the binder's bundle is 7.9 → 2.2 MB, and importing it in a
 * new process takes a fifth less time (`npm run bench:cold-start`; README, session 29).
 *
 * @example
 * // node infra/build/bundle.ts [--only binder,resync]
 * const results = await bundleFunctions({ root: process.cwd() });
 */
import { existsSync, statSync } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build, type OnResolveArgs, type OnResolveResult, type Plugin } from 'esbuild';
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
  /** Where the bundles go (`<outDir>/<name>/index.mjs`, relative to `root`); default the project's `.build`, where osls packages them from. */
  outDir?: string;
}

export interface BundleResult {
  name: string;
  /** The bundle: relative to the project root (`.build/<name>/index.mjs`), or absolute with `outDir`. */
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

/** Packages bundled as free of side effects, though their package.json does not say so (see the module comment). */
export const SIDE_EFFECT_FREE = ['@kubernetes/client-node'];

/** Whether `file` is a module of one of the {@link SIDE_EFFECT_FREE} packages itself (not of a package nested in it). */
function sideEffectFreeModule(file: string): boolean {
  const marker = `${sep}node_modules${sep}`;
  const at = file.lastIndexOf(marker);
  if (at < 0) return false;
  const rest = file.slice(at + marker.length);
  return SIDE_EFFECT_FREE.some((name) => rest.startsWith(`${name.replaceAll('/', sep)}${sep}`));
}

/**
 * Marks every module of the {@link SIDE_EFFECT_FREE} packages as free of side effects, so esbuild drops what
 * nothing uses: the packages themselves, and each relative import from inside them to inside them (their
 * modules name their files in full, as ESM does; anything else goes through esbuild's own resolution).
 * Nothing else is looked at: a resolution per import of the whole bundle makes bundling fifteen times slower.
 */
const sideEffectFree: Plugin = {
  name: 'side-effect-free',
  setup(build) {
    const escaped = SIDE_EFFECT_FREE.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
    const resolveMarked = async (args: OnResolveArgs): Promise<OnResolveResult | undefined> => {
      const resolved = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { marking: true } });
      return resolved.errors.length > 0 || !sideEffectFreeModule(resolved.path) ? undefined : { ...resolved, sideEffects: false };
    };
    const marking = (args: OnResolveArgs) => (args.pluginData as { marking?: boolean } | undefined)?.marking === true;
    build.onResolve({ filter: new RegExp(`^(${escaped.join('|')})(/|$)`) }, (args) => (marking(args) ? undefined : resolveMarked(args)));
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (marking(args) || !sideEffectFreeModule(args.importer)) return undefined;
      const path = resolve(args.resolveDir, args.path);
      if (!existsSync(path) || !statSync(path).isFile()) return resolveMarked(args);
      return sideEffectFreeModule(path) ? { path, sideEffects: false } : undefined;
    });
  },
};

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
    const outfile = options.outDir ? join(resolve(root, options.outDir), spec.name, basename(spec.outfile)) : join(root, spec.outfile);
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
      // minified (names kept: errors, logs and the API client cache read class names) for a shorter cold
      // start; stack traces are mapped back through the source map (NODE_OPTIONS --enable-source-maps)
      minify: true,
      keepNames: true,
      treeShaking: true,
      legalComments: 'none',
      mainFields: ['module', 'main'],
      conditions: ['node', 'import'],
      banner: { js: ESM_SHIMS },
      logLevel: 'warning',
      plugins: [sideEffectFree],
    });
    results.push({ name: spec.name, outfile: options.outDir ? outfile : spec.outfile, bytes: (await stat(outfile)).size });
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
