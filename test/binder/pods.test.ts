/**
 * WaitForFirstConsumer asks which pods use a claim and are not scheduled. The binder asks the API server
 * for the unscheduled, unfinished pods only (a field selector), not every pod of the namespace.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { BinderApi } from '../../lib/binder/api.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import { findNonScheduledPodsByPVC } from '../../lib/binder/provision.ts';
import type { PersistentVolumeClaim } from '../../lib/binder/types.ts';

let kube: KubeApi;
let core: CoreV1Api;
let json: KubeJsonApi;
before(async () => {
  kube = await startKubeApi({ port: 0 });
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  json = kc.makeApiClient(KubeJsonApi);
});
after(() => kube.stop());

const pod = (name: string, claim: string, nodeName?: string): V1Pod => ({
  metadata: { name },
  spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }] },
});

test('listPods returns the unscheduled, unfinished pods of the namespace only, and the claim’s among them are found', async () => {
  const ns = 'wffc';
  await core.createNamespace({ body: { metadata: { name: ns } } });
  for (let i = 0; i < 40; i++) await core.createNamespacedPod({ namespace: ns, body: pod(`running-${i}`, 'other', 'node-a') });
  await core.createNamespacedPod({ namespace: ns, body: pod('scheduled-user', 'data', 'node-a') });
  await core.createNamespacedPod({ namespace: ns, body: pod('waiting-user', 'data') });
  await core.createNamespacedPod({ namespace: ns, body: pod('waiting-other', 'other') });
  const done = await core.createNamespacedPod({ namespace: ns, body: pod('finished-user', 'data') });
  await core.replaceNamespacedPodStatus({ namespace: ns, name: 'finished-user', body: { ...done, status: { phase: 'Succeeded' } } });

  const pods = await new BinderApi(json).listPods(ns);
  assert.deepEqual(pods.map((p) => p.metadata.name).sort(), ['waiting-other', 'waiting-user'], 'only unscheduled, unfinished pods come back');
  const claim = { metadata: { name: 'data', namespace: ns }, spec: {} } as unknown as PersistentVolumeClaim;
  assert.deepEqual(findNonScheduledPodsByPVC(claim, pods), ['waiting-user']);
});
