/**
 * Dead-letter queues: what sits in one and why, and a redrive back to the controller's queue.
 *
 * **Why.** A message reaches a DLQ in one of two ways:
 * - the runtime sent it there as a *poison message* (its body is not a valid cluster event): it carries
 *   the `poisonReason` message attribute (plus `controller` and `sourceMessageId`, the id in the runtime's
 *   log line);
 * - SQS moved it after `maxReceiveCount` receives: its invocations kept crashing or timing out. SQS records
 *   no reason — the function's logs around the message's receives do.
 *
 * **Looking** ({@link peekDlq}) receives messages with a short visibility timeout and releases them at
 * once (visibility 0). A DLQ has no redrive policy, so the extra receives cost nothing; a FIFO group's later
 * messages stay hidden while its earlier ones are held, so a listing can show fewer than the queue holds.
 *
 * **Redrive** ({@link redrive}):
 * - `move-task`: SQS's own `StartMessageMoveTask` (DLQ → the controller's queue), followed with
 *   `ListMessageMoveTasks` until it ends. AWS supports it for FIFO queues; fauxqs does not;
 * - `copy`: receive → `SendMessageBatch` to the queue → `DeleteMessageBatch` from the DLQ, ten at a time,
 *   each group in order. The copy keeps the message's body, group id and attributes (minus the poison
 *   ones) and uses the DLQ message's id as its deduplication id — for a message SQS moved, exactly the
 *   deduplication id SQS itself gave it in the DLQ. So an interrupted redrive that is run again within
 *   SQS's 5-minute deduplication window sends nothing twice, and the id can never match a message the
 *   queue saw before (reusing the original id could, and SQS would then drop the copy silently).
 *   A message is deleted from the DLQ only after the queue accepted it: nothing is lost;
 * - `auto` (default): `move-task` where the endpoint has it, else `copy`.
 *
 * @example
 * const { messages } = await peekDlq(sqs, dlqUrl);
 * messages[0].reason; // 'body is not JSON: …'
 * await redrive(sqs, { dlq, queue, onProgress: (moved, total) => {} }); // { method: 'copy', moved: 3 }
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  StartMessageMoveTaskCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { queueArn, type QueueRef } from './target.ts';

/** The message attributes the runtime puts on a poison message. */
export const POISON_ATTRIBUTES = ['poisonReason', 'controller', 'sourceMessageId'] as const;

/** Why a message reached the DLQ, when SQS moved it (no attribute says). */
export const MAX_RECEIVE_REASON = 'no reason recorded: SQS moved it after maxReceiveCount receives (its invocations crashed or timed out; see the function logs)';

export interface DlqMessage {
  messageId: string;
  body: string;
  /** Epoch ms (SQS `SentTimestamp`). */
  sentAt: number | null;
  groupId: string | null;
  deduplicationId: string | null;
  /** `poison` (the runtime gave a reason) or `max-receive-count` (SQS moved it; no reason recorded). */
  cause: 'poison' | 'max-receive-count';
  /** The `poisonReason`, or {@link MAX_RECEIVE_REASON}. */
  reason: string;
  /** The id the runtime logged it under (poison messages). */
  sourceMessageId: string | null;
  /** String message attributes. */
  attributes: Record<string, string>;
  /** What the body names, as far as it can be read. */
  event: { cluster?: string; kind?: string; key?: string; type?: string } | null;
}

/** Turns a received SQS message into a {@link DlqMessage}. */
export function describeMessage(message: Message): DlqMessage {
  const attributes = Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {}).flatMap(([name, value]) => (value.StringValue !== undefined ? [[name, value.StringValue]] : [])),
  );
  const system = message.Attributes ?? {};
  const poisonReason = attributes.poisonReason;
  let event: DlqMessage['event'] = null;
  try {
    const parsed = JSON.parse(message.Body ?? '') as Record<string, unknown>;
    if (parsed && typeof parsed === 'object') {
      const pick = (k: string) => (typeof parsed[k] === 'string' ? { [k]: parsed[k] as string } : {});
      event = { ...pick('cluster'), ...pick('kind'), ...pick('key'), ...pick('type') };
    }
  } catch {
    event = null;
  }
  return {
    messageId: message.MessageId ?? '',
    body: message.Body ?? '',
    sentAt: system.SentTimestamp ? Number(system.SentTimestamp) : null,
    groupId: system.MessageGroupId ?? null,
    deduplicationId: system.MessageDeduplicationId ?? null,
    cause: poisonReason !== undefined ? 'poison' : 'max-receive-count',
    reason: poisonReason ?? MAX_RECEIVE_REASON,
    sourceMessageId: attributes.sourceMessageId ?? null,
    attributes,
    event,
  };
}

