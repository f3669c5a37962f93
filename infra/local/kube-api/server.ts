/**
 * The HTTP front of the emulator: routes Kubernetes REST paths to the store (apiserver `endpoints/handlers`),
 * answers errors as metav1.Status, serves discovery, Tables, watches and the `/_emulator` test hooks.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { StatusError } from './types.ts';
import type { DeleteOptions, KindSpec, KubeObject } from './types.ts';
import { badRequest, forbidden, invalid, methodNotAllowed, notFound, pathNotFound, qualifiedResource, unauthorized } from './errors.ts';
import { apiGroupList, apiResourceList, apiVersions, openApiV2, versionInfo } from './discovery.ts';
import { FaultInjector, RequestCounter, type FaultSpec, type Verb } from './faults.ts';
import { invalidListOptions, listObjects } from './list.ts';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, patchTypeOf } from './patch.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import { apiVersionOf, resourceKey, rfc3339Seconds, type MemoryStore, type Subresource } from './store.ts';
import { toTable, type IncludeObject } from './table.ts';
import { cutResponse, serveWatch, type WatchSettings } from './watch.ts';
import { bodyFormatOf, negotiateOutput, type OutputFormat } from './negotiate.ts';
import { decodeObject, encodeList, encodeObject, messageFor, PROTOBUF_MEDIA_TYPE, ProtobufDecodeError } from './protobuf/codec.ts';
import { boundResourceOf, DEFAULT_EXPIRATION_SECONDS, TOKEN_ISSUER, type TokenIssuer } from './tokens.ts';
import { UNSECURED_USER, type ApiAuth } from './auth/index.ts';
import { impersonate, wantsImpersonation } from './auth/impersonation.ts';
import { requestInfoOf } from './auth/request-info.ts';
import { answerReview, REVIEW_RESOURCES } from './auth/reviews.ts';
import type { UserInfo } from './auth/user.ts';

/** What the HTTP layer is built from. */
export interface HttpContext {
  store: MemoryStore;
  faults: FaultInjector;
  requests: RequestCounter;
  watch: WatchSettings;
  tokens: TokenIssuer;
  /** Authentication and authorization; absent: every request is allowed (as `system:unsecured`). */
  auth?: ApiAuth;
}

/** A parsed resource path. */
interface ResourceRoute {
  spec: KindSpec;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: Subresource | 'token';
}

const JSON_TYPE = 'application/json';

/** Whether a kind is served in protobuf: it has a message and is not marked JSON-only (CRD-like). */
export function speaksProtobuf(spec: KindSpec): boolean {
  return spec.protobuf !== false && messageFor(apiVersionOf(spec), spec.kind) !== undefined && messageFor(apiVersionOf(spec), `${spec.kind}List`) !== undefined;
}

/** Writes an object (with kind and apiVersion) in the negotiated format; `table` is answered as JSON. */
function sendObject(res: ServerResponse, code: number, body: Record<string, unknown>, format: OutputFormat, headers: Record<string, string | string[]> = {}): void {
  if (format === 'protobuf') {
    const bytes = encodeObject(body as { apiVersion?: string; kind?: string });
    res.writeHead(code, { 'Content-Type': PROTOBUF_MEDIA_TYPE, 'Cache-Control': 'no-cache, private', 'Content-Length': bytes.length, ...headers });
    res.end(bytes);
    return;
  }
  if (format === 'yaml') {
    const text = stringifyYaml(body);
    res.writeHead(code, { 'Content-Type': 'application/yaml', 'Cache-Control': 'no-cache, private', 'Content-Length': Buffer.byteLength(text), ...headers });
    res.end(text);
    return;
  }
  sendJson(res, code, body, headers);
}

