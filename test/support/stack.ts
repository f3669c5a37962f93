/**
 * Test helper over {@link startStack}: the whole local stack with quiet defaults, and a recorder of
 * the cluster events each registered function (or extra queue consumer) receives.
 *
 * @example
 * const recorder = new EventRecorder();
 * const stack = await startTestStack({ functions: { binder: recorder.handler('binder') }, withForwarder: true });
 * after(() => stack.stop());
 * await eventually(() => recorder.events('binder').length > 0);
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { ClusterEventSchema, type ClusterEvent } from '../../lib/runtime/message.ts';
import { SqsEventSource } from '../../infra/local/stack/event-source.ts';
import { startStack, type LambdaHandler, type Stack, type StackOptions } from '../../infra/local/stack/stack.ts';

export type { Stack, StackOptions };

/** Starts the stack for a test: no schedules and quiet logs unless asked. */
export async function startTestStack(options: StackOptions = {}): Promise<Stack> {
  return startStack({ schedules: false, forwarderLogLevel: 'SILENT', warn: () => {}, ...options });
}

/** Polls `check` until it holds. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Messages on a queue of the stack: waiting, in flight (being handled, or hidden by a requeue's
 * ChangeMessageVisibility until it is due) and delayed. 0 means its consumer has nothing left to do.
 */
export async function queuedMessages(stack: Stack, logicalId: string): Promise<number> {
  const queue = stack.queues[logicalId];
  if (!queue) throw new Error(`no queue ${logicalId} in the template`);
  const names = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] as const;
  const { Attributes: a = {} } = await stack.sqs.client.send(new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: [...names] }));
  return names.reduce((sum, name) => sum + Number(a[name] ?? 0), 0);
}

/** One cluster event as a consumer saw it. */
export interface ReceivedEvent {
  consumer: string;
  event: ClusterEvent;
  record: SQSRecord;
  /** `Date.now()` when the invocation started. */
  startedAt: number;
}

/** Records what each consumer receives; its handlers succeed (after `delayMs`) unless told otherwise. */
export class EventRecorder {
  readonly received: ReceivedEvent[] = [];
  readonly #inFlight = new Map<string, number>();
  readonly #maxInFlight = new Map<string, number>();
  readonly #delayMs: number;

  constructor(options: { delayMs?: number } = {}) {
    this.#delayMs = options.delayMs ?? 0;
  }

  /** An SQS handler that records every record's cluster event. */
  handler(consumer: string): LambdaHandler {
    return async (event: SQSEvent): Promise<SQSBatchResponse> => {
      const startedAt = Date.now();
      const now = (this.#inFlight.get(consumer) ?? 0) + 1;
      this.#inFlight.set(consumer, now);
      this.#maxInFlight.set(consumer, Math.max(now, this.#maxInFlight.get(consumer) ?? 0));
      try {
        for (const record of event.Records) {
          this.received.push({ consumer, event: ClusterEventSchema.parse(JSON.parse(record.body)), record, startedAt });
        }
        if (this.#delayMs > 0) await new Promise((r) => setTimeout(r, this.#delayMs));
        return { batchItemFailures: [] };
      } finally {
        this.#inFlight.set(consumer, (this.#inFlight.get(consumer) ?? 1) - 1);
      }
    };
  }

  events(consumer: string): ClusterEvent[] {
    return this.received.filter((r) => r.consumer === consumer).map((r) => r.event);
  }

  /** The most invocations of `consumer` that ran at once. */
  maxInFlight(consumer: string): number {
    return this.#maxInFlight.get(consumer) ?? 0;
  }
}

/**
 * Consumes a queue of the stack that has no function yet (e.g. `SharedVolumeQueue`) through the same
 * event source mapping, so tests can observe it. Stopped by `stack.stop()` is NOT implied: stop it.
 */
export function consumeQueue(stack: Stack, logicalId: string, handler: LambdaHandler, options: { batchSize?: number } = {}): SqsEventSource {
  const queue = stack.queues[logicalId];
  if (!queue) throw new Error(`no queue ${logicalId} in the template`);
  const source = new SqsEventSource({
    sqs: stack.sqs.client,
    queueUrl: queue.url,
    queueArn: queue.arn,
    region: stack.env.AWS_REGION,
    functionName: logicalId,
    handler,
    batchSize: options.batchSize ?? 10,
    fifo: queue.fifo,
    warn: () => {},
  });
  source.start();
  return source;
}
