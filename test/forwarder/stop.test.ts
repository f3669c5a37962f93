/**
 * stop() ends promptly in every state of the forwarder: before its initial LIST answers, during a relist,
 * and while publishes are failing and retried — each time with a shutdown flush budget (60 s) far longer
 * than the bound asserted, so it is the forwarder that stops, not the budget that runs out. Stopping while
 * publishes fail must not lose anything: the bookmark never passed the unpublished changes, and the next
 * forwarder delivers them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFauxqs } from 'fauxqs';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';

const node = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
/** Far longer than any bound asserted below. */
const FLUSH_BUDGET_MS = 60_000;
/** A stop must end within this (a generous bound for a loaded 2-core machine, well under the budget). */
const STOP_BOUND_MS = 8_000;

/** Runs `stop` and returns how long it took; fails if it takes longer than `STOP_BOUND_MS`. */
async function timedStop(stop: () => Promise<void>): Promise<number> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    stop().then(() => 'stopped' as const),
    new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), STOP_BOUND_MS))),
  ]);
  clearTimeout(timer);
  assert.equal(outcome, 'stopped', `stop() still running after ${STOP_BOUND_MS} ms`);
  return Date.now() - started;
}

describe('forwarder: stop() is bounded in every state', () => {
  let env: StandIns;
  const dataDir = mkdtempSync(join(tmpdir(), 'forwarder-stop-'));
  before(async () => {
    env = await startStandIns({ messaging: { dataDir } });
    for (let i = 0; i < 20; i++) env.kube.store.create('/nodes', node(`n-${i}`));
  });
  after(async () => {
    await env?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('before the initial LIST has answered', async () => {
    // The API server holds the LIST for a minute.
    env.kube.faults.inject({ verb: 'list', resource: 'nodes', count: 1, latencyMs: 10_000 });
    const forwarder = await env.forwarder({ kinds: ['Node'], shutdownFlushMs: FLUSH_BUDGET_MS });
    await eventually(() => env.kube.requests.count('list', 'nodes') >= 1, 10_000, 'the LIST request');
    assert.equal(forwarder.isReady(), false);
    await timedStop(() => forwarder.stop());
    env.kube.faults.clear();
    const sync = await new SyncMarkers(env.db.doc, env.db.tables.control).getSync('c1', 'Node');
    assert.equal(sync?.listComplete ?? false, false, 'a list that never answered is not marked complete');
  });

  it('during a relist (410 on the watch, the relist LIST held by the server)', async () => {
    // Watches the server ends after a second, so the 410 comes soon.
    const forwarder = await env.forwarder({ kinds: ['Node'], shutdownFlushMs: FLUSH_BUDGET_MS, watchTimeoutSeconds: [1, 1] });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    const lists = env.kube.requests.count('list', 'nodes');
    env.kube.faults.inject({ verb: 'list', resource: 'nodes', count: 1, latencyMs: 10_000 });
    env.kube.faults.inject({ verb: 'watch', resource: 'nodes', count: 1, status: 410 });
    await eventually(() => env.kube.requests.count('list', 'nodes') > lists, 20_000, 'the relist LIST');
    await timedStop(() => forwarder.stop());
    env.kube.faults.clear();
  });

  it('while publishes fail and are retried — and nothing is lost', async () => {
    const collector = new QueueCollector(env.messaging);
    const forwarder = await env.forwarder({ kinds: ['Node'], shutdownFlushMs: FLUSH_BUDGET_MS, queueCapacity: 3, publishRetryInitialMs: 100, publishRetryMaxMs: 200 });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    await forwarder.flush();
    await collector.drain();
    const { port } = env.messaging.fauxqs;
    await env.messaging.fauxqs.stop();
    const changed: string[] = [];
    for (let i = 0; i < 10; i++) {
      const updated = env.kube.store.create('/nodes', node(`down-${i}`));
      changed.push(`${updated.metadata.name}@${updated.metadata.resourceVersion}`);
    }
    // The queue (3) fills; the watch is held back behind it while the publisher retries.
    await eventually(async () => ((await forwarder.metrics.publishErrors.get()).values[0]?.value ?? 0) >= 2, 10_000, 'publish errors');
    await timedStop(() => forwarder.stop());

    // Same port and data directory: the topic and queues come back; a new forwarder delivers every change.
    env.messaging.fauxqs = await startFauxqs({ port, dataDir, host: 'localhost', logger: false });
    const next = await env.forwarder({ kinds: ['Node'] });
    await eventually(() => next.isReady(), 10_000, 'synced again');
    await collector.until(
      () => changed.every((c) => collector.received['label-sync'].some((e) => `${e.key}@${e.resourceVersion}` === c)),
      30_000,
      'every change made while publishes failed',
    );
    await next.stop();
  });
});
