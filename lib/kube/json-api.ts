/**
 * Kubernetes requests whose objects cross as the JSON the API server speaks, through a generated client's
 * own configuration: its server, authentication, HTTP library and middleware (the request budget), so a
 * request here is sent, charged and refused as the generated client's is.
 *
 * The generated methods walk every object through client-node's model serializer on the way out and its
 * deserializer on the way back, and claimflow's controllers, which keep objects as plain JSON, then copied
 * each answer back to JSON: three walks of every object a sync writes. This sends `JSON.stringify(body)`
 * and hands back `JSON.parse` of the answer, which also changes two things, both toward the server's own
 * objects: fields client-node's models do not know (newer API fields) are sent and returned instead of
 * dropped (a PUT through the models would clear them on the server), and timestamps come back as the server
 * wrote them (`…:05Z`) instead of re-rendered from a `Date` (`…:05.000Z`), so a controller's write-back now
 * holds the very text the forwarder's watch brings. Failures are the generated code's `ApiException`s (401
 * without a body, other statuses with the server's Status text as their body), so lib/kube/errors.ts reads
 * them alike. Answers are parsed as JSON whatever their content type (the API server answers JSON to
 * `Accept: application/json`); middleware runs in order before the request and in reverse after it.
 *
 * Built like any generated API, from a client's configuration: `kube.api(cluster, KubeJsonApi)`
 * (lib/kube/client.ts) gives one per cluster with the cluster's request budget.
 *
 * @example
 * const json = await kube.api('dev', KubeJsonApi);
 * const pv = await json.put<PersistentVolume>(`/api/v1/persistentvolumes/${name}`, volume);
 */
import { ApiException, HttpMethod, type Configuration, type RequestContext, type ResponseContext } from '@kubernetes/client-node';

/** The path of a PersistentVolume. */
export const volumePath = (name: string): string => `/api/v1/persistentvolumes/${encodeURIComponent(name)}`;
/** The path of a PersistentVolumeClaim. */
export const claimPath = (namespace: string, name: string): string => `/api/v1/namespaces/${encodeURIComponent(namespace)}/persistentvolumeclaims/${encodeURIComponent(name)}`;

export class KubeJsonApi {
  /** What every request is built and sent with (read at each request, as the generated clients read theirs). */
  readonly configuration: Configuration;

  constructor(configuration: Configuration) {
    this.configuration = configuration;
  }

  /** GET `path`; the object the server answered. */
  get<T>(path: string, query?: Record<string, string>): Promise<T> {
    return this.#send<T>(HttpMethod.GET, path, undefined, query);
  }

  /** PUT `body` at `path` (a replace, or a status replace at `…/status`); the object the server answered. */
  put<T>(path: string, body: unknown): Promise<T> {
    return this.#send<T>(HttpMethod.PUT, path, body);
  }

  /** POST `body` to `path` (a create); the object the server answered. */
  post<T>(path: string, body: unknown): Promise<T> {
    return this.#send<T>(HttpMethod.POST, path, body);
  }

  /**
   * PATCH `path` with `body` as `contentType` (`application/merge-patch+json`,
   * `application/strategic-merge-patch+json`, …); the object the server answered.
   */
  patch<T>(path: string, body: unknown, contentType: string): Promise<T> {
    return this.#send<T>(HttpMethod.PATCH, path, body, undefined, contentType);
  }

  /** DELETE `path`, with `body` (DeleteOptions: preconditions, propagation) when given; what the server answered. */
  delete<T>(path: string, body?: unknown): Promise<T> {
    return this.#send<T>(HttpMethod.DELETE, path, body);
  }

  async #send<T>(method: HttpMethod, path: string, body: unknown, query?: Record<string, string>, contentType = 'application/json'): Promise<T> {
    const config = this.configuration;
    let request: RequestContext = config.baseServer.makeRequestContext(path, method);
    request.setHeaderParam('Accept', 'application/json, */*;q=0.8');
    for (const [name, value] of Object.entries(query ?? {})) request.setQueryParam(name, value);
    if (body !== undefined) {
      request.setHeaderParam('Content-Type', contentType);
      request.setBody(JSON.stringify(body));
    }
    // As the generated request factories: the named scheme first, then the default one.
    await config.authMethods.BearerToken?.applySecurityAuthentication(request);
    await config.authMethods.default?.applySecurityAuthentication(request);
    for (const middleware of config.middleware) request = await middleware.pre(request).toPromise();
    let response: ResponseContext = await config.httpApi.send(request).toPromise();
    for (const middleware of [...config.middleware].reverse()) response = await middleware.post(response).toPromise();
    const status = response.httpStatusCode;
    if (status === 401) throw new ApiException(status, 'Unauthorized', undefined, response.headers);
    if (status >= 200 && status <= 299) return JSON.parse(await response.body.text()) as T;
    throw new ApiException(status, 'Unknown API Status Code!', await response.getBodyAsAny(), response.headers);
  }
}
