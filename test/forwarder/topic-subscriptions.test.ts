/**
 * The forwarder's view of its topic's subscriptions (lib/forwarder/topic-subscriptions.ts), read from fauxqs
 * over the wire: everything is published until a read succeeds, after a failed read, and while any
 * subscription takes every message; otherwise only what one subscription's filter policy takes. A
 * subscription added or removed counts from the next read.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CreateTopicCommand, SNSClient, SubscribeCommand, UnsubscribeCommand, type SNSClient as Client } from '@aws-sdk/client-sns';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { TopicSubscriptions } from '../../lib/forwarder/topic-subscriptions.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynalite.ts';

const binderWrite = { kind: 'PersistentVolume', cluster: 'c1', type: 'MODIFIED', writer: 'binder' };
const userWrite = { ...binderWrite, writer: 'cluster' };
const node = { kind: 'Node', cluster: 'c1', type: 'MODIFIED', writer: 'cluster' };

describe('TopicSubscriptions against fauxqs', () => {
  let fauxqs: FauxqsServer;
  let sns: SNSClient;
  let sqs: SQSClient;
  let topics = 0;
  before(async () => {
    fauxqs = await startFauxqs({ port: 0, logger: false, host: 'localhost' });
    const aws = { endpoint: `http://localhost:${fauxqs.port}`, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
    sns = new SNSClient({ ...aws, maxAttempts: 1 });
    sqs = new SQSClient(aws);
  });
  after(async () => {
    sns?.destroy();
    sqs?.destroy();
    await fauxqs?.stop();
  });

  /** A new FIFO topic with one queue subscribed per policy (undefined: no filter policy); returns the topic and the subscriptions. */
  const topicWith = async (...policies: Array<Record<string, unknown> | undefined>): Promise<{ topicArn: string; subscribe: (policy?: Record<string, unknown>) => Promise<string> }> => {
    const name = `events-${++topics}`;
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: `${name}.fifo`, Attributes: { FifoTopic: 'true' } }));
    let queues = 0;
    const subscribe = async (policy?: Record<string, unknown>) => {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-${++queues}.fifo`, Attributes: { FifoQueue: 'true' } }));
      const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
      const { SubscriptionArn } = await sns.send(
        new SubscribeCommand({
          TopicArn,
          Protocol: 'sqs',
          Endpoint: Attributes!.QueueArn,
          Attributes: { RawMessageDelivery: 'true', ...(policy ? { FilterPolicyScope: 'MessageAttributes', FilterPolicy: JSON.stringify(policy) } : {}) },
        }),
      );
      return SubscriptionArn!;
    };
    for (const policy of policies) await subscribe(policy);
    return { topicArn: TopicArn!, subscribe };
  };

  it('takes everything until its first read; then only what a subscription\'s policy takes', async () => {
    const { topicArn } = await topicWith(
      { kind: ['PersistentVolume'], $or: [{ writer: [{ exists: false }] }, { writer: [{ 'anything-but': ['binder'] }] }] },
      { kind: ['Node'] },
    );
    const reads: Array<number | 'all'> = [];
    const subscriptions = new TopicSubscriptions({ sns, topicArn, onRead: (f) => reads.push(f) });
    assert.equal(subscriptions.takes(binderWrite), true, 'unknown yet: published');
    await subscriptions.refresh();
    assert.deepEqual(reads, [2]);
    assert.equal(subscriptions.takes(binderWrite), false, 'the binder\'s own write: no subscription takes it');
    assert.equal(subscriptions.takes(userWrite), true);
    assert.equal(subscriptions.takes(node), true);
  });

  it('a subscription added counts from the next read, one removed stops counting; one without a filter takes everything', async () => {
    const { topicArn, subscribe } = await topicWith({ kind: ['Node'] });
    const subscriptions = new TopicSubscriptions({ sns, topicArn });
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), false);
    const added = await subscribe({ kind: ['PersistentVolume'] });
    assert.equal(subscriptions.takes(userWrite), false, 'not before the next read');
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), true, 'the added subscription takes it');
    await sns.send(new UnsubscribeCommand({ SubscriptionArn: added }));
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), false, 'removed again');
    await subscribe(undefined);
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(binderWrite), true, 'a subscription without a filter policy takes everything');
  });

  it('a failed read publishes everything (reported) until a read succeeds again', async () => {
    const { topicArn } = await topicWith({ kind: ['Node'] });
    let failing = false;
    const flaky = {
      send: (command: unknown) => (failing ? Promise.reject(Object.assign(new Error('Rate exceeded'), { name: 'Throttling' })) : sns.send(command as never)),
    } as unknown as Client;
    const errors: unknown[] = [];
    const subscriptions = new TopicSubscriptions({ sns: flaky, topicArn, onError: (err) => errors.push(err) });
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), false);
    failing = true;
    await subscriptions.refresh();
    assert.equal(errors.length, 1);
    assert.equal(subscriptions.takes(userWrite), true, 'after a failed read: everything');
    failing = false;
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), false, 'filtering again');
  });

  it('reads again every refreshMs once started, and not after stop()', async () => {
    const { topicArn, subscribe } = await topicWith({ kind: ['Node'] });
    const reads: Array<number | 'all'> = [];
    const subscriptions = new TopicSubscriptions({ sns, topicArn, refreshMs: 50, onRead: (f) => reads.push(f) });
    subscriptions.start();
    try {
      const deadline = Date.now() + 10_000;
      while (reads.length < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      await subscribe({ kind: ['PersistentVolume'] });
      while (!subscriptions.takes(userWrite) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(subscriptions.takes(userWrite), true, 'the subscription added meanwhile was read');
    } finally {
      subscriptions.stop();
    }
    const count = reads.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(reads.length, count, 'no read after stop()');
  });
});

describe('TopicSubscriptions: what fauxqs does not produce', () => {
  const topicArn = 'arn:aws:sns:eu-west-1:000000000000:events.fifo';
  /**
   * An SNS client answering from a table: the topic's listing (pages of `pageSize`) and each subscription's
   * attributes (undefined: NotFound; an Error: thrown). `gate`, when set, holds every answer until it resolves.
   */
  const fake = (listed: string[], attributes: Record<string, Record<string, string> | Error | undefined>, options: { pageSize?: number; gate?: Promise<void> } = {}) =>
    ({
      send: async (command: { input: { SubscriptionArn?: string; NextToken?: string } }, sendOptions?: { abortSignal?: AbortSignal }) => {
        if (options.gate) {
          await Promise.race([
            options.gate,
            new Promise((_, reject) => sendOptions?.abortSignal?.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })))),
          ]);
        }
        if (command.constructor.name === 'ListSubscriptionsByTopicCommand') {
          const size = options.pageSize ?? listed.length;
          const from = Number(command.input.NextToken ?? 0);
          const next = from + size < listed.length ? String(from + size) : undefined;
          return { Subscriptions: listed.slice(from, from + size).map((SubscriptionArn) => ({ SubscriptionArn })), ...(next ? { NextToken: next } : {}) };
        }
        const found = attributes[command.input.SubscriptionArn!];
        if (found instanceof Error) throw found;
        if (!found) throw Object.assign(new Error('Subscription does not exist'), { name: 'NotFoundException' });
        return { Attributes: found };
      },
    }) as unknown as Client;
  const arn = (n: number) => `${topicArn}:${n}`;
  const filtering = (kind: string) => ({ FilterPolicy: JSON.stringify({ kind: [kind] }), FilterPolicyScope: 'MessageAttributes' });

  it('reads every page of the listing', async () => {
    const listed = [1, 2, 3, 4, 5].map(arn);
    const attributes = Object.fromEntries(listed.map((a, i) => [a, filtering(i === 4 ? 'PersistentVolume' : 'Node')]));
    const subscriptions = new TopicSubscriptions({ sns: fake(listed, attributes, { pageSize: 2 }), topicArn });
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), true, 'the policy on the third page counts');
    assert.equal(subscriptions.takes({ ...userWrite, kind: 'StorageClass' }), false);
  });

  it('a refused read of one subscription (not a removal) publishes everything, reported', async () => {
    const errors: unknown[] = [];
    const refused = Object.assign(new Error('not authorized to perform SNS:GetSubscriptionAttributes'), { name: 'AuthorizationErrorException' });
    const subscriptions = new TopicSubscriptions({ sns: fake([arn(1), arn(2)], { [arn(1)]: filtering('Node'), [arn(2)]: refused }), topicArn, onError: (err) => errors.push(err) });
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), true);
    assert.deepEqual(errors, [refused]);
  });

  it('a read that hangs is cut by the request timeout: everything is published; settled() does not wait past its own timeout', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const errors: unknown[] = [];
    const subscriptions = new TopicSubscriptions({ sns: fake([arn(1)], { [arn(1)]: filtering('Node') }, { gate }), topicArn, requestTimeoutMs: 200, onError: (err) => errors.push(err) });
    const reading = subscriptions.refresh();
    const started = Date.now();
    await subscriptions.settled(20);
    assert.ok(Date.now() - started < 150, 'settled() gave up at its own timeout');
    await reading;
    assert.equal(errors.length, 1, 'the timeout failed the read');
    assert.equal(subscriptions.takes(userWrite), true);
    open();
  });

  it('policies not read again for three refreshes are stale: everything is published', async () => {
    const subscriptions = new TopicSubscriptions({ sns: fake([arn(1)], { [arn(1)]: filtering('Node') }), topicArn, refreshMs: 40 });
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(userWrite), false, 'fresh: filtered');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(subscriptions.takes(userWrite), true, 'stale: everything');
  });

  it('a read that ends after stop() changes nothing; a callback that throws does not fail the read', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const reads: unknown[] = [];
    const late = new TopicSubscriptions({ sns: fake([arn(1)], { [arn(1)]: filtering('Node') }, { gate }), topicArn, onRead: (f) => reads.push(f) });
    const reading = late.refresh();
    late.stop();
    open();
    await reading;
    assert.deepEqual(reads, [], 'no read reported');
    assert.equal(late.takes(userWrite), true, 'still publishing everything');
    const throwing = new TopicSubscriptions({
      sns: fake([arn(1)], { [arn(1)]: filtering('Node') }),
      topicArn,
      onRead: () => {
        throw new Error('a broken metric');
      },
    });
    await throwing.refresh();
    assert.equal(throwing.takes(userWrite), false, 'the read counted');
  });

  it('a subscription pending confirmation, or removed between the listing and its read, receives nothing and is not counted', async () => {
    const sns = fake(['PendingConfirmation', arn(1), arn(2)], { [arn(1)]: filtering('Node') });
    const subscriptions = new TopicSubscriptions({ sns, topicArn });
    await subscriptions.refresh();
    assert.equal(subscriptions.takes(node), true);
    assert.equal(subscriptions.takes(userWrite), false);
  });

  it('a policy on the message body, or one it cannot parse, takes everything', async () => {
    const cases: Array<Record<string, string>> = [
      { FilterPolicy: JSON.stringify({ kind: ['Node'] }), FilterPolicyScope: 'MessageBody' },
      { FilterPolicy: '{not json', FilterPolicyScope: 'MessageAttributes' },
      { FilterPolicy: '["Node"]' },
    ];
    for (const attributes of cases) {
      const subscriptions = new TopicSubscriptions({ sns: fake([arn(1)], { [arn(1)]: attributes }), topicArn });
      await subscriptions.refresh();
      assert.equal(subscriptions.takes(userWrite), true, JSON.stringify(attributes));
    }
  });
});
