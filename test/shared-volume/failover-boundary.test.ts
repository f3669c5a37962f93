/**
 * A failover reaches the Endpoints within 10 s at any time, including around the boundary between two scheduled
 * invocations — end to end through the local stack: the API emulator watched by the forwarder (which fills the
 * object cache), SNS/SQS (fauxqs), dynalite, the embedded storage control plane, and `functions/shared-volume.ts`
 * in its worker with the template's environment, invoked as the schedule invokes it (`{"action":"poll"}`, with the
 * template's 60 s Lambda timeout).
 *
 * Time is compressed but not scaled: the poll interval is the default 5 s and the stop margin the default; only the
 * schedule period is 15 s instead of 60 s (the boundary behaves the same; fewer passes fit in between). The second
 * invocation is delivered 3.5 s late (EventBridge delivery delay plus a cold start), which widens the first gap, and
 * makes the third, on time, start while the second still polls: it must wait for the second's handover.
 *
 * Failovers are injected right after a poll's list call at the worst moments — mid-invocation, just before an
 * invocation's stop, in the gap between two invocations, and at a handover — and each is timed from the
 * moment the control plane moved the NFS server to the moment the Endpoints point at the new address.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import { ObjectCache } from '../../lib/state/cache.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually, queuedMessages, startTestStack, type Stack } from '../support/stack.ts';

const NS = 'default';
const PERIOD_MS = 15_000;
const LIST_ROUTE = '/v2/namespaces/{namespaceID}/volumes';

interface Failover {
  name: string;
  id: string;
  pv: string;
  /** When the NFS server moved. */
  at?: number;
  /** When the Endpoints carried the new address. */
  seenAt?: number;
  next?: { ip: string; port: number };
}

