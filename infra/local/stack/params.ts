/**
 * Stage parameters as `osls --param name=value` takes them: parsed from the command line and checked
 * against the names serverless.yml's `params` declares (any stage's), so a typo fails loudly instead of
 * being ignored.
 *
 * @example
 * parseParamArgs(['kubeApiQps=400', 'kubeApiBurst=600']); // { kubeApiQps: '400', kubeApiBurst: '600' }
 * checkParams({ kubeApiQPS: '1' }, await knownParams(root)); // throws: unknown parameter kubeApiQPS; known: …
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';

/** A `--param` that is malformed or names no parameter of serverless.yml. */
export class ParamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ParamError';
  }
}

/** `name=value` arguments (the value may contain `=`; the last one of a name wins, as in osls). */
export function parseParamArgs(args: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq <= 0) throw new ParamError(`--param ${JSON.stringify(arg)}: expected name=value (e.g. --param kubeApiQps=400)`);
    params[arg.slice(0, eq).trim()] = arg.slice(eq + 1);
  }
  return params;
}

/** The parameter names serverless.yml declares under `params` (every stage's, sorted). */
export async function knownParams(root: string): Promise<string[]> {
  const doc = parseDocument(await readFile(join(root, 'serverless.yml'), 'utf8'));
  const params = (doc.toJS() as { params?: Record<string, Record<string, unknown> | null> }).params ?? {};
  return [...new Set(Object.values(params).flatMap((stage) => Object.keys(stage ?? {})))].sort();
}

/** Throws a {@link ParamError} naming every unknown parameter and listing the known ones. */
export function checkParams(params: Record<string, string>, known: readonly string[]): void {
  const unknown = Object.keys(params).filter((name) => !known.includes(name));
  if (unknown.length === 0) return;
  throw new ParamError(
    `unknown parameter${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}: serverless.yml's params are ${known.join(', ')}`,
  );
}
