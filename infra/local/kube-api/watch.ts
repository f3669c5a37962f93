/**
 * WATCH over HTTP: newline-delimited JSON events on a streamed 200 response (chunked over HTTP/1.1, DATA
 * frames over HTTP/2) (apiserver `handlers/watch.go`, cacher `convertToWatchEvent`). Starts from the
 * current state (synthetic ADDED) or from a revision in the history (410 ERROR event when it is gone); turns
 * selector transitions into ADDED/DELETED; sends BOOKMARKs when asked; ends at `timeoutSeconds`. Writers
 * never wait for a watcher: a watcher whose unsent bytes grow past the limit is cut off (its socket over
 * HTTP/1.1, its stream over HTTP/2), as the real server drops slow watchers.
 */
import type { ServerResponse } from 'node:http';
import { constants as http2, type Http2ServerResponse } from 'node:http2';
import type { KindSpec, KubeObject, StoreEvent } from './types.ts';
import { StatusError } from './types.ts';
import type { FieldSelector, LabelSelector } from './selectors.ts';
import { apiVersionOf, type Binding, type MemoryStore } from './store.ts';
import { toTable, type IncludeObject } from './table.ts';
import { parseResourceVersion } from './list.ts';
import { encodeObject, PROTOBUF_MEDIA_TYPE, watchFrame } from './protobuf/codec.ts';

/** The HTTP/2 stream a response writes to (Node's compatibility API), or undefined over HTTP/1.1. */
function streamOf(res: ServerResponse): Http2ServerResponse['stream'] | undefined {
  return (res as unknown as Partial<Http2ServerResponse>).stream;
}

/** Whether a response goes out over HTTP/2. */
function overHttp2(res: ServerResponse): boolean {
  return streamOf(res) !== undefined;
}

/**
 * Cuts a response mid-flight so that its client sees an error, not an end: over HTTP/1.1 its socket is
 * destroyed; over HTTP/2 only its stream is reset (`INTERNAL_ERROR`, as Go's server resets a stream whose
 * handler panics), the connection's other requests going on.
 */
export function cutResponse(res: ServerResponse): void {
  const stream = streamOf(res);
  if (stream) stream.close(http2.NGHTTP2_INTERNAL_ERROR);
  else res.destroy();
}

/** Whether a response can no longer be written: its socket, or over HTTP/2 its stream, destroyed. */
function destroyed(res: ServerResponse): boolean {
  return streamOf(res)?.destroyed ?? res.destroyed;
}

/** Drops the connection a response goes out on: its socket, or over HTTP/2 its session (every stream on it). */
export function dropConnection(res: ServerResponse): void {
  // With an error: every stream reset and a GOAWAY with INTERNAL_ERROR; without one each stream would end
  // with NO_ERROR first, which a client reads as a clean end.
  const stream = streamOf(res);
  if (stream) stream.session?.destroy(new Error('connection dropped'), http2.NGHTTP2_INTERNAL_ERROR);
  else res.destroy();
}

/** Per-watch parameters. */
export interface WatchParams {
  resource: string;
  namespace?: string;
  labels: LabelSelector;
  fields: FieldSelector;
  /** `resourceVersion` query value. */
  resourceVersion?: string;
  timeoutSeconds?: number;
  allowBookmarks: boolean;
  /** Present for a Table watch (kubectl get -w). */
  table?: { include: IncludeObject };
  /** Protobuf frames (`application/vnd.kubernetes.protobuf;stream=watch`) instead of JSON lines. */
  protobuf?: boolean;
}

/** Server-wide watch settings. */
export interface WatchSettings {
  /** Interval of periodic bookmarks (upstream ≈ 1 min). */
  bookmarkIntervalMs: number;
  /** A watcher with more unsent bytes than this is closed. */
  maxBufferedBytes: number;
  /** Open watches, so `stop()` can end them. */
  open: Set<ServerResponse>;
}

/** The ERROR event for a Status. */
function errorEvent(err: StatusError, protobuf: boolean): string | Buffer {
  if (protobuf) return watchFrame('ERROR', encodeObject(err.toStatus()));
  return `${JSON.stringify({ type: 'ERROR', object: err.toStatus() })}\n`;
}

const encoded = new WeakMap<KubeObject, Uint8Array>();

/** Enveloped protobuf of a stored object, built once for every protobuf watcher. */
function protobufOf(obj: KubeObject, shared: boolean): Uint8Array {
  if (!shared) return encodeObject(obj);
  let bytes = encoded.get(obj);
  if (bytes === undefined) {
    bytes = encodeObject(obj);
    encoded.set(obj, bytes);
  }
  return bytes;
}

const serialized = new WeakMap<KubeObject, string>();

/** JSON of an object that is never mutated once stored; shared by every watcher. */
function jsonOf(obj: KubeObject): string {
  let s = serialized.get(obj);
  if (s === undefined) {
    s = JSON.stringify(obj);
    serialized.set(obj, s);
  }
  return s;
}

