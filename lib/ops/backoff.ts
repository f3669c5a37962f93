/**
 * Keys in backoff, and retrying one now.
 *
 * A backoff record (lib/state/backoff.ts) is in one of four states:
 * - `given-up`: the controller's failure threshold was reached (`givenUp`); nothing retries it until the
 *   object changes, a resync source requeues it, or an operator does (`claimflow retry`);
 * - `parked`: the wait was longer than a message may stay hidden; the resync function re-enqueues the key at
 *   `dueAt`;
 * - `backing-off`: the message is hidden until `nextAttemptAt`;
 * - `due`: `nextAttemptAt` has passed; the next delivery or event reconciles it.
 *
 * {@link retryKey} makes the record due now (`nextAttemptAt` and, if parked, `dueAt` = now, so a lost send
 * still leaves the key to the resync function) and then sends a REQUEUE to the controller's queue, as the
 * resync function does; a given-up record is left as it is (a REQUEUE gets its one attempt anyway). A
 * reminder (a record scoped by a deleted claim's UID, `claimflow backoff` marks it) is retried by its scope:
 * its own record is made due and the REQUEUE carries that UID, as the resync function's send of it does.
 *
 * @example
 * const outcome = await retryKey({ doc, sqs, table, queueUrl }, { controller: 'binder', cluster: 'prod',
 *   kind: 'PersistentVolumeClaim', key: 'default/data' });
 * await waitForRetry({ doc, table }, outcome, { timeoutMs: 60_000 }); // 'reconciled' | 'failed' | 'pending'
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MESSAGE_VERSION, messageAttributes, messageDeduplicationId, messageGroupId, type ClusterEvent, type WatchedKind } from '../runtime/message.ts';
import { backoffIdPk, type BackoffId, type BackoffRecord } from '../state/backoff.ts';
import type { DocumentClient } from '../state/client.ts';
import { backoffPk } from '../state/schema.ts';

export type KeyState = 'given-up' | 'parked' | 'backing-off' | 'due';

/** The state of a record at `now` (see the module comment). */
export function keyState(record: BackoffRecord, now: number): KeyState {
  if (record.givenUp) return 'given-up';
  if (record.dueAt !== undefined) return 'parked';
  if (record.nextAttemptAt > now) return 'backing-off';
  return 'due';
}

/** A record as the CLI lists it. */
export interface BackoffEntry {
  controller: string;
  cluster: string;
  kind: string;
  key: string;
  state: KeyState;
  failures: number;
  /** Epoch ms: when the key is retried (parked: `dueAt`; given up: never, `null`). */
  nextAttemptAt: number | null;
  lastError: string | null;
  updatedAt: number;
  /**
   * A second stream of the key, not the runtime's (lib/state/backoff.ts `BackoffId.scope`): the provisioner's
   * reminder to finish a deleted claim of the name holds that claim's UID here. `null` for the key's own.
   */
  scope: string | null;
}

const STATE_ORDER: Record<KeyState, number> = { 'given-up': 0, parked: 1, 'backing-off': 2, due: 3 };

/** Records as entries, given-up first, then by next attempt. */
export function backoffEntries(records: readonly BackoffRecord[], now: number, filter: { controller?: string; cluster?: string; state?: KeyState } = {}): BackoffEntry[] {
  return records
    .map((r): BackoffEntry => {
      const state = keyState(r, now);
      return {
        controller: r.controller,
        cluster: r.cluster,
        kind: r.kind,
        key: r.key,
        state,
        failures: Number(r.failures ?? 0),
        nextAttemptAt: state === 'given-up' ? null : state === 'parked' ? Number(r.dueAt) : Number(r.nextAttemptAt),
        lastError: r.lastError ?? null,
        updatedAt: Number(r.updatedAt ?? 0),
        scope: scopeOf(r),
      };
    })
    .filter((e) => (!filter.controller || e.controller === filter.controller) && (!filter.cluster || e.cluster === filter.cluster) && (!filter.state || e.state === filter.state))
    .sort((a, b) => STATE_ORDER[a.state] - STATE_ORDER[b.state] || (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0) || a.key.localeCompare(b.key));
}

/** The scope a record's key carries past the key's own (`<pk>#<scope>`), or null. */
function scopeOf(r: BackoffRecord): string | null {
  const own = backoffPk(r.controller, r.cluster, r.kind, r.key);
  return typeof r.pk === 'string' && r.pk.startsWith(`${own}#`) ? r.pk.slice(own.length + 1) : null;
}

