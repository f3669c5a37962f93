import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { StoreEvent } from '../../infra/local/kube-api/types.ts';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';

const node = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
const pause = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('forwarder restart in the middle of 1,000 changes', () => {
  let env: StandIns;
  before(async () => {
    env = await startStandIns();
  });
  after(() => env?.stop());

  it('loses nothing, keeps order, and does not republish unchanged objects', async () => {
    const store = env.kube.store;
    for (let i = 0; i < 50; i++) store.create('/nodes', node(`still-${i}`));
    const first = await env.forwarder({ kinds: ['Node'] });
    await eventually(() => first.isReady(), 10_000, 'first forwarder synced');

    const truth: Array<{ key: string; rv: string }> = [];
    const unsubscribe = env.kube.store.subscribe((event: StoreEvent) => {
      if (event.resource === '/nodes') truth.push({ key: event.object.metadata.name!, rv: event.object.metadata.resourceVersion! });
    });
    let second: Awaited<ReturnType<StandIns['forwarder']>> | undefined;
    for (let change = 0; change < 1000; change++) {
      const i = change % 100;
      if (change < 100) store.create('/nodes', node(`busy-${i}`, { n: '0' }));
      else {
        const current = store.get({ resource: '/nodes', namespace: '', name: `busy-${i}` })!;
        store.update('/nodes', { ...current, metadata: { ...current.metadata, labels: { n: String(change) } } });
      }
      if (change === 400) await first.stop(); // graceful: flush, release
      if (change === 600) second = await env.forwarder({ kinds: ['Node'] });
      if (change % 5 === 0) await pause();
    }
    unsubscribe();
    assert.equal(truth.length, 1000);

    const collector = new QueueCollector(env.messaging);
    const finalRv = new Map(truth.map((t) => [t.key, t.rv]));
    const lastSeen = new Map<string, string>();
    await collector.until(() => {
      for (const e of collector.received['label-sync']) lastSeen.set(e.key, e.resourceVersion);
      return [...finalRv].every(([key, rv]) => lastSeen.get(key) === rv);
    }, 60_000, 'final state of every busy node');
    await second!.flush();
    await collector.drain();

    const events = collector.received['label-sync'];
    // Every change reached the queue (nothing lost), each object's changes in resourceVersion order.
    const received = new Set(events.map((e) => `${e.key}@${e.resourceVersion}`));
    const missing = truth.filter((t) => !received.has(`${t.key}@${t.rv}`));
    assert.deepEqual(missing, [], 'every change delivered');
    const last = new Map<string, number>();
    for (const e of events) {
      assert.ok(Number(e.resourceVersion) > (last.get(e.key) ?? 0), `${e.key} in order`);
      last.set(e.key, Number(e.resourceVersion));
    }
    // The 50 untouched nodes were published once, by the first forwarder's initial list, never again.
    for (let i = 0; i < 50; i++) {
      const published = events.filter((e) => e.key === `still-${i}`);
      assert.equal(published.length, 1, `still-${i} published once`);
      assert.equal(published[0].type, 'SYNC');
    }
    // The second forwarder resumed from the bookmark instead of relisting.
    assert.equal((await second!.metrics.relists.get()).values.length, 0);
  });
});
