import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';

const node = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });

describe('forwarder: an expired resourceVersion (small watch history) → relist → converge', () => {
  let env: StandIns;
  let cache: ObjectCache;
  before(async () => {
    env = await startStandIns({ kube: { watchHistory: 5 } });
    cache = new ObjectCache(env.db.doc, env.db.tables.cache, { indexer: indexAttributes });
  });
  after(() => env?.stop());

  const relabel = (name: string, value: string) => {
    const current = env.kube.store.get({ resource: '/nodes', namespace: '', name })!;
    env.kube.store.update('/nodes', { ...current, metadata: { ...current.metadata, labels: { v: value } } });
  };

  async function assertCacheMatchesCluster(): Promise<void> {
    const cached = new Map<string, number>();
    for await (const entry of cache.list('c1', 'Node')) cached.set(entry.object.metadata!.name!, entry.rv);
    const live = new Map(env.kube.store.list('/nodes').map((n) => [n.metadata.name!, Number(n.metadata.resourceVersion)]));
    assert.deepEqual(cached, live);
  }

  it('after a restart whose bookmark has expired: publishes exactly what differs', async () => {
    for (let i = 0; i < 10; i++) env.kube.store.create('/nodes', node(`n-${i}`));
    const first = await env.forwarder({ kinds: ['Node'] });
    await eventually(() => first.isReady(), 10_000, 'synced');
    const collector = new QueueCollector(env.messaging);
    await collector.until(() => collector.received['label-sync'].length === 10, 20_000, 'initial SYNCs');
    await first.stop();

    // While it is down: more changes than the watch history holds.
    for (let round = 0; round < 10; round++) relabel('n-0', String(round));
    relabel('n-1', 'x');
    env.kube.store.delete({ resource: '/nodes', namespace: '', name: 'n-2' });
    env.kube.store.delete({ resource: '/nodes', namespace: '', name: 'n-3' });
    env.kube.store.create('/nodes', node('n-new'));

    const second = await env.forwarder({ kinds: ['Node'] });
    await eventually(() => second.isReady(), 10_000, 'resynced');
    collector.received['label-sync'].length = 0;
    await collector.until(() => collector.received['label-sync'].length >= 5, 20_000, 'relist differences');
    await second.flush();
    await collector.drain();

    const got = collector.received['label-sync'].map((e) => `${e.type} ${e.key}`).sort();
    assert.deepEqual(got, ['DELETED n-2', 'DELETED n-3', 'SYNC n-0', 'SYNC n-1', 'SYNC n-new']);
    const n0 = collector.received['label-sync'].find((e) => e.key === 'n-0')!;
    assert.equal(n0.resourceVersion, env.kube.store.get({ resource: '/nodes', namespace: '', name: 'n-0' })!.metadata.resourceVersion);
    assert.equal((await second.metrics.watchRestarts.get()).values.find((v) => v.labels.reason === 'expired')?.value, 1);
    assert.equal((await second.metrics.relists.get()).values[0].value, 1);
    await assertCacheMatchesCluster();
    assert.equal((await cache.get('c1', 'Node', 'n-2'))?.deleted, true);
    await second.stop();
  });

  it('while running: a watch that cannot resume in time relists and converges', async () => {
    const forwarder = await env.forwarder({ kinds: ['Node'], watchTimeoutSeconds: [1, 1] });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    const collector = new QueueCollector(env.messaging);
    await collector.drain();
    collector.received['label-sync'].length = 0;
    // The next re-watch (the server ends each watch after 1 s) is held 500 ms and fails; meanwhile the
    // history moves on by more than it keeps, so the watch after that gets 410.
    env.kube.faults.inject({ verb: 'watch', resource: 'nodes', count: 1, status: 500, latencyMs: 500 });
    await eventually(() => env.kube.faults.pending().length === 0, 10_000, 'the faulted watch');
    for (let round = 0; round < 8; round++) relabel('n-4', `r${round}`);
    env.kube.store.delete({ resource: '/nodes', namespace: '', name: 'n-5' });

    const finalRv = env.kube.store.get({ resource: '/nodes', namespace: '', name: 'n-4' })!.metadata.resourceVersion;
    await collector.until(
      () => collector.received['label-sync'].some((e) => e.key === 'n-4' && e.resourceVersion === finalRv)
        && collector.received['label-sync'].some((e) => e.key === 'n-5' && e.type === 'DELETED'),
      20_000,
      'convergence after relist',
    );
    // It resumed from the bookmark (no list), then relisted once the watch expired.
    assert.equal((await forwarder.metrics.relists.get()).values[0]?.value, 1, 'relisted after the expiry');
    assert.equal((await forwarder.metrics.watchRestarts.get()).values.find((v) => v.labels.reason === 'expired')?.value, 1);
    await forwarder.flush();
    await assertCacheMatchesCluster();
  });
});
