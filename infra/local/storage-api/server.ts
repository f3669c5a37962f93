/**
 * The embedded local storage control plane: an HTTP server speaking the StorageOS v2 subset the
 * controllers use, with durable state, a directory per volume, the NFS shared-volume lifecycle, nodes,
 * expiring tokens, fault injection and a request counter.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { apiRoutes } from './api-routes.ts';
import { AuthStore } from './auth.ts';
import { RequestCounter } from './counter.ts';
import { ApiFailure } from './errors.ts';
import { FaultInjector } from './faults.ts';
import { opsRoutes } from './ops-routes.ts';
import { JsonFile } from './persist.ts';
import { Router } from './router.ts';
import { StorageState, type StateSnapshot } from './state.ts';

/** Options of {@link startStorageApi}. */
export interface StorageApiOptions {
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Host to bind (default `127.0.0.1`). */
  host?: string;
  /** JSON file holding the state across restarts; in memory only when absent. */
  dataFile?: string;
  /**
   * Directory holding one sub-directory per volume. Default: `<dataFile>.volumes`, or a temporary
   * directory removed on stop when there is no data file either.
   */
  volumeRoot?: string;
  /** The one user (default `storageos`/`storageos`). */
  username?: string;
  password?: string;
  /** Token lifetime (default 5 minutes, as api-manager assumes). */
  tokenTtlMs?: number;
  /** Nodes to register at start (by name; idempotent). */
  nodes?: string[];
}

/** A running control plane. */
export interface StorageApiHandle {
  /** Base URL, e.g. `http://127.0.0.1:5705` (the API is under `/v2`). */
  url: string;
  port: number;
  /** Fault injection. */
  faults: FaultInjector;
  /** The objects (inspect them, or drive nodes and the shared-volume lifecycle). */
  state: StorageState;
  /** Sessions (e.g. `auth.expireAll()`). */
  auth: AuthStore;
  /** Calls per `METHOD /route` of the `/v2` API. */
  requests: RequestCounter;
  /** Stop listening, close connections, finish pending writes. */
  stop(): Promise<void>;
}

/**
 * Start the control plane.
 *
 * @example
 * const api = await startStorageApi({ port: 0, nodes: ['worker-1'] });
 * const client = new StorageOSClient({ endpoint: api.url, username: 'storageos', password: 'storageos' });
 * // ...
 * await api.stop();
 */
export async function startStorageApi(options: StorageApiOptions = {}): Promise<StorageApiHandle> {
  let volumeRoot: string;
  let ownedRoot = false;
  if (options.volumeRoot !== undefined) volumeRoot = resolve(options.volumeRoot);
  else if (options.dataFile !== undefined) volumeRoot = `${resolve(options.dataFile)}.volumes`;
  else {
    volumeRoot = await mkdtemp(join(tmpdir(), 'claimflow-storage-'));
    ownedRoot = true;
  }
  await mkdir(volumeRoot, { recursive: true });

  let file: JsonFile<StateSnapshot> | undefined;
  let snapshot: StateSnapshot | undefined;
  if (options.dataFile !== undefined) {
    await mkdir(dirname(resolve(options.dataFile)), { recursive: true });
    file = new JsonFile<StateSnapshot>(resolve(options.dataFile), () => state.snapshot());
    snapshot = await file.load();
  }
  const state: StorageState = new StorageState(volumeRoot, snapshot, () => file?.save() ?? Promise.resolve());
  if (file !== undefined) await file.save();
  for (const name of options.nodes ?? []) await state.addNode(name);

  const auth = new AuthStore(options.username ?? 'storageos', options.password ?? 'storageos', options.tokenTtlMs ?? 5 * 60_000);
  const faults = new FaultInjector();
  const requests = new RequestCounter();
  const api = new Router(apiRoutes(state, auth));
  const ops = new Router(opsRoutes(state, auth, faults, requests));

  const stopping = new AbortController();
  const inFlight = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const work = handle(req, res)
      .catch((err: unknown) => {
        if (stopping.signal.aborted) res.destroy();
        else if (!res.headersSent) send(res, 500, { error: `internal error: ${(err as Error).message}` });
        else res.destroy();
      })
      .finally(() => inFlight.delete(work));
    inFlight.add(work);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    const isOps = url.pathname.startsWith('/_storage/');
    const matched = (isOps ? ops : api).match(method, url.pathname);
    let loseResponse = false;
    if (!isOps) {
      requests.count(method, matched !== undefined && matched !== 'method-not-allowed' ? matched.route.template : url.pathname);
      const fault = faults.take(method, url.pathname);
      if (fault !== undefined) {
        if (fault.latencyMs > 0) await delay(fault.latencyMs, undefined, { signal: stopping.signal });
        if (fault.failure === 'drop') {
          req.socket.destroy();
          return;
        }
        if (fault.failure === 'lose-response') loseResponse = true;
        else if (fault.failure !== undefined) {
          await drain(req);
          send(res, fault.failure.status, { error: fault.failure.message });
          return;
        }
      }
    }
    const text = await readBody(req);
    if (matched === undefined) return send(res, 404, { error: 'not found' });
    if (matched === 'method-not-allowed') return send(res, 405, { error: 'method not allowed' });
    try {
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        throw new ApiFailure(400, 'request body is not valid JSON');
      }
      const session = isOps || matched.route.public === true ? undefined : auth.authenticate(req.headers.authorization);
      const result = await matched.route.handle({
        params: matched.params,
        query: url.searchParams,
        body,
        ...(session === undefined ? {} : { session }),
      });
      if (loseResponse) req.socket.destroy();
      else send(res, result.status, result.body, result.headers);
    } catch (err) {
      if (loseResponse) req.socket.destroy();
      else if (err instanceof ApiFailure) send(res, err.status, { error: err.message });
      else throw err;
    }
  }

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  let stopped: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    faults,
    state,
    auth,
    requests,
    stop() {
      stopped ??= (async () => {
        stopping.abort();
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeAllConnections();
        await closed;
        await Promise.allSettled([...inFlight]);
        await file?.flush();
        if (ownedRoot) await rm(volumeRoot, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

function send(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    ...(text === '' ? {} : { 'content-type': 'application/json' }),
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function drain(req: IncomingMessage): Promise<void> {
  for await (const _chunk of req) {
    // discard
  }
}
