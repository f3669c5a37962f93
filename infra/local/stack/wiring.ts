/**
 * The wiring the local stack needs, read from the compiled CloudFormation template: topics, queues
 * (with their redrive policies), subscriptions (with filter policies), tables, functions, their SQS
 * event source mappings and their schedules. Nothing here is hand-listed: serverless.yml stays the
 * single source of truth (DESIGN §2.7).
 */
import type { CfnResource, CfnTemplate } from './template.ts';

export interface TopicSpec {
  logicalId: string;
  name: string;
  fifo: boolean;
  contentBasedDeduplication: boolean;
}

export interface QueueSpec {
  logicalId: string;
  name: string;
  fifo: boolean;
  contentBasedDeduplication: boolean;
  visibilityTimeout: number;
  messageRetentionPeriod?: number;
  /** The DLQ's logical id and the receives before a message moves there. */
  redrive?: { deadLetterQueue: string; maxReceiveCount: number };
}

export interface SubscriptionSpec {
  logicalId: string;
  topic: string;
  queue: string;
  rawMessageDelivery: boolean;
  filterPolicy?: unknown;
  filterPolicyScope?: string;
}

export interface TableSpec {
  logicalId: string;
  /** CreateTable input, as the template gives it (TTL, SSE and PITR are AWS-only and dropped). */
  create: {
    TableName: string;
    AttributeDefinitions: { AttributeName: string; AttributeType: 'S' | 'N' | 'B' }[];
    KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
    BillingMode?: 'PAY_PER_REQUEST' | 'PROVISIONED';
    GlobalSecondaryIndexes?: {
      IndexName: string;
      KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
      Projection: { ProjectionType?: 'ALL' | 'KEYS_ONLY' | 'INCLUDE'; NonKeyAttributes?: string[] };
    }[];
  };
  ttlAttribute?: string;
}

export interface FunctionDef {
  /** serverless.yml key (`binder`): the handler is `.build/<name>/index.<exportName>`. */
  name: string;
  logicalId: string;
  functionName: string;
  exportName: string;
  timeoutSeconds: number;
  memorySize: number;
  /** Environment variables, intrinsics unresolved. */
  environment: Record<string, unknown>;
  /** Logical id of the function's IAM role (`Role: !GetAtt <Role>.Arn`), when it has its own. */
  role?: string;
  /**
   * The Kubernetes groups the function's role maps to through its EKS access entry
   * (`AWS::EKS::AccessEntry` with `PrincipalArn` = the role); undefined when it has none (it does not
   * talk to the cluster).
   */
  kubernetesGroups?: string[];
}

export interface EventSourceSpec {
  logicalId: string;
  /** The function's serverless.yml key. */
  functionName: string;
  /** The queue's logical id. */
  queue: string;
  batchSize: number;
  /** ScalingConfig.MaximumConcurrency, when set. */
  maximumConcurrency?: number;
  enabled: boolean;
  reportBatchItemFailures: boolean;
}

export interface ScheduleSpec {
  logicalId: string;
  expression: string;
  enabled: boolean;
  targets: { functionName: string; input?: string }[];
}

export interface Wiring {
  topics: TopicSpec[];
  queues: QueueSpec[];
  subscriptions: SubscriptionSpec[];
  tables: TableSpec[];
  functions: FunctionDef[];
  eventSources: EventSourceSpec[];
  schedules: ScheduleSpec[];
}

/** Raised when the template has a shape the local stack does not understand. */
export class WiringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WiringError';
  }
}

/** The logical id an intrinsic reference (`Ref`, `Fn::GetAtt`) points at. */
export function referencedId(value: unknown): string {
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (typeof v.Ref === 'string') return v.Ref;
    const att = v['Fn::GetAtt'];
    if (Array.isArray(att)) return String(att[0]);
    if (typeof att === 'string') return att.split('.')[0];
  }
  throw new WiringError(`expected a Ref or Fn::GetAtt, got ${JSON.stringify(value)}`);
}

const bool = (v: unknown, fallback: boolean): boolean => (v === undefined ? fallback : v === true || v === 'true');

/**
 * Whether the template's condition `name` holds. Conditions are evaluated as CloudFormation does for the
 * functions serverless.yml uses (`Fn::Equals`, `Fn::Not`, `Fn::And`, `Fn::Or`, `Condition`) over literals:
 * osls has already put every stage parameter in.
 */
