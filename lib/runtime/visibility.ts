/**
 * Keeping messages invisible: a deferred record gets ChangeMessageVisibility and is reported failed
 * ({@link RecordDeferredError}) so that SQS redelivers it after that time; the records of its group that the
 * FIFO processor skipped behind it get the same visibility ({@link holdSkippedRecords}).
 *
 * @example
 * await deferRecord(rt, job, 1, 'too little Lambda time left'); // throws RecordDeferredError
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { ChangeMessageVisibilityBatchCommand, ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import type { BatchState, Job } from './job.ts';
import type { SqsRuntime } from './runtime.ts';

/** Internal: the record must be reported failed so that SQS redelivers it after the visibility we set. */
export class RecordDeferredError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RecordDeferredError';
  }
}

/** Hides the record for `visibilityTimeoutS` and reports it failed (throws). */
export async function deferRecord<Ctx>(rt: SqsRuntime<Ctx>, job: Job, visibilityTimeoutS: number, why: string): Promise<never> {
  const { record, log } = job;
  const queueUrl = rt.queueUrlFor(record);
  if (queueUrl) {
    try {
      await rt.services.sqs.send(
        new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: record.receiptHandle, VisibilityTimeout: visibilityTimeoutS }),
      );
    } catch (error) {
      log.warn('could not change message visibility; it returns after the queue visibility timeout', { error: String(error) });
    }
  }
  const group = record.attributes.MessageGroupId;
  if (group !== undefined) job.batch.deferredGroups.set(group, visibilityTimeoutS);
  log.info('record waits', { why, visibilityTimeoutS });
  throw new RecordDeferredError(why);
}

/**
 * Records of a group that the FIFO processor skipped after one of the group's records was deferred get the
 * same visibility: a FIFO group stays locked while any of its messages is in flight, so leaving them at the
 * queue's (long) visibility timeout would stretch the deferred record's short wait to that timeout.
 */
export async function holdSkippedRecords<Ctx>(rt: SqsRuntime<Ctx>, event: SQSEvent, response: SQSBatchResponse, batch: BatchState): Promise<void> {
  if (batch.deferredGroups.size === 0) return;
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const byQueue = new Map<string, Array<{ Id: string; ReceiptHandle: string; VisibilityTimeout: number }>>();
  for (const record of event.Records) {
    const group = record.attributes.MessageGroupId;
    const visibility = group === undefined ? undefined : batch.deferredGroups.get(group);
    if (visibility === undefined || !failed.has(record.messageId) || batch.processed.has(record.messageId)) continue;
    const queueUrl = rt.queueUrlFor(record);
    if (!queueUrl) continue;
    let entries = byQueue.get(queueUrl);
    if (!entries) byQueue.set(queueUrl, (entries = []));
    entries.push({ Id: String(entries.length), ReceiptHandle: record.receiptHandle, VisibilityTimeout: visibility });
  }
  for (const [queueUrl, entries] of byQueue) {
    for (let i = 0; i < entries.length; i += 10) {
      try {
        const out = await rt.services.sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: queueUrl, Entries: entries.slice(i, i + 10) }));
        if (out.Failed?.length) rt.logger.warn('could not hold skipped records', { failed: out.Failed.map((f) => f.Message ?? f.Code) });
      } catch (error) {
        rt.logger.warn('could not hold skipped records', { error: String(error) });
      }
    }
  }
}
