/**
 * The SQS event source mapping, as Lambda runs it, for the local stack.
 *
 * A poller long-polls the queue (`ReceiveMessage`, all system and message attributes, up to the
 * mapping's batch size), turns the messages into a Lambda-shaped `SQSEvent`, invokes the handler in
 * process with a Lambda-like context, and settles the batch the way Lambda does with
 * `ReportBatchItemFailures` (AWS "Handling errors for an SQS event source"):
 * - a thrown error, a timeout, or an invalid response (non-array `batchItemFailures`, an empty, missing
 *   or unknown `itemIdentifier`) fails the whole batch: nothing is deleted;
 * - a null/empty response or an empty/null `batchItemFailures` is complete success: all are deleted;
 * - otherwise the listed records stay on the queue and every other record is deleted.
 * Failed messages reappear after the queue's visibility timeout and move to the DLQ after the redrive
 * policy's `maxReceiveCount` (the queue does that, as SQS does). Without `ReportBatchItemFailures` the
 * response is ignored and a resolved invocation deletes the whole batch.
 *
 * FIFO: SQS itself keeps one batch per message group in flight (a group stays locked while any of its
 * messages is in flight), and records are passed in the order received. AWS asks FIFO handlers to stop
 * at the first failure and report that record and all unprocessed ones; a response that fails a record
 * but lets a later record of the same group succeed would reorder the group — the mapping settles it as
 * Lambda would (it deletes the later record) but counts it in `stats.fifoOrderViolations` and warns.
 *
 * Concurrency: up to `maxConcurrency` batches are invoked at once (Lambda's `MaximumConcurrency`).
 *
 * @example
 * const source = new SqsEventSource({ sqs, queueUrl, queueArn, region, functionName: 'binder', handler, batchSize: 10, fifo: true });
 * source.start();
 * // ...
 * await source.stop();
 */
import { randomUUID } from 'node:crypto';
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord, SQSMessageAttributes } from 'aws-lambda';

/** A Lambda handler for SQS events (async, as nodejs24.x requires). */
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void | null | undefined>;

