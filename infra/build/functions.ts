/**
 * The functions serverless.yml declares, read from the file itself so that the bundler and the local
 * stack never keep a second list.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';

/** One function of serverless.yml and where its bundle comes from and goes. */
export interface FunctionSpec {
  /** The function's key in serverless.yml (`binder`, `sharedVolume`). */
  name: string;
  /** The Lambda handler string, e.g. `.build/binder/index.handler`. */
  handler: string;
  /** TypeScript entry: `functions/<kebab-case name>.ts`, relative to the project root. */
  entry: string;
  /** Bundle output: `.build/<name>/index.mjs`, relative to the project root. */
  outfile: string;
  /** The exported handler's name (`handler`). */
  exportName: string;
}

/** Raised when serverless.yml declares a function whose handler does not follow `.build/<name>/index.<export>`. */
export class FunctionLayoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FunctionLayoutError';
  }
}

/** `sharedVolume` → `shared-volume`. */
export function kebabCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * Reads the `functions:` section of serverless.yml (CloudFormation short-form tags are left
 * unresolved: only names and handlers are needed here).
 *
 * @example
 * const specs = await readFunctionSpecs('/work/main');
 * // [{ name: 'binder', entry: 'functions/binder.ts', outfile: '.build/binder/index.mjs', ... }]
 */
export async function readFunctionSpecs(root: string, file = 'serverless.yml'): Promise<FunctionSpec[]> {
  const text = await readFile(join(root, file), 'utf8');
  const doc = parse(text, { logLevel: 'silent' }) as { functions?: Record<string, { handler?: string }> };
  return Object.entries(doc.functions ?? {}).map(([name, fn]) => {
    const handler = fn?.handler ?? '';
    const match = /^\.build\/([^/]+)\/index\.([A-Za-z_$][\w$]*)$/.exec(handler);
    if (!match || match[1] !== name) {
      throw new FunctionLayoutError(`function ${name}: handler must be .build/${name}/index.<export>, got '${handler}'`);
    }
    return {
      name,
      handler,
      entry: `functions/${kebabCase(name)}.ts`,
      outfile: `.build/${name}/index.mjs`,
      exportName: match[2],
    };
  });
}
