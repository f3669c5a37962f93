import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFauxqs } from 'fauxqs';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';

const node = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('forwarder: fauxqs unavailable for 10 s while changes happen', () => {
  let env: StandIns;
  const dataDir = mkdtempSync(join(tmpdir(), 'forwarder-outage-'));
  before(async () => {
    env = await startStandIns({ messaging: { dataDir } });
  });
  after(async () => {
    await env?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('retries with backoff, holds the watch back when its queue is full, and loses nothing', async () => {
    const forwarder = await env.forwarder({ kinds: ['Node'], publishRetryInitialMs: 100, publishRetryMaxMs: 1000, queueCapacity: 5 });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    const { port } = env.messaging.fauxqs;
    await env.messaging.fauxqs.stop();
    const downAt = Date.now();

    const truth: Array<{ key: string; rv: string }> = [];
    for (let i = 0; i < 30; i++) {
      const created = env.kube.store.create('/nodes', node(`n-${i % 10}-${Math.floor(i / 10)}`, { i: String(i) }));
      truth.push({ key: created.metadata.name!, rv: created.metadata.resourceVersion! });
      await sleep(50);
    }
    await eventually(async () => (await forwarder.metrics.publishErrors.get()).values[0]?.value > 1, 10_000, 'publish errors');
    await sleep(Math.max(0, 10_000 - (Date.now() - downAt)));
    // Bounded memory: 30 changes happened, at most 5 wait in memory; the rest waits in the watch stream.
    const depth = (await forwarder.metrics.queueDepth.get()).values[0].value;
    assert.ok(depth <= 5 && depth > 0, `queue depth ${depth}`);
    // Same port, same data directory: the topic, queues and subscriptions come back.
    env.messaging.fauxqs = await startFauxqs({ port, dataDir, host: 'localhost', logger: false });

    const collector = new QueueCollector(env.messaging);
    await collector.until(() => collector.received['label-sync'].length >= truth.length, 30_000, 'every change after the outage');
    await forwarder.flush();
    await collector.drain();
    const delivered = collector.received['label-sync'].map((e) => `${e.key}@${e.resourceVersion}`).sort();
    assert.deepEqual(delivered, truth.map((t) => `${t.key}@${t.rv}`).sort());
    const errors = (await forwarder.metrics.publishErrors.get()).values[0].value;
    assert.ok(errors >= 3, `retried several times (${errors} errors)`);
    const published = (await forwarder.metrics.published.get()).values.reduce((sum, v) => sum + v.value, 0);
    assert.equal(published, truth.length);
  });
});
