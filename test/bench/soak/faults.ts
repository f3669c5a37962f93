/**
 * The soak's fault plan: faults drawn from the seed at random times in the fault window, overlapping, on
 * either cluster. Each is applied by the harness through the stand-ins' own fault hooks:
 * - Kubernetes API (the emulator's `faults.inject`): 409, 429 with Retry-After, 500, latency;
 * - forwarder: SIGKILL and restart (watch streams cut mid-flight), the restart meeting 410 Gone on a
 *   watch (so it relists);
 * - function sandboxes killed mid-batch;
 * - storage control plane (its `faults.add`): 5xx, dropped connections, the response lost after a volume
 *   was created.
 * - SQS, SNS and DynamoDB (the fault proxy in front of fauxqs and dynalite, infra/local/fault-proxy):
 *   throttling and 500s as each service sends them, latency, and DynamoDB writes done whose response is
 *   lost. One deployment serves both clusters, so these hit both (`cluster` is -1).
 * - watch streams cut mid-flight by the emulator (the forwarder keeps running and re-watches), one
 *   DynamoDB outage per run: every DynamoDB request fails with a 500 for a minute (a quarter of the fault
 *   window in shorter runs), and one spell of failing subscription reads per run: every
 *   `ListSubscriptionsByTopic` and `GetSubscriptionAttributes` the forwarders send fails (a 500 or
 *   throttling) for 90 s (a third of shorter windows), longer than the soak's 15-s refresh in any window of
 *   45 s or more, so a forwarder's read fails and it publishes every event until a read succeeds again
 *   (lib/forwarder/topic-subscriptions.ts).
 *   These three are drawn after the others from their own forks of the seed, so a seed plans the same other
 *   faults as before they existed.
 * `aws: false` plans none of the AWS faults (the plan of a seed then is the one from before they existed,
 * plus the watch cuts).
 */
import type { FaultSpec, Verb } from '../../../infra/local/kube-api/faults.ts';
import type { FaultRule } from '../../../infra/local/storage-api/faults.ts';
import type { AwsFaultRule } from '../../../infra/local/fault-proxy/proxy.ts';
import { Random } from './random.ts';

export type FaultKind =
  | 'api 409 Conflict'
  | 'api 429 Retry-After'
  | 'api 500'
  | 'api latency'
  | 'forwarder SIGKILL + restart'
  | 'watch 410 Gone on restart'
  | 'function killed mid-batch'
  | 'storage 5xx'
  | 'storage dropped connection'
  | 'storage response lost after create'
  | 'SQS throttling'
  | 'SQS 500'
  | 'SNS throttling'
  | 'DynamoDB throttling'
  | 'DynamoDB 500'
  | 'AWS latency'
  | 'DynamoDB response lost after write'
  | 'watch streams cut'
  | 'DynamoDB outage'
  | 'subscription reads failing';

export interface PlannedFault {
  atMs: number;
  kind: FaultKind;
  /** Index of the cluster (0 = A, 1 = B); -1: the deployment's AWS services, shared by both. */
  cluster: number;
  kube?: FaultSpec;
  storage?: FaultRule;
  /** A fault proxy rule (SQS, SNS, DynamoDB). */
  aws?: AwsFaultRule;
  /** Forwarder restart delay. */
  downMs?: number;
  /** Resource whose watch answers 410 on the restart. */
  goneResource?: string;
  /** The emulator cuts every open watch stream of the cluster (no 410: the forwarder re-watches). */
  cutWatches?: boolean;
  /** How long an `aws` rule stays (it applies to every matching request until removed). */
  durationMs?: number;
  function?: string;
}

