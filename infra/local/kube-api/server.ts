/**
 * The HTTP front of the emulator: routes Kubernetes REST paths to the store (apiserver `endpoints/handlers`),
 * answers errors as metav1.Status, serves discovery, Tables, watches and the `/_emulator` test hooks.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { StatusError } from './types.ts';
import type { DeleteOptions, KindSpec, KubeObject } from './types.ts';
import { badRequest, methodNotAllowed, pathNotFound, qualifiedResource } from './errors.ts';
import { apiGroupList, apiResourceList, apiVersions, openApiV2, versionInfo } from './discovery.ts';
import { FaultInjector, RequestCounter, type FaultSpec, type Verb } from './faults.ts';
import { invalidListOptions, listObjects } from './list.ts';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, patchTypeOf } from './patch.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import { apiVersionOf, resourceKey, type MemoryStore, type Subresource } from './store.ts';
import { toTable, wantsTable, type IncludeObject } from './table.ts';
import { serveWatch, type WatchSettings } from './watch.ts';

/** What the HTTP layer is built from. */
export interface HttpContext {
  store: MemoryStore;
  faults: FaultInjector;
  requests: RequestCounter;
  watch: WatchSettings;
}

/** A parsed resource path. */
interface ResourceRoute {
  spec: KindSpec;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: Subresource;
}

const JSON_TYPE = 'application/json';

function sendJson(res: ServerResponse, code: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-cache, private', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status = err instanceof StatusError ? err
    : new StatusError(500, 'InternalError', `Internal error occurred: ${(err as Error)?.message ?? String(err)}`);
  if (!(err instanceof StatusError)) process.emitWarning(`kube-api internal error: ${(err as Error)?.stack ?? String(err)}`);
  sendJson(res, status.code, status.toStatus(), status.headers ?? {});
}

