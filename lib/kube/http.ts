/**
 * The HTTP library the generated API clients send through: undici's dispatcher API instead of its `fetch`.
 *
 * client-node's default library sends each request with undici's `fetch`, which builds a WHATWG `Request`,
 * `Headers` and `Response` around it and hands the body over as a web stream: on a functions' container
 * that is most of what a Kubernetes request costs the client once its connection is pooled. Here the same
 * request (URL, method, headers, string body, abort signal, and the dispatcher `sharedConnections` set) goes
 * through `dispatcher.request`, and the response reaches the generated code as client-node's own
 * `ResponseContext`: status, lower-case headers (repeated ones joined with `, `, as `fetch` joins them) and
 * a body read once.
 *
 * Unlike `fetch` it follows no redirect (an API server answers in place; a 3xx reaches the caller as a
 * non-2xx status, as any other) and asks for no compression (`fetch` sends `Accept-Encoding: gzip`; the API
 * server compresses only large answers, and the functions read single objects and selected lists). A body
 * that is not a string (form data, URL parameters: no call of ours sends one) goes through client-node's
 * default library.
 *
 * @example
 * createConfiguration({ baseServer, authMethods: { default: sharedConnections(kubeConfig) }, httpApi: DISPATCHER_HTTP });
 */
import { Readable } from 'node:stream';
import { IsomorphicFetchHttpLibrary, ResponseContext, wrapHttpLibrary, type HttpLibrary, type RequestContext, type ResponseBody } from '@kubernetes/client-node';
import { getGlobalDispatcher, type Dispatcher } from 'undici';

const FETCH = new IsomorphicFetchHttpLibrary();

/** Sends one request through its dispatcher (or undici's global one); see the module comment. */
export async function sendThroughDispatcher(request: RequestContext): Promise<ResponseContext> {
  const body = request.getBody();
  if (body !== undefined && typeof body !== 'string') return FETCH.send(request).toPromise();
  const url = new URL(request.getUrl());
  const dispatcher = (request.getDispatcher() as Dispatcher | undefined) ?? getGlobalDispatcher();
  const response = await dispatcher.request({
    origin: url.origin,
    path: url.pathname + url.search,
    method: request.getHttpMethod() as Dispatcher.HttpMethod,
    headers: request.getHeaders(),
    body,
    signal: request.getSignal(),
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return new ResponseContext(response.statusCode, headers, onceReadBody(response.body));
}

/** client-node's `HttpLibrary` over {@link sendThroughDispatcher}. */
export const DISPATCHER_HTTP: HttpLibrary = wrapHttpLibrary({ send: sendThroughDispatcher });

/** A response body as client-node reads it: as text, as bytes, or as a web stream, whichever is asked first. */
function onceReadBody(body: Dispatcher.ResponseData['body']): ResponseBody {
  let bytes: Promise<Buffer> | undefined;
  const binary = () => (bytes ??= body.arrayBuffer().then((data) => Buffer.from(data)));
  return {
    binary,
    text: async () => (await binary()).toString('utf8'),
    stream: () => Readable.toWeb(body) as unknown as ReadableStream<Uint8Array>,
  };
}
