import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';

describe('forwarder: a silent watch is restarted', () => {
  let env: StandIns;
  before(async () => {
    // No bookmarks for a minute: a quiet kind's watch is silent.
    env = await startStandIns({ kube: { bookmarkIntervalMs: 60_000 } });
  });
  after(() => env?.stop());

  it('restarts after the silence timeout from the last resourceVersion, without relisting, and keeps forwarding', async () => {
    const forwarder = await env.forwarder({ kinds: ['Node'], watchSilenceMs: 300, watchBackoffInitialMs: 10, watchBackoffMaxMs: 20 });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    await eventually(
      async () => ((await forwarder.metrics.watchRestarts.get()).values.find((v) => v.labels.reason === 'silence')?.value ?? 0) >= 2,
      10_000,
      'two silence restarts',
    );
    assert.equal((await forwarder.metrics.relists.get()).values[0].value, 1, 'only the initial list');
    env.kube.store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'after-silence' } });
    const collector = new QueueCollector(env.messaging);
    await collector.until(() => collector.received['label-sync'].some((e) => e.key === 'after-silence' && e.type === 'ADDED'), 10_000, 'the event');
  });
});
