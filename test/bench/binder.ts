/**
 * `npm run bench:binder`: the binder's latency and cost per bind.
 *
 * Part 1 — through the whole local stack (emulator → forwarder → SNS FIFO → SQS FIFO → binder function →
 * emulator; cache in dynalite): `BENCH_VOLUMES` Available volumes (default 100), then `BENCH_CLAIMS`
 * claims (default 100) created back to back, each fitting exactly one volume. Reported: bind latency
 * p50/p99 from claim creation to Bound (observed in the emulator's store), claims bound per second,
 * Kubernetes API writes per bind (upstream makes 4), binder messages per bind, DynamoDB requests and
 * consumed capacity units per bind (the binder's own client, with ReturnConsumedCapacity).
 *
 * Part 2 — the cost of a bind against the number of existing volumes: the binder shell alone (emulator +
 * dynalite, cache filled directly) binds `BENCH_SCALE_CLAIMS` claims (default 30) one at a time with 100
 * and then 10,000 bigger volumes of the same class and access modes in the cache; reconcile latency p50
 * and DynamoDB items read per bind for both (target: within 20 %).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { performance } from 'node:perf_hooks';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startKubeApi } from '../../infra/local/kube-api/index.ts';
import { KubeClients } from '../../lib/kube/client.ts';
import { KubeEventRecorder } from '../../lib/kube/recorder.ts';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { createDocumentClient } from '../../lib/state/client.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { BinderApi } from '../../lib/binder/api.ts';
import { COMPONENT } from '../../lib/binder/constants.ts';
import { createBinderController, reconcileBinder, type BinderDeps } from '../../lib/binder/controller.ts';
import { startDynalite } from '../support/dynalite.ts';
import { eventually, startTestStack } from '../support/stack.ts';

const VOLUMES = Number(process.env.BENCH_VOLUMES ?? 100);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 100);
const SCALE_CLAIMS = Number(process.env.BENCH_SCALE_CLAIMS ?? 30);

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
};
const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Counts DynamoDB requests and consumed capacity on a document client. */
function meter(doc: DynamoDBDocumentClient): { requests: Record<string, number>; units: () => number; itemsRead: () => number } {
  const requests: Record<string, number> = {};
  let units = 0;
  let items = 0;
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (!('TransactItems' in input)) input.ReturnConsumedCapacity = 'TOTAL';
      const name = context.commandName ?? 'unknown';
      requests[name] = (requests[name] ?? 0) + 1;
      const out = await next(args);
      const output = out.output as { ConsumedCapacity?: { CapacityUnits?: number }; Count?: number; Item?: unknown };
      units += output.ConsumedCapacity?.CapacityUnits ?? 0;
      items += output.Count ?? (output.Item ? 1 : 0);
      return out;
    },
    { step: 'initialize', name: 'benchMeter' },
  );
  return { requests, units: () => units, itemsRead: () => items };
}