/** Visible and in-flight message counts. */
export async function queueCounts(sqs: SQSClient, url: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const n = (name: 'ApproximateNumberOfMessages' | 'ApproximateNumberOfMessagesNotVisible' | 'ApproximateNumberOfMessagesDelayed') =>
    Number(out.Attributes?.[name] ?? 0) || 0;
  return { visible: n('ApproximateNumberOfMessages'), inFlight: n('ApproximateNumberOfMessagesNotVisible'), delayed: n('ApproximateNumberOfMessagesDelayed') };
}

const receive = (sqs: SQSClient, url: string, max: number, visibilityTimeout: number, waitSeconds: number) =>
  sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: Math.max(1, Math.min(10, max)),
      VisibilityTimeout: visibilityTimeout,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );

async function release(sqs: SQSClient, url: string, handles: readonly string[]): Promise<void> {
  for (let i = 0; i < handles.length; i += 10) {
    const batch = handles.slice(i, i + 10);
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: batch.map((handle, j) => ({ Id: String(j), ReceiptHandle: handle, VisibilityTimeout: 0 })),
      }),
    );
  }
}

export interface PeekOptions {
  /** Most messages to read (default 100). */
  max?: number;
  /** How long messages are held while being read (default 30 s); they are released at the end. */
  holdSeconds?: number;
  /** Long-poll wait per receive (default 1 s: short polls can miss messages on AWS). */
  waitSeconds?: number;
}

/** Reads up to `max` messages of a DLQ without removing any (see the module comment). */
export async function peekDlq(sqs: SQSClient, url: string, options: PeekOptions = {}): Promise<{ messages: DlqMessage[]; approximateTotal: number }> {
  const max = options.max ?? 100;
  const counts = await queueCounts(sqs, url);
  const seen = new Map<string, DlqMessage>();
  const handles: string[] = [];
  const held = counts.visible + counts.inFlight;
  try {
    // stop at what the queue held (no final empty long poll), or when a receive comes back empty
    while (seen.size < max && seen.size < held) {
      const out = await receive(sqs, url, max - seen.size, options.holdSeconds ?? 30, options.waitSeconds ?? 1);
      const messages = out.Messages ?? [];
      if (messages.length === 0) break;
      for (const m of messages) {
        if (m.ReceiptHandle) handles.push(m.ReceiptHandle);
        if (m.MessageId && !seen.has(m.MessageId)) seen.set(m.MessageId, describeMessage(m));
      }
    }
  } finally {
    await release(sqs, url, handles);
  }
  const messages = [...seen.values()].sort((a, b) => (a.sentAt ?? 0) - (b.sentAt ?? 0));
  return { messages, approximateTotal: Math.max(counts.visible + counts.inFlight, messages.length) };
}

export type RedriveMethod = 'auto' | 'move-task' | 'copy';

export interface RedriveOptions {
  dlq: QueueRef;
  queue: QueueRef;
  method?: RedriveMethod;
  /** Copy at most this many (copy only; implies `copy` under `auto`). */
  max?: number;
  /** Called as messages move: moved so far, and the total when known. */
  onProgress?: (moved: number, total: number | undefined) => void;
  /** Copy: how long a received message stays hidden while it is sent (default 60 s). */
  holdSeconds?: number;
  /** Move task: how often its status is read (default 1 s). */
  pollMs?: number;
}

export interface RedriveResult {
  method: 'move-task' | 'copy';
  moved: number;
  /** Messages the DLQ held when the redrive started (approximate). */
  total: number;
  /** Move task: its final status. */
  status?: string;
  /** Copy, method auto: why the move task was not used. */
  fallbackReason?: string;
}

/** A redrive that stopped with messages left in the DLQ (none lost). */
export class RedriveError extends Error {
  readonly moved: number;
  constructor(message: string, moved: number, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RedriveError';
    this.moved = moved;
  }
}

/** The endpoint does not implement the message move API (fauxqs, older emulators). */
export function isUnsupportedOperation(error: unknown): boolean {
  const e = error as { name?: string; Code?: string; message?: string; $metadata?: { httpStatusCode?: number } } | null;
  const name = `${e?.name ?? ''} ${e?.Code ?? ''}`;
  if (/InvalidAction|UnsupportedOperation|UnknownOperation|NotImplemented/i.test(name)) return true;
  return /unknown action|not (?:supported|implemented)/i.test(e?.message ?? '');
}

/** Moves every message of `dlq` back to `queue` (see the module comment). */
export async function redrive(sqs: SQSClient, options: RedriveOptions): Promise<RedriveResult> {
  const method = options.method ?? 'auto';
  const start = await queueCounts(sqs, options.dlq.url);
  const total = start.visible + start.inFlight;
  if (method === 'copy' || (method === 'auto' && options.max !== undefined)) return copyMessages(sqs, options, total);
  if (method === 'move-task' && options.max !== undefined) throw new RangeError('--max applies to the copy method only');
  const [sourceArn, destinationArn] = await Promise.all([queueArn(sqs, options.dlq), queueArn(sqs, options.queue)]);
  try {
    await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: sourceArn, DestinationArn: destinationArn }));
  } catch (error) {
    if (method === 'auto' && isUnsupportedOperation(error)) {
      const result = await copyMessages(sqs, options, total);
      return { ...result, fallbackReason: `StartMessageMoveTask not supported by the endpoint (${(error as Error).name})` };
    }
    throw error;
  }
  return followMoveTask(sqs, sourceArn, total, options);
}

