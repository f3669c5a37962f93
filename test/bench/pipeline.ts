/**
 * `npm run bench:pipeline`: the event pipeline end to end on the local stack — API write (HTTP, through
 * @kubernetes/client-node) → emulator watch → forwarder (cache write, SNS FIFO publish) → filter
 * policies → SQS FIFO → event source mapping → the shared runtime (validation, sync gate, backoff gate)
 * → the start of `reconcile`. Every controller queue is consumed by the real runtime with a controller
 * whose reconcile only records when it started.
 *
 * Prints one JSON summary: latency p50/p99 (write → reconcile start, per delivered change), sustained
 * changes/s, and per object change: messages published, messages delivered, DynamoDB read/write
 * capacity units (counted with ReturnConsumedCapacity by an SDK middleware on every DynamoDB client).
 * The per-cluster API budget is on, as in a deployment (the runtime builds it from `KUBE_API_QPS` /
 * `KUBE_API_BURST`; here 400 / 600 unless set): these controllers send no API requests, so it costs nothing.
 *
 *   npm run bench:pipeline -- [--changes 300] [--concurrency 8]
 */
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { createSqsHandler } from '../../lib/runtime/handler.ts';
import { isBoundClaim, isUnprovisioned, isUnreleased, isUnshared, MESSAGE_VERSION, type ClusterEvent, type WatchedKind } from '../../lib/runtime/message.ts';
import type { Controller, ReconcileRequest } from '../../lib/runtime/reconcile.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { SqsEventSource } from '../../infra/local/stack/event-source.ts';
import { startStack, type LambdaHandler } from '../../infra/local/stack/stack.ts';
import { makeBudgetedApiClient } from '../../lib/kube/client.ts';

const { values } = parseArgs({
  options: {
    changes: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '8' },
  },
});
const CHANGES = Number(values.changes);
const CONCURRENCY = Number(values.concurrency);

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.KUBE_API_QPS ||= '400';
process.env.KUBE_API_BURST ||= '600';

/** Queue (logical id) → the controller consuming it and the kinds its filter admits (as serverless.yml). */
/**
 * Every controller queue, and which changes its subscription's filter policy admits (serverless.yml; the message
 * attributes come from the same predicates, lib/runtime/message.ts; the provisioner's as without
 * `provisionerAddFinalizer`, the default). A change is expected at each consumer that admits it.
 */
const CONSUMERS: { queue: string; name: string; kinds: WatchedKind[]; admits: (event: ClusterEvent) => boolean }[] = [
  { queue: 'BinderQueue', name: 'binder', kinds: ['PersistentVolume', 'PersistentVolumeClaim', 'StorageClass'], admits: () => true },
  {
    queue: 'ProvisionerQueue',
    name: 'provisioner',
    kinds: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass'],
    admits: (e) => !isBoundClaim(e) && !isUnprovisioned(e) && !isUnreleased(e),
  },
  { queue: 'SharedVolumeQueue', name: 'shared-volume', kinds: ['VolumeAttachment', 'PersistentVolumeClaim', 'Service', 'Endpoints'], admits: (e) => !isUnshared(e) },
  { queue: 'LabelSyncQueue', name: 'label-sync', kinds: ['Node'], admits: () => true },
];

interface Capacity {
  read: number;
  write: number;
  calls: number;
}

const READS = new Set(['GetItemCommand', 'QueryCommand', 'ScanCommand', 'BatchGetItemCommand', 'GetCommand', 'BatchGetCommand']);

