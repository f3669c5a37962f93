/**
 * Decode-time normalisation: canonical quantities and "cannot be handled as a <Kind>" errors
 * (apimachinery `runtime/serializer` + `api/resource/quantity.go` UnmarshalJSON).
 */
import { StatusError } from '../../types.ts';
import { canonicalQuantity, QuantityError } from '../../../../../lib/kube/quantity.ts';

/** The 400 BadRequest a body gets when it does not decode as its kind. */
export function decodeError(kind: string, detail: string): StatusError {
  return new StatusError(400, 'BadRequest', `${kind} in version "v1" cannot be handled as a ${kind}: ${detail}`);
}

/**
 * Rewrites every value of a quantity map (`resources.requests`, `capacity`) in canonical form.
 * JSON numbers are accepted and become strings; anything unparseable throws {@link decodeError}.
 */
export function canonicalizeQuantityMap(kind: string, map: unknown): void {
  if (map === undefined || map === null) return;
  if (typeof map !== 'object' || Array.isArray(map)) {
    throw decodeError(kind, `json: cannot unmarshal ${jsonType(map)} into Go value of type v1.ResourceList`);
  }
  const m = map as Record<string, unknown>;
  for (const [k, v] of Object.entries(m)) {
    if (v === null || v === undefined) continue;
    if (typeof v !== 'string' && typeof v !== 'number') throw decodeError(kind, new QuantityError().message);
    try {
      m[k] = canonicalQuantity(v);
    } catch (err) {
      if (err instanceof QuantityError) throw decodeError(kind, err.message);
      throw err;
    }
  }
}

/**
 * Ensures `value` is a JSON object (or absent) where a struct or map is expected; `field` is how Go's
 * encoding/json names it (`PersistentVolumeClaim.spec`, `PersistentVolumeClaimSpec.spec.accessModes`).
 */
export function expectObject(kind: string, value: unknown, field: string, goType: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'object' || Array.isArray(value)) throw unmarshalError(kind, value, field, goType);
}

/** Ensures `value` is a JSON array (or absent) where a slice is expected. */
export function expectArray(kind: string, value: unknown, field: string, goType: string): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value)) throw unmarshalError(kind, value, field, goType);
}

/** `json: cannot unmarshal <type> into Go struct field <field> of type <goType>`. */
export function unmarshalError(kind: string, value: unknown, field: string, goType: string): ReturnType<typeof decodeError> {
  return decodeError(kind, `json: cannot unmarshal ${jsonType(value)} into Go struct field ${field} of type ${goType}`);
}

function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  return typeof v === 'object' ? 'object' : typeof v;
}
