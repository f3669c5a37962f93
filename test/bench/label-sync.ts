/**
 * `npm run bench:label-sync`: the node label sync through the whole local stack (emulator → forwarder →
 * SNS FIFO → LabelSyncQueue → label sync handler → embedded storage control plane over HTTP).
 *
 * `BENCH_NODES` StorageOS nodes (default 500) are created (annotated with the StorageOS CSI driver), then
 * each gets a label change, `BENCH_CONCURRENCY` (default 20) changes in flight. Reported: time from a
 * label change (before the API call) to the labels on the storage node, p50/p99/max; changes applied per
 * second; control-plane calls per changed node (lists and writes; upstream makes 2 lists + 1 write);
 * label sync messages per change. Then one resync run over all nodes with nothing to do (calls made).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import { performance } from 'node:perf_hooks';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { KubeClients, makeBudgetedApiClient } from '../../lib/kube/client.ts';
import { createLabelSyncHandler } from '../../lib/label-sync/handler.ts';
import { ObservedNodes } from '../../lib/label-sync/observed.ts';
import { NODE_ID_ANNOTATION } from '../../lib/label-sync/predicate.ts';
import type { LabelResyncReport } from '../../lib/label-sync/resync.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, startTestStack } from '../support/stack.ts';

const NODES = Number(process.env.BENCH_NODES ?? 500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 20);

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
};
const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;

async function pool<T>(items: T[], width: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await run(items[next++]);
  }));
}

async function main(): Promise<void> {
  let messages = 0;
  let handler: ReturnType<typeof createLabelSyncHandler> | undefined;
  const stack = await startTestStack({
    functions: {
      labelSync: async (event, context) => {
        if (Array.isArray(event?.Records)) messages += event.Records.length;
        return handler!(event, context);
      },
    },
    withForwarder: true,
  });
  try {
    const api = stack.storageApi!;
    handler = createLabelSyncHandler({
      config: { enabled: true, resyncIntervalMs: 3_600_000 },
      storage: new StorageOSClient({ endpoint: api.url, ...STORAGE_API_CREDENTIALS }),
      doc: stack.dynamodb.doc,
      clusters: [stack.env.CLUSTER_ID],
      runtime: {
        tables: stack.tables,
        sqs: stack.sqs.client,
        queueUrl: stack.queues.LabelSyncQueue.url,
        dlqUrl: stack.queues.LabelSyncDlq.url,
        kube: new KubeClients({ env: { KUBECONFIG: stack.kubeconfigPath } }),
      },
    });
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    const core = makeBudgetedApiClient(kc, CoreV1Api);
    await eventually(() => stack.forwarder!.isReady(), 30_000, 'forwarder ready');

    const names = Array.from({ length: NODES }, (_, i) => `bench-node-${String(i).padStart(4, '0')}`);
    for (const name of names) await api.state.addNode(name);
    await pool(names, CONCURRENCY, async (name) => {
      await core.createNode({ body: { metadata: { name, labels: { 'kubernetes.io/hostname': name }, annotations: { [NODE_ID_ANNOTATION]: '{"csi.storageos.com":"x"}' } } } });
    });
    // Every ADDED event handled (filtered, as upstream) before the measured changes.
    const observed = new ObservedNodes(stack.dynamodb.doc, stack.tables.control);
    await eventually(async () => (await Promise.all(names.map((n) => observed.get(stack.env.CLUSTER_ID, n)))).every(Boolean), 120_000, 'node creations handled');
    messages = 0;
    api.requests.reset();

    const startedAt = new Map<string, number>();
    const latency = new Map<string, number>();
    const began = performance.now();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const now = performance.now();
        for (const n of api.state.listNodes()) {
          if (n.labels.bench === 'v1' && startedAt.has(n.name) && !latency.has(n.name)) latency.set(n.name, now - startedAt.get(n.name)!);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await pool(names, CONCURRENCY, async (name) => {
      const node = await core.readNode({ name });
      node.metadata!.labels = { ...node.metadata!.labels, bench: 'v1', rack: `r${name.slice(-1)}` };
      startedAt.set(name, performance.now());
      await core.replaceNode({ name, body: node });
    });
    await eventually(() => latency.size === NODES, 300_000, 'every change applied');
    const elapsed = performance.now() - began;
    watching = false;
    await watcher;
    const calls = api.requests.snapshot();
    const lists = calls['GET /v2/nodes'] ?? 0;
    const writes = (calls['PUT /v2/nodes/{id}'] ?? 0) + (calls['PUT /v2/nodes/{id}/compute-only'] ?? 0);
    const values = [...latency.values()];

    api.requests.reset();
    const resync = (await stack.invoke('labelSync', { source: 'bench' })) as LabelResyncReport;
    const resyncCalls = api.requests.total();

    console.log(
      JSON.stringify(
        {
          bench: 'label-sync',
          nodes: NODES,
          concurrency: CONCURRENCY,
          labelChangeToControlPlaneMs: { p50: round(percentile(values, 50)), p99: round(percentile(values, 99)), max: round(Math.max(...values)) },
          changesPerSecond: round((NODES / elapsed) * 1000),
          controlPlaneCallsPerChangedNode: round((lists + writes) / NODES, 2),
          listsPerChangedNode: round(lists / NODES, 2),
          writesPerChangedNode: round(writes / NODES, 2),
          controlPlaneCalls: calls,
          messagesPerChange: round(messages / NODES, 2),
          resyncWithNothingToDo: { ...resync, controlPlaneCalls: resyncCalls },
        },
        null,
        2,
      ),
    );
  } finally {
    await stack.stop();
  }
}

await main();
