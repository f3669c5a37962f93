/**
 * LIST: selectors, limit/continue (`apiserver/pkg/storage/continue.go` tokens), resourceVersion and
 * resourceVersionMatch rules (api-concepts "Resource versions"), remainingItemCount.
 */
import { StatusError } from './types.ts';
import type { KindSpec, KubeObject } from './types.ts';
import { badRequest, expired, invalid } from './errors.ts';
import type { FieldSelector, LabelSelector } from './selectors.ts';
import type { MemoryStore } from './store.ts';

/** The query of a list. */
export interface ListQuery {
  resource: string;
  namespace?: string;
  labels: LabelSelector;
  fields: FieldSelector;
  limit?: number;
  continueToken?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
}

/** One page. */
export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continueToken?: string;
  remainingItemCount?: number;
}

const keyOf = (o: KubeObject): string => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name!);

const TOO_OLD = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';

/** `ListOptions.meta.k8s.io "" is invalid: ...` (422). */
export function invalidListOptions(field: string, detail: string, value?: unknown): StatusError {
  return invalid('ListOptions', 'meta.k8s.io', '', [value === undefined
    ? { type: 'FieldValueForbidden', field, detail }
    : { type: 'FieldValueInvalid', field, value, detail }]);
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (parsed?.v !== 'meta.k8s.io/v1' || typeof parsed.rv !== 'number' || typeof parsed.start !== 'string') throw new Error('bad');
    return { rv: parsed.rv, start: parsed.start };
  } catch {
    throw badRequest('continue key is not valid: illegal base64 data or incorrect format');
  }
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

/** Parses an RV query parameter (400 when not an integer). */
export function parseResourceVersion(value: string): number {
  if (!/^\d+$/.test(value)) throw badRequest(`Invalid value: "${value}": resourceVersion must be an integer`);
  return Number(value);
}

/** Serves one list page from the store. */
export function listObjects(store: MemoryStore, spec: KindSpec, q: ListQuery): ListResult {
  if (q.resourceVersionMatch && !q.resourceVersion) {
    throw invalidListOptions('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided');
  }
  if (q.resourceVersionMatch && !['NotOlderThan', 'Exact'].includes(q.resourceVersionMatch)) {
    throw invalid('ListOptions', 'meta.k8s.io', '', [{ type: 'FieldValueNotSupported', field: 'resourceVersionMatch', value: q.resourceVersionMatch, detail: 'supported values: "Exact", "NotOlderThan", ""' }]);
  }
  if (q.continueToken && q.resourceVersion && q.resourceVersion !== '0') {
    throw invalidListOptions('resourceVersion', 'specifying resource version is not allowed when using continue');
  }
  const current = store.revision;
  let listRv = current;
  let start = '';
  if (q.continueToken) {
    const c = decodeContinue(q.continueToken);
    if (c.rv < store.compactedRevision) throw expired(TOO_OLD);
    listRv = c.rv;
    start = c.start;
  } else if (q.resourceVersion && q.resourceVersion !== '0') {
    const rv = parseResourceVersion(q.resourceVersion);
    const exact = q.resourceVersionMatch === 'Exact' || (!q.resourceVersionMatch && q.limit !== undefined && q.limit > 0);
    if (rv > current) {
      throw new StatusError(504, 'Timeout', `Too large resource version: ${rv}, current: ${current}`,
        { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 });
    }
    // Only the newest state is kept: an exact read of an older revision is as gone as after compaction.
    if (exact && rv !== current) throw expired(`too old resource version: ${rv} (${current})`);
  }
  const filtered = q.labels.requirements.length || q.fields.requirements.length;
  let candidates = store.scan(q.resource, q.namespace);
  if (start) {
    let lo = 0;
    let hi = candidates.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keyOf(candidates[mid]) < start) lo = mid + 1; else hi = mid;
    }
    candidates = candidates.slice(lo);
  }
  const limit = q.limit && q.limit > 0 ? q.limit : Infinity;
  const items: KubeObject[] = [];
  let i = 0;
  for (; i < candidates.length && items.length < limit; i++) {
    const o = candidates[i];
    if (filtered && !(q.labels.matches(o.metadata.labels) && q.fields.matches(o))) continue;
    items.push(o);
  }
  // any further match?
  let more = false;
  if (items.length >= limit) {
    for (let j = i; j < candidates.length; j++) {
      const o = candidates[j];
      if (!filtered || (q.labels.matches(o.metadata.labels) && q.fields.matches(o))) { more = true; break; }
    }
  }
  const result: ListResult = { items, resourceVersion: String(listRv) };
  if (more) {
    result.continueToken = encodeContinue(listRv, `${keyOf(items[items.length - 1])}\u0000`);
    if (!filtered) result.remainingItemCount = candidates.length - i;
  }
  return result;
}