export interface RetryDeps {
  doc: DocumentClient;
  sqs: SQSClient;
  /** Control table. */
  table: string;
  /** The controller's queue. */
  queueUrl: string;
  now?: () => number;
}

export interface RetryOutcome {
  id: BackoffId;
  /** The record before the retry (undefined: the key had none). */
  before: BackoffRecord | undefined;
  /** The record was made due now (false: none, or given up). */
  madeDue: boolean;
  event: ClusterEvent;
  messageId: string | undefined;
  /** Epoch ms of the retry. */
  at: number;
}

const isConditionFailure = (error: unknown): boolean => (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

/**
 * Makes the key's record due and sends a REQUEUE (see the module comment). With `id.scope` (a reminder's
 * UID, as `claimflow backoff` lists it), the reminder's record instead, and the REQUEUE names that UID.
 */
export async function retryKey(deps: RetryDeps, id: BackoffId): Promise<RetryOutcome> {
  const now = deps.now ?? Date.now;
  const pk = backoffIdPk(id);
  const read = async () => (await deps.doc.send(new GetCommand({ TableName: deps.table, Key: { pk }, ConsistentRead: true }))).Item as BackoffRecord | undefined;
  let before = await read();
  let madeDue = false;
  const at = now();
  for (let attempt = 0; attempt < 5 && before && !before.givenUp; attempt++) {
    try {
      const parked = before.dueAt !== undefined;
      await deps.doc.send(
        new UpdateCommand({
          TableName: deps.table,
          Key: { pk },
          UpdateExpression: parked ? 'SET nextAttemptAt = :now, dueAt = :now' : 'SET nextAttemptAt = :now',
          ConditionExpression: parked ? 'failures = :failures AND attribute_exists(dueAt)' : 'failures = :failures AND attribute_not_exists(dueAt)',
          ExpressionAttributeValues: { ':now': at, ':failures': before.failures },
        }),
      );
      madeDue = true;
      break;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      before = await read(); // it changed (or went) under us: decide again
    }
  }
  const event: ClusterEvent = {
    v: MESSAGE_VERSION,
    cluster: id.cluster,
    kind: id.kind as WatchedKind,
    type: 'REQUEUE',
    key: id.key,
    uid: id.scope ?? before?.uid ?? '',
    resourceVersion: before?.resourceVersion ?? '0',
    observedAt: new Date(at).toISOString(),
    controller: id.controller,
  };
  const sent = await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.queueUrl,
      MessageBody: JSON.stringify(event),
      MessageGroupId: messageGroupId(event.cluster, event.kind, event.key),
      MessageDeduplicationId: messageDeduplicationId(event, `cli-${at}`),
      MessageAttributes: messageAttributes(event),
    }),
  );
  return { id, before, madeDue, event, messageId: sent.MessageId, at };
}

export type RetryResult =
  /** The record is gone (success: `Forget`) or restarted at no failures (the reconcile asked to look again later). */
  | { outcome: 'reconciled'; record?: BackoffRecord }
  /** One more failure was counted. */
  | { outcome: 'failed'; record: BackoffRecord }
  /** Nothing observable happened before the timeout (or there was no record to watch). */
  | { outcome: 'pending'; record?: BackoffRecord };

/** Watches the key's record after {@link retryKey} until the retry's outcome shows, or `timeoutMs` passes. */
export async function waitForRetry(
  deps: { doc: DocumentClient; table: string },
  retry: RetryOutcome,
  options: { timeoutMs: number; pollMs?: number },
): Promise<RetryResult> {
  const pk = backoffIdPk(retry.id);
  const deadline = Date.now() + options.timeoutMs;
  let record: BackoffRecord | undefined;
  if (!retry.before) return { outcome: 'pending' };
  for (;;) {
    record = (await deps.doc.send(new GetCommand({ TableName: deps.table, Key: { pk }, ConsistentRead: true }))).Item as BackoffRecord | undefined;
    if (!record) return { outcome: 'reconciled' };
    if (record.failures < retry.before.failures) return { outcome: 'reconciled', record };
    if (record.failures > retry.before.failures) return { outcome: 'failed', record };
    if (Date.now() >= deadline) return { outcome: 'pending', record };
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
  }
}