const RESOURCES = ['persistentvolumes', 'persistentvolumeclaims', 'persistentvolumes/status', 'persistentvolumeclaims/status', 'nodes', 'services', 'endpoints', 'events'];
const WRITE_VERBS: Verb[] = ['create', 'update', 'patch', 'delete'];
const WATCHED = ['persistentvolumes', 'persistentvolumeclaims', 'nodes', 'storageclasses', 'volumeattachments'];
/** Operation sets an AWS fault takes (undefined: every operation of the service). */
const SQS_OPERATIONS = [['ReceiveMessage'], ['DeleteMessageBatch'], ['ChangeMessageVisibility', 'ChangeMessageVisibilityBatch'], ['SendMessage', 'SendMessageBatch'], undefined];
const DYNAMODB_OPERATIONS = [['GetItem', 'BatchGetItem', 'Query'], ['PutItem', 'UpdateItem', 'DeleteItem'], ['UpdateItem'], undefined];
const DYNAMODB_WRITES = ['PutItem', 'UpdateItem', 'DeleteItem'];

export interface FaultPlanOptions {
  seed: number;
  windowMs: number;
  /** Mean faults per second over both clusters. */
  rate: number;
  /** Functions that may be killed. */
  killable: string[];
  /** Kills only in the first part of the window (their messages return after the visibility timeout). */
  killWindowMs: number;
  /** Plan SQS/SNS/DynamoDB faults (default true). */
  aws?: boolean;
}

