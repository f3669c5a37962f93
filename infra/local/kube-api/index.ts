/**
 * The Kubernetes API emulator: start one (or many) in-process, get its URL, a kubeconfig, the store and the
 * test hooks. See issue 2 and `/work/shared/reference/apiserver-semantics.md`.
 */
import { writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { AdmissionPlugin, ClusterController, KindSpec } from './types.ts';
import { StatusError } from './types.ts';
import { MemoryStore } from './store.ts';
import { FaultInjector, RequestCounter } from './faults.ts';
import { createHttpServer } from './server.ts';
import { dropConnection } from './watch.ts';
import { loadDataFile, persistTo } from './persistence.ts';
import { TokenIssuer } from './tokens.ts';
import { ApiAuth, type AuthOptions } from './auth/index.ts';
import { makeServingCertificate } from './tls.ts';

export { MemoryStore } from './store.ts';
export { FaultInjector, RequestCounter } from './faults.ts';
export { TokenIssuer, TokenError, TOKEN_ISSUER, type TokenIdentity } from './tokens.ts';
export type { FaultSpec, Verb } from './faults.ts';
export { ApiAuth, ADMIN_USER, formatTokenFile, parseTokenFile, type AuthOptions, type StaticToken, type UserInfo } from './auth/index.ts';

/** Options of {@link startKubeApi}. */
export interface KubeApiOptions {
  /** 0 (default) = any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Events kept for watch resumption (default 10,000); older resourceVersions get 410. */
  watchHistory?: number;
  /** Service ClusterIP range (default 10.96.0.0/12). */
  serviceCidr?: string;
  /** Persist objects and the revision counter to this file. */
  dataFile?: string;
  /** Names of cluster controllers not to start (a test drives them by hand). */
  disableControllers?: string[];
  /** Served kinds (default: `KINDS` from ./kinds). */
  kinds?: KindSpec[];
  /** Admission plugins (default: `createAdmissionPlugins` from ./admission, only with the default kinds). */
  admission?: AdmissionPlugin[];
  /** Cluster controllers (default: `createClusterControllers` from ./controllers, only with the default kinds). */
  controllers?: ClusterController[];
  /** Interval of periodic watch bookmarks in ms (default 60,000). */
  bookmarkIntervalMs?: number;
  /** A watcher with more unsent bytes than this is closed (default 16 MiB). */
  maxWatchBufferBytes?: number;
  /**
   * Authenticate bearer tokens (static token file, ServiceAccount tokens) and authorize with RBAC (default:
   * off — every request is allowed, as `npm run kube-api` runs). See `auth/`.
   */
  auth?: AuthOptions;
  /**
   * Serve HTTPS with a self-signed certificate made at start (default: on exactly when `auth` is given —
   * kubectl sends credentials only over https). The kubeconfigs carry the certificate as their CA.
   */
  tls?: boolean;
  /**
   * Over TLS, serve HTTPS/1.1 alone (default: HTTP/2 and HTTP/1.1 by ALPN, as kube-apiserver: a client that
   * offers `h2` gets it, and one connection carries all its requests). For comparing the two
   * (`BENCH_KUBE_HTTP=1.1`) and for clients to be tested against both.
   */
  http1?: boolean;
}

/** A running emulator. */
export interface KubeApi {
  url: string;
  port: number;
  store: MemoryStore;
  faults: FaultInjector;
  requests: RequestCounter;
  /** Issues and verifies the ServiceAccount tokens of `serviceaccounts/<name>/token` (`tokens.verify(token, store)`). */
  tokens: TokenIssuer;
  /** Authentication and authorization when `auth` was given (`adminToken`: a `system:masters` token). */
  auth?: ApiAuth;
  /** The serving certificate (PEM) when serving https; clients trust it as their CA. */
  caCert?: string;
  /**
   * A kubeconfig (YAML) pointing at this emulator over plain http: with `token`, or — when authentication is
   * on — the admin token; else with an empty user.
   */
  kubeconfig(token?: string): string;
  writeKubeconfig(path: string, token?: string): Promise<void>;
  /**
   * Cuts every open watch stream mid-flight by dropping the connection it runs on (no ERROR event, no clean
   * end; over HTTP/2 every other stream of that connection fails with it), as a
   * load balancer or an API server restart does; returns how many were cut. Clients re-watch from their
   * last resourceVersion.
   */
  cutWatches(): number;
  /** TCP connections accepted so far (a client that keeps its connections alive opens few). */
  connectionsAccepted(): number;
  stop(): Promise<void>;
}

/** The namespaces every cluster has. */
export const SEEDED_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** The kubeconfig for a server URL, with a bearer token and the server's CA certificate (PEM) when given. */
export function kubeconfigFor(url: string, token?: string, caCert?: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: kube-api-emulator',
    '  cluster:',
    `    server: ${url}`,
    caCert ? `    certificate-authority-data: ${Buffer.from(caCert).toString('base64')}` : '    insecure-skip-tls-verify: true',
    'contexts:',
    '- name: kube-api-emulator',
    '  context:',
    '    cluster: kube-api-emulator',
    '    user: kube-api-emulator',
    '    namespace: default',
    'current-context: kube-api-emulator',
    'preferences: {}',
    'users:',
    '- name: kube-api-emulator',
    token ? `  user:\n    token: ${JSON.stringify(token)}` : '  user: {}',
    '',
  ].join('\n');
}

