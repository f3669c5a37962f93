/**
 * What the CLI operates on: one stage's queues, tables and clients, found either
 *
 * - **locally**, from the local stack's `stack.json` (written by `npm start` in `.local/`): the fauxqs and
 *   dynalite endpoints — or the AWS-compatible endpoint `npm start -- --aws-endpoint URL` used, or, with
 *   `awsEndpoint: "aws"`, a real account's region through the SDK's default credential chain — the stage
 *   (`local` unless the file says otherwise) and the region (`eu-west-1` unless the file or `--region` says
 *   otherwise); queues are looked up by name, tables follow serverless.yml's names; or
 * - **on AWS**, from the stage's CloudFormation stack (`<service>-<stage>`, or `--stack-name`): its
 *   resources give the queue URLs (a queue's physical id) and table names, its outputs the API budget
 *   (`KubeApiQps`, `KubeApiBurst`). Credentials and region come from the SDK's default chain.
 *
 * @example
 * const target = await resolveTarget({ stackFile: '.local/stack.json' });
 * target.queues.find((q) => q.controller === 'binder')?.dlq.url;
 * target.close();
 */
import { readFile } from 'node:fs/promises';
import { CloudFormationClient, DescribeStacksCommand, ListStackResourcesCommand } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSqsClient } from '../runtime/sqs.ts';
import { KCM_CLIENT_DEFAULTS } from '../state/bucket.ts';
import { createDocumentClient, type DocumentClient } from '../state/client.ts';
import type { TableNames } from '../state/schema.ts';
import { CONTROLLERS, SERVICE, queueNames, tableNamesOf, UsageError } from './controllers.ts';
import { sdkClientConfig } from '../runtime/sdk-client.ts';

/** One queue as the CLI addresses it. */
export interface QueueRef {
  name: string;
  url: string;
}

/** A controller's queue and its DLQ. */
export interface ControllerQueues {
  controller: string;
  queue: QueueRef;
  dlq: QueueRef;
}

export interface Target {
  mode: 'local' | 'aws';
  /** One line saying what this is (`local stack .local/stack.json (stage local, eu-west-1)`). */
  description: string;
  stage: string;
  region: string;
  sqs: SQSClient;
  doc: DocumentClient;
  /** On AWS only: queue ages, failures and budget waits come from CloudWatch. */
  cloudwatch?: CloudWatchClient;
  /** Locally: the fauxqs endpoint whose inspection API gives queue ages without receiving. */
  fauxqsEndpoint?: string;
  tables: TableNames;
  queues: ControllerQueues[];
  /** The per-cluster API budget the functions run with. */
  budget: { qps: number; burst: number };
  /** The `service` dimension of the stage's metrics (`<service>-<stage>`; `claimflow` for stacks deployed before). */
  metricsService: string;
  close(): void;
}

export interface TargetOptions {
  /** A deployed stage (CloudFormation); absent: the local stack file. */
  stage?: string;
  region?: string;
  /** CloudFormation stack name (default `claimflow-<stage>`). */
  stackName?: string;
  /** The local stack's state file (default `.local/stack.json`). */
  stackFile?: string;
  /** Override the budget the target reports. */
  qps?: number;
  burst?: number;
  env?: NodeJS.ProcessEnv;
  /** Tests: clients to use instead of new ones. */
  clients?: { cloudformation?: Pick<CloudFormationClient, 'send'>; sqs?: SQSClient; doc?: DocumentClient; cloudwatch?: CloudWatchClient };
}

/** Raised when the target cannot be found or reached (exit code 2). */
export class TargetError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TargetError';
  }
}

/** Credentials the local stand-ins accept. */
const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;
const DEFAULT_LOCAL_REGION = 'eu-west-1';
export const DEFAULT_STACK_FILE = '.local/stack.json';

/** A deployed stage when `stage` is given (other than `local`), else the local stack file. */
export async function resolveTarget(options: TargetOptions = {}): Promise<Target> {
  const deployed = options.stage !== undefined && !options.stackFile && (options.stage !== 'local' || options.stackName !== undefined);
  return deployed ? resolveAwsTarget({ ...options, stage: options.stage! }) : resolveLocalTarget(options);
}

interface StackFile {
  sqs?: string | null;
  dynamodb?: string | null;
  region?: string;
  stage?: string;
  /** The endpoint `npm start -- --aws-endpoint` used: a URL, or `aws` (real AWS, default credentials). */
  awsEndpoint?: string | null;
}

/** `awsEndpoint` of a stack running on a real account. */
const REAL_AWS = 'aws';

