// Source scans that keep the cache's layering honest (issue #15):
// - lib/state is generic storage mechanics: it imports nothing from lib/kube (quantities become bytes, and
//   claims get their class, in the indexer lib/kube/cache-index.ts, which the cache's creator passes in);
// - every ObjectCache the product builds (lib/, functions/, infra/, and the benches that fill the cache)
//   passes that indexer. A cache without one refuses put() at run time (MissingIndexerError, see
//   test/state/cache.test.ts); this scan also covers paths no test drives, before they ship.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...tsFiles(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** Module specifiers of static imports/re-exports and dynamic imports. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/\b(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g)) found.push(m[1]);
  for (const m of source.matchAll(/\bimport\s*['"]([^'"]+)['"]/g)) found.push(m[1]);
  for (const m of source.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]);
  return found;
}

/** The text of each `new ObjectCache(...)` call, arguments included (balanced parentheses). */
function constructions(source: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  for (const m of source.matchAll(/new\s+ObjectCache\s*\(/g)) {
    let depth = 0;
    let end = m.index;
    for (; end < source.length; end++) {
      if (source[end] === '(') depth++;
      else if (source[end] === ')' && --depth === 0) break;
    }
    out.push({ line: source.slice(0, m.index).split('\n').length, text: source.slice(m.index, end + 1) });
  }
  return out;
}

describe('lib/state layering', () => {
  it('imports nothing from lib/kube', () => {
    const state = join(ROOT, 'lib', 'state');
    const kube = join(ROOT, 'lib', 'kube');
    const files = tsFiles(state);
    assert.ok(files.length >= 5, 'found lib/state sources');
    const offenders: string[] = [];
    for (const file of files) {
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        const target = spec.startsWith('.') ? resolve(dirname(file), spec) : spec;
        if (target === kube || target.startsWith(kube + sep) || /(^|\/)kube\//.test(spec)) offenders.push(`${relative(ROOT, file)} → ${spec}`);
      }
    }
    assert.deepEqual(offenders, []);
  });

  it('the scan sees every import form', () => {
    const sample = "import { a } from '../kube/a.ts';\nimport type { B } from \"../kube/b.ts\";\nexport { c } from '../kube/c.ts';\nimport '../kube/d.ts';\nconst e = await import('../kube/e.ts');";
    assert.deepEqual(specifiers(sample).sort(), ['../kube/a.ts', '../kube/b.ts', '../kube/c.ts', '../kube/d.ts', '../kube/e.ts']);
  });
});

describe('every ObjectCache the product builds has the Kubernetes indexer', () => {
  it('lib/, functions/, infra/ and the benches pass { indexer } to every new ObjectCache(...)', () => {
    const files = ['lib', 'functions', 'infra', join('test', 'bench')].flatMap((dir) => tsFiles(join(ROOT, dir)));
    const sites: string[] = [];
    const missing: string[] = [];
    for (const file of files) {
      for (const { line, text } of constructions(readFileSync(file, 'utf8'))) {
        const where = `${relative(ROOT, file)}:${line}`;
        sites.push(where);
        if (!/\bindexer\s*:\s*(?!undefined\b)\w/.test(text)) missing.push(`${where}: ${text.replace(/\s+/g, ' ')}`);
      }
    }
    assert.ok(sites.length >= 15, `found the construction sites (${sites.length})`);
    assert.deepEqual(missing, [], 'an ObjectCache without an indexer writes objects out of every index (or throws on put)');
  });

  it('the scan reads multi-line constructions', () => {
    const sample = 'const a = new ObjectCache(doc, table);\nconst b = new ObjectCache(\n  wrap(doc),\n  table,\n  { now, indexer: indexAttributes },\n);';
    assert.deepEqual(constructions(sample).map((c) => [c.line, /indexer:/.test(c.text)]), [[1, false], [2, true]]);
  });
});
