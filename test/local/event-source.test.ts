/**
 * The local SQS event source mapping against fauxqs: partial batch failures, FIFO order per group with
 * other groups running in parallel, a throw or a timeout fails the whole batch, DLQ after
 * maxReceiveCount (the queue's redrive policy).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { SqsEventSource, type EventSourceOptions } from '../../infra/local/stack/event-source.ts';

const REGION = 'eu-west-1';
let fauxqs: FauxqsServer;
let sqs: SQSClient;

before(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false, defaultRegion: REGION });
  sqs = new SQSClient({ region: REGION, endpoint: `http://127.0.0.1:${fauxqs.port}`, credentials: { accessKeyId: 'l', secretAccessKey: 'l' } });
});
after(async () => {
  sqs.destroy();
  await fauxqs.stop();
});

interface TestQueue {
  url: string;
  arn: string;
  dlqUrl: string;
}

/** A FIFO queue with a 1 s visibility timeout redriving to a FIFO DLQ after `maxReceiveCount`. */
async function fifoQueue(maxReceiveCount = 5): Promise<TestQueue> {
  const name = `t-${randomBytes(4).toString('hex')}`;
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq.fifo`, Attributes: { FifoQueue: 'true' } }));
  const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  const q = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}.fifo`,
      Attributes: {
        FifoQueue: 'true',
        VisibilityTimeout: '1',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount }),
      },
    }),
  );
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  return { url: q.QueueUrl!, arn, dlqUrl: dlq.QueueUrl! };
}

/** Sends `group:body` messages in order (dedup id = body). */
async function send(queueUrl: string, messages: [group: string, body: string][]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const out = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.slice(i, i + 10).map(([group, body], j) => ({
          Id: String(j),
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: body,
          MessageAttributes: { kind: { DataType: 'String', StringValue: 'PersistentVolumeClaim' } },
        })),
      }),
    );
    assert.equal(out.Failed?.length ?? 0, 0);
  }
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function queueDepth(url: string): Promise<number> {
  const a = (
    await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    )
  ).Attributes!;
  return Number(a.ApproximateNumberOfMessages) + Number(a.ApproximateNumberOfMessagesNotVisible);
}

function source(q: TestQueue, handler: (event: SQSEvent) => Promise<SQSBatchResponse | void>, extra: Partial<EventSourceOptions> = {}): SqsEventSource {
  return new SqsEventSource({
    sqs,
    queueUrl: q.url,
    queueArn: q.arn,
    region: REGION,
    functionName: 'test-fn',
    handler,
    batchSize: 10,
    fifo: true,
    waitTimeSeconds: 1,
    warn: () => {},
    ...extra,
  });
}

