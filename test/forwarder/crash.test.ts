import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFauxqs } from 'fauxqs';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';

const node = (name: string) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });

/**
 * A forwarder that dies after writing events to the cache but before the topic accepted them (SNS down,
 * shutdown flush given up): the next one must still publish them, although the cache already has them.
 */
describe('forwarder: events cached but never published before a crash are published by the next replica', () => {
  const dirs: string[] = [];
  const envs: StandIns[] = [];
  after(async () => {
    for (const env of envs) await env.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  for (const variant of [
    { name: 'resuming the watch from the bookmark', watchHistory: 10_000, expectType: 'ADDED', relists: 0 },
    { name: 'relisting after the bookmark expired', watchHistory: 3, expectType: 'SYNC', relists: 1 },
  ]) {
    it(variant.name, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'forwarder-crash-'));
      dirs.push(dataDir);
      const env = await startStandIns({ kube: { watchHistory: variant.watchHistory }, messaging: { dataDir } });
      envs.push(env);
      const cache = new ObjectCache(env.db.doc, env.db.tables.cache, { indexer: indexAttributes });
      for (let i = 0; i < 5; i++) env.kube.store.create('/nodes', node(`old-${i}`));
      const first = await env.forwarder({ kinds: ['Node'], shutdownFlushMs: 100 });
      await eventually(() => first.isReady(), 10_000, 'synced');
      await first.flush();
      const { port } = env.messaging.fauxqs;
      await env.messaging.fauxqs.stop();

      const lost: Array<{ name: string; rv: string }> = [];
      for (let i = 0; i < 8; i++) {
        const created = env.kube.store.create('/nodes', node(`new-${i}`));
        lost.push({ name: created.metadata.name!, rv: created.metadata.resourceVersion! });
      }
      await eventually(async () => (await cache.get('c1', 'Node', 'new-7'))?.rv === Number(lost[7].rv), 10_000, 'cached');
      await first.stop(); // the flush times out: those events are only in the cache now

      env.messaging.fauxqs = await startFauxqs({ port, dataDir, host: 'localhost', logger: false });
      const collector = new QueueCollector(env.messaging);
      await collector.until(() => collector.received['label-sync'].length === 5, 20_000, 'the initial SYNCs');
      collector.received['label-sync'].length = 0;

      const second = await env.forwarder({ kinds: ['Node'] });
      await eventually(() => second.isReady(), 10_000, 'second synced');
      await collector.until(() => collector.received['label-sync'].length >= lost.length, 20_000, 'the lost events');
      await second.flush();
      await collector.drain();
      const got = collector.received['label-sync'].map((e) => `${e.type} ${e.key}@${e.resourceVersion}`).sort();
      assert.deepEqual(got, lost.map((l) => `${variant.expectType} ${l.name}@${l.rv}`).sort(), 'exactly the unpublished events, nothing older');
      assert.equal((await second.metrics.relists.get()).values[0]?.value ?? 0, variant.relists);
    });
  }
});