function sendJson(res: ServerResponse, code: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-cache, private', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Writes an error as a Status, in protobuf or YAML when the client's Accept prefers it (`ErrorNegotiated`). */
function sendError(res: ServerResponse, err: unknown, accept?: string): void {
  if (res.headersSent) {
    cutResponse(res);
    return;
  }
  const status = err instanceof StatusError ? err
    : new StatusError(500, 'InternalError', `Internal error occurred: ${(err as Error)?.message ?? String(err)}`);
  if (!(err instanceof StatusError)) process.emitWarning(`kube-api internal error: ${(err as Error)?.stack ?? String(err)}`);
  let format: OutputFormat = 'json';
  try {
    format = negotiateOutput(accept, { protobuf: true, table: false });
  } catch {
    // nothing acceptable: JSON, as the apiserver falls back for errors
  }
  sendObject(res, status.code, status.toStatus(), format === 'table' ? 'json' : format, status.headers ?? {});
}

function warningHeaders(warnings: string[]): Record<string, string[]> {
  return warnings.length ? { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`) } : {};
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Decodes a body by Content-Type: JSON, YAML, or (where `protobuf`) the `k8s\0` envelope; an unknown type
 * is 415, a malformed body 400.
 */
function decodeBody(body: Buffer, contentType: string | undefined, what: string, protobuf = false): unknown {
  const format = bodyFormatOf(contentType, protobuf);
  if (format === 'protobuf') {
    try {
      return decodeObject(body);
    } catch (err) {
      if (err instanceof ProtobufDecodeError) throw badRequest(`the object provided is unrecognized (must be of type ${what}): ${err.message}`);
      throw err;
    }
  }
  const text = body.toString('utf8');
  if (format === 'yaml') {
    try {
      return parseYaml(text);
    } catch (err) {
      throw badRequest(`the object provided is unrecognized (must be of type ${what}): couldn't get version/kind; yaml parse error: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw badRequest(`the object provided is unrecognized (must be of type ${what}): couldn't get version/kind; json parse error: ${(err as Error).message}`);
  }
}

function listKind(spec: KindSpec): string {
  return `${spec.kind}List`;
}

/** Writes a list in the negotiated format (JSON, YAML or protobuf). */
function sendList(res: ServerResponse, spec: KindSpec, items: KubeObject[], meta: { resourceVersion: string; continueToken?: string; remainingItemCount?: number }, format: OutputFormat): void {
  if (format === 'protobuf') {
    const metadata = {
      resourceVersion: meta.resourceVersion,
      ...(meta.continueToken ? { continue: meta.continueToken } : {}),
      ...(meta.remainingItemCount !== undefined ? { remainingItemCount: meta.remainingItemCount } : {}),
    };
    const bytes = encodeList(apiVersionOf(spec), listKind(spec), metadata, items);
    res.writeHead(200, { 'Content-Type': PROTOBUF_MEDIA_TYPE, 'Cache-Control': 'no-cache, private', 'Content-Length': bytes.length });
    res.end(bytes);
    return;
  }
  const json = listJson(spec, items, meta);
  if (format === 'yaml') return sendObject(res, 200, JSON.parse(json), 'yaml');
  sendJson(res, 200, json);
}

/** A list body; items carry no kind/apiVersion (only the wrapper does), as upstream. */
function listJson(spec: KindSpec, items: KubeObject[], meta: { resourceVersion: string; continueToken?: string; remainingItemCount?: number }): string {
  const parts: string[] = [];
  for (const o of items) {
    const { kind: _k, apiVersion: _a, ...rest } = o;
    parts.push(JSON.stringify(rest));
  }
  const metadata = JSON.stringify({
    resourceVersion: meta.resourceVersion,
    ...(meta.continueToken ? { continue: meta.continueToken } : {}),
    ...(meta.remainingItemCount !== undefined ? { remainingItemCount: meta.remainingItemCount } : {}),
  });
  return `{"kind":"${listKind(spec)}","apiVersion":"${apiVersionOf(spec)}","metadata":${metadata},"items":[${parts.join(',')}]}`;
}

function includeObjectOf(q: URLSearchParams): IncludeObject {
  const v = q.get('includeObject');
  if (v === 'None' || v === 'Object' || v === 'Metadata') return v;
  if (v) throw badRequest(`includeObject: Unsupported value: "${v}": supported values: "Metadata", "None", "Object"`);
  return 'Metadata';
}

function isTrue(v: string | null): boolean {
  return v === 'true' || v === '1';
}

function dryRunOf(q: URLSearchParams): boolean {
  const v = q.getAll('dryRun');
  for (const d of v) if (d !== 'All') throw badRequest(`dryRun: Unsupported value: "${d}": supported values: "All"`);
  return v.length > 0;
}

/** Parses `/api/v1/...` or `/apis/<g>/<v>/...` below the group-version. */
function resolveRoute(store: MemoryStore, group: string, version: string, rest: string[]): ResourceRoute {
  const find = (plural: string): KindSpec | undefined => {
    const spec = store.kinds.get(`${group}/${plural}`);
    return spec && spec.version === version ? spec : undefined;
  };
  let namespace: string | undefined;
  let plural: string;
  let name: string | undefined;
  let sub: string | undefined;
  let extra: string[];
  if (rest[0] === 'namespaces' && rest.length >= 3 && find(rest[2])?.namespaced) {
    [, namespace, plural, name, sub, ...extra] = rest;
  } else {
    [plural, name, sub, ...extra] = rest;
  }
  const spec = find(plural);
  if (!spec || extra.length) throw pathNotFound();
  if (namespace !== undefined && !spec.namespaced) throw pathNotFound();
  if (namespace === undefined && spec.namespaced && name !== undefined) throw pathNotFound();
  let subresource: Subresource | 'token' | undefined;
  if (sub !== undefined) {
    if (sub === 'status' && spec.subresources.includes('status')) subresource = 'status';
    else if (sub === 'finalize' && spec.kind === 'Namespace' && group === '') subresource = 'finalize';
    else if (sub === 'token' && spec.kind === 'ServiceAccount' && group === '') subresource = 'token';
    else throw pathNotFound();
  }
  return { spec, resource: resourceKey(spec), ...(namespace !== undefined ? { namespace } : {}), ...(name !== undefined ? { name } : {}), ...(subresource ? { subresource } : {}) };
}

function verbOf(method: string, route: ResourceRoute, q: URLSearchParams): Verb | 'deletecollection' {
  if (route.name === undefined) {
    if (method === 'GET') return isTrue(q.get('watch')) ? 'watch' : 'list';
    if (method === 'POST' && !route.subresource) return 'create';
    if (method === 'DELETE') return 'deletecollection';
    throw methodNotAllowed();
  }
  if (route.subresource === 'token') {
    if (method === 'POST') return 'create';
    throw methodNotAllowed();
  }
  if (method === 'GET') return isTrue(q.get('watch')) ? 'watch' : 'get';
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE' && !route.subresource) return 'delete';
  throw methodNotAllowed();
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Creates the request handler. */
export function createHandler(ctx: HttpContext): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(ctx, req, res).catch((err) => sendError(res, err, req.headers.accept));
  };
}

async function handle(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const q = url.searchParams;
  let segments: string[];
  try {
    segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw badRequest(`malformed path: ${url.pathname}`);
  }
  const method = req.method ?? 'GET';
  const kinds = [...ctx.store.kinds.values()];

  if (segments[0] === '_emulator') return emulatorRoute(ctx, method, segments, req, res);
  const user = authenticateAndAuthorize(ctx, req, method, url);
  if (segments[0] === 'version' && segments.length === 1) return method === 'GET' ? sendJson(res, 200, versionInfo()) : sendError(res, methodNotAllowed());
  if (url.pathname === '/openid/v1/jwks' && method === 'GET') return sendJson(res, 200, ctx.tokens.jwks());
  if (url.pathname === '/.well-known/openid-configuration' && method === 'GET') {
    return sendJson(res, 200, {
      issuer: TOKEN_ISSUER, jwks_uri: `${TOKEN_ISSUER}/openid/v1/jwks`, response_types_supported: ['id_token'],
      subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['ES256'],
    });
  }
  if (segments[0] === 'openapi' && segments[1] === 'v2' && segments.length === 2) {
    if (method !== 'GET') throw methodNotAllowed();
    const doc = openApiV2(req.headers.accept);
    res.writeHead(200, { 'Content-Type': doc.contentType, 'Content-Length': doc.body.length });
    res.end(doc.body);
    return;
  }
  if (segments[0] === 'healthz' || segments[0] === 'readyz' || segments[0] === 'livez') {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('ok');
    return;
  }

  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api') {
    if (segments.length === 1) return sendJson(res, 200, apiVersions());
    if (segments[1] !== 'v1') throw pathNotFound();
    group = '';
    version = 'v1';
    rest = segments.slice(2);
  } else if (segments[0] === 'apis') {
    if (segments.length === 1) return sendJson(res, 200, apiGroupList(kinds));
    if (segments.length === 2) {
      const g = (apiGroupList(kinds).groups as Array<Record<string, unknown>>).find((x) => x.name === segments[1]);
      if (!g) throw pathNotFound();
      return sendJson(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...g });
    }
    group = segments[1];
    version = segments[2];
    rest = segments.slice(3);
  } else {
    throw pathNotFound();
  }
  if (rest.length === 0) {
    const doc = apiResourceList(kinds, group, version);
    if (!doc) throw pathNotFound();
    return sendJson(res, 200, doc);
  }
  if (version === 'v1' && REVIEW_RESOURCES.some((r) => r.group === group)) return reviewRoute(ctx, user, group, rest, method, req, res);

  const route = resolveRoute(ctx.store, group, version, rest);
  const verb = verbOf(method, route, q);
  // negotiated before the request runs: an unacceptable Accept is 406 and changes nothing
  const format = negotiateOutput(req.headers.accept, {
    protobuf: route.subresource === 'token' || speaksProtobuf(route.spec),
    table: verb === 'get' || verb === 'list' || verb === 'watch',
    watch: verb === 'watch',
  });
  const counted = route.subresource ? `${route.spec.plural}/${route.subresource}` : route.spec.plural;
  if (verb !== 'deletecollection') {
    ctx.requests.record(verb, counted);
    const fault = ctx.faults.take(verb, counted, route.name);
    if (fault) {
      if (fault.latencyMs) await delay(fault.latencyMs);
      if (fault.error) throw fault.error;
    }
  }
  switch (verb) {
    case 'get': return getObject(ctx, route, res, q, format);
    case 'list': return listRoute(ctx, route, res, q, format);
    case 'watch': return watchRoute(ctx, route, res, q, format);
    case 'create': return route.subresource === 'token' ? tokenRoute(ctx, route, req, res, q, format) : createRoute(ctx, route, req, res, q, format);
    case 'update': return updateRoute(ctx, route, req, res, q, format);
    case 'patch': return patchRoute(ctx, route, req, res, q, format);
    case 'delete': return deleteRoute(ctx, route, req, res, q, format);
    case 'deletecollection': return deleteCollectionRoute(ctx, route, req, res, q, format);
  }
}

function getObject(ctx: HttpContext, route: ResourceRoute, res: ServerResponse, q: URLSearchParams, format: OutputFormat): void {
  const obj = ctx.store.peek(route.resource, route.namespace ?? '', route.name!);
  if (!obj) throw notFoundOf(route);
  if (format === 'table') {
    return sendJson(res, 200, toTable(route.spec, [obj], { include: includeObjectOf(q), headers: true, resourceVersion: obj.metadata.resourceVersion }));
  }
  sendObject(res, 200, obj, format);
}

function notFoundOf(route: ResourceRoute): StatusError {
  return new StatusError(404, 'NotFound', `${qualifiedResource(route.spec)} "${route.name}" not found`,
    { name: route.name, ...(route.spec.group ? { group: route.spec.group } : {}), kind: route.spec.plural });
}

function selectorsOf(route: ResourceRoute, q: URLSearchParams) {
  return { labels: parseLabelSelector(q.get('labelSelector')), fields: parseFieldSelector(q.get('fieldSelector'), route.spec) };
}

function listRoute(ctx: HttpContext, route: ResourceRoute, res: ServerResponse, q: URLSearchParams, format: OutputFormat): void {
  if (q.has('sendInitialEvents')) throw invalidListOptions('sendInitialEvents', 'sendInitialEvents is forbidden for list');
  const { labels, fields } = selectorsOf(route, q);
  const limitText = q.get('limit');
  const limit = limitText ? Number(limitText) : undefined;
  if (limitText && (!Number.isInteger(limit) || limit! < 0)) throw badRequest(`limit: Invalid value: "${limitText}": must be a non-negative integer`);
  const page = listObjects(ctx.store, route.spec, {
    resource: route.resource,
    ...(route.namespace ? { namespace: route.namespace } : {}),
    labels, fields,
    ...(limit ? { limit } : {}),
    ...(q.get('continue') ? { continueToken: q.get('continue')! } : {}),
    ...(q.get('resourceVersion') ? { resourceVersion: q.get('resourceVersion')! } : {}),
    ...(q.get('resourceVersionMatch') ? { resourceVersionMatch: q.get('resourceVersionMatch')! } : {}),
  });
  if (format === 'table') {
    return sendJson(res, 200, toTable(route.spec, page.items, {
      include: includeObjectOf(q), headers: true, resourceVersion: page.resourceVersion,
      ...(page.continueToken ? { continueToken: page.continueToken } : {}),
      ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
    }));
  }
  sendList(res, route.spec, page.items, page, format);
}

function watchRoute(ctx: HttpContext, route: ResourceRoute, res: ServerResponse, q: URLSearchParams, format: OutputFormat): void {
  if (q.has('sendInitialEvents')) {
    throw invalidListOptions('sendInitialEvents', 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled');
  }
  if (q.get('resourceVersionMatch')) throw invalidListOptions('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch');
  const { labels } = selectorsOf(route, q);
  let fieldText = q.get('fieldSelector') ?? '';
  if (route.name !== undefined) fieldText = fieldText ? `${fieldText},metadata.name=${route.name}` : `metadata.name=${route.name}`;
  const fields = parseFieldSelector(fieldText, route.spec);
  const timeoutText = q.get('timeoutSeconds');
  const timeoutSeconds = timeoutText ? Number(timeoutText) : undefined;
  if (timeoutText && !Number.isFinite(timeoutSeconds)) throw badRequest(`timeoutSeconds: Invalid value: "${timeoutText}"`);
  const rv = q.get('resourceVersion') ?? undefined;
  if (rv && rv !== '0' && !/^\d+$/.test(rv)) throw badRequest(`Invalid value: "${rv}": resourceVersion must be an integer`);
  serveWatch(ctx.store, route.spec, {
    resource: route.resource,
    ...(route.namespace ? { namespace: route.namespace } : {}),
    labels, fields,
    ...(rv ? { resourceVersion: rv } : {}),
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    allowBookmarks: isTrue(q.get('allowWatchBookmarks')),
    ...(format === 'table' ? { table: { include: includeObjectOf(q) } } : {}),
    protobuf: format === 'protobuf',
  }, res, ctx.watch);
}

async function readObject(req: IncomingMessage, spec: KindSpec): Promise<KubeObject> {
  const body = decodeBody(await readBody(req), req.headers['content-type'], `${spec.kind}`, speaksProtobuf(spec));
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest(`${spec.kind} in version "${spec.version}" cannot be handled as a ${spec.kind}: json: cannot unmarshal ${Array.isArray(body) ? 'array' : typeof body} into Go value of type ${spec.kind}`);
  }
  const obj = body as KubeObject;
  if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
  if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(spec)) {
    throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersionOf(spec)})`);
  }
  if (obj.kind !== undefined && obj.kind !== spec.kind) {
    throw badRequest(`${spec.kind} in version "${spec.version}" cannot be handled as a ${spec.kind}: the object provided is unrecognized (kind ${JSON.stringify(obj.kind)})`);
  }
  return obj;
}

