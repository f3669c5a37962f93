/**
 * Ensures the template's topics, queues (DLQs first, then the queues that redrive to them), subscriptions
 * and tables exist on an SQS/SNS/DynamoDB endpoint — the embedded fauxqs and dynalite, or any
 * AWS-compatible endpoint (LocalStack, a real region) — and returns what each logical id resolves to (for
 * `Ref`/`Fn::GetAtt` in the functions' environment).
 *
 * Idempotent and additive: what exists (found by name) is reused as it is, what is missing is created,
 * nothing is ever deleted. A reused queue or table whose settings differ from the template's is left
 * alone and named in a warning; a reused subscription gets the template's filter policy (the functions'
 * routing depends on it), as a deploy would set it. `UpdateTimeToLive` is only tried with `timeToLive`
 * (dynalite does not implement it; readers check `expiresAt` themselves, see lib/state/schema.ts).
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTimeToLiveCommand,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import {
  CreateTopicCommand,
  GetSubscriptionAttributesCommand,
  ListSubscriptionsByTopicCommand,
  ListTopicsCommand,
  SetSubscriptionAttributesCommand,
  SubscribeCommand,
  type SNSClient,
} from '@aws-sdk/client-sns';
import { CreateQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { PhysicalResource } from './intrinsics.ts';
import type { QueueSpec, SubscriptionSpec, TableSpec, Wiring } from './wiring.ts';

export const LOCAL_ACCOUNT_ID = '000000000000';

/** How long a table created on an endpoint may take to become ACTIVE (with its indexes). */
const TABLE_ACTIVE_TIMEOUT_MS = 5 * 60_000;

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
  /** The account the resources live in (from the topic's ARN; `000000000000` on the stand-ins). */
  accountId: string;
  /** Logical ids created by this call. */
  created: string[];
  /** Logical ids that existed already and were reused. */
  reused: string[];
}

export interface Clients {
  sqs: SQSClient;
  sns: SNSClient;
  dynamodb: DynamoDBClient;
  region: string;
  /**
   * The SQS endpoint the functions use. fauxqs (and LocalStack) name queues with a virtual host
   * (`http://sqs.<region>.localhost:<port>/…`) that does not resolve everywhere and differs from the SDK
   * endpoint; queue URLs are rewritten path-style onto this endpoint, which both accept. None on AWS.
   */
  sqsEndpoint?: string;
  /**
   * Give each queue created here a policy that lets the topics subscribed to it deliver (SNS → SQS needs it
   * on AWS; the stand-ins deliver without one). Default false.
   */
  queuePolicies?: boolean;
  /** Enable the tables' TTL on tables created here (`UpdateTimeToLive`; an endpoint without it is skipped). */
  timeToLive?: boolean;
  /** Differences between reused resources and the template (default console.warn). */
  warn?: (message: string) => void;
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

function errorName(error: unknown): string {
  const e = error as { name?: string; Code?: string; code?: string };
  return `${e.name ?? ''} ${e.Code ?? ''} ${e.code ?? ''}`;
}

const isMissingQueue = (error: unknown): boolean => /QueueDoesNotExist|NonExistentQueue/.test(errorName(error));
const isMissingTable = (error: unknown): boolean => /ResourceNotFound/.test(errorName(error));
const isUnknownOperation = (error: unknown): boolean => /UnknownOperation|NotImplemented|InvalidAction/.test(errorName(error));

/** `arn:<partition>:<service>:<region>:<account>:<resource>` → its parts. */
function arnParts(arn: string): { partition: string; account: string } {
  const [, partition = 'aws', , , account = ''] = arn.split(':');
  return { partition, account };
}

/** Same JSON value, whatever the key order. */
function sameJson(a: unknown, b: unknown): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
        : v;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

async function findTopicArn(sns: SNSClient, name: string): Promise<string | undefined> {
  let token: string | undefined;
  do {
    const page = await sns.send(new ListTopicsCommand({ NextToken: token }));
    const found = page.Topics?.find((t) => t.TopicArn?.endsWith(`:${name}`));
    if (found?.TopicArn) return found.TopicArn;
    token = page.NextToken;
  } while (token);
  return undefined;
}

async function findSubscriptionArn(sns: SNSClient, topicArn: string, queueArn: string): Promise<string | undefined> {
  let token: string | undefined;
  do {
    const page = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn, NextToken: token }));
    const found = page.Subscriptions?.find((s) => s.Protocol === 'sqs' && s.Endpoint === queueArn && s.SubscriptionArn?.startsWith('arn:'));
    if (found?.SubscriptionArn) return found.SubscriptionArn;
    token = page.NextToken;
  } while (token);
  return undefined;
}

/** The attributes the template gives a queue (the redrive policy with the DLQ's ARN). */
function queueAttributes(q: QueueSpec, queues: ReadonlyMap<string, LocalQueue>): Record<string, string> {
  const attributes: Record<string, string> = { VisibilityTimeout: String(q.visibilityTimeout) };
  if (q.fifo) attributes.FifoQueue = 'true';
  if (q.contentBasedDeduplication) attributes.ContentBasedDeduplication = 'true';
  if (q.messageRetentionPeriod !== undefined) attributes.MessageRetentionPeriod = String(q.messageRetentionPeriod);
  if (q.redrive) {
    const dlq = queues.get(q.redrive.deadLetterQueue);
    if (!dlq) throw new Error(`${q.logicalId}: dead-letter queue ${q.redrive.deadLetterQueue} is not a queue of this template`);
    attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: q.redrive.maxReceiveCount });
  }
  return attributes;
}