/** The plan, sorted by time. */
export function planFaults(options: FaultPlanOptions): PlannedFault[] {
  const random = new Random(options.seed ^ 0x5eed);
  const count = Math.max(1, Math.round((options.windowMs / 1000) * options.rate));
  const faults: PlannedFault[] = [];
  for (let i = 0; i < count; i++) {
    const r = random.fork(i);
    const cluster = r.int(0, 1);
    const atMs = r.int(0, options.windowMs);
    const kind = r.weighted<FaultKind>({
      'api 409 Conflict': 3,
      'api 429 Retry-After': 3,
      'api 500': 3,
      'api latency': 2,
      'forwarder SIGKILL + restart': 1,
      'watch 410 Gone on restart': 1,
      'function killed mid-batch': options.killable.length > 0 ? 2 : 0,
      'storage 5xx': 2,
      'storage dropped connection': 1,
      'storage response lost after create': 2,
      ...(options.aws === false
        ? {}
        : { 'SQS throttling': 2, 'SQS 500': 1, 'SNS throttling': 1, 'DynamoDB throttling': 2, 'DynamoDB 500': 1, 'AWS latency': 1, 'DynamoDB response lost after write': 1 }),
    } as Record<FaultKind, number>);
    const f: PlannedFault = { atMs, kind, cluster };
    switch (kind) {
      case 'api 409 Conflict':
        f.kube = { verb: r.pick(['update', 'patch'] as Verb[]), resource: r.pick(RESOURCES.slice(0, 5)), count: r.int(1, 8), status: 409 };
        break;
      case 'api 429 Retry-After':
        f.kube = { verb: r.pick([...WRITE_VERBS, 'get', 'list'] as Verb[]), resource: r.pick(RESOURCES), count: r.int(1, 10), status: 429, retryAfterSeconds: r.int(1, 3) };
        break;
      case 'api 500':
        f.kube = { verb: r.pick([...WRITE_VERBS, 'get'] as Verb[]), resource: r.pick(RESOURCES), count: r.int(1, 8), status: 500 };
        break;
      case 'api latency':
        f.kube = { verb: r.pick([...WRITE_VERBS, 'get', 'list'] as Verb[]), resource: r.pick(RESOURCES), count: r.int(5, 30), latencyMs: r.int(200, 2000) };
        break;
      case 'forwarder SIGKILL + restart':
        f.downMs = r.int(500, 4000);
        break;
      case 'watch 410 Gone on restart':
        f.downMs = r.int(200, 2000);
        f.goneResource = r.pick(WATCHED);
        break;
      case 'function killed mid-batch':
        f.function = r.pick(options.killable);
        f.atMs = r.int(0, options.killWindowMs);
        break;
      case 'storage 5xx':
        f.storage = { method: r.pick(['POST', 'DELETE', 'GET', 'PUT']), path: r.pick(['/v2/namespaces/*/volumes', '/v2/namespaces/*/volumes/*', '/v2/nodes', '/v2/nodes/*', '/v2/namespaces']), status: r.pick([500, 502, 503]), times: r.int(1, 6) };
        break;
      case 'storage dropped connection':
        f.storage = { path: r.pick(['/v2/namespaces/*/volumes', '/v2/namespaces/*/volumes/*', '/v2/nodes', '/v2/nodes/*']), drop: true, times: r.int(1, 4) };
        break;
      case 'storage response lost after create':
        f.storage = { method: 'POST', path: '/v2/namespaces/*/volumes', loseResponse: true, times: r.int(1, 3) };
        break;
      case 'SQS throttling':
      case 'SQS 500':
        f.cluster = -1;
        f.aws = withOperations({ service: 'sqs', kind: kind === 'SQS 500' ? 'internal' : 'throttle', times: r.int(1, 10) }, r.pick(SQS_OPERATIONS));
        break;
      case 'SNS throttling':
        f.cluster = -1;
        f.aws = { service: 'sns', operations: ['Publish', 'PublishBatch'], kind: 'throttle', times: r.int(1, 10) };
        break;
      case 'DynamoDB throttling':
        f.cluster = -1;
        f.aws = withOperations({ service: 'dynamodb', kind: 'throttle', times: r.int(1, 12), ...(r.int(0, 1) === 1 ? { code: 'ThrottlingException' } : {}) }, r.pick(DYNAMODB_OPERATIONS));
        break;
      case 'DynamoDB 500':
        f.cluster = -1;
        f.aws = withOperations({ service: 'dynamodb', kind: 'internal', times: r.int(1, 8) }, r.pick(DYNAMODB_OPERATIONS));
        break;
      case 'AWS latency':
        f.cluster = -1;
        f.aws = { service: r.pick(['sqs', 'sns', 'dynamodb'] as const), kind: 'latency', latencyMs: r.int(100, 1500), times: r.int(5, 30) };
        break;
      case 'DynamoDB response lost after write':
        f.cluster = -1;
        f.aws = { service: 'dynamodb', operations: DYNAMODB_WRITES, kind: 'lose-response', times: r.int(1, 2) };
        break;
    }
    faults.push(f);
  }
  // watch cuts: one in 16 of the faults above, at least one
  const cuts = Math.max(1, Math.round(count / 16));
  for (let i = 0; i < cuts; i++) {
    const r = random.fork(1_000_000 + i);
    faults.push({ atMs: r.int(0, options.windowMs), kind: 'watch streams cut', cluster: r.int(0, 1), cutWatches: true });
  }
  if (options.aws !== false) {
    const r = random.fork(2_000_000);
    const durationMs = Math.min(60_000, Math.round(options.windowMs / 4));
    faults.push({
      atMs: r.int(0, options.windowMs - durationMs),
      kind: 'DynamoDB outage',
      cluster: -1,
      durationMs,
      aws: { service: 'dynamodb', kind: 'internal', label: 'dynamodb outage (every operation) internal' },
    });
    const s = random.fork(3_000_000);
    const readsMs = Math.min(90_000, Math.round(options.windowMs / 3));
    const kind = s.pick(['internal', 'throttle'] as const);
    faults.push({
      atMs: s.int(0, options.windowMs - readsMs),
      kind: 'subscription reads failing',
      cluster: -1,
      durationMs: readsMs,
      aws: { service: 'sns', operations: ['ListSubscriptionsByTopic', 'GetSubscriptionAttributes'], kind, label: `sns subscription reads ${kind}` },
    });
  }
  return faults.sort((a, b) => a.atMs - b.atMs);
}

function withOperations(rule: AwsFaultRule, operations: string[] | undefined): AwsFaultRule {
  return operations ? { ...rule, operations } : rule;
}