async function pipeline(): Promise<Record<string, unknown>> {
  let handler: SqsHandler | undefined;
  let messages = 0;
  const stack = await startTestStack({
    functions: {
      binder: async (event, context) => {
        messages += event.Records.length;
        return handler!(event, context);
      },
    },
    withForwarder: true,
    storageApi: false,
  });
  try {
    const doc = createDocumentClient({ endpoint: stack.dynamodb.endpoint, region: stack.env.AWS_REGION ?? 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const dynamo = meter(doc);
    const queueUrl = stack.queues.BinderQueue.url;
    handler = createSqsHandler(createBinderController({ sqs: stack.sqs.client, queueUrl }), {
      component: COMPONENT, doc, tables: stack.tables, sqs: stack.sqs.client, queueUrl, dlqUrl: stack.queues.BinderDlq.url,
      kube: new KubeClients({ env: { KUBECONFIG: stack.kubeconfigPath } }), syncWaitMs: 100,
    });
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    const core = kc.makeApiClient(CoreV1Api);
    await eventually(() => stack.forwarder!.isReady(), 30_000, 'forwarder ready');
    for (let i = 0; i < VOLUMES; i++) {
      await core.createPersistentVolume({ body: { metadata: { name: `bench-${i}` }, spec: { capacity: { storage: `${i + 1}Gi` }, accessModes: ['ReadWriteOnce'], storageClassName: 'bench', hostPath: { path: `/tmp/bench-${i}` } } } });
    }
    await eventually(async () => (await core.listPersistentVolume()).items.filter((v) => v.status?.phase === 'Available').length >= VOLUMES, 300_000, 'volumes Available');

    const created = new Map<string, number>();
    const bound = new Map<string, number>();
    const unsubscribe = stack.kubeApi!.store.subscribe((e) => {
      if (e.resource === '/persistentvolumeclaims' && (e.object as { status?: { phase?: string } }).status?.phase === 'Bound' && !bound.has(e.object.metadata.name!)) {
        bound.set(e.object.metadata.name!, performance.now());
      }
    });
    const writesBefore = ['persistentvolumes', 'persistentvolumes/status', 'persistentvolumeclaims', 'persistentvolumeclaims/status']
      .reduce((n, r) => n + stack.kubeApi!.requests.count('update', r), 0);
    messages = 0;
    const dynamoBefore = { requests: Object.values(dynamo.requests).reduce((a, b) => a + b, 0), units: dynamo.units() };
    const started = performance.now();
    for (let i = 0; i < CLAIMS; i++) {
      const name = `claim-${i}`;
      created.set(name, performance.now());
      await core.createNamespacedPersistentVolumeClaim({
        namespace: 'default',
        body: { metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${(i % VOLUMES) + 1}Gi` } }, storageClassName: 'bench' } },
      });
    }
    const expected = Math.min(CLAIMS, VOLUMES);
    await eventually(() => bound.size >= expected, 600_000, 'claims Bound');
    const finished = Math.max(...bound.values());
    await new Promise((r) => setTimeout(r, 1000)); // let the follow-up MODIFIED messages settle
    unsubscribe();
    const writes = ['persistentvolumes', 'persistentvolumes/status', 'persistentvolumeclaims', 'persistentvolumeclaims/status']
      .reduce((n, r) => n + stack.kubeApi!.requests.count('update', r), 0) - writesBefore;
    const latencies = [...bound.entries()].map(([name, t]) => t - created.get(name)!);
    return {
      volumes: VOLUMES,
      claims: CLAIMS,
      bindLatencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
      claimsBoundPerSecond: round(expected / ((finished - started) / 1000)),
      apiWritesPerBind: round(writes / expected),
      messagesPerBind: round(messages / expected),
      dynamoRequestsPerBind: round((Object.values(dynamo.requests).reduce((a, b) => a + b, 0) - dynamoBefore.requests) / expected),
      dynamoCapacityUnitsPerBind: round((dynamo.units() - dynamoBefore.units) / expected),
    };
  } finally {
    await stack.stop();
  }
}

async function scaling(): Promise<Record<string, unknown>> {
  const kube = await startKubeApi({ port: 0 });
  const db = await startDynalite();
  try {
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    const core = kc.makeApiClient(CoreV1Api);
    const dynamo = meter(db.doc);
    const cache = new ObjectCache(db.doc, db.tables.cache);
    const deps: BinderDeps = {
      cluster: 'bench', cache, api: new BinderApi(core),
      recorder: new KubeEventRecorder({ api: core, component: COMPONENT, cluster: 'bench', doc: db.doc, table: db.tables.control, onError: () => {} }),
      enqueue: async () => {},
    };
    const reconcile = (kind: 'PersistentVolume' | 'PersistentVolumeClaim', key: string) =>
      reconcileBinder({ kind, key, event: { v: 1, cluster: 'bench', kind, type: 'ADDED', key, uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } }, deps);
    const json = <T>(o: unknown): T => JSON.parse(JSON.stringify(o)) as T;
    let filled = 0;
    const fill = async (total: number): Promise<void> => {
      const batch: Promise<unknown>[] = [];
      for (; filled < total; filled++) {
        batch.push(cache.put('bench', 'PersistentVolume', {
          apiVersion: 'v1', kind: 'PersistentVolume',
          metadata: { name: `filler-${filled}`, uid: `filler-${filled}`, resourceVersion: '1' },
          spec: { capacity: { storage: `${100 + filled}Gi` }, accessModes: ['ReadWriteOnce'], storageClassName: 'scale', persistentVolumeReclaimPolicy: 'Retain' },
          status: { phase: 'Available' },
        }));
        if (batch.length >= 50) await Promise.all(batch.splice(0));
      }
      await Promise.all(batch);
    };
    const measure = async (tag: string) => {
      const latencies: number[] = [];
      const itemsBefore = dynamo.itemsRead();
      for (let i = 0; i < SCALE_CLAIMS; i++) {
        const pv = await core.createPersistentVolume({ body: { metadata: { name: `${tag}-pv-${i}` }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'scale', hostPath: { path: '/tmp/x' } } } });
        await cache.put('bench', 'PersistentVolume', json(pv));
        await reconcile('PersistentVolume', `${tag}-pv-${i}`);
        const pvc = await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name: `${tag}-claim-${i}` }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'scale' } } });
        await cache.put('bench', 'PersistentVolumeClaim', json(pvc));
        const t0 = performance.now();
        const outcome = await reconcile('PersistentVolumeClaim', `default/${tag}-claim-${i}`);
        latencies.push(performance.now() - t0);
        if (outcome.writes !== 4) throw new Error(`bind of ${tag}-claim-${i} made ${outcome.writes} writes`);
      }
      return { p50: percentile(latencies, 50), itemsReadPerBind: (dynamo.itemsRead() - itemsBefore) / SCALE_CLAIMS };
    };
    await fill(100);
    const small = await measure('small');
    await fill(10_000);
    const large = await measure('large');
    return {
      claimsPerSize: SCALE_CLAIMS,
      with100Volumes: { reconcileP50Ms: round(small.p50), itemsReadPerBind: round(small.itemsReadPerBind) },
      with10000Volumes: { reconcileP50Ms: round(large.p50), itemsReadPerBind: round(large.itemsReadPerBind) },
      latencyRatio: round(large.p50 / small.p50),
      withinTarget: large.p50 <= small.p50 * 1.2,
    };
  } finally {
    await kube.stop();
    await db.stop();
  }
}

const report = { pipeline: await pipeline(), scaling: await scaling() };
console.log(JSON.stringify({ bench: 'binder', ...report }, null, 2));