describe('SqsEventSource against fauxqs', () => {
  it('delivers Lambda-shaped records and deletes what succeeded; a reported failure comes back after the visibility timeout', async () => {
    const q = await fifoQueue();
    const seen: SQSRecord[] = [];
    const es = source(q, async (event) => {
      seen.push(...event.Records);
      const failures = event.Records.filter((r) => r.body === 'g3-1' && r.attributes.ApproximateReceiveCount === '1');
      return { batchItemFailures: failures.map((r) => ({ itemIdentifier: r.messageId })) };
    });
    await send(q.url, [1, 2, 3, 4, 5, 6].map((g) => [`g${g}`, `g${g}-1`]));
    es.start();
    try {
      await waitFor('g3 to be redelivered and succeed', () => seen.filter((r) => r.body === 'g3-1').length === 2);
      await waitFor('the queue to drain', async () => (await queueDepth(q.url)) === 0);
    } finally {
      await es.stop();
    }
    const bodies = seen.map((r) => r.body);
    for (const g of [1, 2, 4, 5, 6]) assert.equal(bodies.filter((b) => b === `g${g}-1`).length, 1, `g${g} delivered once`);
    const retried = seen.filter((r) => r.body === 'g3-1');
    assert.deepEqual(
      retried.map((r) => r.attributes.ApproximateReceiveCount),
      ['1', '2'],
    );
    const r = seen[0];
    assert.equal(r.eventSource, 'aws:sqs');
    assert.equal(r.eventSourceARN, q.arn);
    assert.equal(r.awsRegion, REGION);
    assert.match(r.attributes.SequenceNumber ?? '', /^\d+$/);
    assert.match(r.attributes.MessageGroupId ?? '', /^g\d$/);
    assert.equal(r.messageAttributes.kind.stringValue, 'PersistentVolumeClaim');
    assert.equal(es.stats.recordsDeleted, 6);
    assert.equal(es.stats.recordsFailed, 1);
    assert.equal(es.stats.wholeBatchFailures, 0);
  });

  it('keeps order within a group across a failure while other groups run in parallel', async () => {
    const q = await fifoQueue();
    const log: string[] = [];
    const started = new Set<string>();
    let overlapped = false;
    /** A2's first delivery, hidden for 30 s instead of the queue's 1 s until group B is done (then let go). */
    let a2Receipt: string | undefined;
    const es = source(
      q,
      async (event) => {
        const failures: { itemIdentifier: string }[] = [];
        for (const r of event.Records) {
          started.add(r.body);
          // A1 and B1 are both in flight at once: different groups run in parallel
          if (r.body === 'A1' || r.body === 'B1') {
            const deadline = Date.now() + 5_000;
            while (!(started.has('A1') && started.has('B1')) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 5));
            if (started.has('A1') && started.has('B1')) overlapped = true;
          }
          if (failures.length > 0 && failures.some((f) => f.itemIdentifier === r.messageId)) continue;
          if (r.body === 'A2' && r.attributes.ApproximateReceiveCount === '1') {
            await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: q.url, ReceiptHandle: r.receiptHandle, VisibilityTimeout: 30 }));
            a2Receipt = r.receiptHandle;
            log.push('A2:failed');
            failures.push({ itemIdentifier: r.messageId });
            continue;
          }
          log.push(r.body);
        }
        return { batchItemFailures: failures };
      },
      { batchSize: 1, maxConcurrency: 4 },
    );
    await send(q.url, [
      ['A', 'A1'],
      ['B', 'B1'],
      ['A', 'A2'],
      ['B', 'B2'],
      ['A', 'A3'],
      ['B', 'B3'],
      ['A', 'A4'],
      ['B', 'B4'],
    ]);
    es.start();
    try {
      // group B does not wait for A2's retry: it finishes while A2 is hidden (its group A held back behind it)
      await waitFor('group B to finish while A2 waits for its retry', () => log.includes('B4'));
      assert.ok(a2Receipt !== undefined && !log.includes('A2'), `A2 not retried yet: ${log.join(' ')}`);
      await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: q.url, ReceiptHandle: a2Receipt, VisibilityTimeout: 0 }));
      await waitFor('group A to finish', () => log.includes('A4'));
    } finally {
      await es.stop();
    }
    assert.ok(overlapped, 'A1 and B1 were in flight at the same time');
    assert.deepEqual(
      log.filter((b) => b.startsWith('A')),
      ['A1', 'A2:failed', 'A2', 'A3', 'A4'],
    );
    assert.deepEqual(
      log.filter((b) => b.startsWith('B')),
      ['B1', 'B2', 'B3', 'B4'],
    );
    assert.ok(log.indexOf('B4') < log.indexOf('A2'), `B finished before A2's retry: ${log.join(' ')}`);
  });

  it('keeps at most maxConcurrency batches in flight', async () => {
    const q = await fifoQueue();
    let inFlight = 0;
    let peak = 0;
    let done = 0;
    const es = source(
      q,
      async () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        // until two are in flight at once (however long a receive takes), then a while longer for a third to show
        const deadline = Date.now() + 5_000;
        while (peak < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setTimeout(r, 60));
        inFlight--;
        done++;
      },
      { batchSize: 1, maxConcurrency: 2 },
    );
    await send(q.url, [1, 2, 3, 4, 5, 6, 7, 8].map((g) => [`c${g}`, `c${g}-1`]));
    es.start();
    try {
      await waitFor('all eight', () => done === 8);
    } finally {
      await es.stop();
    }
    assert.equal(peak, 2);
  });

  it('keeps polling through an SQS outage and delivers once the queue is back', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'claimflow-fauxqs-'));
    let own = await startFauxqs({ port: 0, logger: false, defaultRegion: REGION, dataDir });
    const port = own.port;
    const client = new SQSClient({ region: REGION, endpoint: `http://127.0.0.1:${port}`, credentials: { accessKeyId: 'l', secretAccessKey: 'l' }, maxAttempts: 1 });
    try {
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'outage.fifo', Attributes: { FifoQueue: 'true' } }));
      const arn = (await client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
      const bodies: string[] = [];
      const es = new SqsEventSource({
        sqs: client,
        queueUrl: QueueUrl!,
        queueArn: arn,
        region: REGION,
        functionName: 'outage',
        handler: async (event) => void bodies.push(...event.Records.map((r) => r.body)),
        batchSize: 10,
        fifo: true,
        warn: () => {},
      });
      es.start();
      try {
        await own.stop();
        await waitFor('receive errors while SQS is down', () => es.stats.receiveErrors >= 2);
        own = await startFauxqs({ port, logger: false, defaultRegion: REGION, dataDir });
        await client.send(new SendMessageBatchCommand({ QueueUrl, Entries: [{ Id: '0', MessageBody: 'after', MessageGroupId: 'g', MessageDeduplicationId: 'after' }] }));
        await waitFor('the message sent after the outage', () => bodies.includes('after'));
      } finally {
        await es.stop();
      }
      assert.deepEqual(bodies, ['after']);
    } finally {
      client.destroy();
      await own.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('fails the whole batch when the handler throws', async () => {
    const q = await fifoQueue();
    const attempts: string[][] = [];
    const es = source(q, async (event) => {
      attempts.push(event.Records.map((r) => `${r.body}#${r.attributes.ApproximateReceiveCount}`));
      if (attempts.length === 1) throw new Error('boom');
    });
    await send(q.url, [
      ['x', 'x1'],
      ['y', 'y1'],
      ['z', 'z1'],
    ]);
    es.start();
    try {
      await waitFor('the batch to be retried', async () => attempts.flat().filter((a) => a.endsWith('#2')).length === 3);
      await waitFor('the queue to drain', async () => (await queueDepth(q.url)) === 0);
    } finally {
      await es.stop();
    }
    assert.deepEqual(attempts[0].sort(), ['x1#1', 'y1#1', 'z1#1']);
    assert.deepEqual(attempts.slice(1).flat().sort(), ['x1#2', 'y1#2', 'z1#2']);
    assert.equal(es.stats.wholeBatchFailures, 1);
  });

  it('fails the whole batch on a timeout or an invalid itemIdentifier', async () => {
    const q = await fifoQueue();
    const attempts: string[] = [];
    const es = source(
      q,
      async (event) => {
        const r = event.Records[0];
        attempts.push(`${r.body}#${r.attributes.ApproximateReceiveCount}`);
        if (r.body === 'slow' && r.attributes.ApproximateReceiveCount === '1') await new Promise((res) => setTimeout(res, 400));
        if (r.body === 'bad-id' && r.attributes.ApproximateReceiveCount === '1') return { batchItemFailures: [{ itemIdentifier: 'nope' }] };
        return { batchItemFailures: [] };
      },
      { timeoutMs: 200, batchSize: 1 },
    );
    await send(q.url, [
      ['s', 'slow'],
      ['b', 'bad-id'],
    ]);
    es.start();
    try {
      await waitFor('both to be retried and drained', async () => attempts.length === 4 && (await queueDepth(q.url)) === 0);
    } finally {
      await es.stop();
    }
    assert.deepEqual(attempts.sort(), ['bad-id#1', 'bad-id#2', 'slow#1', 'slow#2']);
    assert.equal(es.stats.wholeBatchFailures, 2);
  });

  it('moves a message that keeps failing to the DLQ after maxReceiveCount, then delivers the rest of its group', async () => {
    const q = await fifoQueue(2);
    const attempts: string[] = [];
    const es = source(q, async (event) => {
      const failures: { itemIdentifier: string }[] = [];
      for (const r of event.Records) {
        attempts.push(`${r.body}#${r.attributes.ApproximateReceiveCount}`);
        if (r.body === 'poison' || failures.length > 0) failures.push({ itemIdentifier: r.messageId });
      }
      return { batchItemFailures: failures };
    });
    await send(q.url, [
      ['p', 'poison'],
      ['p', 'after'],
    ]);
    es.start();
    try {
      await waitFor('the next message of the group', () => attempts.includes('after#1'));
    } finally {
      await es.stop();
    }
    assert.deepEqual(attempts, ['poison#1', 'poison#2', 'after#1']);
    const dead = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.dlqUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] }));
    assert.deepEqual(
      dead.Messages?.map((m) => m.Body),
      ['poison'],
    );
    assert.equal(await queueDepth(q.url), 0);
  });
});
