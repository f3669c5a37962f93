/**
 * The compiled CloudFormation template of serverless.yml, for the local stack.
 *
 * `osls package` needs every function's bundle to exist before it zips them, and the local stack runs
 * the TypeScript sources directly; so the template is compiled in a scratch directory holding a copy
 * of serverless.yml and an empty placeholder bundle per function. The result is the same template
 * `npm run package` produces (no credentials, no network), cached per (serverless.yml, stage).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { readFunctionSpecs } from '../../build/functions.ts';
import { PROJECT_ROOT } from '../../build/bundle.ts';

const execFileAsync = promisify(execFile);

/** A CloudFormation template, as far as the local stack reads it. */
export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, unknown>;
  /** Named conditions (`Fn::Equals`, `Fn::Not`, …); osls has already put every `${param:…}` in. */
  Conditions?: Record<string, unknown>;
}

export interface CfnResource {
  Type: string;
  Properties?: Record<string, any>;
  Condition?: string;
  DependsOn?: string | string[];
}

/** Raised when `osls package` fails; carries its output. */
export class TemplateCompileError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TemplateCompileError';
  }
}

export interface CompileOptions {
  root?: string;
  stage?: string;
  region?: string;
  /** Where compiled templates are cached (default: the OS temp dir). */
  cacheDir?: string;
  /** Stage parameters over serverless.yml's `params` (osls `--param key=value`). */
  params?: Record<string, string>;
}

/** The osls binary of the project (runs on the same Node as the caller). */
function oslsBin(root: string): string {
  return join(root, 'node_modules', 'osls', 'bin', 'serverless.js');
}

/**
 * Compiles serverless.yml for `stage` with `osls package` and returns the update-stack template.
 *
 * @example
 * const template = await compileTemplate({ stage: 'local' });
 * template.Resources.BinderQueue.Properties.QueueName; // 'claimflow-local-binder.fifo'
 */
export async function compileTemplate(options: CompileOptions = {}): Promise<CfnTemplate> {
  const root = options.root ?? PROJECT_ROOT;
  const stage = options.stage ?? 'local';
  const region = options.region ?? 'eu-west-1';
  const source = await readFile(join(root, 'serverless.yml'), 'utf8');
  const params = Object.entries(options.params ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const osls = JSON.parse(await readFile(join(root, 'node_modules', 'osls', 'package.json'), 'utf8')) as { version: string };
  const hash = createHash('sha256').update(JSON.stringify([osls.version, stage, region, params, source])).digest('hex').slice(0, 16);
  const cacheDir = options.cacheDir ?? join(tmpdir(), 'claimflow-templates');
  const cached = join(cacheDir, `${hash}.json`);
  try {
    return JSON.parse(await readFile(cached, 'utf8')) as CfnTemplate;
  } catch {
    // not cached yet
  }
  const work = await mkdtemp(join(tmpdir(), 'claimflow-sls-'));
  try {
    await writeFile(join(work, 'serverless.yml'), source);
    for (const spec of await readFunctionSpecs(root)) {
      await mkdir(dirname(join(work, spec.outfile)), { recursive: true });
      await writeFile(join(work, spec.outfile), `export const ${spec.exportName} = undefined;\n`);
    }
    const out = join(work, 'out');
    const env = { PATH: process.env.PATH ?? '', HOME: work, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' };
    try {
      const paramArgs = params.flatMap(([k, v]) => ['--param', `${k}=${v}`]);
      await execFileAsync(process.execPath, [oslsBin(root), 'package', '--stage', stage, '--region', region, '--package', out, ...paramArgs], {
        cwd: work,
        env,
        maxBuffer: 16 << 20,
      });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      throw new TemplateCompileError(`osls package failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
    }
    const text = await readFile(join(out, 'cloudformation-template-update-stack.json'), 'utf8');
    await mkdir(cacheDir, { recursive: true });
    const partial = `${cached}.${process.pid}.${Date.now()}`;
    await writeFile(partial, text);
    await rename(partial, cached);
    return JSON.parse(text) as CfnTemplate;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
