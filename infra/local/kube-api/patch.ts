/**
 * PATCH bodies (apiserver `handlers/patch.go`): the type comes strictly from Content-Type.
 * JSON patch through fast-json-patch, JSON merge patch (RFC 7386) and strategic merge patch with the
 * merge keys these kinds declare in `k8s.io/api` (`patchStrategy`/`patchMergeKey` tags).
 */
import fastJsonPatch from 'fast-json-patch';
import type { Operation as JsonPatchOperation } from 'fast-json-patch';
import { StatusError } from './types.ts';
import { badRequest } from './errors.ts';

/** The patch media types the server accepts. */
export const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'] as const;
export type PatchType = typeof PATCH_TYPES[number];

/** 415 for any Content-Type that is not a supported patch type. */
export function patchTypeOf(contentType: string | undefined): PatchType {
  const base = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if ((PATCH_TYPES as readonly string[]).includes(base)) return base as PatchType;
  if (base === 'application/apply-patch+yaml') {
    throw new StatusError(415, 'UnsupportedMediaType', 'server-side apply (application/apply-patch+yaml) is not implemented by this emulator; use a strategic merge, merge or JSON patch');
  }
  throw new StatusError(415, 'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(', ')}, application/apply-patch+yaml`);
}

const clone = <T>(v: T): T => structuredClone(v);

/** Applies a JSON patch (RFC 6902); a non-array body is 400, a failed op or `test` is 422. */
export function applyJsonPatch(target: unknown, patch: unknown): any {
  if (!Array.isArray(patch)) {
    const what = patch === null ? 'null' : typeof patch === 'object' ? 'object' : typeof patch;
    throw badRequest(`json: cannot unmarshal ${what} into Go value of type jsonpatch.Patch`);
  }
  if (patch.length > 10000) throw new StatusError(422, 'RequestEntityTooLarge', `The allowed number of operations in a JSON patch is 10000, got ${patch.length}`);
  try {
    return fastJsonPatch.applyPatch(clone(target), patch as JsonPatchOperation[], true, false).newDocument;
  } catch (err) {
    const e = err as { name?: string; message?: string };
    const msg = e.name === 'TEST_OPERATION_FAILED' ? 'the server rejected our request due to an error in our request' : (e.message ?? String(err)).split('\n')[0];
    throw new StatusError(422, 'Invalid', msg);
  }
}

/** RFC 7386 JSON merge patch. */
export function applyMergePatch(target: unknown, patch: unknown): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

/**
 * Merge strategies by field path (list elements contribute no path segment):
 * a string is the merge key of a list of maps; `PRIMITIVE` marks a merged list of scalars.
 * Lists not named here are atomic (replaced), as in `k8s.io/api` for these kinds.
 */
const PRIMITIVE = '';
const MERGE_KEYS: Record<string, string> = {
  'metadata.finalizers': PRIMITIVE,
  'metadata.ownerReferences': 'uid',
  'status.conditions': 'type',
  'status.addresses': 'type',
  'spec.ports': 'port',
  'spec.containers': 'name',
  'spec.initContainers': 'name',
  'spec.volumes': 'name',
  'spec.containers.ports': 'containerPort',
  'spec.containers.env': 'name',
  'spec.containers.volumeMounts': 'mountPath',
  'spec.finalizers': PRIMITIVE,
};

type Json = Record<string, any>;
const isMap = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Applies a strategic merge patch to a built-in object. */
export function applyStrategicMergePatch(target: unknown, patch: unknown): any {
  if (!isMap(patch)) throw badRequest('the body of a strategic merge patch must be a JSON object');
  return mergeMap(isMap(target) ? target : {}, patch, '');
}

function childPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function mergeMap(original: Json, patch: Json, path: string): Json | undefined {
  const directive = patch.$patch;
  if (directive === 'delete') return undefined;
  if (directive === 'replace') {
    const { $patch: _p, ...rest } = patch;
    return clone(stripDirectives(rest));
  }
  const out: Json = { ...original };
  // $retainKeys: drop keys not listed
  if (Array.isArray(patch.$retainKeys)) {
    for (const k of Object.keys(out)) if (!patch.$retainKeys.includes(k)) delete out[k];
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      if (Array.isArray(out[field]) && Array.isArray(v)) {
        out[field] = out[field].filter((x: unknown) => !v.includes(x));
        if (out[field].length === 0) delete out[field];
      }
      continue;
    }
    const p = childPath(path, k);
    if (v === null) { delete out[k]; continue; }
    if (isMap(v)) {
      const merged = mergeMap(isMap(out[k]) ? out[k] : {}, v, p);
      if (merged === undefined) delete out[k]; else out[k] = merged;
    } else if (Array.isArray(v)) {
      const merged = mergeList(Array.isArray(out[k]) ? out[k] : undefined, v, p);
      if (merged === undefined) delete out[k]; else out[k] = merged;
    } else {
      out[k] = v;
    }
  }
  return out;
}

function stripDirectives(v: any): any {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isMap(v)) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x);
  return out;
}

function mergeList(original: any[] | undefined, patch: any[], path: string): any[] | undefined {
  if (!(path in MERGE_KEYS)) return clone(stripDirectives(patch));
  const key = MERGE_KEYS[path];
  // a list-level {"$patch": "replace"} element replaces the whole list
  if (patch.some((e) => isMap(e) && e.$patch === 'replace' && Object.keys(e).length === 1)) {
    return clone(stripDirectives(patch.filter((e) => !(isMap(e) && e.$patch === 'replace'))));
  }
  const out = original ? [...original] : [];
  if (key === PRIMITIVE) {
    for (const v of patch) if (!out.includes(v)) out.push(v);
    return out;
  }
  for (const element of patch) {
    if (!isMap(element)) continue;
    const id = element[key];
    const idx = out.findIndex((e) => isMap(e) && e[key] === id);
    if (element.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = mergeMap(out[idx], element, path) ?? out[idx];
    else out.push(stripDirectives(element));
  }
  return out;
}
