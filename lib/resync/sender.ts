/**
 * Sends REQUEUE cluster events to controller queues with SendMessageBatch (10 per call), with the FIFO
 * group and deduplication ids of message.ts, retrying entries SQS reports failed.
 */
import { SendMessageBatchCommand, type SendMessageBatchRequestEntry, type SQSClient } from '@aws-sdk/client-sqs';
import { messageAttributes, messageDeduplicationId, messageGroupId, type ClusterEvent } from '../runtime/message.ts';

/** Some messages could not be sent after retries. */
export class RequeueSendError extends Error {
  readonly failed: ClusterEvent[];
  constructor(queueUrl: string, failed: ClusterEvent[], detail: string) {
    super(`${failed.length} requeue message(s) to ${queueUrl} failed: ${detail}`);
    this.name = 'RequeueSendError';
    this.failed = failed;
  }
}

/** Buffers events per queue and flushes them in batches of ten. */
export class RequeueSender {
  readonly #sqs: SQSClient;
  readonly #nonce: string;
  readonly #pending = new Map<string, Array<{ event: ClusterEvent; nonce: string }>>();
  sent = 0;

  /** `nonce` makes each resync run's REQUEUEs new requests while duplicates within a run collapse. */
  constructor(sqs: SQSClient, nonce: string) {
    this.#sqs = sqs;
    this.#nonce = nonce;
  }

  /** Queues `event` for `queueUrl`; sends when ten are waiting. */
  async add(queueUrl: string, event: ClusterEvent, nonce: string = this.#nonce): Promise<void> {
    let list = this.#pending.get(queueUrl);
    if (!list) this.#pending.set(queueUrl, (list = []));
    list.push({ event, nonce });
    if (list.length >= 10) await this.#flushQueue(queueUrl);
  }

  /** Sends everything still buffered. */
  async flush(): Promise<void> {
    for (const queueUrl of [...this.#pending.keys()]) await this.#flushQueue(queueUrl);
  }

  async #flushQueue(queueUrl: string): Promise<void> {
    const list = this.#pending.get(queueUrl) ?? [];
    this.#pending.delete(queueUrl);
    for (let i = 0; i < list.length; i += 10) await this.#sendBatch(queueUrl, list.slice(i, i + 10));
  }

  async #sendBatch(queueUrl: string, batch: Array<{ event: ClusterEvent; nonce: string }>): Promise<void> {
    let entries: Array<SendMessageBatchRequestEntry & { event: ClusterEvent }> = batch.map(({ event, nonce }, index) => ({
      Id: String(index),
      MessageBody: JSON.stringify(event),
      MessageGroupId: messageGroupId(event.cluster, event.kind, event.key),
      MessageDeduplicationId: messageDeduplicationId(event, nonce),
      MessageAttributes: messageAttributes(event),
      event,
    }));
    let detail = '';
    for (let attempt = 0; attempt < 3 && entries.length; attempt++) {
      const out = await this.#sqs.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries.map(({ event: _event, ...entry }) => entry) }),
      );
      this.sent += out.Successful?.length ?? 0;
      const failed = new Set((out.Failed ?? []).map((f) => f.Id));
      detail = (out.Failed ?? []).map((f) => `${f.Code}: ${f.Message ?? ''}`).join('; ');
      entries = entries.filter((e) => failed.has(e.Id));
      if (entries.length && (out.Failed ?? []).every((f) => f.SenderFault)) break;
    }
    if (entries.length) throw new RequeueSendError(queueUrl, entries.map((e) => e.event), detail);
  }
}
