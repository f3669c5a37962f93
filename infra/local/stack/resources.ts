/**
 * Creates the template's topics, queues (DLQs first, then the queues that redrive to them),
 * subscriptions and tables on the local stand-ins, and returns what each logical id resolves to
 * (for `Ref`/`Fn::GetAtt` in the functions' environment). `UpdateTimeToLive` is skipped: dynalite
 * does not implement it (readers check `expiresAt` themselves, see lib/state/schema.ts).
 */
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateTopicCommand, SubscribeCommand, type SNSClient } from '@aws-sdk/client-sns';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { PhysicalResource } from './intrinsics.ts';
import type { QueueSpec, Wiring } from './wiring.ts';

export const LOCAL_ACCOUNT_ID = '000000000000';

/** A queue as created locally. */
export interface LocalQueue {
  logicalId: string;
  name: string;
  url: string;
  arn: string;
  fifo: boolean;
  visibilityTimeout: number;
  redrive?: { deadLetterQueue: string; maxReceiveCount: number };
}

export interface LocalResources {
  /** Logical id → physical resource (for intrinsics). */
  physical: Map<string, PhysicalResource>;
  queues: Map<string, LocalQueue>;
  topics: Map<string, { logicalId: string; name: string; arn: string }>;
  tables: Map<string, { logicalId: string; name: string; arn: string }>;
}

export interface Clients {
  sqs: SQSClient;
  sns: SNSClient;
  dynamodb: DynamoDBClient;
  region: string;
  /**
   * The SQS endpoint the functions use. fauxqs names queues `http://sqs.<region>.localhost:<port>/…`,
   * a host that does not resolve everywhere and differs from the SDK endpoint (the SDK then sends to
   * the QueueUrl's host); queue URLs are rewritten path-style onto this endpoint, which fauxqs accepts.
   */
  sqsEndpoint?: string;
}

/** Queues in creation order: a queue after the DLQ its redrive policy names. */
function creationOrder(queues: readonly QueueSpec[]): QueueSpec[] {
  const byId = new Map(queues.map((q) => [q.logicalId, q]));
  const done = new Set<string>();
  const out: QueueSpec[] = [];
  const visit = (q: QueueSpec, path: Set<string>): void => {
    if (done.has(q.logicalId)) return;
    if (path.has(q.logicalId)) throw new Error(`redrive cycle through ${q.logicalId}`);
    path.add(q.logicalId);
    const dlq = q.redrive && byId.get(q.redrive.deadLetterQueue);
    if (dlq) visit(dlq, path);
    done.add(q.logicalId);
    out.push(q);
  };
  for (const q of queues) visit(q, new Set());
  return out;
}

/**
 * Creates everything the wiring declares and resolves the physical names.
 *
 * @example
 * const local = await createResources(readWiring(template), { sqs, sns, dynamodb, region });
 * local.queues.get('BinderQueue')?.url;
 */
export async function createResources(wiring: Wiring, clients: Clients): Promise<LocalResources> {
  const { sqs, sns, dynamodb, region } = clients;
  const physical = new Map<string, PhysicalResource>();
  const queues = new Map<string, LocalQueue>();
  const topics = new Map<string, { logicalId: string; name: string; arn: string }>();
  const tables = new Map<string, { logicalId: string; name: string; arn: string }>();

  for (const t of wiring.topics) {
    const out = await sns.send(
      new CreateTopicCommand({
        Name: t.name,
        Attributes: {
          ...(t.fifo ? { FifoTopic: 'true' } : {}),
          ...(t.contentBasedDeduplication ? { ContentBasedDeduplication: 'true' } : {}),
        },
      }),
    );
    const arn = out.TopicArn!;
    topics.set(t.logicalId, { logicalId: t.logicalId, name: t.name, arn });
    physical.set(t.logicalId, { ref: arn, attributes: { TopicArn: arn, TopicName: t.name } });
  }

  for (const q of creationOrder(wiring.queues)) {
    const attributes: Record<string, string> = { VisibilityTimeout: String(q.visibilityTimeout) };
    if (q.fifo) attributes.FifoQueue = 'true';
    if (q.contentBasedDeduplication) attributes.ContentBasedDeduplication = 'true';
    if (q.messageRetentionPeriod !== undefined) attributes.MessageRetentionPeriod = String(q.messageRetentionPeriod);
    if (q.redrive) {
      const dlq = queues.get(q.redrive.deadLetterQueue);
      if (!dlq) throw new Error(`${q.logicalId}: dead-letter queue ${q.redrive.deadLetterQueue} is not a queue of this template`);
      attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: q.redrive.maxReceiveCount });
    }
    const created = await sqs.send(new CreateQueueCommand({ QueueName: q.name, Attributes: attributes }));
    const QueueUrl = clients.sqsEndpoint ? `${clients.sqsEndpoint.replace(/\/$/, '')}${new URL(created.QueueUrl!).pathname}` : created.QueueUrl!;
    const got = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
    const local: LocalQueue = {
      logicalId: q.logicalId,
      name: q.name,
      url: QueueUrl,
      arn: got.Attributes!.QueueArn!,
      fifo: q.fifo,
      visibilityTimeout: q.visibilityTimeout,
      redrive: q.redrive,
    };
    queues.set(q.logicalId, local);
    physical.set(q.logicalId, { ref: local.url, attributes: { Arn: local.arn, QueueName: q.name, QueueUrl: local.url } });
  }

  for (const s of wiring.subscriptions) {
    const topic = topics.get(s.topic);
    const queue = queues.get(s.queue);
    if (!topic || !queue) throw new Error(`${s.logicalId}: topic ${s.topic} or queue ${s.queue} is not in the template`);
    const attributes: Record<string, string> = {};
    if (s.rawMessageDelivery) attributes.RawMessageDelivery = 'true';
    if (s.filterPolicy !== undefined) attributes.FilterPolicy = JSON.stringify(s.filterPolicy);
    if (s.filterPolicyScope) attributes.FilterPolicyScope = s.filterPolicyScope;
    const out = await sns.send(
      new SubscribeCommand({ TopicArn: topic.arn, Protocol: 'sqs', Endpoint: queue.arn, Attributes: attributes, ReturnSubscriptionArn: true }),
    );
    physical.set(s.logicalId, { ref: out.SubscriptionArn!, attributes: {} });
  }

  for (const t of wiring.tables) {
    await dynamodb.send(new CreateTableCommand({ ...t.create, BillingMode: t.create.BillingMode ?? 'PAY_PER_REQUEST' }));
    const arn = `arn:aws:dynamodb:${region}:${LOCAL_ACCOUNT_ID}:table/${t.create.TableName}`;
    tables.set(t.logicalId, { logicalId: t.logicalId, name: t.create.TableName, arn });
    physical.set(t.logicalId, { ref: t.create.TableName, attributes: { Arn: arn } });
  }

  for (const f of wiring.functions) {
    const arn = `arn:aws:lambda:${region}:${LOCAL_ACCOUNT_ID}:function:${f.functionName}`;
    physical.set(f.logicalId, { ref: f.functionName, attributes: { Arn: arn } });
  }
  return { physical, queues, topics, tables };
}
