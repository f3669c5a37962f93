/**
 * Shared fixtures for the runtime tests: dynalite + fauxqs, a FIFO queue with its DLQ, real deliveries
 * turned into Lambda SQS records, and a Metrics that keeps what it would publish.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DeleteMessageCommand, PurgeQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { messageDeduplicationId, messageGroupId, MESSAGE_VERSION, type ClusterEvent, type WatchedKind } from '../../lib/runtime/message.ts';
import { METRICS_NAMESPACE } from '../../lib/runtime/observability.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynalite, type Dynalite } from '../support/dynalite.ts';

/** Metrics that keep each EMF blob instead of printing it. */
export class CapturedMetrics extends Metrics {
  readonly blobs: Array<Record<string, unknown>> = [];
  constructor() {
    super({ namespace: METRICS_NAMESPACE, serviceName: 'claimflow', defaultDimensions: { controller: 'test' } });
  }
  override publishStoredMetrics(): this {
    const blob = this.serializeMetrics() as unknown as Record<string, unknown>;
    const names = ((blob._aws as { CloudWatchMetrics: Array<{ Metrics: Array<{ Name: string }> }> }).CloudWatchMetrics[0]?.Metrics ?? []).map((m) => m.Name);
    if (names.length) this.blobs.push(blob);
    this.clearMetrics();
    return this;
  }
  /** Sum of a metric's values over everything published so far. */
  total(name: string): number {
    let sum = 0;
    for (const blob of this.blobs) {
      const value = blob[name];
      if (Array.isArray(value)) sum += value.reduce((a: number, b: number) => a + b, 0);
      else if (typeof value === 'number') sum += value;
    }
    return sum;
  }
}

export const silentLogger = (): Logger => new Logger({ serviceName: 'claimflow-test', logLevel: 'SILENT' });

export interface RuntimeFixture {
  db: Dynalite;
  sqsServer: FauxqsServer;
  sqs: SQSClient;
  queue: { url: string; arn: string };
  dlq: { url: string; arn: string; name: string };
  sync: SyncMarkers;
  /** Marks the initial LIST of `kinds` complete for `cluster`. */
  markSynced(cluster: string, kinds: readonly WatchedKind[]): Promise<void>;
  /** Sends events to the queue. */
  send(events: ClusterEvent[]): Promise<void>;
  /** Receives what is visible now (waiting up to `waitS`), as a Lambda SQS event. */
  receive(waitS?: number, max?: number): Promise<SQSEvent>;
  /** What the event source mapping does after an invocation: deletes the records not reported failed. */
  settle(batch: SQSEvent, response: SQSBatchResponse): Promise<void>;
  /**
   * Delivers to `handler` until the queue stays empty twice in a row (`idleMs` apart, default 300: longer
   * when a failed record must come back after its backoff); returns what was handled, with its group.
   */
  drain(handler: (batch: SQSEvent) => Promise<SQSBatchResponse>, options?: { idleMs?: number }): Promise<Array<{ event: ClusterEvent; group: string }>>;
  /**
   * Empties the queue, messages in flight included: a test's records left invisible (deferred, failed)
   * would otherwise come back in the middle of a later test sharing the fixture.
   */
  purge(): Promise<void>;
  /** Handler options wired to these stand-ins (tables, queue, DLQ, a silent logger), with `extra` over them. */
  handlerOptions<T extends object>(extra: T): { doc: Dynalite['doc']; tables: Dynalite['tables']; sqs: SQSClient; queueUrl: string; dlqUrl: string; logger: Logger } & T;
  stop(): Promise<void>;
}

let queueCounter = 0;

