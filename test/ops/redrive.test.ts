/**
 * DLQ redrive against fauxqs (and a scripted SQS for the move-task path):
 * - the copy path moves every message once, in group order, with its attributes minus the poison ones;
 * - interrupted after a send and before the delete, it is run again: the copies already sent are
 *   deduplicated (the DLQ message id is the deduplication id), nothing is lost or doubled;
 * - a peek leaves every message in place;
 * - `auto` uses StartMessageMoveTask where the endpoint has it and follows the task to its end; an explicit
 *   `move-task` on an endpoint without it fails instead of copying;
 * - the progress line is drawn on a TTY only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { peekDlq, redrive, RedriveError, queueCounts } from '../../lib/ops/dlq.ts';
import { createProgress } from '../../lib/ops/progress.ts';
import type { QueueRef } from '../../lib/ops/target.ts';

const region = 'eu-west-1';
let n = 0;

describe('dlq redrive', () => {
  let server: FauxqsServer;
  let sqs: SQSClient;
  before(async () => {
    server = await startFauxqs({ port: 0, logger: false, host: '127.0.0.1', defaultRegion: region });
    sqs = new SQSClient({ endpoint: `http://127.0.0.1:${server.port}`, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, useQueueUrlAsEndpoint: false });
  });
  after(async () => {
    sqs.destroy();
    await server.stop();
  });

  const queues = (): { dlq: QueueRef; queue: QueueRef } => {
    const i = ++n;
    const endpoint = `http://127.0.0.1:${server.port}`;
    const make = (name: string): QueueRef => {
      const created = server.createQueue(name, { attributes: { FifoQueue: 'true' } });
      return { name, url: `${endpoint}${created.queueUrl.replace(/^\w+:\/\/[^/]+/, '')}` };
    };
    return { dlq: make(`t${i}-dlq.fifo`), queue: make(`t${i}.fifo`) };
  };

  /** 23 messages in 3 groups; every fifth is a poison message with the runtime's attributes. */
  const fill = async (dlq: QueueRef): Promise<string[]> => {
    const bodies: string[] = [];
    for (let i = 0; i < 23; i++) {
      const body = `message ${i}`;
      bodies.push(body);
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: dlq.url,
          MessageBody: body,
          MessageGroupId: `group-${i % 3}`,
          MessageDeduplicationId: `original-${i}`,
          MessageAttributes: {
            kind: { DataType: 'String', StringValue: 'PersistentVolumeClaim' },
            ...(i % 5 === 0 ? { poisonReason: { DataType: 'String', StringValue: 'bad' }, sourceMessageId: { DataType: 'String', StringValue: `src-${i}` } } : {}),
          },
        }),
      );
    }
    return bodies;
  };

  const drain = async (queue: QueueRef): Promise<Message[]> => {
    const out: Message[] = [];
    for (;;) {
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }));
      if (!got.Messages?.length) return out;
      out.push(...got.Messages);
      await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queue.url, Entries: got.Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }));
    }
  };

  const assertMovedOnce = async (queue: QueueRef, bodies: string[]) => {
    const moved = await drain(queue);
    assert.deepEqual(moved.map((m) => m.Body).sort(), [...bodies].sort(), 'every message exactly once');
    for (const group of ['group-0', 'group-1', 'group-2']) {
      const inGroup = moved.filter((m) => m.Attributes?.MessageGroupId === group).map((m) => Number(m.Body!.split(' ')[1]));
      assert.deepEqual(inGroup, [...inGroup].sort((a, b) => a - b), `${group} in order`);
    }
    for (const m of moved) {
      assert.equal(m.MessageAttributes?.kind?.StringValue, 'PersistentVolumeClaim');
      assert.equal(m.MessageAttributes?.poisonReason, undefined, 'poison bookkeeping stripped');
      assert.equal(m.MessageAttributes?.sourceMessageId, undefined);
      assert.ok(m.MessageAttributes?.redrivenFrom?.StringValue);
    }
  };

  test('a peek leaves every message in place', async () => {
    const { dlq } = queues();
    await fill(dlq);
    const peeked = await peekDlq(sqs, dlq.url, { waitSeconds: 0 });
    assert.equal(new Set(peeked.messages.map((m) => m.messageId)).size, peeked.messages.length);
    assert.ok(peeked.messages.length >= 3, 'at least the head of each group');
    assert.equal(peeked.messages.filter((m) => m.cause === 'poison').every((m) => m.reason === 'bad' && m.sourceMessageId?.startsWith('src-')), true);
    assert.deepEqual(await queueCounts(sqs, dlq.url), { visible: 23, inFlight: 0, delayed: 0 });
  });

  test('copy: every message once, in group order, poison attributes stripped', async () => {
    const { dlq, queue } = queues();
    const bodies = await fill(dlq);
    const progress: number[] = [];
    const result = await redrive(sqs, { dlq, queue, method: 'copy', onProgress: (moved) => progress.push(moved) });
    assert.deepEqual({ method: result.method, moved: result.moved, total: result.total }, { method: 'copy', moved: 23, total: 23 });
    assert.deepEqual(progress.at(-1), 23);
    assert.ok(progress.length > 2, 'progress reported batch by batch');
    assert.deepEqual(await queueCounts(sqs, dlq.url), { visible: 0, inFlight: 0, delayed: 0 });
    await assertMovedOnce(queue, bodies);
  });

  test('interrupted between send and delete, a second run neither loses nor doubles a message', async () => {
    const { dlq, queue } = queues();
    const bodies = await fill(dlq);
    let deletes = 0;
    const flaky = {
      send: (command: any) => {
        if (command instanceof DeleteMessageBatchCommand && ++deletes === 2) return Promise.reject(new Error('connection reset'));
        return sqs.send(command);
      },
    } as unknown as SQSClient;
    let first = 0;
    await assert.rejects(redrive(flaky, { dlq, queue, method: 'copy' }), (error: unknown) => {
      assert.ok(error instanceof RedriveError);
      first = error.moved;
      assert.match(error.message, /run the redrive again within 5 minutes/);
      return true;
    });
    assert.ok(first > 0 && first < 23, 'one batch confirmed before the failure');
    const sentTwice = (await queueCounts(sqs, queue.url)).visible;
    assert.ok(sentTwice > first, 'the second batch reached the queue but was not deleted from the DLQ');
    assert.equal((await queueCounts(sqs, dlq.url)).visible, 23 - first, 'the unconfirmed batch is back in the DLQ');
    const again = await redrive(sqs, { dlq, queue, method: 'auto' });
    assert.equal(again.method, 'copy', 'fauxqs has no StartMessageMoveTask');
    assert.match(again.fallbackReason ?? '', /not supported/);
    assert.equal(again.moved, 23 - first);
    await assertMovedOnce(queue, bodies);
  });

  test('--max copies only that many', async () => {
    const { dlq, queue } = queues();
    await fill(dlq);
    const result = await redrive(sqs, { dlq, queue, max: 4 });
    assert.deepEqual([result.method, result.moved], ['copy', 4]);
    assert.equal((await queueCounts(sqs, dlq.url)).visible, 19);
  });

  test('move-task: followed to its end with progress; unsupported only falls back under auto', async () => {
    const calls: string[] = [];
    const statuses = [
      { Status: 'RUNNING', ApproximateNumberOfMessagesMoved: 1, ApproximateNumberOfMessagesToMove: 3 },
      { Status: 'COMPLETED', ApproximateNumberOfMessagesMoved: 3, ApproximateNumberOfMessagesToMove: 3 },
    ];
    const scripted = {
      send: async (command: any) => {
        const name = command.constructor.name as string;
        calls.push(name);
        if (name === 'GetQueueAttributesCommand') {
          return { Attributes: { QueueArn: `arn:aws:sqs:eu-west-1:1:${command.input.QueueUrl.split('/').pop()}`, ApproximateNumberOfMessages: '3', ApproximateNumberOfMessagesNotVisible: '0' } };
        }
        if (name === 'StartMessageMoveTaskCommand') {
          assert.deepEqual(command.input, { SourceArn: 'arn:aws:sqs:eu-west-1:1:d.fifo', DestinationArn: 'arn:aws:sqs:eu-west-1:1:q.fifo' });
          return { TaskHandle: 'h' };
        }
        if (name === 'ListMessageMoveTasksCommand') return { Results: [statuses.shift()] };
        throw new Error(`unexpected ${name}`);
      },
    } as unknown as SQSClient;
    const dlq = { name: 'd.fifo', url: 'https://sqs/1/d.fifo' };
    const queue = { name: 'q.fifo', url: 'https://sqs/1/q.fifo' };
    const progress: Array<[number, number | undefined]> = [];
    const result = await redrive(scripted, { dlq, queue, pollMs: 1, onProgress: (moved, total) => progress.push([moved, total]) });
    assert.deepEqual(result, { method: 'move-task', moved: 3, total: 3, status: 'COMPLETED' });
    assert.deepEqual(progress, [[1, 3], [3, 3]]);
    assert.ok(!calls.includes('ReceiveMessageCommand'), 'nothing copied by hand');

    const { dlq: realDlq, queue: realQueue } = queues();
    await assert.rejects(redrive(sqs, { dlq: realDlq, queue: realQueue, method: 'move-task' }), /Unknown action|InvalidAction/);
  });

  test('progress is drawn on a TTY only', () => {
    let tty = '';
    const bar = createProgress({ isTTY: true, columns: 80, write: (t: string) => (tty += t) }, 'redriving', { now: () => 0 });
    bar.update(5, 20);
    bar.done();
    assert.match(tty, /^\rredriving \[#####\.{15}\] 5\/20 *(\rredriving \[#####\.{15}\] 5\/20 *)?\n$/);
    let piped = '';
    const none = createProgress({ isTTY: false, write: (t: string) => (piped += t) }, 'redriving');
    none.update(5, 20);
    none.done();
    assert.equal(piped, '');
  });
});