/** Same DLQ and receive count (endpoints answer `maxReceiveCount` as a number or a string). */
function sameRedrive(a: string, b: string): boolean {
  const [x, y] = [a, b].map((text) => JSON.parse(text) as { deadLetterTargetArn?: string; maxReceiveCount?: number | string });
  return x.deadLetterTargetArn === y.deadLetterTargetArn && Number(x.maxReceiveCount) === Number(y.maxReceiveCount);
}

/** What differs between the attributes a reused queue has and the ones the template gives it. */
function queueDifferences(wanted: Record<string, string>, actual: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(wanted)) {
    const have = actual[key];
    const same = key === 'RedrivePolicy' && have !== undefined ? sameRedrive(value, have) : have === value;
    if (!same) out.push(`${key} is ${have ?? '(unset)'}, the template says ${value}`);
  }
  return out;
}

/** The policy that lets `topicArns` deliver to the queue `queueArn` (what the template's QueuePolicy does). */
function snsDeliveryPolicy(queueArn: string, topicArns: string[]): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'claimflow-local-sns-delivery',
        Effect: 'Allow',
        Principal: { Service: 'sns.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: queueArn,
        Condition: { ArnEquals: { 'aws:SourceArn': topicArns } },
      },
    ],
  });
}

async function waitForTable(dynamodb: DynamoDBClient, name: string): Promise<TableDescription> {
  const deadline = Date.now() + TABLE_ACTIVE_TIMEOUT_MS;
  for (;;) {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: name }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every((i) => i.IndexStatus === undefined || i.IndexStatus === 'ACTIVE');
    if (Table && (Table.TableStatus === undefined || Table.TableStatus === 'ACTIVE') && indexesActive) return Table;
    if (Date.now() > deadline) throw new Error(`table ${name} is not ACTIVE after ${TABLE_ACTIVE_TIMEOUT_MS / 1000} s (${Table?.TableStatus})`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** What differs between a reused table and the template's (key schema and index names; the functions query the indexes). */
function tableDifferences(t: TableSpec, table: TableDescription): string[] {
  const out: string[] = [];
  if (!sameJson(table.KeySchema ?? [], t.create.KeySchema)) out.push(`key schema ${JSON.stringify(table.KeySchema)}, the template says ${JSON.stringify(t.create.KeySchema)}`);
  const have = new Set((table.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  for (const index of t.create.GlobalSecondaryIndexes ?? []) if (!have.has(index.IndexName)) out.push(`no index ${index.IndexName}`);
  return out;
}

/**
 * Ensures everything the wiring declares exists (creating what is missing, reusing what is there) and
 * resolves the physical names.
 *
 * @example
 * const local = await createResources(readWiring(template), { sqs, sns, dynamodb, region });
 * local.queues.get('BinderQueue')?.url;
 */
export async function createResources(wiring: Wiring, clients: Clients): Promise<LocalResources> {
  const { sqs, sns, dynamodb, region } = clients;
  const warn = clients.warn ?? ((m: string) => console.warn(m));
  const physical = new Map<string, PhysicalResource>();
  const queues = new Map<string, LocalQueue>();
  const topics = new Map<string, { logicalId: string; name: string; arn: string }>();
  const tables = new Map<string, { logicalId: string; name: string; arn: string }>();
  const created: string[] = [];
  const reused: string[] = [];

  for (const t of wiring.topics) {
    let arn = await findTopicArn(sns, t.name);
    if (arn) {
      reused.push(t.logicalId);
    } else {
      const out = await sns.send(
        new CreateTopicCommand({
          Name: t.name,
          Attributes: {
            ...(t.fifo ? { FifoTopic: 'true' } : {}),
            ...(t.contentBasedDeduplication ? { ContentBasedDeduplication: 'true' } : {}),
          },
        }),
      );
      arn = out.TopicArn!;
      created.push(t.logicalId);
    }
    topics.set(t.logicalId, { logicalId: t.logicalId, name: t.name, arn });
    physical.set(t.logicalId, { ref: arn, attributes: { TopicArn: arn, TopicName: t.name } });
  }
  const firstTopic = [...topics.values()][0];
  const { partition, account } = firstTopic ? arnParts(firstTopic.arn) : { partition: 'aws', account: '' };
  const accountId = /^\d{12}$/.test(account) ? account : LOCAL_ACCOUNT_ID;

  const pathStyle = (url: string): string => (clients.sqsEndpoint ? `${clients.sqsEndpoint.replace(/\/$/, '')}${new URL(url).pathname}` : url);
  for (const q of creationOrder(wiring.queues)) {
    const attributes = queueAttributes(q, queues);
    let url: string | undefined;
    try {
      url = pathStyle((await sqs.send(new GetQueueUrlCommand({ QueueName: q.name }))).QueueUrl!);
    } catch (error) {
      if (!isMissingQueue(error)) throw error;
    }
    let arn: string;
    if (url) {
      const got = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
      arn = got.Attributes!.QueueArn!;
      const differences = queueDifferences(attributes, got.Attributes ?? {});
      if (differences.length > 0) warn(`queue ${q.name} exists and is reused as it is: ${differences.join('; ')}`);
      reused.push(q.logicalId);
    } else {
      if (clients.queuePolicies) {
        const from = wiring.subscriptions.filter((s) => s.queue === q.logicalId).map((s) => topics.get(s.topic)?.arn).filter((a): a is string => Boolean(a));
        if (from.length > 0) attributes.Policy = snsDeliveryPolicy(`arn:${partition}:sqs:${region}:${accountId}:${q.name}`, from);
      }
      url = pathStyle((await sqs.send(new CreateQueueCommand({ QueueName: q.name, Attributes: attributes }))).QueueUrl!);
      const got = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
      arn = got.Attributes!.QueueArn!;
      created.push(q.logicalId);
    }
    const local: LocalQueue = { logicalId: q.logicalId, name: q.name, url, arn, fifo: q.fifo, visibilityTimeout: q.visibilityTimeout, redrive: q.redrive };
    queues.set(q.logicalId, local);
    physical.set(q.logicalId, { ref: local.url, attributes: { Arn: local.arn, QueueName: q.name, QueueUrl: local.url } });
  }

  for (const s of wiring.subscriptions) {
    const topic = topics.get(s.topic);
    const queue = queues.get(s.queue);
    if (!topic || !queue) throw new Error(`${s.logicalId}: topic ${s.topic} or queue ${s.queue} is not in the template`);
    const attributes = subscriptionAttributes(s);
    let arn = await findSubscriptionArn(sns, topic.arn, queue.arn);
    if (arn) {
      const existing = (await sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: arn }))).Attributes ?? {};
      for (const [name, value] of Object.entries(attributes)) {
        const same = name === 'FilterPolicy' ? existing[name] !== undefined && sameJson(JSON.parse(existing[name]), JSON.parse(value)) : existing[name] === value;
        if (same) continue;
        await sns.send(new SetSubscriptionAttributesCommand({ SubscriptionArn: arn, AttributeName: name, AttributeValue: value }));
        warn(`subscription of ${queue.name} to ${topic.name}: ${name} set to the template's ${value} (was ${existing[name] ?? 'unset'})`);
      }
      reused.push(s.logicalId);
    } else {
      const out = await sns.send(
        new SubscribeCommand({ TopicArn: topic.arn, Protocol: 'sqs', Endpoint: queue.arn, Attributes: attributes, ReturnSubscriptionArn: true }),
      );
      arn = out.SubscriptionArn!;
      created.push(s.logicalId);
    }
    physical.set(s.logicalId, { ref: arn, attributes: {} });
  }

  for (const t of wiring.tables) {
    const name = t.create.TableName;
    let table: TableDescription | undefined;
    try {
      table = (await dynamodb.send(new DescribeTableCommand({ TableName: name }))).Table;
    } catch (error) {
      if (!isMissingTable(error)) throw error;
    }
    if (table) {
      const differences = tableDifferences(t, table);
      if (differences.length > 0) warn(`table ${name} exists and is reused as it is: ${differences.join('; ')}`);
      reused.push(t.logicalId);
    } else {
      await dynamodb.send(new CreateTableCommand({ ...t.create, BillingMode: t.create.BillingMode ?? 'PAY_PER_REQUEST' }));
      table = await waitForTable(dynamodb, name);
      if (clients.timeToLive && t.ttlAttribute) {
        try {
          await dynamodb.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { AttributeName: t.ttlAttribute, Enabled: true } }));
        } catch (error) {
          if (!isUnknownOperation(error)) warn(`table ${name}: TTL on ${t.ttlAttribute} not enabled: ${(error as Error).message}`);
        }
      }
      created.push(t.logicalId);
    }
    const arn = table.TableArn ?? `arn:${partition}:dynamodb:${region}:${accountId}:table/${name}`;
    tables.set(t.logicalId, { logicalId: t.logicalId, name, arn });
    physical.set(t.logicalId, { ref: name, attributes: { Arn: arn } });
  }

  for (const f of wiring.functions) {
    const arn = `arn:${partition}:lambda:${region}:${accountId}:function:${f.functionName}`;
    physical.set(f.logicalId, { ref: f.functionName, attributes: { Arn: arn } });
  }
  return { physical, queues, topics, tables, accountId, created, reused };
}

function subscriptionAttributes(s: SubscriptionSpec): Record<string, string> {
  const attributes: Record<string, string> = {};
  if (s.rawMessageDelivery) attributes.RawMessageDelivery = 'true';
  if (s.filterPolicy !== undefined) attributes.FilterPolicy = JSON.stringify(s.filterPolicy);
  if (s.filterPolicyScope) attributes.FilterPolicyScope = s.filterPolicyScope;
  return attributes;
}