/** Asks every DynamoDB call for its consumed capacity and adds it up. */
function countCapacity(doc: DocumentClient, into: Capacity): void {
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ReturnConsumedCapacity?: string };
      const command = String(context.commandName);
      const supports = !/Table|TimeToLive|Tags|Transact/.test(command);
      if (supports && input.ReturnConsumedCapacity === undefined) input.ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[] }).ConsumedCapacity;
      const units = [consumed ?? []].flat().reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      into.calls++;
      if (READS.has(command)) into.read += units;
      else into.write += units;
      return result;
    },
    { step: 'initialize', name: 'benchConsumedCapacity' },
  );
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const capacity: Capacity = { read: 0, write: 0, calls: 0 };
let published = 0;
/** `<controller>|<kind>|<key>|<rv>` → when reconcile started. */
const reconciled = new Map<string, number>();
/** Same keys → when the forwarder produced the message (`observedAt`). */
const observed = new Map<string, number>();

const stack = await startStack({ withForwarder: true, functions: {}, schedules: false, storageApi: false, warn: () => {} });
const sources: SqsEventSource[] = [];
try {
  countCapacity(stack.dynamodb.doc, capacity);
  stack.sns.client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const input = args.input as { PublishBatchRequestEntries?: unknown[] };
      if (context.commandName === 'PublishBatchCommand') published += input.PublishBatchRequestEntries?.length ?? 0;
      else if (context.commandName === 'PublishCommand') published += 1;
      return result;
    },
    { step: 'initialize', name: 'benchPublished' },
  );
  process.env.KUBECONFIG = stack.kubeconfigPath;

  for (const consumer of CONSUMERS) {
    const queue = stack.queues[consumer.queue];
    const controller: Controller = {
      name: consumer.name,
      kinds: consumer.kinds,
      async reconcile(request: ReconcileRequest) {
        const id = `${consumer.name}|${request.kind}|${request.key}|${request.event.resourceVersion}`;
        reconciled.set(id, Date.now());
        observed.set(id, Date.parse(request.event.observedAt));
      },
    };
    const handler = createSqsHandler(controller, {
      doc: stack.dynamodb.doc,
      tables: stack.tables,
      sqs: stack.sqs.client,
      queueUrl: queue.url,
      dlqUrl: stack.queues[consumer.queue.replace('Queue', 'Dlq')].url,
      logger: new Logger({ serviceName: 'bench', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'bench', serviceName: 'bench' }),
    });
    const es = stack.wiring.eventSources.find((e) => e.queue === consumer.queue);
    const source = new SqsEventSource({
      sqs: stack.sqs.client,
      queueUrl: queue.url,
      queueArn: queue.arn,
      region: stack.env.AWS_REGION,
      functionName: consumer.name,
      handler: handler as LambdaHandler,
      batchSize: es?.batchSize ?? 10,
      fifo: queue.fifo,
      maxConcurrency: 4,
      warn: () => {},
    });
    source.start();
    sources.push(source);
  }

  const kc = new KubeConfig();
  kc.loadFromFile(stack.kubeconfigPath);
  const core = makeBudgetedApiClient(kc, CoreV1Api);

  // the workload: a third new volumes, a third new claims, a third volume updates
  const third = Math.max(1, Math.floor(CHANGES / 3));
  type Change = { kind: WatchedKind; type: 'ADDED' | 'MODIFIED'; key: string; run: () => Promise<{ metadata?: { resourceVersion?: string; uid?: string } }> };
  const changes: Change[] = [];
  for (let i = 0; i < third; i++) {
    changes.push({
      kind: 'PersistentVolume',
      type: 'ADDED',
      key: `bench-pv-${i}`,
      run: () =>
        core.createPersistentVolume({
          body: {
            metadata: { name: `bench-pv-${i}` },
            spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'bench', hostPath: { path: `/tmp/bench-${i}` } },
          },
        }),
    });
    changes.push({
      kind: 'PersistentVolumeClaim',
      type: 'ADDED',
      key: `default/bench-claim-${i}`,
      run: () =>
        core.createNamespacedPersistentVolumeClaim({
          namespace: 'default',
          body: {
            metadata: { name: `bench-claim-${i}` },
            spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'bench', resources: { requests: { storage: '1Gi' } } },
          },
        }),
    });
  }
  for (let i = 0; i < third; i++) {
    changes.push({
      kind: 'PersistentVolume',
      type: 'MODIFIED',
      key: `bench-pv-${i}`,
      run: () =>
        core.patchPersistentVolume(
          { name: `bench-pv-${i}`, body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }] },
        ),
    });
  }

  const writtenAt = new Map<string, number>();
  const expected: string[] = [];
  const start = Date.now();
  let next = 0;
  // creates of one object come before its updates: updates are queued after every create
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < changes.length) {
        const change = changes[next++];
        const t0 = Date.now();
        const obj = await change.run();
        const rv = obj.metadata?.resourceVersion ?? '0';
        const event: ClusterEvent = {
          v: MESSAGE_VERSION, cluster: stack.env.CLUSTER_ID, kind: change.kind, type: change.type, key: change.key,
          uid: obj.metadata?.uid ?? '', resourceVersion: rv, observedAt: new Date(t0).toISOString(), object: obj as ClusterEvent['object'],
        };
        for (const c of CONSUMERS.filter((c) => c.kinds.includes(change.kind) && c.admits(event))) {
          const id = `${c.name}|${change.kind}|${change.key}|${rv}`;
          writtenAt.set(id, t0);
          expected.push(id);
        }
      }
    }),
  );
  const writesDone = Date.now();
  const deadline = Date.now() + 120_000;
  while (expected.some((id) => !reconciled.has(id)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const missing = expected.filter((id) => !reconciled.has(id));
  const lastStart = Math.max(...expected.filter((id) => reconciled.has(id)).map((id) => reconciled.get(id)!));
  const latencies = expected
    .filter((id) => reconciled.has(id))
    .map((id) => reconciled.get(id)! - writtenAt.get(id)!)
    .sort((a, b) => a - b);
  const done = expected.filter((id) => reconciled.has(id));
  const toForwarder = done.map((id) => observed.get(id)! - writtenAt.get(id)!).sort((a, b) => a - b);
  const toReconcile = done.map((id) => reconciled.get(id)! - observed.get(id)!).sort((a, b) => a - b);
  await stack.forwarder!.flush();
  const delivered = sources.reduce((sum, s) => sum + s.stats.recordsDelivered, 0);

  console.log(
    JSON.stringify(
      {
        bench: 'pipeline',
        changes: changes.length,
        writeConcurrency: CONCURRENCY,
        apiBudget: { qps: Number(process.env.KUBE_API_QPS), burst: Number(process.env.KUBE_API_BURST) },
        deliveriesExpected: expected.length,
        deliveriesMissing: missing.length,
        latencyMs: {
          p50: percentile(latencies, 50),
          p90: percentile(latencies, 90),
          p99: percentile(latencies, 99),
          max: latencies.at(-1),
        },
        latencyBreakdownMs: {
          writeToForwarderObserved: { p50: percentile(toForwarder, 50), p99: percentile(toForwarder, 99) },
          forwarderObservedToReconcile: { p50: percentile(toReconcile, 50), p99: percentile(toReconcile, 99) },
        },
        writesPerSecond: Math.round((changes.length / Math.max(1, writesDone - start)) * 1000),
        changesPerSecondEndToEnd: Math.round((changes.length / Math.max(1, lastStart - start)) * 1000),
        perChange: {
          messagesPublished: +(published / changes.length).toFixed(3),
          messagesDelivered: +(delivered / changes.length).toFixed(3),
          dynamodbReadUnits: +(capacity.read / changes.length).toFixed(3),
          dynamodbWriteUnits: +(capacity.write / changes.length).toFixed(3),
          dynamodbCalls: +(capacity.calls / changes.length).toFixed(3),
        },
        totals: { published, delivered, ...capacity },
        note: 'single process on the local stand-ins (emulator, fauxqs, dynalite); not AWS latency',
      },
      null,
      2,
    ),
  );
  if (missing.length > 0) process.exitCode = 1;
} finally {
  await Promise.all(sources.map((s) => s.stop()));
  await stack.stop();
}