/** Serves one watch on `res` until timeout, client close or server stop. */
export function serveWatch(store: MemoryStore, spec: KindSpec, params: WatchParams, res: ServerResponse, settings: WatchSettings): void {
  const binding: Binding = store.binding(params.resource);
  const storage = binding.storage;
  const current = store.revision;
  let from: number | undefined;
  if (params.resourceVersion && params.resourceVersion !== '0') from = parseResourceVersion(params.resourceVersion);

  const protobuf = params.protobuf === true && !params.table;
  // HTTP/2 has no chunked encoding (its frames carry the body) and forbids the header.
  const chunked: Record<string, string> = overHttp2(res) ? {} : { 'Transfer-Encoding': 'chunked' };
  res.writeHead(200, { 'Content-Type': protobuf ? `${PROTOBUF_MEDIA_TYPE};stream=watch` : 'application/json', 'Cache-Control': 'no-cache, private', ...chunked });
  res.flushHeaders();
  settings.open.add(res);

  const timers: NodeJS.Timeout[] = [];
  let unsubscribe: (() => void) | undefined;
  let closed = false;
  /** Stops the watch: ends the response cleanly, or with `cut` cuts it off (a client that fell behind). */
  const stop = (cut: boolean): void => {
    if (closed) return;
    closed = true;
    for (const t of timers) clearTimeout(t);
    unsubscribe?.();
    settings.open.delete(res);
    if (cut) cutResponse(res);
    else if (!res.writableEnded && !destroyed(res)) res.end();
  };
  const close = (): void => stop(false);
  res.on('close', close);

  let headersSent = false;
  const write = (chunk: string | Buffer): void => {
    if (closed) return;
    if (res.writableLength > settings.maxBufferedBytes) {
      stop(true);
      return;
    }
    res.write(chunk);
  };
  const fail = (err: StatusError): void => {
    write(errorEvent(err, protobuf));
    close();
  };

  const matches = (o: KubeObject | undefined): boolean => o !== undefined
    && (!params.namespace || o.metadata.namespace === params.namespace)
    && params.labels.matches(o.metadata.labels) && params.fields.matches(o);

  const send = (type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void => {
    if (params.table) {
      const table = toTable(spec, [obj], { include: params.table.include, headers: !headersSent, resourceVersion: obj.metadata.resourceVersion });
      headersSent = true;
      write(`${JSON.stringify({ type, object: table })}\n`);
    } else if (protobuf) {
      write(watchFrame(type, protobufOf(obj, binding.identity)));
    } else {
      write(`{"type":"${type}","object":${binding.identity ? jsonOf(obj) : JSON.stringify(obj)}}\n`);
    }
  };

  const onEvent = (e: StoreEvent): void => {
    if (e.resource !== storage || (from !== undefined && e.revision <= from)) return;
    const obj = binding.toView(e.object);
    if (e.type === 'ADDED') {
      if (matches(obj)) send('ADDED', obj);
      return;
    }
    const prev = e.previous ? binding.toView(e.previous) : undefined;
    if (e.type === 'DELETED') {
      if (matches(prev ?? obj)) send('DELETED', obj);
      return;
    }
    const now = matches(obj);
    const before = prev !== undefined && matches(prev);
    if (now && before) send('MODIFIED', obj);
    else if (now) send('ADDED', obj);
    else if (before) send('DELETED', { ...prev!, metadata: { ...prev!.metadata, resourceVersion: obj.metadata.resourceVersion } });
  };

  const bookmark = (): void => {
    const object = { kind: spec.kind, apiVersion: apiVersionOf(spec), metadata: { resourceVersion: String(store.revision) } };
    write(protobuf ? watchFrame('BOOKMARK', encodeObject(object)) : `${JSON.stringify({ type: 'BOOKMARK', object })}\n`);
  };

  if (from === undefined) {
    for (const o of store.scan(params.resource, params.namespace)) if (matches(o)) send('ADDED', o);
    from = current;
    unsubscribe = store.watchRaw(onEvent);
  } else if (from < store.compactedRevision) {
    fail(new StatusError(410, 'Expired', `too old resource version: ${from} (${store.compactedRevision + 1})`));
    return;
  } else {
    for (const e of store.history(from)) onEvent(e);
    unsubscribe = store.watchRaw(onEvent);
    if (from > current) {
      const wanted = from;
      timers.push(setTimeout(() => {
        if (store.revision < wanted) {
          fail(new StatusError(504, 'Timeout', `Too large resource version: ${wanted}, current: ${store.revision}`,
            { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }));
        }
      }, 3000));
    }
  }

  const timeoutMs = params.timeoutSeconds !== undefined && params.timeoutSeconds > 0
    ? params.timeoutSeconds * 1000
    : (1800 + Math.random() * 1800) * 1000;
  timers.push(setTimeout(close, timeoutMs));
  if (params.allowBookmarks) {
    const beforeDeadline = timeoutMs - Math.min(2000, timeoutMs / 2);
    timers.push(setTimeout(bookmark, beforeDeadline));
    const periodic = (): void => {
      bookmark();
      timers.push(setTimeout(periodic, settings.bookmarkIntervalMs));
    };
    timers.push(setTimeout(periodic, settings.bookmarkIntervalMs));
  }
}