/** Raised inside the mapping when an invocation runs past the function timeout. */
export class FunctionTimeoutError extends Error {
  constructor(functionName: string, timeoutMs: number) {
    super(`${functionName}: Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
    this.name = 'FunctionTimeoutError';
  }
}

/** Raised when a ReportBatchItemFailures response is malformed (Lambda fails the whole batch). */
export class InvalidBatchResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidBatchResponseError';
  }
}

export interface EventSourceOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  region: string;
  /** Function name for the context (`claimflow-local-binder`). */
  functionName: string;
  handler: SqsHandler;
  /** 1–10 (FIFO maximum). */
  batchSize: number;
  fifo: boolean;
  reportBatchItemFailures?: boolean;
  /** Function timeout in ms (default 30 s): remaining time in the context, and a timeout fails the batch. */
  timeoutMs?: number;
  memorySize?: number;
  /** Batches invoked at once (default 4). */
  maxConcurrency?: number;
  /** Long-poll wait per ReceiveMessage in seconds (default 1; short so that stop() is prompt). */
  waitTimeSeconds?: number;
  /** Observes every settled invocation (tests and benchmarks). */
  onSettled?: (outcome: BatchOutcome) => void;
  /** Warnings (default: console.warn). */
  warn?: (message: string) => void;
}

/** How one invocation settled. */
export interface BatchOutcome {
  records: SQSRecord[];
  /** messageIds deleted from the queue. */
  deleted: string[];
  /** messageIds left on the queue (they come back after the visibility timeout). */
  failed: string[];
  /** The error that failed the whole batch, if any. */
  error?: Error;
  fifoOrderViolations: number;
  durationMs: number;
}

export interface EventSourceStats {
  receives: number;
  invocations: number;
  recordsDelivered: number;
  recordsDeleted: number;
  recordsFailed: number;
  wholeBatchFailures: number;
  fifoOrderViolations: number;
  receiveErrors: number;
}

/** Builds the Lambda `messageAttributes` of a record from an SQS message's attributes. */
function lambdaMessageAttributes(attributes: Record<string, MessageAttributeValue> | undefined): SQSMessageAttributes {
  const out: SQSMessageAttributes = {};
  for (const [name, a] of Object.entries(attributes ?? {})) {
    out[name] = {
      dataType: a.DataType ?? 'String',
      stringValue: a.StringValue,
      binaryValue: a.BinaryValue ? Buffer.from(a.BinaryValue).toString('base64') : undefined,
      stringListValues: a.StringListValues ?? [],
      binaryListValues: (a.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
    };
  }
  return out;
}

/**
 * An SQS message as a Lambda SQS record.
 *
 * @example
 * toSqsRecord(message, 'arn:aws:sqs:eu-west-1:000000000000:q.fifo', 'eu-west-1').eventSource; // 'aws:sqs'
 */
export function toSqsRecord(message: Message, queueArn: string, region: string): SQSRecord {
  const a = message.Attributes ?? {};
  const attributes: SQSRecord['attributes'] = {
    ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
    SentTimestamp: a.SentTimestamp ?? String(Date.now()),
    SenderId: a.SenderId ?? '000000000000',
    ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
  };
  if (a.SequenceNumber) attributes.SequenceNumber = a.SequenceNumber;
  if (a.MessageGroupId) attributes.MessageGroupId = a.MessageGroupId;
  if (a.MessageDeduplicationId) attributes.MessageDeduplicationId = a.MessageDeduplicationId;
  if (a.AWSTraceHeader) attributes.AWSTraceHeader = a.AWSTraceHeader;
  if (a.DeadLetterQueueSourceArn) attributes.DeadLetterQueueSourceArn = a.DeadLetterQueueSourceArn;
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes,
    messageAttributes: lambdaMessageAttributes(message.MessageAttributes),
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/** The result of {@link settleBatch}: which records to delete and which to leave on the queue. */
export interface Settlement {
  deleted: string[];
  failed: string[];
  error?: Error;
  fifoOrderViolations: number;
}

/**
 * Decides, as Lambda does, what an invocation's outcome means for each record (pure; table-tested).
 *
 * @example
 * settleBatch(records, { batchItemFailures: [{ itemIdentifier: records[1].messageId }] }, undefined, { fifo: true, reportBatchItemFailures: true });
 */
export function settleBatch(
  records: readonly SQSRecord[],
  response: unknown,
  thrown: unknown,
  options: { fifo: boolean; reportBatchItemFailures: boolean },
): Settlement {
  const all = records.map((r) => r.messageId);
  if (thrown !== undefined) {
    return { deleted: [], failed: all, error: thrown instanceof Error ? thrown : new Error(String(thrown)), fifoOrderViolations: 0 };
  }
  if (!options.reportBatchItemFailures || response === undefined || response === null) {
    return { deleted: all, failed: [], fifoOrderViolations: 0 };
  }
  const invalid = (why: string): Settlement => ({
    deleted: [],
    failed: all,
    error: new InvalidBatchResponseError(why),
    fifoOrderViolations: 0,
  });
  if (typeof response !== 'object') return invalid(`response is a ${typeof response}, not an object`);
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { deleted: all, failed: [], fifoOrderViolations: 0 };
  if (!Array.isArray(failures)) return invalid('batchItemFailures is not an array');
  const known = new Set(all);
  const failed = new Set<string>();
  for (const f of failures) {
    const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || id === '') return invalid('an itemIdentifier is empty or missing');
    if (!known.has(id)) return invalid(`itemIdentifier ${id} is not in the batch`);
    failed.add(id);
  }
  let fifoOrderViolations = 0;
  if (options.fifo) {
    const failedGroups = new Set<string>();
    for (const r of records) {
      const group = r.attributes.MessageGroupId ?? '';
      if (failed.has(r.messageId)) failedGroups.add(group);
      else if (failedGroups.has(group)) fifoOrderViolations++;
    }
  }
  return { deleted: all.filter((id) => !failed.has(id)), failed: all.filter((id) => failed.has(id)), fifoOrderViolations };
}

/** A Lambda-like invocation context. */
export function lambdaContext(functionName: string, region: string, deadline: number, memorySize = 512): Context {
  const awsRequestId = randomUUID();
  const notSupported = (): never => {
    throw new Error('callback-style completion is not supported on nodejs24.x');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memorySize),
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `${new Date().toISOString().slice(0, 10).replaceAll('-', '/')}/[$LATEST]${awsRequestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: notSupported,
    fail: notSupported,
    succeed: notSupported,
  };
}

/**
 * Invokes a handler as Lambda does: with a context whose deadline is `timeoutMs` away, failing with
 * {@link FunctionTimeoutError} when the deadline passes (the handler keeps running in the background,
 * as a timed-out sandbox would until it is frozen).
 */
export async function invokeWithTimeout<E, R>(
  handler: (event: E, context: Context) => Promise<R>,
  event: E,
  options: { functionName: string; region: string; timeoutMs: number; memorySize?: number },
): Promise<R> {
  const deadline = Date.now() + options.timeoutMs;
  const context = lambdaContext(options.functionName, options.region, deadline, options.memorySize);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FunctionTimeoutError(options.functionName, options.timeoutMs)), options.timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => handler(event, context)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The poller for one function's SQS event source mapping. */
export class SqsEventSource {
  readonly #o: Required<Omit<EventSourceOptions, 'onSettled'>> & Pick<EventSourceOptions, 'onSettled'>;
  readonly #inFlight = new Set<Promise<void>>();
  #running = false;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  readonly stats: EventSourceStats = {
    receives: 0,
    invocations: 0,
    recordsDelivered: 0,
    recordsDeleted: 0,
    recordsFailed: 0,
    wholeBatchFailures: 0,
    fifoOrderViolations: 0,
    receiveErrors: 0,
  };

  constructor(options: EventSourceOptions) {
    if (!(options.batchSize >= 1 && options.batchSize <= 10)) throw new RangeError(`batchSize must be 1–10, got ${options.batchSize}`);
    this.#o = {
      ...options,
      reportBatchItemFailures: options.reportBatchItemFailures ?? true,
      timeoutMs: options.timeoutMs ?? 30_000,
      memorySize: options.memorySize ?? 512,
      maxConcurrency: options.maxConcurrency ?? 4,
      waitTimeSeconds: options.waitTimeSeconds ?? 1,
      warn: options.warn ?? ((m) => console.warn(m)),
    };
  }

