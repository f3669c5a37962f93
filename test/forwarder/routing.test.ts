import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { StoreEvent } from '../../infra/local/kube-api/types.ts';
import { QUEUE_FILTERS, QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import type { Forwarder } from '../../lib/forwarder/forwarder.ts';

const KIND_OF: Record<string, string> = {
  '/persistentvolumes': 'PersistentVolume',
  '/persistentvolumeclaims': 'PersistentVolumeClaim',
  '/nodes': 'Node',
  'storage.k8s.io/storageclasses': 'StorageClass',
};
const KINDS = ['PersistentVolume', 'PersistentVolumeClaim', 'Node', 'StorageClass'] as const;

const pv = (name: string, size = '1Gi') => ({
  apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name },
  spec: { capacity: { storage: size }, accessModes: ['ReadWriteOnce'], storageClassName: 'gold', hostPath: { path: `/tmp/${name}` } },
});
const pvc = (name: string) => ({
  apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'default' },
  spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'gold', resources: { requests: { storage: '1Gi' } } },
});
const node = (name: string) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { zone: 'a' } } });

describe('forwarder: every change reaches exactly the queues whose filter admits its kind, in order', () => {
  let env: StandIns;
  let forwarder: Forwarder;
  const truth: Array<{ kind: string; key: string; rv: string; type: string }> = [];
  let unsubscribe: () => void;

  before(async () => {
    env = await startStandIns();
    forwarder = await env.forwarder({ kinds: KINDS, httpPort: 0 });
    await eventually(() => forwarder.isReady(), 10_000, 'initial sync');
    unsubscribe = env.kube.store.subscribe((event: StoreEvent) => {
      const kind = KIND_OF[event.resource];
      if (!kind) return;
      const meta = event.object.metadata;
      truth.push({ kind, key: meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name!, rv: meta.resourceVersion!, type: event.type });
    });
  });
  after(async () => {
    unsubscribe?.();
    await env?.stop();
  });

  it('routes, orders and caches a mixed stream of changes', async () => {
    const store = env.kube.store;
    store.create('storage.k8s.io/storageclasses', { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'gold' }, provisioner: 'example.com/p' });
    for (let i = 0; i < 5; i++) {
      store.create('/persistentvolumes', pv(`pv-${i}`));
      store.create('/persistentvolumeclaims', pvc(`claim-${i}`));
      store.create('/nodes', node(`node-${i}`));
    }
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 5; i++) {
        const current = store.get({ resource: '/nodes', namespace: '', name: `node-${i}` })!;
        store.update('/nodes', { ...current, metadata: { ...current.metadata, labels: { zone: 'a', round: String(round) } } });
        const volume = store.get({ resource: '/persistentvolumes', namespace: '', name: `pv-${i}` })!;
        store.update('/persistentvolumes', { ...volume, metadata: { ...volume.metadata, labels: { round: String(round) } } });
      }
    }
    store.delete({ resource: '/nodes', namespace: '', name: 'node-4' });
    store.delete({ resource: '/persistentvolumes', namespace: '', name: 'pv-4' });

    const collector = new QueueCollector(env.messaging);
    const expectedFor = (queue: string) => truth.filter((t) => (QUEUE_FILTERS[queue] as string[]).includes(t.kind));
    await collector.until(
      () => Object.keys(QUEUE_FILTERS).every((q) => collector.received[q].length >= expectedFor(q).length),
      30_000,
      'every change on every queue',
    );
    await forwarder.flush();
    assert.equal(forwarder.backlog, 0, 'nothing left to publish after a flush');
    await collector.drain();

    for (const queue of Object.keys(QUEUE_FILTERS)) {
      const got = collector.received[queue];
      const want = expectedFor(queue);
      const id = (e: { kind: string; key: string; rv: string; type: string }) => `${e.kind} ${e.key} ${e.rv} ${e.type}`;
      assert.deepEqual(got.map((e) => id({ kind: e.kind, key: e.key, rv: e.resourceVersion, type: e.type })).sort(), want.map(id).sort(), `queue ${queue}`);
      // resourceVersion order per object.
      const lastRv = new Map<string, number>();
      for (const event of got) {
        const key = `${event.kind}/${event.key}`;
        assert.ok(Number(event.resourceVersion) > (lastRv.get(key) ?? 0), `${key} in order on ${queue}`);
        lastRv.set(key, Number(event.resourceVersion));
        assert.equal(event.cluster, 'c1');
        assert.equal((event.object?.metadata as any)?.resourceVersion, event.resourceVersion, 'object embedded');
      }
    }
    assert.ok(truth.some((t) => t.kind === 'PersistentVolumeClaim'), 'claims were part of the stream');
    assert.equal(collector.received['label-sync'].filter((e) => e.type === 'DELETED').length, 1);

    // The cache holds the final state; deleted objects are tombstones.
    const cache = new ObjectCache(env.db.doc, env.db.tables.cache, { indexer: indexAttributes });
    assert.equal((await cache.get('c1', 'Node', 'node-3'))?.object.metadata?.labels?.round, '3');
    assert.equal((await cache.get('c1', 'Node', 'node-4'))?.deleted, true);
    const sync = new SyncMarkers(env.db.doc, env.db.tables.control);
    assert.equal(await sync.isListComplete('c1', KINDS), true);
    const bookmark = await sync.getSync('c1', 'PersistentVolume');
    assert.ok(Number(bookmark?.rv) >= Number(truth.filter((t) => t.kind === 'PersistentVolume').at(-1)!.rv), 'bookmark caught up');
  });

  it('serves health, readiness and Prometheus metrics', async () => {
    const base = `http://127.0.0.1:${forwarder.port}`;
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /claimflow_forwarder_is_leader 1/);
    const published = [...metrics.matchAll(/^claimflow_forwarder_published_total\{kind="Node",type="MODIFIED"\} (\d+)/gm)];
    assert.equal(Number(published[0]?.[1]), 20);
    assert.match(metrics, /claimflow_forwarder_publish_lag_seconds_count \d+/);
    assert.match(metrics, /claimflow_forwarder_events_seen_total\{kind="Node",type="DELETED"\} 1/);
  });
});