function warningHeaders(warnings: string[]): Record<string, string[]> {
  return warnings.length ? { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`) } : {};
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Decodes a JSON or YAML body by Content-Type; malformed → 400. */
function decodeBody(text: string, contentType: string | undefined, what: string): unknown {
  const type = (contentType ?? JSON_TYPE).split(';')[0].trim().toLowerCase();
  if (type === 'application/yaml' || type === 'application/x-yaml' || type === 'text/yaml') {
    try {
      return parseYaml(text);
    } catch (err) {
      throw badRequest(`the object provided is unrecognized (must be of type ${what}): couldn't get version/kind; yaml parse error: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (type !== JSON_TYPE && type !== '' && type !== '*/*') {
    throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`);
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
  let subresource: Subresource | undefined;
  if (sub !== undefined) {
    if (sub === 'status' && spec.subresources.includes('status')) subresource = 'status';
    else if (sub === 'finalize' && spec.kind === 'Namespace' && group === '') subresource = 'finalize';
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
    handle(ctx, req, res).catch((err) => sendError(res, err));
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
  if (segments[0] === 'version' && segments.length === 1) return method === 'GET' ? sendJson(res, 200, versionInfo()) : sendError(res, methodNotAllowed());
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

  const route = resolveRoute(ctx.store, group, version, rest);
  const verb = verbOf(method, route, q);
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
    case 'get': return getObject(ctx, route, req, res, q);
    case 'list': return listRoute(ctx, route, req, res, q);
    case 'watch': return watchRoute(ctx, route, req, res, q);
    case 'create': return createRoute(ctx, route, req, res, q);
    case 'update': return updateRoute(ctx, route, req, res, q);
    case 'patch': return patchRoute(ctx, route, req, res, q);
    case 'delete': return deleteRoute(ctx, route, req, res, q);
    case 'deletecollection': return deleteCollectionRoute(ctx, route, req, res, q);
  }
}

function getObject(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): void {
  const obj = ctx.store.peek(route.resource, route.namespace ?? '', route.name!);
  if (!obj) throw notFoundOf(route);
  if (wantsTable(req.headers.accept)) {
    return sendJson(res, 200, toTable(route.spec, [obj], { include: includeObjectOf(q), headers: true, resourceVersion: obj.metadata.resourceVersion }));
  }
  sendJson(res, 200, obj);
}

function notFoundOf(route: ResourceRoute): StatusError {
  return new StatusError(404, 'NotFound', `${qualifiedResource(route.spec)} "${route.name}" not found`,
    { name: route.name, ...(route.spec.group ? { group: route.spec.group } : {}), kind: route.spec.plural });
}

function selectorsOf(route: ResourceRoute, q: URLSearchParams) {
  return { labels: parseLabelSelector(q.get('labelSelector')), fields: parseFieldSelector(q.get('fieldSelector'), route.spec) };
}

function listRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): void {
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
  if (wantsTable(req.headers.accept)) {
    return sendJson(res, 200, toTable(route.spec, page.items, {
      include: includeObjectOf(q), headers: true, resourceVersion: page.resourceVersion,
      ...(page.continueToken ? { continueToken: page.continueToken } : {}),
      ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
    }));
  }
  sendJson(res, 200, listJson(route.spec, page.items, page));
}

function watchRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): void {
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
    ...(wantsTable(req.headers.accept) ? { table: { include: includeObjectOf(q) } } : {}),
  }, res, ctx.watch);
}

async function readObject(req: IncomingMessage, spec: KindSpec): Promise<KubeObject> {
  const body = decodeBody(await readBody(req), req.headers['content-type'], `${spec.kind}`);
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

function writeResponse(res: ServerResponse, code: number, obj: KubeObject, warnings: string[]): void {
  sendJson(res, code, obj, warningHeaders(warnings));
}

async function createRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): Promise<void> {
  if (route.spec.namespaced && !route.namespace) throw methodNotAllowed();
  const obj = await readObject(req, route.spec);
  bindNamespace(route, obj);
  const r = ctx.store.createObject(route.resource, obj, { owned: true, dryRun: dryRunOf(q) });
  writeResponse(res, 201, r.object, r.warnings);
}

async function updateRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): Promise<void> {
  const obj = await readObject(req, route.spec);
  bindNamespace(route, obj);
  if (obj.metadata.name && obj.metadata.name !== route.name) {
    throw badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${route.name})`);
  }
  obj.metadata.name = route.name;
  const r = ctx.store.updateObject(route.resource, obj, route.subresource, { owned: true, dryRun: dryRunOf(q) });
  writeResponse(res, r.created ? 201 : 200, r.object, r.warnings);
}

async function patchRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): Promise<void> {
  if (route.subresource === 'finalize') throw methodNotAllowed();
  const type = patchTypeOf(req.headers['content-type']);
  const text = await readBody(req);
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
  const r = ctx.store.updateObject(route.resource, next, route.subresource, { dryRun: dryRunOf(q) });
  writeResponse(res, 200, r.object, r.warnings);
}

async function deleteOptionsOf(req: IncomingMessage, q: URLSearchParams): Promise<DeleteOptions> {
  const text = await readBody(req);
  let options: DeleteOptions = {};
  if (text.trim()) {
    const body = decodeBody(text, req.headers['content-type'], 'DeleteOptions');
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('DeleteOptions must be a JSON object');
    options = body as DeleteOptions;
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

async function deleteRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): Promise<void> {
  const options = await deleteOptionsOf(req, q);
  const dryRun = dryRunOf(q) || (options.dryRun ?? []).includes('All');
  const r = ctx.store.deleteObject({ resource: route.resource, namespace: route.namespace ?? '', name: route.name! }, options, { dryRun });
  if (r.deleted && !route.spec.returnDeletedObject) {
    return sendJson(res, 200, {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success',
      details: { name: route.name, ...(route.spec.group ? { group: route.spec.group } : {}), kind: route.spec.plural, uid: r.object.metadata.uid },
    });
  }
  // handlers/delete.go: 202 Accepted when dependents are not orphaned and the object is still there
  sendJson(res, options.orphanDependents === false && !r.deleted ? 202 : 200, r.object);
}

async function deleteCollectionRoute(ctx: HttpContext, route: ResourceRoute, req: IncomingMessage, res: ServerResponse, q: URLSearchParams): Promise<void> {
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
  sendJson(res, 200, listJson(route.spec, done, { resourceVersion: String(ctx.store.revision) }));
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

/** Creates (does not start) the HTTP server. */
export function createHttpServer(ctx: HttpContext): Server {
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, createHandler(ctx));
  return server;
}