  get running(): boolean {
    return this.#running;
  }

  /** Starts polling. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#poll();
  }

  /** Stops polling and waits for the batches in flight to settle. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#abort?.abort();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
  }

  async #poll(): Promise<void> {
    let errorDelay = 100;
    while (this.#running) {
      if (this.#inFlight.size >= this.#o.maxConcurrency) {
        await Promise.race(this.#inFlight);
        continue;
      }
      this.#abort = new AbortController();
      let messages: Message[];
      try {
        const out = await this.#o.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.#o.queueUrl,
            MaxNumberOfMessages: this.#o.batchSize,
            WaitTimeSeconds: this.#o.waitTimeSeconds,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: this.#abort.signal },
        );
        messages = out.Messages ?? [];
        this.stats.receives++;
        errorDelay = 100;
      } catch (error) {
        if (!this.#running) break;
        this.stats.receiveErrors++;
        this.#o.warn(`${this.#o.functionName}: ReceiveMessage failed (${(error as Error).message}); retrying`);
        await new Promise((r) => setTimeout(r, errorDelay));
        errorDelay = Math.min(errorDelay * 2, 5_000);
        continue;
      }
      if (messages.length === 0) continue;
      const task: Promise<void> = this.invoke(messages).then(
        () => undefined,
        (error: unknown) => this.#o.warn(`${this.#o.functionName}: settling a batch failed: ${(error as Error).message}`),
      );
      void task.finally(() => this.#inFlight.delete(task));
      this.#inFlight.add(task);
    }
  }

  /**
   * Invokes the handler with one batch of received messages and settles it (deletes successes).
   * The poller calls this; tests may call it with messages they received themselves.
   */
  async invoke(messages: readonly Message[]): Promise<BatchOutcome> {
    const records = messages.map((m) => toSqsRecord(m, this.#o.queueArn, this.#o.region));
    const started = Date.now();
    let response: unknown;
    let thrown: unknown;
    this.stats.invocations++;
    this.stats.recordsDelivered += records.length;
    try {
      response = await invokeWithTimeout(this.#o.handler, { Records: records }, {
        functionName: this.#o.functionName,
        region: this.#o.region,
        timeoutMs: this.#o.timeoutMs,
        memorySize: this.#o.memorySize,
      });
    } catch (error) {
      thrown = error ?? new Error('handler rejected without a reason');
    }
    const settlement = settleBatch(records, response, thrown, {
      fifo: this.#o.fifo,
      reportBatchItemFailures: this.#o.reportBatchItemFailures,
    });
    if (settlement.error) {
      this.stats.wholeBatchFailures++;
      // a batch cut short by the stack stopping the function is not a failure worth a warning
      if (this.#running || settlement.error.name !== 'FunctionStoppedError') {
        this.#o.warn(`${this.#o.functionName}: batch of ${records.length} failed: ${settlement.error.message}`);
      }
    }
    if (settlement.fifoOrderViolations > 0) {
      this.stats.fifoOrderViolations += settlement.fifoOrderViolations;
      this.#o.warn(
        `${this.#o.functionName}: a FIFO response failed a record but not a later record of the same group ` +
          '(stop at the first failure and report every unprocessed record)',
      );
    }
    await this.#delete(records.filter((r) => settlement.deleted.includes(r.messageId)));
    this.stats.recordsDeleted += settlement.deleted.length;
    this.stats.recordsFailed += settlement.failed.length;
    const outcome: BatchOutcome = { records, ...settlement, durationMs: Date.now() - started };
    this.#o.onSettled?.(outcome);
    return outcome;
  }

  async #delete(records: readonly SQSRecord[]): Promise<void> {
    if (records.length === 0) return;
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await this.#o.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.#o.queueUrl,
            Entries: records.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
          }),
        );
        for (const f of out.Failed ?? []) {
          this.#o.warn(`${this.#o.functionName}: delete of ${records[Number(f.Id)].messageId} failed: ${f.Message}`);
        }
        return;
      } catch (error) {
        if (attempt >= 3) {
          this.#o.warn(`${this.#o.functionName}: DeleteMessageBatch failed: ${(error as Error).message}`);
          return;
        }
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      }
    }
  }
}
