/**
 * A tiny route table: `METHOD /path/{param}` templates matched segment by segment.
 */
import type { Session } from './auth.ts';

/** What a handler gets. */
export interface RouteContext {
  params: Record<string, string>;
  query: URLSearchParams;
  /** Parsed JSON body (`undefined` when empty). */
  body: unknown;
  /** The caller's session (API routes that require authentication). */
  session?: Session;
}

/** What a handler returns: status, optional JSON body and headers. */
export interface RouteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** One route. */
export interface Route {
  method: string;
  /** e.g. `/v2/namespaces/{namespaceID}/volumes`. */
  template: string;
  /** Skip authentication (login only). */
  public?: boolean;
  handle(ctx: RouteContext): Promise<RouteResult> | RouteResult;
}

/** A matched route and its path parameters. */
export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

/** Route table. */
export class Router {
  #routes: Array<{ route: Route; segments: string[] }> = [];

  constructor(routes: Route[]) {
    for (const route of routes) this.#routes.push({ route, segments: route.template.split('/') });
  }

  /**
   * The route for `method path`: a match, `'method-not-allowed'` when the path exists under another
   * method, or `undefined`.
   */
  match(method: string, path: string): RouteMatch | 'method-not-allowed' | undefined {
    const parts = path.split('/');
    let pathMatched = false;
    for (const { route, segments } of this.#routes) {
      const params = matchSegments(segments, parts);
      if (params === undefined) continue;
      if (route.method === method) return { route, params };
      pathMatched = true;
    }
    return pathMatched ? 'method-not-allowed' : undefined;
  }
}

function matchSegments(template: string[], parts: string[]): Record<string, string> | undefined {
  if (template.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < template.length; i++) {
    const t = template[i];
    if (t.startsWith('{') && t.endsWith('}')) {
      if (parts[i] === '') return undefined;
      try {
        params[t.slice(1, -1)] = decodeURIComponent(parts[i]);
      } catch {
        return undefined;
      }
    } else if (t !== parts[i]) {
      return undefined;
    }
  }
  return params;
}
