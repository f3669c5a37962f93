/**
 * Label and field selectors as the API server parses them
 * (apimachinery `pkg/labels/selector.go`, `pkg/fields/selector.go`).
 */
import { badRequest } from './errors.ts';
import type { KindSpec, KubeObject } from './types.ts';

/** One parsed label requirement. */
export interface LabelRequirement {
  key: string;
  operator: 'in' | 'notin' | 'exists' | '!exists' | '=' | '!=' | 'gt' | 'lt';
  values: string[];
}

/** A parsed label selector; `matches` is true for the empty selector. */
export interface LabelSelector {
  readonly requirements: LabelRequirement[];
  matches(labels: Record<string, string> | undefined): boolean;
}

const NAME_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const PREFIX_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function validKey(key: string): boolean {
  const slash = key.indexOf('/');
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (!prefix || prefix.length > 253 || !PREFIX_RE.test(prefix)) return false;
  }
  return name.length > 0 && name.length <= 63 && NAME_RE.test(name);
}

function validValue(value: string): boolean {
  return value === '' || (value.length <= 63 && NAME_RE.test(value));
}

type Token = { kind: 'id' | 'op' | '(' | ')' | ',' | '!'; text: string };

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (c === ' ' || c === '\t') { i++; continue; }
    if (c === '(' || c === ')' || c === ',') { tokens.push({ kind: c, text: c }); i++; continue; }
    if (c === '=' && input[i + 1] === '=') { tokens.push({ kind: 'op', text: '==' }); i += 2; continue; }
    if (c === '!' && input[i + 1] === '=') { tokens.push({ kind: 'op', text: '!=' }); i += 2; continue; }
    if (c === '=' || c === '<' || c === '>') { tokens.push({ kind: 'op', text: c }); i++; continue; }
    if (c === '!') { tokens.push({ kind: '!', text: c }); i++; continue; }
    let j = i;
    while (j < input.length && !' \t(),=!<>'.includes(input[j])) j++;
    tokens.push({ kind: 'id', text: input.slice(i, j) });
    i = j;
  }
  return tokens;
}

function fail(selector: string, why: string): never {
  throw badRequest(`unable to parse requirement: ${why} in label selector "${selector}"`);
}

/** Parses `labelSelector`; throws 400 BadRequest when malformed. */
export function parseLabelSelector(input: string | undefined | null): LabelSelector {
  const requirements: LabelRequirement[] = [];
  const text = (input ?? '').trim();
  if (text) {
    const t = tokenize(text);
    let p = 0;
    const next = (): Token | undefined => t[p++];
    const peek = (): Token | undefined => t[p];
    while (p < t.length) {
      let tok = next()!;
      if (tok.kind === '!') {
        const key = next();
        if (!key || key.kind !== 'id' || !validKey(key.text)) fail(text, `invalid label key "${key?.text ?? ''}"`);
        requirements.push({ key: key.text, operator: '!exists', values: [] });
      } else if (tok.kind === 'id') {
        const key = tok.text;
        if (!validKey(key)) fail(text, `invalid label key "${key}"`);
        const op = peek();
        if (!op || op.kind === ',') {
          requirements.push({ key, operator: 'exists', values: [] });
        } else if (op.kind === 'op') {
          next();
          const v = peek();
          let value = '';
          if (v && v.kind === 'id') { value = v.text; next(); }
          if (!validValue(value)) fail(text, `invalid label value: "${value}"`);
          if (op.text === '<' || op.text === '>') {
            if (!/^-?\d+$/.test(value)) fail(text, `for 'Gt', 'Lt' operators, the value must be an integer`);
            requirements.push({ key, operator: op.text === '<' ? 'lt' : 'gt', values: [value] });
          } else {
            requirements.push({ key, operator: op.text === '!=' ? '!=' : '=', values: [value] });
          }
        } else if (op.kind === 'id' && (op.text === 'in' || op.text === 'notin')) {
          next();
          if (next()?.kind !== '(') fail(text, `found '${peek()?.text ?? ''}', expected: '('`);
          const values: string[] = [];
          while (true) {
            tok = next()!;
            if (!tok) fail(text, `found '', expected: ')'`);
            if (tok.kind === ')') break;
            if (tok.kind === ',') continue;
            if (tok.kind !== 'id' || !validValue(tok.text)) fail(text, `invalid label value: "${tok.text}"`);
            values.push(tok.text);
          }
          if (values.length === 0) fail(text, `for 'in', 'notin' operators, values set can't be empty`);
          requirements.push({ key, operator: op.text as 'in' | 'notin', values });
        } else {
          fail(text, `found '${op.text}', expected: in, notin, =, ==, !=, gt, lt`);
        }
      } else {
        fail(text, `found '${tok.text}', expected: !, identifier, or 'end of string'`);
      }
      const sep = next();
      if (sep && sep.kind !== ',') fail(text, `found '${sep.text}', expected: ',' or 'end of string'`);
      if (sep && p >= t.length) fail(text, `found '', expected: identifier`);
    }
  }
  return {
    requirements,
    matches(labels) {
      for (const r of requirements) {
        const has = labels !== undefined && Object.hasOwn(labels, r.key);
        const v = has ? labels![r.key] : undefined;
        switch (r.operator) {
          case 'exists': if (!has) return false; break;
          case '!exists': if (has) return false; break;
          case '=': case 'in': if (!has || !r.values.includes(v!)) return false; break;
          case '!=': case 'notin': if (has && r.values.includes(v!)) return false; break;
          case 'gt': if (!has || !/^-?\d+$/.test(v!) || Number(v) <= Number(r.values[0])) return false; break;
          case 'lt': if (!has || !/^-?\d+$/.test(v!) || Number(v) >= Number(r.values[0])) return false; break;
        }
      }
      return true;
    },
  };
}

