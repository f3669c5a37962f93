/**
 * One connection pool per kubeconfig, its TLS connections built from one secure context.
 *
 * client-node's `applySecurityAuthentication` sets the request's headers (a token refreshed when it
 * expires, an exec plugin's credential) and builds a new undici `Agent` for every request: used as it is,
 * every call to an https API server would open its own connection and pay a TLS handshake. Each new TLS
 * connection also builds a new secure context (parsing the CA, the client certificate and its key: the
 * larger part of opening one), and a pool grows by a connection whenever a request finds every
 * connection busy.
 *
 * Here the kubeconfig's first request builds one `Agent` from client-node's own dispatcher options
 * (`createDispatcherOptions`, so `skipTLSVerify` and `tlsServerName` mean what they mean to client-node)
 * with one `SecureContext` for all its connections. Every request then takes its headers from
 * `applyToHTTPSOptions` (the same authenticators, token refresh and impersonation) and goes through that
 * pool: no agent is built and thrown away per request (`npm run bench:kube-api`,
 * `functionsClientOverHttps`: the client's CPU per update 398 → 351–355 µs, per GET 316–352 → 292–310). A proxied cluster (HTTP or SOCKS) or a plain-http one keeps client-node's
 * per-request path, its first agent reused. The TLS options are read once: an exec plugin that rotates a
 * client certificate is not followed (an EKS token refresh builds a new `KubeConfig`, and so a new pool).
 *
 * undici offers HTTP/2 and HTTP/1.1 (ALPN) and kube-apiserver, as every Go server, picks HTTP/2: the pool then
 * holds one connection and sends every request of the container on it as a stream, as client-go does
 * (undici holds the pool's first requests until that connection's protocol is known, so a container's first
 * burst does not open one connection per request). Behind something that speaks HTTPS/1.1 only, it grows
 * by a connection per request in flight, as above. The local emulator does both (`http1`;
 * `test/runtime/client.test.ts` counts the connections of each).
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

/**
 * How long the pool keeps a connection to the API server that nothing uses: 50 s. kube-apiserver closes
 * one after 90 s (`SecureServingInfo.Serve`, "matches http.DefaultTransport keep-alive timeout", the 90 s
 * client-go's transport keeps), and a load balancer in front of it often after 60 s (ELB's default; EKS's
 * NLB 350 s): 50 s closes first, with a margin. undici's default is 4 s for a server that does not say:
 * kube-apiserver sends no `Keep-Alive` header over HTTP/1.1 and HTTP/2 has none, so a container that had
 * nothing to do for 4 s paid a new TCP and TLS handshake on its next request (a lone claim, mostly).
 */
export const IDLE_CONNECTION_MS = 50_000;

export interface SharedConnections {
  getName(): string;
  /** Sets the request's headers from the kubeconfig and its dispatcher to the shared pool. */
  applySecurityAuthentication(context: RequestContext): Promise<void>;
}

/** See the module comment. */
export function sharedConnections(kubeConfig: KubeConfig): SharedConnections {
  let pool: Promise<Dispatcher | undefined> | undefined;
  let firstFresh: Dispatcher | undefined;
  return {
    getName: () => 'kubeconfig',
    async applySecurityAuthentication(context: RequestContext): Promise<void> {
      pool ??= pooled(kubeConfig).catch(() => undefined);
      const shared = await pool;
      if (shared) {
        const options: RequestOptions = {};
        await kubeConfig.applyToHTTPSOptions(options);
        // As client-node orders them: basic auth first, a token's header over it.
        if (options.auth) context.setHeaderParam('Authorization', `Basic ${Buffer.from(options.auth).toString('base64')}`);
        for (const [name, value] of Object.entries(options.headers ?? {})) context.setHeaderParam(name, String(value));
        context.setDispatcher(shared);
        return;
      }
      await kubeConfig.applySecurityAuthentication(context);
      const fresh = context.getDispatcher();
      if (!fresh) return; // plain http: the global dispatcher keeps its connections alive
      firstFresh ??= fresh;
      if (fresh === firstFresh) return;
      void fresh.close().catch(() => {});
      context.setDispatcher(firstFresh);
    },
  };
}

/** An `Agent` whose TLS connections share one secure context; undefined where client-node would not use one. */
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
  return new Agent({ connect: { ...connect, secureContext }, keepAliveTimeout: IDLE_CONNECTION_MS }) as unknown as Dispatcher;
}
