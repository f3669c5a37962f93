/**
 * `npm run bench:provisioner`: the provisioner function's cost and latency per claim, measured at the
 * controller against the stand-ins (Kubernetes API emulator, dynalite, embedded StorageOS control plane).
 *
 * For each of `BENCH_CLAIMS` claims (default 200, `BENCH_CONCURRENCY` at a time, default 10): create the
 * claim, observe it into the cache (the forwarder's write), reconcile it (one queue message), and time
 * claim sync start → PV saved; then mark the PV Released (the binder's write) and reconcile the PV,
 * timing the deletion. Reported: p50/p99 of both, and per claim: storage API calls, Kubernetes API
 * requests by verb (events included), DynamoDB requests by operation (event correlation included),
 * reconciles (messages).
 *
 * Part 2 — through the whole local stack (emulator → forwarder → SNS FIFO → SQS FIFO → binder and
 * provisioner → emulator and the embedded control plane; cache in dynalite): `BENCH_STACK_CLAIMS` claims
 * (default 100) of the stack's default class `local` created back to back. Reported: provision latency
 * p50/p99 from claim creation to Bound (observed in the emulator's store), and per provisioned claim:
 * storage API calls, Kubernetes API writes by verb and resource (the provisioner's and the binder's,
 * events included), provisioner messages, and the provisioner's DynamoDB requests and consumed capacity
 * units (its own client, with ReturnConsumedCapacity). Both functions run in process (as their
 * handlers, built as functions/*.ts build them) so their messages and DynamoDB calls can be counted.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { performance } from 'node:perf_hooks';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { KubeClients } from '../../lib/kube/client.ts';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { createDocumentClient } from '../../lib/state/client.ts';
import { COMPONENT as BINDER_COMPONENT } from '../../lib/binder/constants.ts';
import { createBinderController } from '../../lib/binder/controller.ts';
import { runtimeOptionsFor } from '../../lib/provisioner/controller.ts';
import { LocalProvisioner } from '../../lib/provisioner/provisioners/local.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, startTestStack } from '../support/stack.ts';
import { KubeEventRecorder, type MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { createProvisionerController } from '../../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { StorageOSProvisioner, STORAGEOS_DRIVER } from '../../lib/provisioner/provisioners/storageos.ts';
import { CLUSTER, startProvisionerStack } from '../provisioner/stack.ts';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const STACK_CLAIMS = Number(process.env.BENCH_STACK_CLAIMS ?? 100);

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const perClaim = (counts: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Math.round((v / CLAIMS) * 100) / 100]));

async function controllerOnly(): Promise<Record<string, unknown>> {
  const stack = await startProvisionerStack();
  try {
    await stack.createClass('storageos', STORAGEOS_DRIVER, { reclaimPolicy: 'Delete' });
    // Events go to the API as in a deployment (with their DynamoDB correlation records), so they count.
    stack.recorder = new KubeEventRecorder({ api: stack.core, component: 'provisioner', cluster: CLUSTER, doc: stack.db.doc, table: stack.db.tables.control }) as unknown as MemoryEventRecorder;
    const controller = createProvisionerController({ options: provisionerOptionsFromEnv({}), provisioner: new StorageOSProvisioner(stack.storage) });

    const dynamo: Record<string, number> = {};
    stack.db.doc.middlewareStack.add((next, context) => async (args) => {
      const op = String((context as { commandName?: string }).commandName ?? 'unknown').replace(/Command$/, '');
      dynamo[op] = (dynamo[op] ?? 0) + 1;
      return next(args);
    }, { step: 'initialize', name: 'benchCounter' });

    const names = Array.from({ length: CLAIMS }, (_, i) => `bench-${i}`);
    const uids: string[] = [];
    for (const name of names) uids.push((await stack.createClaim(name, 'storageos', STORAGEOS_DRIVER)).metadata.uid!);
    stack.kube.requests.reset();
    stack.storageApi.requests.reset();
    for (const k of Object.keys(dynamo)) delete dynamo[k];

    const provisionMs: number[] = [];
    let reconciles = 0;
    for (let i = 0; i < CLAIMS; i += CONCURRENCY) {
      await Promise.all(names.slice(i, i + CONCURRENCY).map(async (name) => {
        const t0 = performance.now();
        await stack.reconcile(controller, 'PersistentVolumeClaim', `default/${name}`);
        provisionMs.push(performance.now() - t0);
        reconciles++;
      }));
    }
    const provisionCost = { storage: stack.storageApi.requests.total(), kube: stack.kube.requests.snapshot(), dynamo: { ...dynamo } };

    // The binder's part (not counted): the claims are gone, the PVs Released.
    for (const uid of uids) {
      const pv = await stack.core.readPersistentVolume({ name: `pvc-${uid}` });
      pv.status = { phase: 'Released' };
      await stack.core.replacePersistentVolumeStatus({ name: `pvc-${uid}`, body: pv });
      await stack.observe('PersistentVolume', `pvc-${uid}`);
    }
    stack.kube.requests.reset();
    stack.storageApi.requests.reset();
    for (const k of Object.keys(dynamo)) delete dynamo[k];
    const deleteMs: number[] = [];
    for (let i = 0; i < CLAIMS; i += CONCURRENCY) {
      await Promise.all(uids.slice(i, i + CONCURRENCY).map(async (uid) => {
        const t0 = performance.now();
        await stack.reconcile(controller, 'PersistentVolume', `pvc-${uid}`);
        deleteMs.push(performance.now() - t0);
      }));
    }
    const deleteCost = { storage: stack.storageApi.requests.total(), kube: stack.kube.requests.snapshot(), dynamo: { ...dynamo } };
    const left = (await stack.storage.listVolumes('default')).length;

    provisionMs.sort((a, b) => a - b);
    deleteMs.sort((a, b) => a - b);
    const report = {
      claims: CLAIMS,
      concurrency: CONCURRENCY,
      provision: {
        p50Ms: Math.round(percentile(provisionMs, 50) * 10) / 10,
        p99Ms: Math.round(percentile(provisionMs, 99) * 10) / 10,
        reconcilesPerClaim: reconciles / CLAIMS,
        storageCallsPerClaim: provisionCost.storage / CLAIMS,
        kubeRequestsPerClaim: perClaim(provisionCost.kube),
        dynamoRequestsPerClaim: perClaim(provisionCost.dynamo),
      },
      delete: {
        p50Ms: Math.round(percentile(deleteMs, 50) * 10) / 10,
        p99Ms: Math.round(percentile(deleteMs, 99) * 10) / 10,
        storageCallsPerClaim: deleteCost.storage / CLAIMS,
        kubeRequestsPerClaim: perClaim(deleteCost.kube),
        dynamoRequestsPerClaim: perClaim(deleteCost.dynamo),
        backendVolumesLeft: left,
      },
    };
    return report;
  } finally {
    await stack.stop();
  }
}

const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Counts DynamoDB requests and consumed capacity units on a document client. */
function meter(doc: DynamoDBDocumentClient): { requests: () => number; units: () => number } {
  let requests = 0;
  let units = 0;
  doc.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (!('TransactItems' in input)) input.ReturnConsumedCapacity = 'TOTAL';
      requests++;
      const out = await next(args);
      const consumed = (out.output as { ConsumedCapacity?: { CapacityUnits?: number } | Array<{ CapacityUnits?: number }> }).ConsumedCapacity;
      for (const c of Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) units += c.CapacityUnits ?? 0;
      return out;
    },
    { step: 'initialize', name: 'benchMeter' },
  );
  return { requests: () => requests, units: () => units };
}