/** Starts an emulator; resolves once it accepts connections. */
export async function startKubeApi(options: KubeApiOptions = {}): Promise<KubeApi> {
  const defaults = options.kinds === undefined;
  const kinds = options.kinds ?? (await import('./kinds/index.ts')).KINDS;
  const admission = options.admission
    ?? (defaults ? (await import('./admission/index.ts')).createAdmissionPlugins({ serviceCidr: options.serviceCidr ?? '10.96.0.0/12' }) : []);
  const controllers: ClusterController[] = options.controllers ?? (defaults ? (await import('./controllers/index.ts')).createClusterControllers() : []);
  const data = options.dataFile ? loadDataFile(options.dataFile) : undefined;
  const store = new MemoryStore({
    kinds, admission,
    ...(options.watchHistory !== undefined ? { watchHistory: options.watchHistory } : {}),
    ...(data ? { initial: data } : {}),
  });
  if (store.kinds.has('/namespaces')) {
    for (const name of SEEDED_NAMESPACES) {
      if (store.peek('/namespaces', '', name)) continue;
      store.createObject('/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
  }
  // before anything runs: a bad token file fails the start with nothing to stop
  const tokens = new TokenIssuer();
  const auth = options.auth ? new ApiAuth(options.auth, store, tokens) : undefined;
  const stopPersisting = options.dataFile ? persistTo(store, options.dataFile) : undefined;
  const disabled = new Set(options.disableControllers ?? []);
  const running = controllers.filter((c) => !disabled.has(c.name));
  for (const c of running) c.start(store);

  const faults = new FaultInjector();
  const requests = new RequestCounter();
  const openWatches = new Set<ServerResponse>();
  const host = options.host ?? '127.0.0.1';
  const tls = (options.tls ?? auth !== undefined) ? makeServingCertificate([host]) : undefined;
  const server = createHttpServer({
    store, faults, requests, tokens, ...(auth ? { auth } : {}),
    watch: { bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000, maxBufferedBytes: options.maxWatchBufferBytes ?? 16 * 1024 * 1024, open: openWatches },
  }, tls, options.http1 ?? false);
  const sockets = new Set<Socket>();
  let accepted = 0;
  server.on('connection', (s) => {
    accepted += 1;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let stopped: Promise<void> | undefined;
  return {
    url, port, store, faults, requests, tokens, ...(auth ? { auth } : {}), ...(tls ? { caCert: tls.cert } : {}),
    kubeconfig: (token) => kubeconfigFor(url, token ?? auth?.adminToken, tls?.cert),
    writeKubeconfig: (path, token) => writeFile(path, kubeconfigFor(url, token ?? auth?.adminToken, tls?.cert), { mode: 0o600 }),
    cutWatches() {
      const cut = [...openWatches];
      for (const res of cut) dropConnection(res);
      return cut.length;
    },
    connectionsAccepted: () => accepted,
    stop() {
      stopped ??= (async () => {
        for (const c of running) {
          try {
            c.stop();
          } catch (err) {
            process.emitWarning(`kube-api controller ${c.name} failed to stop: ${(err as Error).message}`);
          }
        }
        for (const res of openWatches) res.end();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        if ('closeIdleConnections' in server) server.closeIdleConnections();
        setTimeout(() => { for (const s of sockets) s.destroy(); }, 100).unref();
        await closed;
        auth?.close();
        stopPersisting?.();
      })();
      return stopped;
    },
  };
}

export { StatusError };
