/**
 * Test hooks: fault injection (the next N matching requests fail or are delayed) and request counting
 * per (verb, resource), so tests and benchmarks can assert how many API calls an operation made.
 */
import { statusForCode } from './errors.ts';
import type { StatusError } from './types.ts';

/** The API verbs as the emulator classifies requests. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export const VERBS: readonly Verb[] = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** One injected fault. */
export interface FaultSpec {
  verb: Verb;
  /** Resource plural, optionally `<plural>/status`. */
  resource: string;
  /** Only requests for this object name. */
  name?: string;
  /** How many matching requests are affected. */
  count: number;
  /** HTTP status to fail with; omit to only add latency. */
  status?: number;
  retryAfterSeconds?: number;
  latencyMs?: number;
  message?: string;
}

/** What a matched fault does to one request. */
export interface FaultOutcome {
  latencyMs: number;
  error?: StatusError;
}

/** Holds injected faults; each matching request consumes one count. */
export class FaultInjector {
  #faults: FaultSpec[] = [];

  /** Injects a fault; validates its shape (throws TypeError). */
  inject(fault: FaultSpec): void {
    if (!VERBS.includes(fault.verb)) throw new TypeError(`unknown verb ${String(fault.verb)}`);
    if (typeof fault.resource !== 'string' || !fault.resource) throw new TypeError('resource is required');
    if (!Number.isInteger(fault.count) || fault.count < 1) throw new TypeError('count must be a positive integer');
    if (fault.status !== undefined && (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599)) {
      throw new TypeError('status must be an HTTP error code');
    }
    if (fault.status === undefined && !fault.latencyMs) throw new TypeError('a fault needs a status or latencyMs');
    this.#faults.push({ ...fault });
  }

  /** Removes every pending fault. */
  clear(): void {
    this.#faults = [];
  }

  /** Pending faults (copies). */
  pending(): FaultSpec[] {
    return this.#faults.map((f) => ({ ...f }));
  }

  /** Consumes the first fault matching a request, if any. */
  take(verb: Verb, resource: string, name?: string): FaultOutcome | undefined {
    const i = this.#faults.findIndex((f) => f.verb === verb && f.resource === resource && (f.name === undefined || f.name === name));
    if (i < 0) return undefined;
    const f = this.#faults[i];
    if (--f.count <= 0) this.#faults.splice(i, 1);
    return {
      latencyMs: f.latencyMs ?? 0,
      ...(f.status !== undefined ? { error: statusForCode(f.status, f.message, f.retryAfterSeconds) } : {}),
    };
  }
}

/** Counts requests per `verb resource` (resource = plural or `<plural>/status`). */
export class RequestCounter {
  #counts = new Map<string, number>();

  record(verb: Verb, resource: string): void {
    const key = `${verb} ${resource}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  count(verb: Verb, resource: string): number {
    return this.#counts.get(`${verb} ${resource}`) ?? 0;
  }

  /** `{ "update persistentvolumes/status": 3, ... }`. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.#counts);
  }

  reset(): void {
    this.#counts.clear();
  }
}
