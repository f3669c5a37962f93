/**
 * How the event source mapping settles a batch, as Lambda does with ReportBatchItemFailures — table
 * driven with hand-built multi-record FIFO batches (fauxqs hands out at most one message per group per
 * receive, AWS may hand out several in order).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSRecord } from 'aws-lambda';
import { InvalidBatchResponseError, settleBatch, toSqsRecord } from '../../infra/local/stack/event-source.ts';

const ARN = 'arn:aws:sqs:eu-west-1:000000000000:t.fifo';

/** A1 B1 A2 B2 A3: two groups interleaved, as one Lambda FIFO batch may be. */
function batch(): SQSRecord[] {
  const ids = ['A1', 'B1', 'A2', 'B2', 'A3'];
  return ids.map((id, i) =>
    toSqsRecord(
      {
        MessageId: id,
        ReceiptHandle: `rh-${id}`,
        Body: `{"n":${i}}`,
        Attributes: { MessageGroupId: id[0], SequenceNumber: String(i + 1), ApproximateReceiveCount: '1' },
      },
      ARN,
      'eu-west-1',
    ),
  );
}

const fail = (...ids: string[]) => ({ batchItemFailures: ids.map((itemIdentifier) => ({ itemIdentifier })) });

describe('settleBatch', () => {
  const rows: {
    name: string;
    response?: unknown;
    thrown?: unknown;
    fifo?: boolean;
    rbif?: boolean;
    deleted: string[];
    failed: string[];
    invalid?: boolean;
    threw?: boolean;
    violations?: number;
  }[] = [
    { name: 'undefined response: all succeed', response: undefined, deleted: ['A1', 'B1', 'A2', 'B2', 'A3'], failed: [] },
    { name: 'null response: all succeed', response: null, deleted: ['A1', 'B1', 'A2', 'B2', 'A3'], failed: [] },
    { name: 'empty object: all succeed', response: {}, deleted: ['A1', 'B1', 'A2', 'B2', 'A3'], failed: [] },
    { name: 'null list: all succeed', response: { batchItemFailures: null }, deleted: ['A1', 'B1', 'A2', 'B2', 'A3'], failed: [] },
    { name: 'empty list: all succeed', response: fail(), deleted: ['A1', 'B1', 'A2', 'B2', 'A3'], failed: [] },
    {
      name: 'FIFO stop at first failure of group A: A2, A3 reported too',
      response: fail('A2', 'A3'),
      deleted: ['A1', 'B1', 'B2'],
      failed: ['A2', 'A3'],
    },
    {
      name: 'FIFO skip-group style: A1.. and B2 failed, B1 kept',
      response: fail('A1', 'A2', 'A3', 'B2'),
      deleted: ['B1'],
      failed: ['A1', 'A2', 'B2', 'A3'],
    },
    {
      name: 'FIFO stop at first failure of the batch: B1 and everything after',
      response: fail('B1', 'A2', 'B2', 'A3'),
      deleted: ['A1'],
      failed: ['B1', 'A2', 'B2', 'A3'],
    },
    {
      name: 'FIFO order violation: A1 failed but A2, A3 reported successful (settled as Lambda, counted)',
      response: fail('A1'),
      deleted: ['B1', 'A2', 'B2', 'A3'],
      failed: ['A1'],
      violations: 2,
    },
    {
      name: 'standard queue: no order to violate',
      response: fail('A1'),
      fifo: false,
      deleted: ['B1', 'A2', 'B2', 'A3'],
      failed: ['A1'],
      violations: 0,
    },
    { name: 'a throw fails the whole batch', thrown: new Error('boom'), deleted: [], failed: ['A1', 'B1', 'A2', 'B2', 'A3'], threw: true },
    {
      name: 'unknown itemIdentifier fails the whole batch',
      response: fail('Z9'),
      deleted: [],
      failed: ['A1', 'B1', 'A2', 'B2', 'A3'],
      invalid: true,
    },
    { name: 'empty itemIdentifier fails the whole batch', response: fail(''), deleted: [], failed: ['A1', 'B1', 'A2', 'B2', 'A3'], invalid: true },
    {
      name: 'missing itemIdentifier fails the whole batch',
      response: { batchItemFailures: [{ id: 'A1' }] },
      deleted: [],
      failed: ['A1', 'B1', 'A2', 'B2', 'A3'],
      invalid: true,
    },
    {
      name: 'non-array batchItemFailures fails the whole batch',
      response: { batchItemFailures: 'A1' },
      deleted: [],
      failed: ['A1', 'B1', 'A2', 'B2', 'A3'],
      invalid: true,
    },
    { name: 'a string response fails the whole batch', response: 'ok', deleted: [], failed: ['A1', 'B1', 'A2', 'B2', 'A3'], invalid: true },
    {
      name: 'without ReportBatchItemFailures the response is ignored',
      response: fail('A1'),
      rbif: false,
      deleted: ['A1', 'B1', 'A2', 'B2', 'A3'],
      failed: [],
    },
    {
      name: 'without ReportBatchItemFailures a throw still fails all',
      thrown: new Error('boom'),
      rbif: false,
      deleted: [],
      failed: ['A1', 'B1', 'A2', 'B2', 'A3'],
      threw: true,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const s = settleBatch(batch(), row.response, row.thrown, { fifo: row.fifo ?? true, reportBatchItemFailures: row.rbif ?? true });
      assert.deepEqual(s.deleted, row.deleted);
      assert.deepEqual(s.failed, row.failed);
      assert.equal(s.error instanceof InvalidBatchResponseError, row.invalid ?? false);
      assert.equal(s.error?.message === 'boom', row.threw ?? false);
      assert.equal(s.fifoOrderViolations, row.violations ?? 0);
    });
  }
});

describe('toSqsRecord', () => {
  it('builds a Lambda SQS record with system and message attributes', () => {
    const r = toSqsRecord(
      {
        MessageId: 'm1',
        ReceiptHandle: 'rh',
        Body: 'b',
        MD5OfBody: 'md5',
        Attributes: { MessageGroupId: 'g', SequenceNumber: '7', ApproximateReceiveCount: '3', SentTimestamp: '1', MessageDeduplicationId: 'd' },
        MessageAttributes: { kind: { DataType: 'String', StringValue: 'Node' } },
      },
      ARN,
      'eu-west-1',
    );
    assert.deepEqual(r, {
      messageId: 'm1',
      receiptHandle: 'rh',
      body: 'b',
      attributes: {
        ApproximateReceiveCount: '3',
        SentTimestamp: '1',
        SenderId: '000000000000',
        ApproximateFirstReceiveTimestamp: r.attributes.ApproximateFirstReceiveTimestamp,
        SequenceNumber: '7',
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd',
      },
      messageAttributes: { kind: { dataType: 'String', stringValue: 'Node', binaryValue: undefined, stringListValues: [], binaryListValues: [] } },
      md5OfBody: 'md5',
      eventSource: 'aws:sqs',
      eventSourceARN: ARN,
      awsRegion: 'eu-west-1',
    });
  });
});