export function conditionHolds(template: CfnTemplate, name: string, seen: readonly string[] = []): boolean {
  if (seen.includes(name)) throw new WiringError(`condition ${name} refers to itself`);
  const body = template.Conditions?.[name];
  if (body === undefined) throw new WiringError(`condition ${name} is not in the template`);
  const evaluate = (value: unknown): boolean => {
    const entries = value && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value as Record<string, unknown>) : [];
    if (entries.length !== 1) throw new WiringError(`condition ${name}: cannot evaluate ${JSON.stringify(value)} (one function per object)`);
    const [[fn, args]] = entries;
    // CloudFormation's argument counts: Equals 2, Not 1, And/Or 2 to 10, Condition a name.
    const list = (min: number, max: number): unknown[] => {
      if (!Array.isArray(args) || args.length < min || args.length > max) {
        throw new WiringError(`condition ${name}: ${fn} takes ${min === max ? min : `${min} to ${max}`} arguments, got ${JSON.stringify(args)}`);
      }
      return args;
    };
    switch (fn) {
      case 'Fn::Equals': {
        const [a, b] = list(2, 2);
        return literal(a) === literal(b);
      }
      case 'Fn::Not':
        return !evaluate(list(1, 1)[0]);
      case 'Fn::And':
        return list(2, 10).every(evaluate);
      case 'Fn::Or':
        return list(2, 10).some(evaluate);
      case 'Condition':
        if (typeof args !== 'string') throw new WiringError(`condition ${name}: Condition takes a condition's name, got ${JSON.stringify(args)}`);
        return conditionHolds(template, args, [...seen, name]);
      default:
        throw new WiringError(`condition ${name}: ${fn} is not supported locally`);
    }
  };
  const literal = (value: unknown): string => {
    if (value && typeof value === 'object') throw new WiringError(`condition ${name}: ${JSON.stringify(value)} is not a literal`);
    return String(value);
  };
  return evaluate(body);
}

const NO_VALUE = Symbol('AWS::NoValue');

/**
 * `value` as CloudFormation sees it: every `Fn::If` replaced by the branch its condition picks, and every
 * `Ref: AWS::NoValue` dropped from its object or array (undefined when `value` itself is one).
 */
export function resolveIfs(template: CfnTemplate, value: unknown): unknown {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk).filter((x) => x !== NO_VALUE);
    if (!v || typeof v !== 'object') return v;
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 1 && entries[0][0] === 'Ref' && entries[0][1] === 'AWS::NoValue') return NO_VALUE;
    if (entries.length === 1 && entries[0][0] === 'Fn::If') {
      const args = entries[0][1];
      if (!Array.isArray(args) || args.length !== 3) throw new WiringError(`Fn::If needs [condition, then, else], got ${JSON.stringify(args)}`);
      return walk(conditionHolds(template, String(args[0])) ? args[1] : args[2]);
    }
    return Object.fromEntries(entries.map(([k, x]) => [k, walk(x)] as const).filter(([, x]) => x !== NO_VALUE));
  };
  const out = walk(value);
  return out === NO_VALUE ? undefined : out;
}

/** The resources CloudFormation would create: those whose `Condition` holds, each through {@link resolveIfs}. */
export function activeResources(template: CfnTemplate): Record<string, CfnResource> {
  const out: Record<string, CfnResource> = {};
  for (const [id, r] of Object.entries(template.Resources)) {
    if (r.Condition !== undefined && !conditionHolds(template, r.Condition)) continue;
    out[id] = resolveIfs(template, r) as CfnResource;
  }
  return out;
}

/** The logical id a role reference points at, or undefined (a literal ARN). */
function roleOf(value: unknown): string | undefined {
  try {
    return referencedId(value);
  } catch {
    return undefined;
  }
}

function ofType(template: CfnTemplate, type: string): [string, CfnResource][] {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === type);
}

/**
 * Reads the wiring from a compiled template.
 *
 * @example
 * const wiring = readWiring(await compileTemplate({ stage: 'local' }));
 * wiring.eventSources.find((e) => e.functionName === 'binder')?.batchSize; // 10
 */
