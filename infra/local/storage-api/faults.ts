/**
 * Fault injection for the embedded control plane: the next N requests matching a method and a path
 * pattern fail with a status, are answered late, answer 412 (stale version), or lose their connection.
 * Driven programmatically (`handle.faults`) or over HTTP (`/_storage/faults`).
 */

/** One fault rule. */
export interface FaultRule {
  /** HTTP method to match (case-insensitive); any when absent or `*`. */
  method?: string;
  /**
   * Path to match, without the query: exact, or a pattern where `*` matches one segment and a trailing
   * `**` matches the rest (e.g. `/v2/namespaces/*\/volumes/**`).
   */
  path: string;
  /** How many matching requests it applies to (default 1; `Infinity` or, over HTTP, `-1` = until cleared). */
  times?: number;
  /** Answer with this status and body `{"error": message}`. */
  status?: number;
  /** Error text (default: a text naming the fault). */
  message?: string;
  /** Delay before the request is handled (alone: a slow success; with a status: a slow failure). */
  latencyMs?: number;
  /** Answer 412 Precondition Failed, as for a stale `version`. */
  stale?: boolean;
  /** Destroy the connection without answering (a transport error for the client). */
  drop?: boolean;
  /** Handle the request (its effects happen), then destroy the connection instead of answering. */
  loseResponse?: boolean;
}

/** What to do with a matched request. */
export interface FaultAction {
  latencyMs: number;
  /** `undefined`: no error, handle normally after the latency. */
  failure?: { status: number; message: string } | 'drop' | 'lose-response';
}

interface ActiveRule extends FaultRule {
  remaining: number;
  matcher: RegExp;
}

/**
 * The active fault rules, consumed in the order added.
 *
 * @example
 * handle.faults.add({ method: 'GET', path: '/v2/namespaces', status: 503, times: 2 });
 * handle.faults.add({ method: 'PUT', path: '/v2/nodes/*', stale: true });
 */
export class FaultInjector {
  #rules: ActiveRule[] = [];
  #fired = 0;

  /** Faults applied so far. */
  get fired(): number {
    return this.#fired;
  }

  /** Add a rule. */
  add(rule: FaultRule): void {
    if (typeof rule.path !== 'string' || !rule.path.startsWith('/')) throw new TypeError('fault rule needs a path starting with /');
    const times = rule.times === undefined ? 1 : rule.times < 0 ? Infinity : rule.times;
    if (!(times > 0)) throw new TypeError('fault rule times must be positive (or -1 for unlimited)');
    if (rule.status !== undefined && (!Number.isInteger(rule.status) || rule.status < 100 || rule.status > 599)) {
      throw new TypeError('fault rule status must be an HTTP status');
    }
    this.#rules.push({ ...rule, remaining: times, matcher: compilePattern(rule.path) });
  }

  /** Remove every rule. */
  clear(): void {
    this.#rules = [];
  }

  /** The rules still active, with how many times each has left. */
  list(): Array<FaultRule & { remaining: number }> {
    return this.#rules.map(({ matcher: _matcher, ...rule }) => ({ ...rule }));
  }

  /** The action for a request, consuming one use of the first matching rule; `undefined` if none. */
  take(method: string, path: string): FaultAction | undefined {
    const index = this.#rules.findIndex(
      (r) => (r.method === undefined || r.method === '*' || r.method.toUpperCase() === method.toUpperCase()) && r.matcher.test(path),
    );
    if (index < 0) return undefined;
    const rule = this.#rules[index];
    rule.remaining -= 1;
    if (rule.remaining <= 0) this.#rules.splice(index, 1);
    this.#fired++;
    const latencyMs = rule.latencyMs ?? 0;
    if (rule.drop === true) return { latencyMs, failure: 'drop' };
    if (rule.loseResponse === true) return { latencyMs, failure: 'lose-response' };
    if (rule.stale === true) return { latencyMs, failure: { status: 412, message: rule.message ?? 'stale write (injected fault)' } };
    if (rule.status !== undefined) return { latencyMs, failure: { status: rule.status, message: rule.message ?? `injected fault ${rule.status}` } };
    return { latencyMs };
  }
}

function compilePattern(pattern: string): RegExp {
  const parts = pattern.split('/').map((segment, i, all) => {
    if (segment === '**' && i === all.length - 1) return '.*';
    if (segment === '*') return '[^/]+';
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${parts.join('/')}$`);
}