async function throughStack(): Promise<Record<string, unknown>> {
  let binder: SqsHandler | undefined;
  let provisioner: SqsHandler | undefined;
  let messages = 0;
  const stack = await startTestStack({
    withForwarder: true,
    functions: {
      binder: async (event, context) => binder!(event, context),
      provisioner: async (event, context) => {
        messages += event.Records.length;
        return provisioner!(event, context);
      },
    },
  });
  try {
    const region = stack.env.AWS_REGION ?? 'eu-west-1';
    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const kube = new KubeClients({ env: { KUBECONFIG: stack.kubeconfigPath } });
    const binderDoc = createDocumentClient({ endpoint: stack.dynamodb.endpoint, region, credentials });
    binder = createSqsHandler(createBinderController({ sqs: stack.sqs.client, queueUrl: stack.queues.BinderQueue.url }), {
      component: BINDER_COMPONENT, doc: binderDoc, tables: stack.tables, sqs: stack.sqs.client, queueUrl: stack.queues.BinderQueue.url,
      dlqUrl: stack.queues.BinderDlq.url, kube, syncWaitMs: 100,
    });
    const provisionerDoc = createDocumentClient({ endpoint: stack.dynamodb.endpoint, region, credentials });
    const dynamo = meter(provisionerDoc);
    const options = provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local' });
    const storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
    provisioner = createSqsHandler(createProvisionerController({ options, provisioner: new LocalProvisioner(storage) }), {
      ...runtimeOptionsFor(options), component: 'provisioner', doc: provisionerDoc, tables: stack.tables, sqs: stack.sqs.client,
      queueUrl: stack.queues.ProvisionerQueue.url, dlqUrl: stack.queues.ProvisionerDlq.url, kube, syncWaitMs: 100,
    });
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);

    const created = new Map<string, number>();
    const bound = new Map<string, number>();
    const unsubscribe = stack.kubeApi!.store.subscribe((e) => {
      const name = e.object.metadata?.name;
      if (e.resource === '/persistentvolumeclaims' && name && (e.object as { status?: { phase?: string } }).status?.phase === 'Bound' && !bound.has(name)) {
        bound.set(name, performance.now());
      }
    });
    stack.kubeApi!.requests.reset();
    stack.storageApi!.requests.reset();
    messages = 0;
    const started = performance.now();
    for (let i = 0; i < STACK_CLAIMS; i++) {
      const name = `stack-${i}`;
      created.set(name, performance.now());
      await core.createNamespacedPersistentVolumeClaim({
        namespace: 'default',
        body: { metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
      });
    }
    await eventually(() => bound.size >= STACK_CLAIMS, 600_000, 'claims Bound');
    const finished = Math.max(...bound.values());
    await new Promise((r) => setTimeout(r, 1000)); // let the follow-up MODIFIED messages settle
    unsubscribe();
    const writes: Record<string, number> = {};
    for (const [key, n] of Object.entries(stack.kubeApi!.requests.snapshot())) {
      if (!/^(create|update|patch|delete) /.test(key) || key === 'create persistentvolumeclaims') continue;
      writes[key] = round(n / STACK_CLAIMS);
    }
    const latencies = [...bound.entries()].map(([name, t]) => t - created.get(name)!).sort((a, b) => a - b);
    return {
      claims: STACK_CLAIMS,
      provisionLatencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
      claimsBoundPerSecond: round(STACK_CLAIMS / ((finished - started) / 1000)),
      storageCallsPerClaim: round(stack.storageApi!.requests.total() / STACK_CLAIMS),
      apiWritesPerClaim: writes,
      provisionerMessagesPerClaim: round(messages / STACK_CLAIMS),
      provisionerDynamoRequestsPerClaim: round(dynamo.requests() / STACK_CLAIMS),
      provisionerDynamoCapacityUnitsPerClaim: round(dynamo.units() / STACK_CLAIMS),
      backendVolumes: stack.storageApi!.state.allVolumes().length,
    };
  } finally {
    await stack.stop();
  }
}

console.log(JSON.stringify({ controller: await controllerOnly(), stack: await throughStack() }, null, 2));
