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
 * Like `fetch` it asks for gzip (`Accept-Encoding: gzip`, unless the caller set an encoding) and
 * decompresses a gzipped answer: the API server compresses only large ones (a big LIST), so a single
 * object costs nothing more, and a LIST from a Lambda across the network is a fraction of the bytes.
 * Unlike `fetch` it follows no redirect (an API server answers in place; a 3xx reaches the caller as a
 * non-2xx status, as any other). A body that is not a string (form data, URL parameters: no call of ours
 * sends one) goes through client-node's default library.
 *
 * @example
 * createConfiguration({ baseServer, authMethods: { default: sharedConnections(kubeConfig) }, httpApi: DISPATCHER_HTTP });
 */
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { IsomorphicFetchHttpLibrary, ResponseContext, wrapHttpLibrary, type HttpLibrary, type RequestContext, type ResponseBody } from '@kubernetes/client-node';
import { getGlobalDispatcher, type Dispatcher } from 'undici';
import { decodeBody, isGzipped, joinHeaders } from '../runtime/undici-answer.ts';

const FETCH = new IsomorphicFetchHttpLibrary();

/** Sends one request through its dispatcher (or undici's global one); see the module comment. */
export async function sendThroughDispatcher(request: RequestContext): Promise<ResponseContext> {
  const body = request.getBody();
  if (body !== undefined && typeof body !== 'string') return FETCH.send(request).toPromise();
  const url = new URL(request.getUrl());
  const asked = request.getHeaders();
  const headers = Object.keys(asked).some((name) => name.toLowerCase() === 'accept-encoding') ? asked : { ...asked, 'Accept-Encoding': 'gzip' };
  const dispatcher = (request.getDispatcher() as Dispatcher | undefined) ?? getGlobalDispatcher();
  const response = await dispatcher.request({
    origin: url.origin,
    path: url.pathname + url.search,
    method: request.getHttpMethod() as Dispatcher.HttpMethod,
    headers,
    body,
    signal: request.getSignal(),
  });
  const answered = joinHeaders(response.headers);
  return new ResponseContext(response.statusCode, answered, onceReadBody(response.body, answered));
}

/** client-node's `HttpLibrary` over {@link sendThroughDispatcher}. */
export const DISPATCHER_HTTP: HttpLibrary = wrapHttpLibrary({ send: sendThroughDispatcher });

/**
 * A response body as client-node reads it: as text, as bytes, or as a web stream, whichever is asked first;
 * decompressed when the server gzipped it.
 */
function onceReadBody(body: Dispatcher.ResponseData['body'], headers: Record<string, string>): ResponseBody {
  let bytes: Promise<Buffer> | undefined;
  const binary = () => (bytes ??= body.arrayBuffer().then((data) => decodeBody(data, headers)));
  return {
    binary,
    text: async () => (await binary()).toString('utf8'),
    stream: () => Readable.toWeb(isGzipped(headers) ? pipeline(body, createGunzip(), () => {}) : body) as unknown as ReadableStream<Uint8Array>,
  };
}
