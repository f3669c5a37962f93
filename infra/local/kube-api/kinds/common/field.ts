/**
 * Field-error constructors (apimachinery `pkg/util/validation/field/errors.go`).
 */
import type { FieldError } from '../../types.ts';

/** `field.Required`. */
export const required = (field: string, detail = ''): FieldError => ({ type: 'FieldValueRequired', field, detail });

/** `field.Invalid`. */
export const invalid = (field: string, value: unknown, detail: string): FieldError =>
  ({ type: 'FieldValueInvalid', field, value, detail });

/** `field.Forbidden`. */
export const forbidden = (field: string, detail: string): FieldError => ({ type: 'FieldValueForbidden', field, detail });

/** `field.NotSupported`: detail lists the supported values quoted, as upstream prints them. */
export const notSupported = (field: string, value: unknown, supported: readonly string[]): FieldError => ({
  type: 'FieldValueNotSupported',
  field,
  value,
  detail: `supported values: ${supported.map((s) => `"${s}"`).join(', ')}`,
});

/** `field.Duplicate`. */
export const duplicate = (field: string, value: unknown): FieldError => ({ type: 'FieldValueDuplicate', field, value, detail: '' });

/** `field.TooLong`. */
export const tooLong = (field: string, value: unknown, max: number): FieldError =>
  ({ type: 'FieldValueTooLong', field, value, detail: `must have at most ${max} bytes` });

/** `apimachineryvalidation.FieldImmutableErrorMsg`. */
export const FIELD_IMMUTABLE = 'field is immutable';

/** `ValidateImmutableField`: Invalid(newVal, "field is immutable") when changed. */
export function immutable(field: string, next: unknown, prev: unknown): FieldError[] {
  return deepEqual(next, prev) ? [] : [invalid(field, next, FIELD_IMMUTABLE)];
}

/** Semantic deep equality of JSON values (`apiequality.Semantic.DeepEqual` for decoded JSON). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => deepEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => deepEqual(ao[k], bo[k]));
}

/** A JSON deep copy. */
export const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));
