/**
 * A partial batch processor for SQS FIFO queues that runs the batch's message groups concurrently.
 *
 * Powertools' `SqsFifoPartialProcessorAsync` runs every record of a batch one after another, even across
 * message groups, so a batch of ten objects takes ten reconciles end to end. FIFO order is only promised
 * within a group (one object, for us), so this processor runs each group's records in order and the
 * groups side by side, as a client-go workqueue hands different keys to different workers. After a failed
 * record, the later records of *that group* are failed without running (`skipGroupOnError` semantics),
 * other groups go on.
 *
 * The outcome is reported through Powertools' own success/failure bookkeeping, so `processPartialResponse`
 * builds the `batchItemFailures` response as usual.
 *
 * @example
 * const processor = new SqsFifoGroupsProcessor({ maxConcurrentGroups: 10 });
 * const response = await processPartialResponse(event, recordHandler, processor, { throwOnFullBatchFailure: false });
 */
import { BatchProcessor, EventType, SqsFifoMessageGroupShortCircuitError } from '@aws-lambda-powertools/batch';
import type { FailureResponse, SuccessResponse } from '@aws-lambda-powertools/batch/types';
import type { SQSRecord } from 'aws-lambda';

export interface SqsFifoGroupsProcessorOptions {
  /** Most groups in progress at once (default: every group of the batch). */
  maxConcurrentGroups?: number;
}

/** Splits records into their message groups, each in batch order; groups in order of first appearance. */
export function groupRecords(records: readonly SQSRecord[]): SQSRecord[][] {
  const groups = new Map<string, SQSRecord[]>();
  records.forEach((record, index) => {
    // A record without a group id (not FIFO) is a group of its own.
    const id = record.attributes?.MessageGroupId ?? `\u0000${index}`;
    let group = groups.get(id);
    if (!group) groups.set(id, (group = []));
    group.push(record);
  });
  return [...groups.values()];
}

export class SqsFifoGroupsProcessor extends BatchProcessor {
  readonly #maxConcurrentGroups: number;

  constructor(options: SqsFifoGroupsProcessorOptions = {}) {
    super(EventType.SQS);
    this.#maxConcurrentGroups = Math.max(1, options.maxConcurrentGroups ?? Number.POSITIVE_INFINITY);
  }

  /** Runs the groups concurrently, each group's records in order; a failure skips the rest of its group. */
  override async process(): Promise<(SuccessResponse | FailureResponse)[]> {
    this.prepare();
    const groups = groupRecords(this.records as SQSRecord[]);
    const results: (SuccessResponse | FailureResponse)[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < groups.length) {
        const group = groups[next++];
        let failed = false;
        for (const record of group) {
          if (failed) {
            results.push(this.failureHandler(this.toBatchType(record, this.eventType), new SqsFifoMessageGroupShortCircuitError()));
            continue;
          }
          const result = await this.processRecord(record);
          results.push(result);
          failed = result[0] === 'fail';
        }
      }
    };
    const workers = Math.min(groups.length, this.#maxConcurrentGroups);
    await Promise.all(Array.from({ length: workers }, worker));
    this.clean();
    return results;
  }
}