/** The local stack from its `stack.json`. */
export async function resolveLocalTarget(options: TargetOptions = {}): Promise<Target> {
  const file = options.stackFile ?? DEFAULT_STACK_FILE;
  let stack: StackFile;
  try {
    stack = JSON.parse(await readFile(file, 'utf8')) as StackFile;
  } catch (error) {
    const missing = (error as { code?: string }).code === 'ENOENT';
    throw new TargetError(
      missing
        ? `no local stack: ${file} does not exist (start one with \`npm start\`, or pass --stage <stage> for a deployed stage)`
        : `cannot read ${file}: ${(error as Error).message}`,
    );
  }
  const realAws = stack.awsEndpoint === REAL_AWS;
  if (!realAws && (!stack.sqs || !stack.dynamodb)) throw new TargetError(`${file} names no sqs and dynamodb endpoints`);
  const region = options.region ?? stack.region ?? DEFAULT_LOCAL_REGION;
  const stage = options.stage ?? stack.stage ?? 'local';
  // on real AWS: the region's endpoints and the default credential chain, as the stack itself used
  const sqs = options.clients?.sqs ?? (realAws ? createSqsClient({ region }, options.env ?? process.env) : createSqsClient({ region, credentials: LOCAL_CREDENTIALS, endpoint: stack.sqs! }));
  const doc = options.clients?.doc ?? (realAws ? createDocumentClient({ region }) : createDocumentClient({ region, credentials: LOCAL_CREDENTIALS, endpoint: stack.dynamodb! }));
  const close = () => {
    if (!options.clients?.sqs) sqs.destroy();
    if (!options.clients?.doc) doc.destroy();
  };
  try {
    const endpoint = realAws ? undefined : stack.sqs!.replace(/\/$/, '');
    const where = endpoint ?? `AWS (${region})`;
    const urlOf = async (name: string): Promise<string> => {
      try {
        const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
        // fauxqs answers with a virtual host that may not resolve; address the queue path-style on the endpoint
        return endpoint ? `${endpoint}${new URL(QueueUrl!).pathname}` : QueueUrl!;
      } catch (error) {
        throw new TargetError(`queue ${name} not found on ${where} (region ${region}): is the stack running? (${(error as Error).message})`, { cause: error });
      }
    };
    const queues: ControllerQueues[] = [];
    for (const spec of CONTROLLERS) {
      const names = queueNames(SERVICE, stage, spec);
      queues.push({ controller: spec.name, queue: { name: names.queue, url: await urlOf(names.queue) }, dlq: { name: names.dlq, url: await urlOf(names.dlq) } });
    }
    return {
      mode: 'local',
      description: `local stack ${file}${stack.awsEndpoint ? ` on ${where}` : ''} (stage ${stage}, ${region})`,
      stage,
      region,
      sqs,
      doc,
      // only the embedded fauxqs has its inspection API for sure; status asks any other endpoint and falls back to unknown
      ...(endpoint ? { fauxqsEndpoint: endpoint } : {}),
      tables: tableNamesOf(SERVICE, stage),
      queues,
      budget: { qps: options.qps ?? KCM_CLIENT_DEFAULTS.qps, burst: options.burst ?? KCM_CLIENT_DEFAULTS.burst },
      metricsService: `${SERVICE}-${stage}`,
      close,
    };
  } catch (error) {
    close();
    throw error;
  }
}

/** A deployed stage from its CloudFormation stack. */
export async function resolveAwsTarget(options: TargetOptions & { stage: string }): Promise<Target> {
  const env = options.env ?? process.env;
  const region = options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  if (!region) throw new UsageError('no region: pass --region or set AWS_REGION');
  const stackName = options.stackName ?? `${SERVICE}-${options.stage}`;
  const cfn = options.clients?.cloudformation ?? new CloudFormationClient({ ...sdkClientConfig(), region });
  const physical = new Map<string, string>();
  let outputs: Record<string, string>;
  try {
    let token: string | undefined;
    do {
      const page = await cfn.send(new ListStackResourcesCommand({ StackName: stackName, NextToken: token }));
      for (const r of page.StackResourceSummaries ?? []) if (r.LogicalResourceId && r.PhysicalResourceId) physical.set(r.LogicalResourceId, r.PhysicalResourceId);
      token = page.NextToken;
    } while (token);
    const described = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
    outputs = Object.fromEntries((described.Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']));
  } catch (error) {
    throw new TargetError(`cannot read CloudFormation stack ${stackName} in ${region}: ${(error as Error).message}`, { cause: error });
  } finally {
    if (!options.clients?.cloudformation) (cfn as CloudFormationClient).destroy();
  }
  const need = (logicalId: string): string => {
    const id = physical.get(logicalId);
    if (!id) throw new TargetError(`stack ${stackName} has no ${logicalId}`);
    return id;
  };
  const queueRef = (logicalId: string): QueueRef => {
    const url = need(logicalId);
    return { name: url.slice(url.lastIndexOf('/') + 1), url };
  };
  const queues = CONTROLLERS.map((spec) => ({ controller: spec.name, queue: queueRef(`${spec.prefix}Queue`), dlq: queueRef(`${spec.prefix}Dlq`) }));
  const tables = { cache: need('CacheTable'), control: need('ControlTable') };
  const number = (text: string | undefined, fallback: number) => (text && Number(text) > 0 ? Number(text) : fallback);
  const sqs = options.clients?.sqs ?? createSqsClient({ region }, env);
  const doc = options.clients?.doc ?? createDocumentClient({ region });
  const cloudwatch = options.clients?.cloudwatch ?? new CloudWatchClient({ ...sdkClientConfig(), region });
  return {
    mode: 'aws',
    description: `stage ${options.stage} (stack ${stackName}, ${region})`,
    stage: options.stage,
    region,
    sqs,
    doc,
    cloudwatch,
    tables,
    queues,
    budget: {
      qps: options.qps ?? number(outputs.KubeApiQps, KCM_CLIENT_DEFAULTS.qps),
      burst: options.burst ?? number(outputs.KubeApiBurst, KCM_CLIENT_DEFAULTS.burst),
    },
    metricsService: outputs.MetricsService || SERVICE,
    close() {
      if (!options.clients?.sqs) sqs.destroy();
      if (!options.clients?.doc) doc.destroy();
      if (!options.clients?.cloudwatch) cloudwatch.destroy();
    },
  };
}

/** The controller's queues in `target` (a usage error when it has none). */
export function queuesOf(target: Target, controller: string): ControllerQueues {
  const found = target.queues.find((q) => q.controller === controller);
  if (!found) throw new UsageError(`no queues for controller ${controller}`);
  return found;
}

/** A queue's ARN (for StartMessageMoveTask). */
export async function queueArn(sqs: SQSClient, queue: QueueRef): Promise<string> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['QueueArn'] }));
  const arn = out.Attributes?.QueueArn;
  if (!arn) throw new TargetError(`no ARN for queue ${queue.name}`);
  return arn;
}
