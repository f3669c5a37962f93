/**
 * `functions/label-sync.ts` as deployed: the local stack runs it from source in its own worker thread
 * with the environment serverless.yml gives it, fed by the forwarder through the LabelSyncQueue, and
 * invoked with its schedule's input for the resync.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { NODE_ID_ANNOTATION } from '../../lib/label-sync/predicate.ts';
import type { LabelResyncReport } from '../../lib/label-sync/resync.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

let stack: Stack;
let core: CoreV1Api;
let storage: StorageOSClient;
before(async () => {
  stack = await startTestStack({ withForwarder: true, functionEnv: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' } });
  const kc = new KubeConfig();
  kc.loadFromString(stack.kubeApi!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
  await eventually(() => stack.forwarder!.isReady(), 30_000, 'forwarder ready');
});
after(async () => {
  await stack?.stop();
});

const labelsOf = async (name: string) => JSON.stringify(Object.entries((await storage.listNodes()).find((n) => n.name === name)?.labels ?? {}).sort());

it('the deployed entry point syncs node labels from the queue and runs the resync from its schedule input', async () => {
  await stack.storageApi!.state.addNode('fn-node');
  await core.createNode({ body: { metadata: { name: 'fn-node', labels: { a: '1' }, annotations: { [NODE_ID_ANNOTATION]: '{"csi.storageos.com":"x"}' } } } });
  const node = await core.readNode({ name: 'fn-node' });
  node.metadata!.labels = { a: '2', 'storageos.com/computeonly': 'true' };
  await core.replaceNode({ name: 'fn-node', body: node });
  await eventually(async () => (await labelsOf('fn-node')) === JSON.stringify([['a', '2'], ['storageos.com/computeonly', 'true']]), 30_000, 'labels applied');

  const target = stack.wiring.schedules.flatMap((s) => s.targets).find((t) => t.functionName === 'labelSync');
  assert.ok(target?.input, 'labelSync has a scheduled target with an input');
  const report = (await stack.invoke('labelSync', JSON.parse(target.input))) as LabelResyncReport;
  assert.equal(report.skipped, undefined);
  assert.ok(report.nodes >= 1, `the resync looked at the cached nodes (${JSON.stringify(report)})`);
  assert.equal(report.failed, 0);
});
