/**
 * `functions/binder.ts` as deployed: the local stack runs it from source in its own worker thread with
 * the environment serverless.yml gives it (tables, queue URLs, kubeconfig), fed by the forwarder.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

let stack: Stack;
let core: CoreV1Api;
before(async () => {
  stack = await startTestStack({ withForwarder: true, storageApi: false });
  const kc = new KubeConfig();
  kc.loadFromString(stack.kubeApi!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await eventually(() => stack.forwarder!.isReady(), 30_000, 'forwarder ready');
});
after(async () => {
  await stack?.stop();
});

it('the deployed entry point binds a claim to the smallest sufficient volume', async () => {
  for (const [name, size] of [['fn-big', '5Gi'], ['fn-fit', '2Gi'], ['fn-small', '1Gi']]) {
    await core.createPersistentVolume({ body: { metadata: { name }, spec: { capacity: { storage: size }, accessModes: ['ReadWriteOnce'], storageClassName: 'fn', hostPath: { path: `/tmp/${name}` } } } });
  }
  // The binder itself turns new volumes Available; a claim only matches Available volumes.
  await eventually(async () => (await core.listPersistentVolume()).items.filter((v) => v.metadata?.name?.startsWith('fn-') && v.status?.phase === 'Available').length === 3, 60_000, 'volumes Available');
  await core.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: { metadata: { name: 'fn-claim' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } }, storageClassName: 'fn' } },
  });
  await eventually(async () => (await core.readNamespacedPersistentVolumeClaim({ name: 'fn-claim', namespace: 'default' })).status?.phase === 'Bound', 60_000, 'claim Bound');
  assert.equal((await core.readNamespacedPersistentVolumeClaim({ name: 'fn-claim', namespace: 'default' })).spec?.volumeName, 'fn-fit');
  const events = await core.listNamespacedEvent({ namespace: 'default' });
  assert.ok(!events.items.some((e) => e.involvedObject.name === 'fn-claim' && e.type === 'Warning'));
});
