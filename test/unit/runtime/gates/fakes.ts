/**
 * Fakes for the gate tables (one test file per gate, each a table: a record or an outcome in, what the gate
 * answers and what it counted out). No AWS stand-in: the services are fakes that record their calls.
 */
import type { Context, SQSRecord } from 'aws-lambda';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { MemoryEventRecorder } from '../../../../lib/kube/recorder.ts';
import type { CachedObject } from '../../../../lib/state/cache.ts';
import type { BackoffRecord } from '../../../../lib/state/backoff.ts';
import type { Job, Outcome } from '../../../../lib/runtime/job.ts';
import { MESSAGE_VERSION, type ClusterEvent } from '../../../../lib/runtime/message.ts';
import type { Controller } from '../../../../lib/runtime/reconcile.ts';
import { parse } from '../../../../lib/runtime/gates/parse.ts';
import { SqsRuntime, type RuntimeServices } from '../../../../lib/runtime/runtime.ts';

export const NOW = 1_000_000;
export const NEXT: Outcome = { kind: 'reconciled', result: undefined };

/** Metrics that keep `name → total` (and the dimensions a datapoint was published under). */
export function fakeMetrics() {
  const counts: Record<string, number> = {};
  const dimensioned: Array<Record<string, string>> = [];
  let dims: Record<string, string> = {};
  const metrics = {
    addMetric: (name: string, _unit: unknown, value: number) => {
      counts[name] = (counts[name] ?? 0) + value;
      if (Object.keys(dims).length) dimensioned.push({ name, ...dims });
    },
    addDimension: (key: string, value: string) => void (dims[key] = value),
    clearDimensions: () => void (dims = {}),
    publishStoredMetrics: () => undefined,
  };
  return { metrics: metrics as unknown as Metrics, counts, dimensioned };
}

export const quietLogger = (): Logger => {
  const log = { appendKeys: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
  return log as unknown as Logger;
};

/** A runtime with recording fakes for SQS, the backoff store, the sync markers and the key state read. */
export function fakeRuntime(options: {
  kinds?: Controller['kinds'];
  reconcile?: Controller['reconcile'];
  dlqUrl?: string;
  synced?: boolean;
  known?: BackoffRecord | null;
  failure?: Partial<BackoffRecord> & { delayMs?: number };
  /** What the key-state read finds: the key's cache entry and its backoff record (control table). */
  state?: { cached?: CachedObject; backoff?: BackoffRecord };
} = {}) {
  const calls: string[] = [];
  const { metrics, counts, dimensioned } = fakeMetrics();
  const recorder = new MemoryEventRecorder();
  const controller: Controller = {
    name: 'test',
    kinds: options.kinds ?? ['PersistentVolumeClaim'],
    reconcile: options.reconcile ?? (async () => undefined),
  };
  const rt = new SqsRuntime(controller, {
    logger: quietLogger(),
    metrics,
    now: () => NOW,
    dlqUrl: options.dlqUrl,
    queueUrl: 'https://sqs.invalid/test.fifo',
    maxFailures: 3,
    recorderFor: () => recorder,
  }, {});
  let syncReads = 0;
  const services = {
    sqs: { send: async (command: { constructor: { name: string }; input: unknown }) => void calls.push(`sqs ${command.constructor.name}`) },
    sync: { isListComplete: async () => (syncReads++, options.synced ?? true) },
    doc: {
      send: async (command: { input: { RequestItems?: Record<string, { Keys: Array<{ pk: string }> }> } }) => {
        const backoffPk = command.input.RequestItems?.control?.Keys[0]?.pk;
        return { Responses: options.state?.backoff && backoffPk ? { control: [{ ...options.state.backoff, pk: backoffPk }] } : {} };
      },
    },
    tables: { cache: 'cache', control: 'control' },
    cache: { entryOf: () => options.state?.cached },
    backoff: {
      clear: async () => void calls.push('backoff clear'),
      park: async (_id: unknown, dueAt: number) => void calls.push(`backoff park ${dueAt - NOW}`),
      recordFailure: async (_id: unknown, message: string, _ref: unknown, known: BackoffRecord | null) => {
        calls.push(`backoff failure ${message}`);
        const failures = (known?.failures ?? 0) + 1;
        return { record: { failures, givenUp: false, ...options.failure }, delayMs: options.failure?.delayMs ?? 5 };
      },
    },
  } as unknown as RuntimeServices;
  Object.defineProperty(rt, 'services', { value: services });
  return { rt, calls, counts, dimensioned, recorder, syncReads: () => syncReads };
}

export function event(partial: Partial<ClusterEvent> = {}): ClusterEvent {
  return { v: MESSAGE_VERSION, cluster: 'c1', kind: 'PersistentVolumeClaim', type: 'ADDED', key: 'ns/claim', uid: 'u1', resourceVersion: '7', observedAt: new Date(NOW).toISOString(), ...partial };
}

export function record(body: unknown, attributes: Partial<SQSRecord['attributes']> = {}): SQSRecord {
  return {
    messageId: 'm1',
    receiptHandle: 'r1',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 's', ApproximateFirstReceiveTimestamp: String(NOW), MessageGroupId: 'g1', ...attributes },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:test.fifo',
    awsRegion: 'us-east-1',
  };
}

export function job(rt: SqsRuntime<unknown>, body: unknown = event(), extra: Partial<Job> = {}): Job {
  return { record: record(body, extra.record?.attributes), lambdaContext: undefined, batch: { processed: new Set(), deferredGroups: new Map() }, log: rt.logger, ...extra };
}

/** A job that went through the parse gate. */
export async function parsedJob(rt: SqsRuntime<unknown>, e: ClusterEvent = event(), attributes: Partial<SQSRecord['attributes']> = {}): Promise<Job> {
  const j = job(rt, e, { record: record(e, attributes) });
  await parse(rt)(j, async () => NEXT);
  return j;
}

export const lambda = (remainingMs: number) => ({ getRemainingTimeInMillis: () => remainingMs }) as unknown as Context;

