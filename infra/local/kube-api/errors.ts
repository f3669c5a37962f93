/**
 * Constructors for the metav1.Status errors the generic machinery answers with
 * (apimachinery `pkg/api/errors/errors.go`), and the 422 message format of `field.ErrorList`.
 */
import { StatusError } from './types.ts';
import type { FieldError, KindSpec } from './types.ts';

/** The qualified resource of a spec as upstream prints it: `persistentvolumeclaims`, `storageclasses.storage.k8s.io`. */
export function qualifiedResource(spec: Pick<KindSpec, 'plural' | 'group'>): string {
  return spec.group ? `${spec.plural}.${spec.group}` : spec.plural;
}

function details(spec: Pick<KindSpec, 'plural' | 'group'>, name: string, extra?: Record<string, unknown>): Record<string, unknown> {
  return { name, ...(spec.group ? { group: spec.group } : {}), kind: spec.plural, ...extra };
}

/** 404 NotFound: `persistentvolumeclaims "c1" not found`. */
export function notFound(spec: Pick<KindSpec, 'plural' | 'group'>, name: string): StatusError {
  return new StatusError(404, 'NotFound', `${qualifiedResource(spec)} "${name}" not found`, details(spec, name));
}

/** 409 AlreadyExists. */
export function alreadyExists(spec: Pick<KindSpec, 'plural' | 'group'>, name: string): StatusError {
  return new StatusError(409, 'AlreadyExists', `${qualifiedResource(spec)} "${name}" already exists`, details(spec, name));
}

/** 409 Conflict for a stale resourceVersion on update. */
export function conflict(spec: Pick<KindSpec, 'plural' | 'group'>, name: string, reason = 'the object has been modified; please apply your changes to the latest version and try again'): StatusError {
  return new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(spec)} "${name}": ${reason}`, details(spec, name));
}

/** 400 BadRequest. */
export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message);
}

/** 404 for a path nothing serves. */
export function pathNotFound(): StatusError {
  return new StatusError(404, 'NotFound', 'the server could not find the requested resource', {});
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(): StatusError {
  return new StatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
}

/** 410 Expired (reason `Expired`, code 410). */
export function expired(message: string): StatusError {
  return new StatusError(410, 'Expired', message);
}

const TYPE_TEXT: Record<FieldError['type'], string> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueForbidden: 'Forbidden',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
};

/** A value printed verbatim in a field error (Go's `%#v` of a non-string, e.g. `0x0`). */
export class RawValue {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** How `field.Error.ErrorBody` prints a value. */
function printValue(value: unknown): string {
  if (value instanceof RawValue) return value.text;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null || value === undefined) return 'null';
  return JSON.stringify(value);
}

/** `field.Error.ErrorBody()`: `Invalid value: "x": detail`. */
export function fieldErrorBody(e: FieldError): string {
  let s = TYPE_TEXT[e.type];
  const valued = e.type !== 'FieldValueRequired' && e.type !== 'FieldValueForbidden' && e.type !== 'FieldValueTooLong'
    && !(e.type === 'FieldValueTooMany' && e.value === undefined);
  if (valued && 'value' in e) s += `: ${printValue(e.value)}`;
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** 422 Invalid: `PersistentVolumeClaim "c1" is invalid: [a, b]` with one cause per field error. */
export function invalid(kind: string, group: string, name: string, errors: FieldError[]): StatusError {
  const texts = errors.map((e) => `${e.field}: ${fieldErrorBody(e)}`);
  const aggregate = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  return new StatusError(422, 'Invalid', `${qualifiedKind} "${name}" is invalid: ${aggregate}`, {
    name,
    ...(group ? { group } : {}),
    kind,
    causes: errors.map((e) => ({ reason: e.type, message: fieldErrorBody(e), field: e.field })),
  });
}

const REASONS: Record<number, string> = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 406: 'NotAcceptable',
  409: 'Conflict', 410: 'Expired', 413: 'RequestEntityTooLarge', 415: 'UnsupportedMediaType', 422: 'Invalid',
  429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout',
};

const MESSAGES: Record<number, string> = {
  429: 'Too many requests, please try again later.',
  500: 'Internal error occurred: injected fault',
  503: 'the server is currently unable to handle the request',
  504: 'the server was unable to return a response in the time allotted, but may still be processing the request',
};

/** The Status a status code alone implies (used by fault injection). */
export function statusForCode(code: number, message?: string, retryAfterSeconds?: number): StatusError {
  const reason = REASONS[code] ?? (code >= 500 ? 'InternalError' : 'Unknown');
  const details = retryAfterSeconds !== undefined ? { retryAfterSeconds } : undefined;
  const headers = retryAfterSeconds !== undefined ? { 'Retry-After': String(retryAfterSeconds) } : undefined;
  return new StatusError(code, reason, message ?? MESSAGES[code] ?? `injected fault (${code})`, details, headers);
}

/** 401 Unauthorized (`apierrors.NewUnauthorized("Unauthorized")`): no credentials, or none that authenticate. */
export function unauthorized(): StatusError {
  return new StatusError(401, 'Unauthorized', 'Unauthorized');
}

/** What a 403 names: the request's authorization attributes. */
export interface ForbiddenAttributes {
  user: { username: string };
  verb: string;
  resourceRequest: boolean;
  path: string;
  apiGroup: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

/** `responsewriters.forbiddenMessage`. */
export function forbiddenMessage(a: ForbiddenAttributes): string {
  const user = JSON.stringify(a.user.username);
  if (!a.resourceRequest) return `User ${user} cannot ${a.verb} path ${JSON.stringify(a.path)}`;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const scope = a.namespace ? `in the namespace ${JSON.stringify(a.namespace)}` : 'at the cluster scope';
  return `User ${user} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.apiGroup)} ${scope}`;
}

/**
 * 403 Forbidden as the apiserver's authorization filter writes it (`responsewriters.Forbidden` →
 * `apierrors.NewForbidden(groupResource, name, ...)`): `persistentvolumes "pv1" is forbidden: User "x" cannot
 * update resource "persistentvolumes/status" in API group "" at the cluster scope`, the authorizer's reason
 * after a colon when it gave one; a non-resource request is `forbidden: User "x" cannot get path "/foo"`.
 */
export function forbidden(a: ForbiddenAttributes, reason = ''): StatusError {
  const text = forbiddenMessage(a).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const err = reason ? `${text}: ${reason}` : text;
  if (!a.resourceRequest || (a.resource === '' && a.apiGroup === '')) return new StatusError(403, 'Forbidden', `forbidden: ${err}`, {});
  const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
  const message = a.name ? `${qualified} ${JSON.stringify(a.name)} is forbidden: ${err}` : `${qualified} is forbidden: ${err}`;
  return new StatusError(403, 'Forbidden', message, { ...(a.name ? { name: a.name } : {}), ...(a.apiGroup ? { group: a.apiGroup } : {}), kind: a.resource });
}
