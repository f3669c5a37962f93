/**
 * Calls per `METHOD /route` for benchmarks (routes are templates, e.g.
 * `GET /v2/namespaces/{namespaceID}/volumes`, so counts add up across objects).
 */
export class RequestCounter {
  #counts = new Map<string, number>();

  /** Count one call. */
  count(method: string, route: string): void {
    const key = `${method} ${route}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** Calls per `METHOD /route`, sorted by key. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.#counts.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** Calls of one `METHOD /route` (0 when none). */
  get(method: string, route: string): number {
    return this.#counts.get(`${method} ${route}`) ?? 0;
  }

  /** All calls counted. */
  total(): number {
    let sum = 0;
    for (const n of this.#counts.values()) sum += n;
    return sum;
  }

  /** Forget every count. */
  reset(): void {
    this.#counts.clear();
  }
}
