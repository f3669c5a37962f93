/**
 * The price table the benchmarks turn their counts into dollars with, and that conversion.
 *
 * List prices, US East (N. Virginia), on-demand, no free tier, no Savings Plans, first volume tier.
 * Taken from the AWS pricing pages named in `source` as they read in 2025 (the DynamoDB on-demand
 * figures are the ones in force since the 1 November 2024 price cut). eu-west-1, serverless.yml's default
 * region, lists the same Lambda, SQS and SNS prices and slightly higher DynamoDB request prices. Prices
 * change: check the pages before quoting a figure as a bill.
 *
 * What one operation costs is computed from what the benchmark counted while the operations ran:
 * - SNS FIFO: the forwarder's PublishBatch requests, each 64 KiB of its payload (message bodies and
 *   attributes) billed as one request, plus the payload in GB; each message SNS hands to a subscribed
 *   queue is a subscription message plus its payload.
 * - SQS FIFO: every request billed per 64 KiB of payload: SNS's delivery into the queue (one SendMessage
 *   per message), the event source mapping's non-empty ReceiveMessage and its DeleteMessageBatch, and the
 *   function's own calls (ChangeMessageVisibility, SendMessage of requeues). Empty receives are the
 *   mapping's idle polling: a fixed cost per queue, not per operation, so they are left out.
 * - Lambda: one request per invocation (batch) and GB-seconds = billed duration (each invocation rounded
 *   up to the millisecond) × the function's memory (serverless.yml `provider.memorySize`, 512 MB, arm64).
 *   Durations are measured on the local stand-ins, in one process on a shared machine: a rough guide.
 * - DynamoDB on-demand: read and write request units as DynamoDB reported them (ReturnConsumedCapacity,
 *   answered by dynalite with DynamoDB's rules: 4 KB per read unit, eventually consistent at half, 1 KB
 *   per write unit); a conditional write that fails is charged too and counted here as one write unit.
 * Not included: KMS (the topic's SSE key; SNS caches data keys, a few calls an hour), CloudWatch Logs and
 * metrics, data transfer (same region), the forwarder's compute (a pod in the cluster, a fixed cost).
 */

export const PRICES = {
  region: 'us-east-1',
  asOf: '2025 list prices (DynamoDB on-demand after the 2024-11-01 reduction)',
  sns: {
    source: 'https://aws.amazon.com/sns/pricing/ (FIFO topics)',
    fifoPublishPerMillionRequests: 0.3,
    fifoPublishPayloadPerGB: 0.017,
    fifoSubscriptionMessagesPerMillion: 0.01,
    fifoSubscriptionPayloadPerGB: 0.001,
    /** Each 64 KiB chunk of a publish request's payload is billed as one request. */
    requestChunkBytes: 64 * 1024,
  },
  sqs: {
    source: 'https://aws.amazon.com/sqs/pricing/ (FIFO requests, first 100 billion a month)',
    fifoPerMillionRequests: 0.5,
    requestChunkBytes: 64 * 1024,
  },
  lambda: {
    source: 'https://aws.amazon.com/lambda/pricing/ (Arm, first 7.5 billion GB-s a month)',
    perMillionRequests: 0.2,
    armPerGBSecond: 0.0000133334,
    x86PerGBSecond: 0.0000166667,
  },
  dynamodb: {
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/ (Standard table class)',
    perMillionWriteRequestUnits: 0.625,
    perMillionReadRequestUnits: 0.125,
  },
} as const;

/** What a run counted, in total over its operations. */
export interface CostCounts {
  /** Billable SNS publish requests (64 KiB chunks) and their payload. */
  snsPublishRequests: number;
  snsPublishBytes: number;
  /** Messages SNS delivered to queues and their payload. */
  snsDeliveries: number;
  snsDeliveryBytes: number;
  /** Billable SQS requests (64 KiB chunks), SNS deliveries included. */
  sqsRequests: number;
  lambdaInvocations: number;
  /** Σ billed ms × memory in GB / 1000. */
  lambdaGBSeconds: number;
  lambdaArchitecture: 'arm64' | 'x86_64';
  dynamoReadUnits: number;
  dynamoWriteUnits: number;
}

const MILLION = 1e6;
const GB = 1024 ** 3;

/** Dollars per `per` operations, by service, from totals counted over `operations` operations. */
export function costPer(counts: CostCounts, operations: number, per = 1000): Record<string, number> {
  const scale = per / operations;
  const sns =
    (counts.snsPublishRequests / MILLION) * PRICES.sns.fifoPublishPerMillionRequests +
    (counts.snsPublishBytes / GB) * PRICES.sns.fifoPublishPayloadPerGB +
    (counts.snsDeliveries / MILLION) * PRICES.sns.fifoSubscriptionMessagesPerMillion +
    (counts.snsDeliveryBytes / GB) * PRICES.sns.fifoSubscriptionPayloadPerGB;
  const sqs = (counts.sqsRequests / MILLION) * PRICES.sqs.fifoPerMillionRequests;
  const gbSecond = counts.lambdaArchitecture === 'arm64' ? PRICES.lambda.armPerGBSecond : PRICES.lambda.x86PerGBSecond;
  const lambdaRequests = (counts.lambdaInvocations / MILLION) * PRICES.lambda.perMillionRequests;
  const lambdaDuration = counts.lambdaGBSeconds * gbSecond;
  const dynamodb =
    (counts.dynamoReadUnits / MILLION) * PRICES.dynamodb.perMillionReadRequestUnits +
    (counts.dynamoWriteUnits / MILLION) * PRICES.dynamodb.perMillionWriteRequestUnits;
  const usd = (n: number): number => Number((n * scale).toPrecision(3));
  return {
    sns: usd(sns),
    sqs: usd(sqs),
    lambdaRequests: usd(lambdaRequests),
    lambdaDuration: usd(lambdaDuration),
    dynamodb: usd(dynamodb),
    total: usd(sns + sqs + lambdaRequests + lambdaDuration + dynamodb),
  };
}

/** Billable requests for one request of `bytes` payload: one per started 64 KiB, at least one. */
export function chunks(bytes: number, chunkBytes = 64 * 1024): number {
  return Math.max(1, Math.ceil(bytes / chunkBytes));
}
