/**
 * One SQS record on its way through the gates (gates/*.ts): what each gate learned about it, and what a
 * gate hands back when the record stops there.
 *
 * A gate is `(job, next) => outcome`: it either answers for the record (a wait, a poison message, a
 * skipped kind) or calls `next()` and may look at what came back (the budget gate turns a budget timeout
 * into a short wait). {@link runGates} nests them in order; `settle` acts on the final outcome.
 *
 * @example
 * const outcome = await runGates([deadline(rt), parse(rt), reconcile(rt)], job);
 * await settle(rt, job, outcome);
 */
import type { Context, SQSRecord } from 'aws-lambda';
import type { BackoffId, BackoffRecord } from '../state/backoff.ts';
import type { ClusterEvent } from './message.ts';
import type { ReconcileRequest, ReconcileResult } from './reconcile.ts';
import type { Log } from './observability.ts';

/** Per-invocation bookkeeping shared by the batch's records. */
export interface BatchState {
  /** Records the gates ran (the rest of the failures were skipped by the FIFO processor). */
  processed: Set<string>;
  /** Message group → the visibility (s) a deferred record of it got. */
  deferredGroups: Map<string, number>;
}

/** What the parse gate learned: the event, the request and the key's backoff id. */
export interface ParsedEvent {
  event: ClusterEvent;
  request: ReconcileRequest;
  id: BackoffId;
}

export interface Job {
  record: SQSRecord;
  /** Lambda's context; undefined outside Lambda (tests, scripts). */
  lambdaContext: Context | undefined;
  batch: BatchState;
  /** The function's logger; after parsing, one that adds the record's keys to each entry. */
  log: Log;
  /** Epoch ms by which budget waits must end (deadline gate); undefined outside Lambda. */
  deadline?: number;
  /** Set by the parse gate. */
  parsed?: ParsedEvent;
  /** The key's backoff record before this attempt (backoff gate): `null` when it has none. */
  known?: BackoffRecord | null;
}

/** How a record ends. */
export type Outcome =
  /** Processed: nothing more to do (also a poison message, an ignored kind, an own write). */
  | { kind: 'done' }
  /** Look again after `delayMs`: visibility or parking (wait.ts). */
  | { kind: 'wait'; delayMs: number; why: string }
  /** Keep the message invisible for `visibilityS` without counting a failure. */
  | { kind: 'defer'; visibilityS: number; why: string }
  | { kind: 'reconciled'; result: ReconcileResult }
  | { kind: 'failed'; error: unknown };

export type Gate = (job: Job, next: () => Promise<Outcome>) => Promise<Outcome>;

/** Runs `gates` nested in order: each one decides whether the next runs. */
export function runGates(gates: readonly Gate[], job: Job): Promise<Outcome> {
  const at = (index: number): Promise<Outcome> =>
    index < gates.length ? gates[index](job, () => at(index + 1)) : Promise.resolve({ kind: 'done' });
  return at(0);
}

/** The parse gate's result; throws when a gate that needs it runs before it. */
export function parsedOf(job: Job): ParsedEvent {
  if (!job.parsed) throw new Error('gate order: this gate needs the parse gate before it');
  return job.parsed;
}

/** `error` or the first of its causes that is a `type`. */
export function findError<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof type) return e;
  }
  return undefined;
}

/** How soon a record deferred for lack of Lambda time or API budget is retried. */
export const SOON_MS = 1000;