/** One field requirement (`=`/`==` or `!=`). */
export interface FieldRequirement {
  field: string;
  equals: boolean;
  value: string;
}

/** A parsed field selector bound to one kind's selectable fields. */
export interface FieldSelector {
  readonly requirements: FieldRequirement[];
  /** The `metadata.name` the selector pins, if any (single-object watch). */
  readonly name?: string;
  matches(obj: KubeObject): boolean;
}

function splitUnescaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && i + 1 < s.length) { cur += s[i] + s[i + 1]; i++; continue; }
    if (s[i] === sep) { parts.push(cur); cur = ''; continue; }
    cur += s[i];
  }
  parts.push(cur);
  return parts;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/** The selectable field names a kind supports, probed from its `selectableFields` on an empty object. */
export function supportedFields(spec: KindSpec): string[] {
  const probe: KubeObject = { metadata: { name: '', namespace: '' } };
  try {
    return Object.keys(spec.selectableFields(probe));
  } catch {
    return spec.namespaced ? ['metadata.name', 'metadata.namespace'] : ['metadata.name'];
  }
}

const fieldCache = new WeakMap<KubeObject, Record<string, string>>();

/** A kind's selectable fields of a stored (never mutated) object, computed once for every watcher. */
function selectableFieldsOf(spec: KindSpec, obj: KubeObject): Record<string, string> {
  let fields = fieldCache.get(obj);
  if (!fields) {
    fields = spec.selectableFields(obj);
    fieldCache.set(obj, fields);
  }
  return fields;
}

/** Parses `fieldSelector` for a kind; unsupported fields and bad syntax are 400 BadRequest. */
export function parseFieldSelector(input: string | undefined | null, spec: KindSpec): FieldSelector {
  const requirements: FieldRequirement[] = [];
  const text = (input ?? '').trim();
  if (text) {
    const supported = supportedFields(spec);
    for (const part of splitUnescaped(text, ',')) {
      const m = /^([^=!]*?)\s*(==|=|!=)\s*(.*)$/s.exec(part.trim());
      if (!m || !m[1]) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
      const field = m[1].trim();
      if (!supported.includes(field)) {
        throw badRequest(`"${field}" is not a known field selector: only ${supported.map((f) => `"${f}"`).join(', ')}`);
      }
      requirements.push({ field, equals: m[2] !== '!=', value: unescape(m[3]) });
    }
  }
  const nameReq = requirements.find((r) => r.field === 'metadata.name' && r.equals);
  return {
    requirements,
    name: nameReq?.value,
    matches(obj) {
      if (requirements.length === 0) return true;
      const fields = selectableFieldsOf(spec, obj);
      for (const r of requirements) {
        const v = fields[r.field] ?? '';
        if ((v === r.value) !== r.equals) return false;
      }
      return true;
    },
  };
}