export async function startRuntimeFixture(options: { maxReceiveCount?: number } = {}): Promise<RuntimeFixture> {
  const db = await startDynalite();
  const sqsServer = await startFauxqs({ port: 0, logger: false, host: '127.0.0.1' });
  const sqs = new SQSClient({ endpoint: `http://127.0.0.1:${sqsServer.port}`, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const n = ++queueCounter;
  const dlqName = `test-dlq-${n}.fifo`;
  const dlq = sqsServer.createQueue(dlqName, { attributes: { FifoQueue: 'true' } });
  const queue = sqsServer.createQueue(`test-queue-${n}.fifo`, {
    attributes: {
      FifoQueue: 'true',
      VisibilityTimeout: '30',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount: options.maxReceiveCount ?? 10 }),
    },
  });
  const sync = new SyncMarkers(db.doc, db.tables.control);
  const fixture: RuntimeFixture = {
    db,
    sqsServer,
    sqs,
    queue: { url: queue.queueUrl, arn: queue.queueArn },
    dlq: { url: dlq.queueUrl, arn: dlq.queueArn, name: dlqName },
    sync,
    async markSynced(cluster, kinds) {
      for (const kind of kinds) await sync.markListComplete(cluster, kind, '1');
    },
    async send(events) {
      for (const event of events) {
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: queue.queueUrl,
            MessageBody: JSON.stringify(event),
            MessageGroupId: messageGroupId(event.cluster, event.kind, event.key),
            MessageDeduplicationId: messageDeduplicationId(event, String(Math.random())),
          }),
        );
      }
    },
    async receive(waitS = 0, max = 10) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queue.queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: waitS,
          MessageSystemAttributeNames: ['All'],
        }),
      );
      return { Records: (out.Messages ?? []).map((m) => toRecord(m, queue.queueArn)) };
    },
    async settle(batch, response) {
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      for (const record of batch.Records) {
        if (!failed.has(record.messageId)) {
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queue.queueUrl, ReceiptHandle: record.receiptHandle }));
        }
      }
    },
    async drain(handler, options = {}) {
      const handled: Array<{ event: ClusterEvent; group: string }> = [];
      for (let idle = 0; idle < 2;) {
        const batch = await fixture.receive(0);
        if (batch.Records.length === 0) {
          idle++;
          await sleep(options.idleMs ?? 300);
          continue;
        }
        idle = 0;
        for (const r of batch.Records) handled.push({ event: JSON.parse(r.body) as ClusterEvent, group: r.attributes.MessageGroupId ?? '' });
        await fixture.settle(batch, await handler(batch));
      }
      return handled;
    },
    async purge() {
      await sqs.send(new PurgeQueueCommand({ QueueUrl: queue.queueUrl }));
    },
    handlerOptions(extra) {
      return { doc: db.doc, tables: db.tables, sqs, queueUrl: queue.queueUrl, dlqUrl: dlq.queueUrl, logger: silentLogger(), ...extra };
    },
    async stop() {
      sqs.destroy();
      await sqsServer.stop();
      await db.stop();
    },
  };
  return fixture;
}

function toRecord(
  m: { MessageId?: string; ReceiptHandle?: string; Body?: string; Attributes?: Record<string, string>; MD5OfBody?: string },
  arn: string,
): SQSRecord {
  const a = m.Attributes ?? {};
  return {
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      ...(a.MessageGroupId ? { MessageGroupId: a.MessageGroupId } : {}),
      ...(a.MessageDeduplicationId ? { MessageDeduplicationId: a.MessageDeduplicationId } : {}),
      ...(a.SequenceNumber ? { SequenceNumber: a.SequenceNumber } : {}),
    },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: LOCAL_REGION,
  };
}

/** A hand-built record (for multi-record FIFO batches fauxqs would not hand out at once). */
export function handBuiltRecord(id: string, body: string, groupId: string, arn = 'arn:aws:sqs:us-east-1:000000000000:hand.fifo'): SQSRecord {
  return toRecord(
    { MessageId: id, ReceiptHandle: `hand-${id}`, Body: body, Attributes: { MessageGroupId: groupId, ApproximateReceiveCount: '1' } },
    arn,
  );
}

/** A cluster event for tests. */
export function clusterEvent(partial: Partial<ClusterEvent> & Pick<ClusterEvent, 'kind' | 'key'>): ClusterEvent {
  return {
    v: MESSAGE_VERSION,
    cluster: 'c1',
    type: 'MODIFIED',
    uid: `uid-${partial.key}`,
    resourceVersion: '10',
    observedAt: new Date().toISOString(),
    ...partial,
  };
}