async function followMoveTask(sqs: SQSClient, sourceArn: string, total: number, options: RedriveOptions): Promise<RedriveResult> {
  for (;;) {
    const out = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 1 }));
    const task = out.Results?.[0];
    const moved = Number(task?.ApproximateNumberOfMessagesMoved ?? 0);
    const toMove = task?.ApproximateNumberOfMessagesToMove !== undefined ? Number(task.ApproximateNumberOfMessagesToMove) : total;
    options.onProgress?.(moved, toMove);
    const status = task?.Status ?? 'UNKNOWN';
    if (status === 'COMPLETED') return { method: 'move-task', moved, total: toMove, status };
    if (status === 'FAILED' || status === 'CANCELLED' || status === 'UNKNOWN') {
      throw new RedriveError(`move task ${status.toLowerCase()}${task?.FailureReason ? `: ${task.FailureReason}` : ''} after ${moved} message(s); the rest are still in the DLQ`, moved);
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1000));
  }
}

/** Attributes carried to the queue: everything but the poison bookkeeping, plus where it came from. */
function carriedAttributes(message: Message): Record<string, MessageAttributeValue> {
  const out: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    if ((POISON_ATTRIBUTES as readonly string[]).includes(name) || name === 'redrivenFrom') continue;
    out[name] = {
      DataType: value.DataType,
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: value.BinaryValue } : {}),
    };
  }
  out.redrivenFrom = { DataType: 'String', StringValue: message.MessageId ?? '' };
  return out;
}

async function copyMessages(sqs: SQSClient, options: RedriveOptions, total: number): Promise<RedriveResult> {
  const limit = options.max ?? Infinity;
  let moved = 0;
  options.onProgress?.(0, total);
  while (moved < limit) {
    const out = await receive(sqs, options.dlq.url, Math.min(10, limit - moved), options.holdSeconds ?? 60, 1);
    const messages = out.Messages ?? [];
    if (messages.length === 0) break;
    const sent = await sqs
      .send(
        new SendMessageBatchCommand({
          QueueUrl: options.queue.url,
          Entries: messages.map((m, i) => ({
            Id: String(i),
            MessageBody: m.Body ?? '',
            MessageGroupId: m.Attributes?.MessageGroupId ?? 'redrive',
            MessageDeduplicationId: m.MessageId,
            MessageAttributes: carriedAttributes(m),
          })),
        }),
      )
      .catch(async (error: unknown) => {
        await release(sqs, options.dlq.url, messages.flatMap((m) => (m.ReceiptHandle ? [m.ReceiptHandle] : []))).catch(() => {});
        throw new RedriveError(`sending to ${options.queue.name} failed after ${moved} message(s): ${(error as Error).message}; the rest are still in the DLQ`, moved, { cause: error });
      });
    const accepted = new Set((sent.Successful ?? []).map((s) => s.Id));
    const done = messages.filter((_, i) => accepted.has(String(i)));
    const left = messages.filter((_, i) => !accepted.has(String(i)));
    try {
      if (done.length) {
        const deleted = await sqs.send(
          new DeleteMessageBatchCommand({ QueueUrl: options.dlq.url, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }),
        );
        if (deleted.Failed?.length) throw new Error(deleted.Failed.map((f) => `${f.Code}: ${f.Message ?? ''}`).join('; '));
      }
    } catch (error) {
      await release(sqs, options.dlq.url, messages.flatMap((m) => (m.ReceiptHandle ? [m.ReceiptHandle] : []))).catch(() => {});
      throw new RedriveError(
        `deleting redriven messages from ${options.dlq.name} failed after ${moved} message(s): ${(error as Error).message}; ` +
          'run the redrive again within 5 minutes: the copies already sent are deduplicated',
        moved,
        { cause: error },
      );
    }
    moved += done.length;
    options.onProgress?.(moved, Math.max(total, moved));
    if (left.length) {
      await release(sqs, options.dlq.url, left.flatMap((m) => (m.ReceiptHandle ? [m.ReceiptHandle] : []))).catch(() => {});
      const reasons = (sent.Failed ?? []).map((f) => `${f.Code}: ${f.Message ?? ''}`).join('; ');
      throw new RedriveError(`${left.length} message(s) not accepted by ${options.queue.name} (${reasons}); they are still in the DLQ`, moved);
    }
  }
  return { method: 'copy', moved, total: Math.max(total, moved) };
}
