import { test } from 'node:test';
import assert from 'node:assert/strict';
import { processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSRecord } from 'aws-lambda';
import { groupRecords, SqsFifoGroupsProcessor } from '../../../lib/runtime/fifo-groups.ts';

const record = (id: string, group: string): SQSRecord =>
  ({
    messageId: id,
    receiptHandle: `rh-${id}`,
    body: id,
    attributes: { MessageGroupId: group, ApproximateReceiveCount: '1' },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q.fifo',
    awsRegion: 'us-east-1',
  }) as unknown as SQSRecord;

test('groupRecords keeps batch order within a group and groups in order of first appearance', () => {
  const groups = groupRecords([record('a1', 'A'), record('b1', 'B'), record('a2', 'A'), record('c1', 'C'), record('b2', 'B')]);
  assert.deepEqual(groups.map((g) => g.map((r) => r.messageId)), [['a1', 'a2'], ['b1', 'b2'], ['c1']]);
});

test('groups run concurrently: a record of group A can wait on one of group B', async () => {
  let releaseA!: () => void;
  const bRan = new Promise<void>((resolve) => (releaseA = resolve));
  const order: string[] = [];
  const handler = async (r: SQSRecord): Promise<void> => {
    order.push(`start ${r.messageId}`);
    // Sequential processing would never reach b1 while a1 waits: the test would time out.
    if (r.messageId === 'a1') await bRan;
    if (r.messageId === 'b1') releaseA();
    order.push(`end ${r.messageId}`);
  };
  const response = await processPartialResponse({ Records: [record('a1', 'A'), record('a2', 'A'), record('b1', 'B')] }, handler, new SqsFifoGroupsProcessor(), {
    throwOnFullBatchFailure: false,
  });
  assert.deepEqual(response.batchItemFailures, []);
  assert.ok(order.indexOf('start b1') < order.indexOf('end a1'), 'b1 started while a1 was in progress');
  assert.ok(order.indexOf('end a1') < order.indexOf('start a2'), 'a2 waits for a1: one group stays in order');
});

test('a failure skips the rest of its group only; the response names the failed and the skipped records', async () => {
  const ran: string[] = [];
  const handler = async (r: SQSRecord): Promise<void> => {
    ran.push(r.messageId);
    if (r.messageId === 'a2') throw new Error('boom');
  };
  const records = [record('a1', 'A'), record('b1', 'B'), record('a2', 'A'), record('b2', 'B'), record('a3', 'A'), record('b3', 'B')];
  const response = await processPartialResponse({ Records: records }, handler, new SqsFifoGroupsProcessor(), { throwOnFullBatchFailure: false });
  assert.deepEqual(response.batchItemFailures.map((f) => f.itemIdentifier).sort(), ['a2', 'a3']);
  assert.ok(!ran.includes('a3'), 'a3 never ran after a2 failed');
  assert.deepEqual(ran.filter((id) => id.startsWith('b')), ['b1', 'b2', 'b3'], 'group B went on, in order');
});

test('maxConcurrentGroups bounds the groups in progress at once', async () => {
  let inFlight = 0;
  let peak = 0;
  const handler = async (): Promise<void> => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 5));
    inFlight--;
  };
  const records = Array.from({ length: 8 }, (_, i) => record(`r${i}`, `g${i}`));
  await processPartialResponse({ Records: records }, handler, new SqsFifoGroupsProcessor({ maxConcurrentGroups: 3 }), { throwOnFullBatchFailure: false });
  assert.equal(peak, 3);
  const unbounded = new SqsFifoGroupsProcessor();
  peak = 0;
  await processPartialResponse({ Records: records }, handler, unbounded, { throwOnFullBatchFailure: false });
  assert.equal(peak, 8);
});
