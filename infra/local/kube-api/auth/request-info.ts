/**
 * The authorization attributes of an HTTP request, derived as the apiserver's `RequestInfoFactory`
 * (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`) derives them:
 * - `/api/<v>/...` and `/apis/<g>/<v>/...` with at least a resource are resource requests; anything else
 *   (`/api`, `/apis/<g>`, `/version`, `/healthz`, `/openapi/v2`) is a non-resource request whose verb is the
 *   lower-case HTTP method;
 * - POST → `create`, GET/HEAD → `get`, PUT → `update`, PATCH → `patch`, DELETE → `delete`; a GET without a
 *   name is `list`, or `watch` when `watch` is set to anything but false/0/no; a DELETE without a name is
 *   `deletecollection`; the legacy `/watch/` path prefix is the `watch` verb;
 * - `/namespaces/<ns>/<resource>/...` gives the namespace; `/namespaces/<ns>` (and its `status`/`finalize`)
 *   is the namespace object itself, in namespace `<ns>`;
 * - a list or watch whose field selector pins `metadata.name=<name>` carries that name, so a `resourceNames`
 *   rule can allow it.
 */
import type { UserInfo } from './user.ts';

/** `authorizer.Attributes`. */
export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  resourceRequest: boolean;
  /** Non-resource requests: the URL path. */
  path: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

/** The request half of {@link RequestAttributes} (everything but the user). */
export type RequestInfo = Omit<RequestAttributes, 'user'>;

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** `Convert_Slice_string_To_bool`: anything but 0, f, false, n, no (any case) is true. */
function queryBool(value: string | null): boolean {
  if (value === null) return false;
  return !['0', 'f', 'false', 'n', 'no'].includes(value.toLowerCase());
}

/** `fields.Selector.RequiresExactMatch("metadata.name")` on a field selector string. */
function exactName(fieldSelector: string | null): string | undefined {
  if (!fieldSelector) return undefined;
  for (const term of fieldSelector.split(/(?<!\\),/)) {
    const m = /^\s*metadata\.name\s*(==|=)\s*(.*?)\s*$/.exec(term);
    if (m) return m[2].replace(/\\(.)/g, '$1');
  }
  return undefined;
}

/** Whether `name` is a valid path segment (`path.IsValidPathSegmentName`). */
function validPathSegment(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('%');
}

/** The request's attributes (`NewRequestInfo`). `pathname` is the decoded URL path. */
export function requestInfoOf(method: string, pathname: string, query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    verb: method.toLowerCase(), resourceRequest: false, path: pathname,
    apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '',
  };
  let parts = pathname.split('/').filter((p) => p !== '');
  if (parts.length < 3 || (parts[0] !== 'api' && parts[0] !== 'apis')) return info;
  const groupless = parts[0] === 'api';
  parts = parts.slice(1);
  if (!groupless) {
    if (parts.length < 3) return info;
    info.apiGroup = parts[0];
    parts = parts.slice(1);
  }
  info.resourceRequest = true;
  info.apiVersion = parts[0];
  parts = parts.slice(1);
  if (parts[0] === 'watch' || parts[0] === 'proxy') {
    if (parts.length < 2) return info;
    info.verb = parts[0];
    parts = parts.slice(1);
  } else {
    info.verb = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method.toUpperCase()] ?? '';
  }
  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1];
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2])) parts = parts.slice(2);
    }
  }
  if (parts.length >= 3 && info.verb !== 'proxy') info.subresource = parts[2];
  if (parts.length >= 2) info.name = parts[1];
  if (parts.length >= 1) info.resource = parts[0];
  if (info.name === '' && info.verb === 'get') {
    info.verb = queryBool(query.get('watch')) ? 'watch' : 'list';
  }
  if (info.name === '' && (info.verb === 'list' || info.verb === 'watch')) {
    const name = exactName(query.get('fieldSelector'));
    if (name !== undefined && validPathSegment(name)) info.name = name;
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}
