/**
 * The Kubernetes API emulator: start one (or many) in-process, get its URL, a kubeconfig, the store and the
 * test hooks. See issue 2 and `/work/shared/reference/apiserver-semantics.md`.
 */
import { writeFile } from 'node:fs/promises';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { AdmissionPlugin, ClusterController, KindSpec } from './types.ts';
import { StatusError } from './types.ts';
import { MemoryStore } from './store.ts';
import { FaultInjector, RequestCounter } from './faults.ts';
import { createHttpServer } from './server.ts';
import { loadDataFile, persistTo } from './persistence.ts';
import { TokenIssuer } from './tokens.ts';

export { MemoryStore } from './store.ts';
export { FaultInjector, RequestCounter } from './faults.ts';
export { TokenIssuer, TokenError, TOKEN_ISSUER, type TokenIdentity } from './tokens.ts';
export type { FaultSpec, Verb } from './faults.ts';

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
  /** A kubeconfig (YAML) pointing at this emulator over plain http with an empty user. */
  kubeconfig(): string;
  writeKubeconfig(path: string): Promise<void>;
  stop(): Promise<void>;
}

/** The namespaces every cluster has. */
export const SEEDED_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** The kubeconfig for a server URL. */
export function kubeconfigFor(url: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: kube-api-emulator',
    '  cluster:',
    `    server: ${url}`,
    '    insecure-skip-tls-verify: true',
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
    '  user: {}',
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
  const stopPersisting = options.dataFile ? persistTo(store, options.dataFile) : undefined;
  const disabled = new Set(options.disableControllers ?? []);
  const running = controllers.filter((c) => !disabled.has(c.name));
  for (const c of running) c.start(store);

  const faults = new FaultInjector();
  const requests = new RequestCounter();
  const tokens = new TokenIssuer();
  const openWatches = new Set<ServerResponse>();
  const server: Server = createHttpServer({
    store, faults, requests, tokens,
    watch: { bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000, maxBufferedBytes: options.maxWatchBufferBytes ?? 16 * 1024 * 1024, open: openWatches },
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let stopped: Promise<void> | undefined;
  return {
    url, port, store, faults, requests, tokens,
    kubeconfig: () => kubeconfigFor(url),
    writeKubeconfig: (path) => writeFile(path, kubeconfigFor(url)),
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
        server.closeIdleConnections();
        setTimeout(() => { for (const s of sockets) s.destroy(); }, 100).unref();
        await closed;
        stopPersisting?.();
      })();
      return stopped;
    },
  };
}

export { StatusError };