/** Namespace from the URL; mismatch → 400 (`handlers/rest.go`). */
function bindNamespace(route: ResourceRoute, obj: KubeObject): void {
  if (!route.spec.namespaced) {
    delete obj.metadata.namespace;
    return;
  }
  const ns = obj.metadata.namespace;
  if (ns && ns !== route.namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  obj.metadata.namespace = route.namespace;
}

function writeResponse(res: ServerResponse, code: number, obj: KubeObject, warnings: string[], format: OutputFormat): void {
  sendObject(res, code, obj, format, warningHeaders(warnings));
}

async function createRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams, format: OutputFormat): Promise<void> {
  if (route.spec.namespaced && !route.namespace) throw methodNotAllowed();
  const obj = await readObject(req, route.spec);
  bindNamespace(route, obj);
  const r = ctx.store.createObject(route.resource, obj, { owned: true, dryRun: dryRunOf(q) });
  writeResponse(res, 201, r.object, r.warnings, format);
}

async function updateRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams, format: OutputFormat): Promise<void> {
  const obj = await readObject(req, route.spec);
  bindNamespace(route, obj);
  if (obj.metadata.name && obj.metadata.name !== route.name) {
    throw badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${route.name})`);
  }
  obj.metadata.name = route.name;
  const r = ctx.store.updateObject(route.resource, obj, route.subresource as Subresource | undefined, { owned: true, dryRun: dryRunOf(q) });
  writeResponse(res, r.created ? 201 : 200, r.object, r.warnings, format);
}

async function patchRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams, format: OutputFormat): Promise<void> {
  if (route.subresource === 'finalize') throw methodNotAllowed();
  const type = patchTypeOf(req.headers['content-type']);
  const text = (await readBody(req)).toString('utf8');
  let patch: unknown;
  try {
    patch = JSON.parse(text);
  } catch (err) {
    throw badRequest(`error decoding patch: ${(err as Error).message}`);
  }
  const current = ctx.store.peek(route.resource, route.namespace ?? '', route.name!);
  if (!current) throw notFoundOf(route);
  let next: KubeObject;
  if (type === 'application/json-patch+json') next = applyJsonPatch(current, patch);
  else if (type === 'application/merge-patch+json') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw badRequest('the body of a merge patch must be a JSON object');
    next = applyMergePatch(current, patch);
  } else next = applyStrategicMergePatch(current, patch);
  if (next === null || typeof next !== 'object' || Array.isArray(next)) throw badRequest('the patch produced something that is not an object');
  if (!next.metadata || typeof next.metadata !== 'object') next.metadata = {};
  if (next.metadata.name !== route.name) {
    throw badRequest(`the name of the object (${next.metadata.name ?? ''}) does not match the name on the URL (${route.name})`);
  }
  if (route.spec.namespaced && next.metadata.namespace !== route.namespace) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  const r = ctx.store.updateObject(route.resource, next, route.subresource as Subresource | undefined, { dryRun: dryRunOf(q) });
  writeResponse(res, 200, r.object, r.warnings, format);
}

/**
 * The authentication and authorization filters (`WithAuthentication`, `WithImpersonation`,
 * `WithAuthorization`): 401 without a credential that authenticates, 403 with upstream's message when the
 * authorizer does not allow the request; the user the request runs as otherwise.
 */
function authenticateAndAuthorize(ctx: HttpContext, req: IncomingMessage, method: string, url: URL): UserInfo {
  const auth = ctx.auth;
  if (!auth) return UNSECURED_USER;
  const authn = auth.authenticator.authenticate(req.headers.authorization);
  if ('unauthorized' in authn) throw unauthorized();
  let user = authn.user;
  if (wantsImpersonation(req.headers)) user = impersonate(req.headers, user, (a) => auth.authorize(a), forbidden);
  let path = url.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // the router answers 400 for it
  }
  const attrs = { user, ...requestInfoOf(method, path, url.searchParams) };
  const decision = auth.authorize(attrs);
  if (!decision.allowed) throw forbidden(attrs, decision.reason);
  return user;
}

/** `POST` of a review (`SelfSubjectAccessReview`, `SubjectAccessReview`, `SelfSubjectRulesReview`, `SelfSubjectReview`, `TokenReview`). */
async function reviewRoute(ctx: HttpContext, user: UserInfo, group: string, rest: string[], method: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let namespace: string | undefined;
  let resource = rest[0];
  if (rest[0] === 'namespaces' && rest.length === 3) [, namespace, resource] = rest;
  else if (rest.length !== 1) throw pathNotFound();
  const served = REVIEW_RESOURCES.find((r) => r.group === group && r.resource === resource && r.namespaced === (namespace !== undefined));
  if (!served) throw pathNotFound();
  if (method !== 'POST') throw methodNotAllowed();
  const format = negotiateOutput(req.headers.accept, { protobuf: true, table: false });
  const body = decodeBody(await readBody(req), req.headers['content-type'], served.kind, true);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest(`${served.kind} in version "v1" cannot be handled as a ${served.kind}: the body must be an object`);
  const auth = ctx.auth;
  const out = answerReview({
    user,
    authorize: (a) => (auth ? auth.authorize(a) : { allowed: true, reason: '' }),
    rulesFor: (u, ns) => (auth ? auth.rulesFor(u, ns) : { rules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }, { verbs: ['*'], nonResourceURLs: ['*'] }], errors: [] }),
    authenticateToken: (t) => auth?.authenticator.authenticateToken(t),
  }, group, resource, body as Record<string, unknown>, namespace);
  sendObject(res, 201, out, format === 'table' ? 'json' : format);
}

/** Largest `spec.expirationSeconds` of a TokenRequest (2^32 s). */
const MAX_TOKEN_SECONDS = 2 ** 32;

/**
 * `POST serviceaccounts/<name>/token` (`pkg/registry/core/serviceaccount/storage/token.go`): a TokenRequest
 * in, the same request with `status.token` and `status.expirationTimestamp` out (201).
 */
async function tokenRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams, format: OutputFormat): Promise<void> {
  const body = decodeBody(await readBody(req), req.headers['content-type'], 'TokenRequest', true);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('TokenRequest in version "v1" cannot be handled as a TokenRequest: the body must be an object');
  const request = body as KubeObject;
  if ((request.apiVersion !== undefined && request.apiVersion !== 'authentication.k8s.io/v1') || (request.kind !== undefined && request.kind !== 'TokenRequest')) {
    throw badRequest(`the object provided is unrecognized (must be of type TokenRequest): ${String(request.apiVersion ?? '')}, Kind=${String(request.kind ?? '')}`);
  }
  const namespace = route.namespace ?? '';
  const name = route.name!;
  if (request.metadata?.name && request.metadata.name !== name) {
    throw badRequest(`the name of the object (${request.metadata.name}) does not match the name on the URL (${name})`);
  }
  const sa = ctx.store.peek(route.resource, namespace, name);
  if (!sa) throw notFoundOf(route);
  const spec = { ...(request.spec ?? {}) };
  spec.expirationSeconds ??= DEFAULT_EXPIRATION_SECONDS;
  if (!Array.isArray(spec.audiences) || spec.audiences.length === 0) spec.audiences = [TOKEN_ISSUER];
  const errors = [];
  if (spec.expirationSeconds < 600) errors.push({ type: 'FieldValueInvalid' as const, field: 'spec.expirationSeconds', value: spec.expirationSeconds, detail: 'may not specify a duration less than 10 minutes' });
  if (spec.expirationSeconds > MAX_TOKEN_SECONDS) errors.push({ type: 'FieldValueTooLong' as const, field: 'spec.expirationSeconds', value: spec.expirationSeconds, detail: 'may not specify a duration larger than 2^32 seconds' });
  let boundObject: { kind: string; name: string; uid: string } | undefined;
  const ref = spec.boundObjectRef;
  if (ref) {
    const resource = boundResourceOf(ref.kind);
    if (!resource || (ref.apiVersion ?? 'v1') !== 'v1') {
      errors.push({ type: 'FieldValueNotSupported' as const, field: 'spec.boundObjectRef.kind', value: ref.kind ?? '', detail: 'supported values: "Node", "Pod", "Secret"' });
    } else if (errors.length === 0) {
      const spec2 = ctx.store.kinds.get(resource);
      const obj = spec2 && ctx.store.peek(resource, ref.kind === 'Node' ? '' : namespace, String(ref.name ?? ''));
      if (!spec2 || !obj) throw notFound(spec2 ?? { plural: `${String(ref.kind).toLowerCase()}s`, group: '' }, String(ref.name ?? ''));
      if (ref.uid && ref.uid !== obj.metadata.uid) {
        throw new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${spec2.plural} "${ref.name}": the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
          { name: ref.name, kind: spec2.plural });
      }
      boundObject = { kind: ref.kind, name: obj.metadata.name!, uid: obj.metadata.uid! };
    }
  }
  if (errors.length) throw invalid('TokenRequest', 'authentication.k8s.io', name, errors);
  const issued = ctx.tokens.issue(sa, { audiences: spec.audiences, expirationSeconds: spec.expirationSeconds, ...(boundObject ? { boundObject } : {}) });
  const out = {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { ...(request.metadata ?? {}), name, namespace, creationTimestamp: null },
    spec: { ...spec, ...(boundObject ? { boundObjectRef: { ...ref, uid: boundObject.uid } } : {}) },
    status: { token: dryRunOf(q) ? '' : issued.token, expirationTimestamp: rfc3339Seconds(issued.expirationTimestamp) },
  };
  sendObject(res, 201, out, format);
}

async function deleteOptionsOf(req: IncomingMessage, q: URLSearchParams): Promise<DeleteOptions> {
  const raw = await readBody(req);
  let options: DeleteOptions = {};
  if (raw.toString('utf8').trim()) {
    const body = decodeBody(raw, req.headers['content-type'], 'DeleteOptions', true);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('DeleteOptions must be a JSON object');
    const { kind, apiVersion: _v, ...rest } = body as Record<string, unknown>;
    if (kind !== undefined && kind !== 'DeleteOptions') throw badRequest(`the object provided is unrecognized (must be of type DeleteOptions): kind ${JSON.stringify(kind)}`);
    options = rest as DeleteOptions;
  }
  const policy = q.get('propagationPolicy');
  if (policy) options.propagationPolicy = policy as DeleteOptions['propagationPolicy'];
  const orphan = q.get('orphanDependents');
  if (orphan !== null) options.orphanDependents = isTrue(orphan);
  const grace = q.get('gracePeriodSeconds');
  if (grace !== null) options.gracePeriodSeconds = Number(grace);
  if (options.orphanDependents !== undefined && options.propagationPolicy) {
    throw new StatusError(422, 'Invalid', 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "' + options.propagationPolicy + '": orphanDependents and deletionPropagation cannot be both set');
  }
  return options;
}

async function deleteRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams, format: OutputFormat): Promise<void> {
  const options = await deleteOptionsOf(req, q);
  const dryRun = dryRunOf(q) || (options.dryRun ?? []).includes('All');
  const r = ctx.store.deleteObject({ resource: route.resource, namespace: route.namespace ?? '', name: route.name! }, options, { dryRun });
  if (r.deleted && !route.spec.returnDeletedObject) {
    return sendObject(res, 200, {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success',
      details: { name: route.name, ...(route.spec.group ? { group: route.spec.group } : {}), kind: route.spec.plural, uid: r.object.metadata.uid },
    }, format);
  }
  // handlers/delete.go: 202 Accepted when dependents are not orphaned and the object is still there
  sendObject(res, options.orphanDependents === false && !r.deleted ? 202 : 200, r.object, format);
}

async function deleteCollectionRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams, format: OutputFormat): Promise<void> {
  if (!route.spec.verbs.includes('deletecollection') || (route.spec.namespaced && !route.namespace)) throw methodNotAllowed();
  ctx.requests.record('delete', route.spec.plural);
  const options = await deleteOptionsOf(req, q);
  const { labels, fields } = selectorsOf(route, q);
  const dryRun = dryRunOf(q);
  const targets = ctx.store.scan(route.resource, route.namespace).filter((o) => labels.matches(o.metadata.labels) && fields.matches(o));
  const done: KubeObject[] = [];
  for (const o of targets) {
    try {
      done.push(ctx.store.deleteObject({ resource: route.resource, namespace: route.namespace ?? '', name: o.metadata.name! }, options, { dryRun }).object);
    } catch (err) {
      if (!(err instanceof StatusError && err.code === 404)) throw err;
    }
  }
  sendList(res, route.spec, done, { resourceVersion: String(ctx.store.revision) }, format);
}

async function emulatorRoute(ctx: HttpContext, method: string, segments: string[], req: IncomingMessage, res: ServerResponse): Promise<void> {
  const what = segments[1];
  if (segments.length !== 2 || (what !== 'faults' && what !== 'requests')) throw pathNotFound();
  if (what === 'faults') {
    if (method === 'POST') {
      const body = decodeBody(await readBody(req), req.headers['content-type'], 'Fault');
      try {
        ctx.faults.inject(body as FaultSpec);
      } catch (err) {
        throw badRequest((err as Error).message);
      }
      return sendJson(res, 201, { pending: ctx.faults.pending() });
    }
    if (method === 'GET') return sendJson(res, 200, { pending: ctx.faults.pending() });
    if (method === 'DELETE') {
      ctx.faults.clear();
      return sendJson(res, 200, { pending: [] });
    }
    throw methodNotAllowed();
  }
  if (method === 'GET') return sendJson(res, 200, ctx.requests.snapshot());
  if (method === 'DELETE') {
    ctx.requests.reset();
    return sendJson(res, 200, {});
  }
  throw methodNotAllowed();
}

/**
 * Streams an HTTP/2 connection may carry at once: kube-apiserver's when `--http2-max-streams-per-connection`
 * is not set (100, "match http2.initialMaxConcurrentStreams used by clients", apiserver
 * `SecureServingInfo.Serve`).
 */
export const HTTP2_MAX_STREAMS = 100;

/**
 * Creates (does not start) the HTTP server. With `tls` (a PEM key and certificate) it serves HTTP/2 and
 * HTTP/1.1 over TLS, the client's ALPN offer deciding, as kube-apiserver does: Go's server offers `h2` first
 * and picks by its own order, so client-go and undici (which offers both) talk HTTP/2 to it, and kubectl too.
 * One connection then carries every request of a client. `http1` serves HTTPS/1.1 alone, as the emulator
 * did before. Without `tls`, plain HTTP/1.1.
 *
 * The handler is the same for both: it uses only what Node's HTTP/2 compatibility API shares with
 * `node:http` (see watch.ts for the one header that differs and for cutting a stream).
 */
export function createHttpServer(ctx: HttpContext, tls?: { key: string; cert: string }, http1 = false): Server | Http2SecureServer {
  const options = { keepAliveTimeout: 65_000, requestTimeout: 0 };
  if (tls && !http1) {
    // An HTTP/1.1 client on this server (no ALPN) gets Node's HTTP/1.1 timeouts, not `options` above.
    return createSecureServer({ allowHTTP1: true, key: tls.key, cert: tls.cert, settings: { maxConcurrentStreams: HTTP2_MAX_STREAMS } }, createHandler(ctx) as unknown as Parameters<typeof createSecureServer>[1]);
  }
  if (tls) return createHttpsServer({ ...options, key: tls.key, cert: tls.cert }, createHandler(ctx)) as unknown as Server;
  return createServer(options, createHandler(ctx));
}
