/**
 * Lambda entry point of the StorageOS node label sync: Node events from the LabelSyncQueue (SQS batches)
 * and the scheduled resync (EventBridge) — see lib/label-sync/. Nothing is built at import.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createLabelSyncHandler, type LabelSyncHandler } from '../lib/label-sync/handler.ts';
import type { LabelResyncReport } from '../lib/label-sync/resync.ts';

let built: LabelSyncHandler | undefined;

export async function handler(event: SQSEvent | Record<string, unknown>, context?: Context): Promise<SQSBatchResponse | LabelResyncReport> {
  built ??= createLabelSyncHandler();
  return built(event, context);
}
