/**
 * Classifying Kubernetes API failures as client-go's `k8s.io/apimachinery/pkg/api/errors` does
 * (`IsConflict`, `IsNotFound`, …), on `@kubernetes/client-node`'s `ApiException` (its `code` is the HTTP
 * status, its `body` the raw Status JSON string, its `headers` the response headers).
 */
import { ApiException } from '@kubernetes/client-node';

/** The parts of a `metav1.Status` body these helpers read. */
export interface StatusBody {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { retryAfterSeconds?: number; name?: string; kind?: string; causes?: unknown[] };
}

/** The HTTP status code of an API failure, or undefined when `error` is not one. */
export function statusCode(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' && code >= 100 && code < 600 ? code : undefined;
}

/** The Status object the API server returned, parsed (undefined when absent or not JSON). */
export function statusBody(error: unknown): StatusBody | undefined {
  const body = (error as { body?: unknown } | null)?.body;
  if (body && typeof body === 'object') return body as StatusBody;
  if (typeof body !== 'string' || body === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return parsed && typeof parsed === 'object' ? (parsed as StatusBody) : undefined;
  } catch {
    return undefined;
  }
}

/** The Status `reason` (`Conflict`, `AlreadyExists`, `NotFound`, …). */
export function statusReason(error: unknown): string | undefined {
  return statusBody(error)?.reason;
}

/** 404 NotFound. */
export const isNotFound = (error: unknown): boolean => statusCode(error) === 404;

/** 409 with reason AlreadyExists (a create lost the race). */
export const isAlreadyExists = (error: unknown): boolean =>
  statusCode(error) === 409 && statusReason(error) === 'AlreadyExists';

/** 409 Conflict (a stale resourceVersion), as opposed to AlreadyExists. */
export const isConflict = (error: unknown): boolean =>
  statusCode(error) === 409 && statusReason(error) !== 'AlreadyExists';

/** 422 Invalid. */
export const isInvalid = (error: unknown): boolean => statusCode(error) === 422;

/** 429 TooManyRequests (API priority and fairness or a client-side budget). */
export const isTooManyRequests = (error: unknown): boolean => statusCode(error) === 429;

/** 410 Gone (a watch or list resourceVersion too old). */
export const isGone = (error: unknown): boolean => statusCode(error) === 410;

/**
 * How long the server asked us to wait, in ms: the `Retry-After` header (seconds) or the Status
 * `details.retryAfterSeconds`, as client-go's `SuggestsClientDelay`. Undefined when it gave none.
 */
export function retryAfterMs(error: unknown): number | undefined {
  const headers = (error as { headers?: Record<string, string> } | null)?.headers;
  const header = headers ? (headers['retry-after'] ?? headers['Retry-After']) : undefined;
  if (header !== undefined) {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(header);
    if (!Number.isNaN(date)) return Math.max(0, date - Date.now());
  }
  const seconds = statusBody(error)?.details?.retryAfterSeconds;
  return typeof seconds === 'number' && seconds > 0 ? seconds * 1000 : undefined;
}

/** 403 Forbidden (RBAC denied the request, or admission forbade it). */
export const isForbidden = (error: unknown): boolean => statusCode(error) === 403;

/** What an RBAC denial names (the apiserver's `forbiddenMessage`). */
export interface ForbiddenRequest {
  /** The Kubernetes verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, … */
  verb: string;
  /** `resource[/subresource]`, e.g. `persistentvolumes/status`. */
  resource: string;
  /** The API group ('' for core). */
  group: string;
  /** `persistentvolumes/status`, `volumeattachments.storage.k8s.io`: resource, group and subresource as kubectl names them. */
  qualifiedResource: string;
  /** Undefined at the cluster scope. */
  namespace?: string;
  name?: string;
  /** The user the server saw. */
  user: string;
  /** The Status message. */
  message: string;
}

const DENIAL = /User "((?:[^"\\]|\\.)*)" cannot ([\w*-]+) resource "([^"]*)" in API group "([^"]*)" (?:in the namespace "([^"]*)"|at the cluster scope)/;

/**
 * The request an RBAC 403 denied, read from its Status message (`<resource> "<name>" is forbidden: User "x" cannot
 * <verb> resource "<res>" in API group "<g>" in the namespace "<ns>"` or `... at the cluster scope`), looking
 * through `cause`s; undefined for anything else (other errors, and 403s that are not authorization denials,
 * such as a namespace being terminated).
 */
export function forbiddenRequest(error: unknown): ForbiddenRequest | undefined {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (statusCode(e) !== 403) continue;
    const body = statusBody(e);
    const m = body?.message ? DENIAL.exec(body.message) : null;
    if (!m || !body?.message) continue;
    const [resource, subresource] = m[3].split('/');
    const group = m[4];
    return {
      verb: m[2],
      resource: m[3],
      group,
      qualifiedResource: `${resource}${group ? `.${group}` : ''}${subresource ? `/${subresource}` : ''}`,
      ...(m[5] ? { namespace: m[5] } : {}),
      ...(body.details?.name ? { name: body.details.name } : {}),
      user: m[1].replace(/\\(.)/g, '$1'),
      message: body.message,
    };
  }
  return undefined;
}
