/**
 * Raw JSON access to the Kubernetes API for the forwarder: paginated LIST, streaming WATCH with
 * backpressure, and plain GET/POST/PUT (the Lease). Authentication and TLS come from client-node's
 * `KubeConfig` (kubeconfig file, in-cluster service account, exec plugins); the bodies stay the API
 * server's JSON, byte for byte, so the cache and the messages carry exactly what the server sent.
 *
 * client-node's own `Watch` reads the stream eagerly and cannot be paused; here the body is read only as
 * fast as the caller consumes events, so a full publish queue holds the watch back (HTTP/2 flow control
 * on its stream, or TCP backpressure over HTTP/1.1) instead of growing memory.
 *
 * @example
 * const kube = new KubeTransport(kc);
 * const list = await kube.list('/api/v1/nodes');
 * for await (const event of kube.watch('/api/v1/nodes', { resourceVersion: list.resourceVersion })) { ... }
 */
import { HttpMethod, RequestContext, type KubeConfig } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { sharedConnections, type SharedConnections } from '../kube/connections.ts';
import { KubeApiError, ResourceExpiredError, WatchSilenceError } from './errors.ts';

export type KubeObjectJson = { apiVersion?: string; kind?: string; metadata: Record<string, any>; [field: string]: any };

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: KubeObjectJson;
}

export interface ListResult {
  resourceVersion: string;
  items: KubeObjectJson[];
}

export interface WatchOptions {
  resourceVersion: string;
  labelSelector?: string;
  /** Server-side timeout: the server ends the watch cleanly after this many seconds. */
  timeoutSeconds?: number;
  /** Abort the watch (WatchSilenceError) when nothing arrives for this long while the caller waits. */
  silenceMs?: number;
  signal?: AbortSignal;
}

function statusError(code: number, body: any, fallback: string): KubeApiError {
  const message = typeof body?.message === 'string' ? body.message : fallback;
  if (code === 410) return new ResourceExpiredError(message);
  return new KubeApiError(code, typeof body?.reason === 'string' ? body.reason : String(code), message);
}

/** See the module comment. */
export class KubeTransport {
  #kc: KubeConfig;
  readonly #connections: SharedConnections;

  constructor(kc: KubeConfig) {
    this.#kc = kc;
    this.#connections = sharedConnections(kc);
  }

  /** The API server's base URL. */
  get server(): string {
    const cluster = this.#kc.getCurrentCluster();
    if (!cluster) throw new KubeApiError(0, 'NoCluster', 'kubeconfig has no current cluster');
    return cluster.server.replace(/\/+$/, '');
  }

  /**
   * One JSON request; non-2xx answers throw {@link KubeApiError} (410 → {@link ResourceExpiredError}).
   * Gives up after `timeoutMs` (default 30 s) so a black-holed connection cannot wedge a loop.
   */
  async request(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, signal?: AbortSignal, timeoutMs = 30_000): Promise<any> {
    const deadline = AbortSignal.timeout(timeoutMs);
    const response = await this.#send(method, path, body, signal ? AbortSignal.any([signal, deadline]) : deadline);
    const text = await response.text();
    const json = text ? JSON.parse(text) : undefined;
    if (response.status < 200 || response.status > 299) throw statusError(response.status, json, `${method} ${path}: HTTP ${response.status}`);
    return json;
  }

  /**
   * A consistent LIST in pages of `limit` (continue tokens). Items get `apiVersion`/`kind` filled in
   * (list items carry neither). A 410 on a continue token throws {@link ResourceExpiredError}.
   */
  async list(path: string, options: { labelSelector?: string; limit?: number; apiVersion?: string; kind?: string; signal?: AbortSignal } = {}): Promise<ListResult> {
    const items: KubeObjectJson[] = [];
    let resourceVersion = '';
    let token: string | undefined;
    do {
      const query = new URLSearchParams({ limit: String(options.limit ?? 500) });
      if (options.labelSelector) query.set('labelSelector', options.labelSelector);
      if (token) query.set('continue', token);
      const page = await this.request('GET', `${path}?${query}`, undefined, options.signal);
      if (!resourceVersion) resourceVersion = String(page?.metadata?.resourceVersion ?? '');
      for (const item of page?.items ?? []) {
        items.push({ ...(options.apiVersion ? { apiVersion: options.apiVersion, kind: options.kind } : {}), ...item });
      }
      token = page?.metadata?.continue || undefined;
    } while (token);
    return { resourceVersion, items };
  }

  /**
   * A WATCH from `resourceVersion` with bookmarks. Yields events as the caller pulls them; returns when
   * the server ends the stream; throws {@link ResourceExpiredError} on 410 (HTTP or ERROR event),
   * {@link KubeApiError} on other errors and {@link WatchSilenceError} on silence.
   */
  async *watch(path: string, options: WatchOptions): AsyncGenerator<WatchEvent> {
    const query = new URLSearchParams({ watch: '1', allowWatchBookmarks: 'true', resourceVersion: options.resourceVersion });
    if (options.labelSelector) query.set('labelSelector', options.labelSelector);
    if (options.timeoutSeconds) query.set('timeoutSeconds', String(options.timeoutSeconds));
    const controller = new AbortController();
    const onAbort = () => controller.abort(options.signal?.reason);
    // The generator body runs at the first next(): the signal may have fired before that.
    if (options.signal?.aborted) return;
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let silenced = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      if (!options.silenceMs) return;
      timer = setTimeout(() => {
        silenced = true;
        controller.abort(new WatchSilenceError(options.silenceMs ?? 0));
      }, options.silenceMs);
    };
    const disarm = () => clearTimeout(timer);
    try {
      arm();
      const response = await this.#send('GET', `${path}?${query}`, undefined, controller.signal);
      disarm();
      if (response.status !== 200) {
        const text = await response.text();
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        throw statusError(response.status, json, `watch ${path}: HTTP ${response.status}`);
      }
      if (!response.body) return;
      const decoder = new TextDecoder();
      let buffer = '';
      const reader = response.body.getReader();
      try {
        while (true) {
          arm();
          const chunk = await reader.read();
          disarm();
          if (chunk.done) break;
          buffer += decoder.decode(chunk.value, { stream: true });
          let newline: number;
          while ((newline = buffer.indexOf('\n')) >= 0) {
            const line = buffer.slice(0, newline).trim();
            buffer = buffer.slice(newline + 1);
            if (!line) continue;
            const event = JSON.parse(line) as { type: string; object: any };
            if (event.type === 'ERROR') throw statusError(Number(event.object?.code ?? 500), event.object, 'watch error event');
            yield event as WatchEvent;
          }
        }
      } finally {
        reader.cancel().catch(() => {});
      }
    } catch (err) {
      if (silenced) throw new WatchSilenceError(options.silenceMs ?? 0);
      throw err;
    } finally {
      disarm();
      options.signal?.removeEventListener('abort', onAbort);
      controller.abort();
    }
  }

  async #send(method: string, path: string, body: unknown, signal: AbortSignal | undefined) {
    const url = `${this.server}${path}`;
    const ctx = new RequestContext(url, method as HttpMethod);
    await this.#connections.applySecurityAuthentication(ctx);
    const headers: Record<string, string> = { ...ctx.getHeaders(), accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: ctx.getDispatcher(),
      signal,
    });
  }
}
