/**
 * The first label resync comes shortly after start, as upstream's (`-node-label-resync-delay`, 10 s),
 * not an interval later: the local stack as `npm start` runs it (every function from source in its own
 * worker, the schedules from serverless.yml armed) resyncs the seeded Node's labels, which were set before
 * the functions started and reach the storage node without any Node event doing it — the Node carries no
 * CSI driver annotation, so its Node events are filtered; only the resync pushes its labels.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { isStorageOSNode } from '../../lib/label-sync/predicate.ts';
import type { LabelResyncReport } from '../../lib/label-sync/resync.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { LOCAL_NODE_NAME } from '../../infra/local/stack/local-cluster.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const fired: { rule: string; result?: unknown; error?: unknown }[] = [];
let stack: Stack;
let startedAt = 0;
let readyAt = 0;
before(async () => {
  startedAt = Date.now();
  stack = await startTestStack({
    withForwarder: true,
    schedules: true,
    // only the label sync's schedule: the shared-volume poll would hold the stop for its whole run
    params: { sharedVolumePollScheduleEnabled: 'false', resyncScheduleEnabled: 'false' },
    functionEnv: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' },
    onScheduled: (rule, outcome) => fired.push({ rule, ...outcome }),
  });
  readyAt = Date.now();
});
after(async () => {
  await stack?.stop();
});

it('a label set before start reaches the storage node shortly after start, through the resync alone', async () => {
  const kc = new KubeConfig();
  kc.loadFromString(stack.kubeApi!.kubeconfig());
  const node = await kc.makeApiClient(CoreV1Api).readNode({ name: LOCAL_NODE_NAME });
  const labels = node.metadata!.labels!;
  assert.ok(Object.keys(labels).length > 0, 'the seeded Node has labels');
  assert.equal(isStorageOSNode(node), false, 'no CSI driver annotation: its Node events are filtered');

  const storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
  const storageLabels = async () => (await storage.listNodes()).find((n) => n.name === LOCAL_NODE_NAME)?.labels ?? {};
  await eventually(async () => JSON.stringify(Object.entries(await storageLabels()).sort()) === JSON.stringify(Object.entries(labels).sort()), 30_000, 'labels on the storage node');
  const appliedAfterMs = Date.now() - readyAt;
  assert.ok(appliedAfterMs < 30_000, `applied ${appliedAfterMs} ms after the stack was ready (${readyAt - startedAt} ms to start)`);

  const rule = stack.wiring.schedules.find((s) => s.targets.some((t) => t.functionName === 'labelSync'))!.logicalId;
  await eventually(() => fired.some((f) => f.rule === rule), 30_000, 'the firing at start reported');
  const runs = fired.filter((f) => f.rule === rule);
  assert.equal(runs.length, 1, 'one firing so far: the one at start');
  assert.equal(runs[0].error, undefined);
  const report = runs[0].result as LabelResyncReport;
  assert.deepEqual(report.clusters, [stack.env.CLUSTER_ID], 'the first tick took the period');
  assert.ok(report.differed >= 1 && report.writes >= 1, `the resync wrote the labels (${JSON.stringify(report)})`);

  // A tick within the interval does nothing (the schedule is every minute; NODE_LABEL_RESYNC_INTERVAL 1h).
  const target = stack.wiring.schedules.flatMap((s) => s.targets).find((t) => t.functionName === 'labelSync')!;
  const again = (await stack.invoke('labelSync', JSON.parse(target.input!))) as LabelResyncReport;
  assert.equal(again.skipped, 'not-due');
});
