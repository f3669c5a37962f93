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
 * Not measured here: claim created → Bound through the forwarder, SNS/SQS and the binder (the whole
 * local stack); that end-to-end figure belongs to the pipeline benchmark.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import { performance } from 'node:perf_hooks';
import { KubeEventRecorder, type MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { createProvisionerController } from '../../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { StorageOSProvisioner, STORAGEOS_DRIVER } from '../../lib/provisioner/provisioners/storageos.ts';
import { CLUSTER, startProvisionerStack } from '../provisioner/stack.ts';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const perClaim = (counts: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Math.round((v / CLAIMS) * 100) / 100]));

async function main(): Promise<void> {
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
    console.log(JSON.stringify(report, null, 2));
  } finally {
    await stack.stop();
  }
}

await main();