export function readWiring(template: CfnTemplate): Wiring {
  const functionsById = new Map<string, FunctionDef>();
  for (const [logicalId, r] of ofType(template, 'AWS::Lambda::Function')) {
    const p = r.Properties ?? {};
    const m = /^\.build\/([^/]+)\/index\.([\w$]+)$/.exec(String(p.Handler));
    if (!m) throw new WiringError(`${logicalId}: handler ${p.Handler} is not .build/<name>/index.<export>`);
    functionsById.set(logicalId, {
      name: m[1],
      logicalId,
      functionName: String(p.FunctionName ?? m[1]),
      exportName: m[2],
      timeoutSeconds: Number(p.Timeout ?? 6),
      memorySize: Number(p.MemorySize ?? 1024),
      environment: { ...(p.Environment?.Variables ?? {}) },
      ...(roleOf(p.Role) ? { role: roleOf(p.Role) } : {}),
    });
  }
  // EKS access entries (whatever their Condition: locally every one applies)
  for (const [, r] of ofType(template, 'AWS::EKS::AccessEntry')) {
    const role = roleOf(r.Properties?.PrincipalArn);
    for (const fn of functionsById.values()) {
      if (role !== undefined && fn.role === role) fn.kubernetesGroups = [...(fn.kubernetesGroups ?? []), ...((r.Properties?.KubernetesGroups ?? []) as string[])];
    }
  }
  const fnName = (value: unknown): string => {
    const id = referencedId(value);
    const fn = functionsById.get(id);
    if (!fn) throw new WiringError(`no function ${id}`);
    return fn.name;
  };

  return {
    topics: ofType(template, 'AWS::SNS::Topic').map(([logicalId, r]) => ({
      logicalId,
      name: String(r.Properties?.TopicName ?? logicalId),
      fifo: bool(r.Properties?.FifoTopic, false),
      contentBasedDeduplication: bool(r.Properties?.ContentBasedDeduplication, false),
    })),
    queues: ofType(template, 'AWS::SQS::Queue').map(([logicalId, r]) => {
      const p = r.Properties ?? {};
      const redrive = p.RedrivePolicy as { deadLetterTargetArn: unknown; maxReceiveCount: number | string } | undefined;
      return {
        logicalId,
        name: String(p.QueueName ?? logicalId),
        fifo: bool(p.FifoQueue, false),
        contentBasedDeduplication: bool(p.ContentBasedDeduplication, false),
        visibilityTimeout: Number(p.VisibilityTimeout ?? 30),
        messageRetentionPeriod: p.MessageRetentionPeriod === undefined ? undefined : Number(p.MessageRetentionPeriod),
        redrive: redrive
          ? { deadLetterQueue: referencedId(redrive.deadLetterTargetArn), maxReceiveCount: Number(redrive.maxReceiveCount) }
          : undefined,
      };
    }),
    subscriptions: ofType(template, 'AWS::SNS::Subscription')
      .filter(([, r]) => r.Properties?.Protocol === 'sqs')
      .map(([logicalId, r]) => {
        const p = r.Properties ?? {};
        return {
          logicalId,
          topic: referencedId(p.TopicArn),
          queue: referencedId(p.Endpoint),
          rawMessageDelivery: bool(p.RawMessageDelivery, false),
          filterPolicy: resolveIfs(template, p.FilterPolicy),
          filterPolicyScope: p.FilterPolicyScope,
        };
      }),
    tables: ofType(template, 'AWS::DynamoDB::Table').map(([logicalId, r]) => {
      const p = r.Properties ?? {};
      return {
        logicalId,
        create: {
          TableName: String(p.TableName ?? logicalId),
          AttributeDefinitions: p.AttributeDefinitions,
          KeySchema: p.KeySchema,
          BillingMode: p.BillingMode,
          ...(p.GlobalSecondaryIndexes ? { GlobalSecondaryIndexes: p.GlobalSecondaryIndexes } : {}),
        },
        ttlAttribute: p.TimeToLiveSpecification?.Enabled ? p.TimeToLiveSpecification.AttributeName : undefined,
      };
    }),
    functions: [...functionsById.values()],
    eventSources: ofType(template, 'AWS::Lambda::EventSourceMapping').map(([logicalId, r]) => {
      const p = r.Properties ?? {};
      return {
        logicalId,
        functionName: fnName(p.FunctionName),
        queue: referencedId(p.EventSourceArn),
        batchSize: Number(p.BatchSize ?? 10),
        maximumConcurrency: p.ScalingConfig?.MaximumConcurrency === undefined ? undefined : Number(p.ScalingConfig.MaximumConcurrency),
        enabled: bool(p.Enabled, true),
        reportBatchItemFailures: (p.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
      };
    }),
    schedules: ofType(template, 'AWS::Events::Rule')
      .filter(([, r]) => r.Properties?.ScheduleExpression)
      .map(([logicalId, r]) => {
        const p = r.Properties ?? {};
        return {
          logicalId,
          expression: String(p.ScheduleExpression),
          enabled: (p.State ?? 'ENABLED') === 'ENABLED',
          targets: (p.Targets ?? [])
            .filter((t: { Arn: unknown }) => functionsById.has(referencedId(t.Arn)))
            .map((t: { Arn: unknown; Input?: string }) => ({ functionName: fnName(t.Arn), input: t.Input })),
        };
      }),
  };
}