describe('a failover reaches the Endpoints within 10 s, also across invocations', () => {
  let stack: Stack;
  let core: CoreV1Api;
  let storageV1: StorageV1Api;
  let storage: StorageOSClient;
  const lists: number[] = [];
  const listWaiters: Array<{ after: number; resolve: () => void }> = [];

  before(async () => {
    stack = await startTestStack({
      withForwarder: true,
      functionEnv: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', SHARED_VOLUME_SCHEDULE_INTERVAL_MS: String(PERIOD_MS) },
    });
    storage = new StorageOSClient({ endpoint: stack.storageApi!.url, ...STORAGE_API_CREDENTIALS });
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
    storageV1 = kc.makeApiClient(StorageV1Api);
    await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
    // Every list call of the control plane's volumes, as it arrives (the poll's list; nothing else lists here).
    const counter = stack.storageApi!.requests;
    const count = counter.count.bind(counter);
    counter.count = (method: string, route: string) => {
      count(method, route);
      if (method !== 'GET' || route !== LIST_ROUTE) return;
      const now = Date.now();
      lists.push(now);
      for (const w of listWaiters.splice(0)) {
        if (now >= w.after) w.resolve();
        else listWaiters.push(w);
      }
    };
  });
  after(async () => {
    await stack?.stop();
  });

  const split = (endpoint: string) => {
    const i = endpoint.lastIndexOf(':');
    return { ip: endpoint.slice(0, i), port: Number(endpoint.slice(i + 1)) };
  };
  const sharedVolume = async (name: string): Promise<Failover> => {
    const pv = `pvc-fb-${name}`;
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: { metadata: { name: `fb-${name}` }, spec: { accessModes: ['ReadWriteMany'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } } },
    });
    const v = await storage.createVolume({
      namespace: NS,
      name: pv,
      sizeBytes: 1 << 20,
      labels: { 'csi.storage.k8s.io/pv/name': pv, 'csi.storage.k8s.io/pvc/name': `fb-${name}`, 'csi.storage.k8s.io/pvc/namespace': NS },
    });
    await stack.storageApi!.state.shareVolume(v.id);
    await storageV1.createVolumeAttachment({
      body: { metadata: { name: `csi-fb-${name}` }, spec: { attacher: 'csi.storageos.com', nodeName: 'local-node', source: { persistentVolumeName: pv } } },
    });
    return { name, id: v.id, pv };
  };
  /** Resolves right after the first list call that arrives at or after `at` has been answered. */
  const listAfter = (at: number) =>
    new Promise<void>((resolve) => listWaiters.push({ after: at, resolve: () => setTimeout(resolve, 30) }));
  /** Moves the NFS server of `f` and times until its Endpoints follow. */
  const failover = async (f: Failover): Promise<void> => {
    const moved = (await stack.storageApi!.state.failoverVolume(f.id)) as { nfs?: { serviceEndpoint?: string } };
    f.at = Date.now();
    f.next = split(moved.nfs!.serviceEndpoint!);
    for (;;) {
      const ep = await core.readNamespacedEndpoints({ name: f.pv, namespace: NS });
      if (ep.subsets?.[0]?.addresses?.[0]?.ip === f.next.ip && ep.subsets[0].ports?.[0]?.port === f.next.port) {
        f.seenAt = Date.now();
        return;
      }
      if (Date.now() - f.at > 30_000) return;
      await sleep(50);
    }
  };

  it('failovers mid-invocation, before a stop, between invocations and at a handover: each within 10 s', async () => {
    const volumes = await Promise.all(['mid', 'before-stop', 'between', 'at-handover'].map(sharedVolume));
    await eventually(async () => {
      for (const v of volumes) if ((await storage.getVolume({ namespace: NS, id: v.id })).labels['storageos.com/nfs/mount-endpoint'] === undefined) return false;
      return true;
    }, 20_000, 'all published by the event path');
    // The counts below start once the event path is done: every claim and Service in the object cache (the forwarder
    // wrote them; a read it cannot answer is a GET), nothing left to publish, and the sharedVolume queue empty (no
    // reconcile in flight, none hidden until a requeue after `busy` is due).
    const objects = new ObjectCache(stack.dynamodb.doc, stack.tables.cache);
    const cached = async (kind: string, key: string) => {
      const hit = await objects.get(stack.env.CLUSTER_ID!, kind, key);
      return hit !== undefined && !hit.deleted;
    };
    await eventually(async () => {
      for (const v of volumes) if (!(await cached('PersistentVolumeClaim', `${NS}/fb-${v.name}`)) || !(await cached('Service', `${NS}/${v.pv}`))) return false;
      await stack.forwarder!.flush();
      return (await queuedMessages(stack, 'SharedVolumeQueue')) === 0;
    }, 20_000, 'claims and Services cached, the sharedVolume queue empty');
    const [mid, beforeStop, between, atHandover] = volumes as [Failover, Failover, Failover, Failover];
    const getsBefore = { pvc: stack.kubeApi!.requests.count('get', 'persistentvolumeclaims'), services: stack.kubeApi!.requests.count('get', 'services') };

    const t0 = Date.now();
    const invoke = (delayMs: number) => sleep(delayMs).then(() => stack.invoke('sharedVolume', { action: 'poll' })) as Promise<{ owner: boolean; waitedMs: number; iterations: number }>;
    const invocations = [invoke(0), invoke(PERIOD_MS + 3500), invoke(2 * PERIOD_MS)];
    const failovers = [
      listAfter(t0 + 4500).then(() => failover(mid)), // just after the first invocation's second list
      listAfter(t0 + 10_500).then(() => failover(beforeStop)), // just after its last list before its stop
      sleep(PERIOD_MS + 1000).then(() => failover(between)), // after the first stopped, before the late second starts
      listAfter(t0 + 2 * PERIOD_MS + 300).then(() => failover(atHandover)), // at the second → third handover
    ];
    const summaries = await Promise.all(invocations);
    await Promise.all(failovers);

    const report = volumes.map((f) => `${f.name} at +${((f.at! - t0) / 1000).toFixed(1)} s: ${f.seenAt ? `${f.seenAt - f.at!} ms` : 'never'}`);
    console.log(`# failover → Endpoints: ${report.join('; ')}`);
    for (const f of volumes) {
      assert.ok(f.seenAt !== undefined, `${f.name}: the Endpoints followed`);
      assert.ok(f.seenAt - f.at! < 10_000, `${f.name}: failover → Endpoints in ${f.seenAt - f.at!} ms`);
    }
    const during = lists.filter((at) => at >= t0);
    let gap = 0;
    for (let i = 1; i < during.length; i++) gap = Math.max(gap, during[i]! - during[i - 1]!);
    console.log(`# ${during.length} list calls; largest gap between two ${gap} ms`);
    assert.ok(gap <= 8000, `no moment without a list for more than 8 s (largest gap ${gap} ms)`);
    assert.ok(summaries.every((s) => s.owner), 'every invocation polled in its turn');
    assert.ok(summaries[2]!.waitedMs > 0, 'the third invocation waited for the second to hand over');
    assert.equal(stack.kubeApi!.requests.count('get', 'persistentvolumeclaims') - getsBefore.pvc, 0, 'claims read from the object cache');
    assert.equal(stack.kubeApi!.requests.count('get', 'services') - getsBefore.services, 0, 'Services read from the object cache');
  });
});
