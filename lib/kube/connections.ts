/**
 * One connection pool per kubeconfig, its TLS connections built from one secure context.
 *
 * client-node's `applySecurityAuthentication` sets the request's headers (a token refreshed when it
 * expires, an exec plugin's credential) and builds a new undici `Agent` for every request: used as it is,
 * every call to an https API server would open its own connection and pay a TLS handshake. Worse, each
 * new TLS connection builds a new secure context (parsing the CA, the client certificate and its key:
 * the largest part of opening one, measured in the binder bench), and a pool grows by a connection
 * whenever a request finds every connection busy.
 *
 * Here the kubeconfig's first request builds one `Agent` from client-node's own dispatcher options
 * (`createDispatcherOptions`, so proxies, `skipTLSVerify` and `tlsServerName` mean what they mean to
 * client-node) with one `SecureContext` for all its connections; every later request goes through it,
 * and the per-request agent client-node made is closed unused. A proxied cluster (HTTP or SOCKS) keeps
 * client-node's first agent for every request, as before. The TLS options of a kubeconfig do not change
 * (an EKS token refresh builds a new `KubeConfig`, and so a new pool).
 *
 * @example
 * const connections = sharedConnections(kubeConfig);
 * createConfiguration({ baseServer, authMethods: { default: connections } });
 * // or, for raw requests:
 * const context = new RequestContext(url, HttpMethod.GET);
 * await connections.applySecurityAuthentication(context);
 * await fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher() });
 */
import type { RequestOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { KubeConfig, RequestContext } from '@kubernetes/client-node';
import { Agent } from 'undici';

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

export interface SharedConnections {
  getName(): string;
  /** Sets the request's headers from the kubeconfig and its dispatcher to the shared pool. */
  applySecurityAuthentication(context: RequestContext): Promise<void>;
  /** The shared pool, once a request has built it (for tests and metrics). */
  readonly dispatcher: Dispatcher | undefined;
}

/** See the module comment. */
export function sharedConnections(kubeConfig: KubeConfig): SharedConnections {
  let shared: Promise<Dispatcher | undefined> | undefined;
  let built: Dispatcher | undefined;
  return {
    getName: () => 'kubeconfig',
    get dispatcher() {
      return built;
    },
    async applySecurityAuthentication(context: RequestContext): Promise<void> {
      await kubeConfig.applySecurityAuthentication(context);
      const fresh = context.getDispatcher();
      if (!fresh) return; // plain http: the default global dispatcher keeps its connections alive
      shared ??= pooled(kubeConfig).catch(() => undefined);
      const pool = (built = (await shared) ?? built ?? fresh);
      if (fresh === pool) return;
      void fresh.close().catch(() => {});
      context.setDispatcher(pool);
    },
  };
}

/** An `Agent` whose TLS connections share one secure context; undefined where client-node would proxy. */
async function pooled(kubeConfig: KubeConfig): Promise<Dispatcher | undefined> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) return undefined;
  const https: RequestOptions = {};
  await kubeConfig.applyToHTTPSOptions(https);
  const options = kubeConfig.createDispatcherOptions(cluster, {
    ca: https.ca,
    cert: https.cert,
    key: https.key,
    pfx: https.pfx,
    passphrase: https.passphrase,
    ...(https.rejectUnauthorized !== undefined ? { rejectUnauthorized: https.rejectUnauthorized } : {}),
    ...(https.servername !== undefined ? { servername: https.servername } : {}),
  });
  if (options.type !== 'agent') return undefined;
  const { ca, cert, key, pfx, passphrase, ...connect } = options.connect;
  const secureContext = createSecureContext({ ca, cert, key, pfx, passphrase });
  return new Agent({ connect: { ...connect, secureContext } }) as unknown as Dispatcher;
}
