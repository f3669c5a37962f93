import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The soak's 'watch streams cut' fault (issue #13), alone: the emulator drops the connection of every open
// watch while changes keep coming. Over plain HTTP/1.1 each watch has a connection of its own; over HTTPS
// the forwarder's watches are streams of one HTTP/2 connection (as with kube-apiserver), and each cut drops
// them all at once.
for (const https of [false, true]) describe(`forwarder: watch streams cut mid-flight (${https ? 'HTTP/2' : 'HTTP/1.1'})`, () => {
  let env: StandIns;
  before(async () => {
    env = await startStandIns(https ? { kube: { tls: true } } : {});
  });
  after(() => env?.stop());

  it('re-watches from the last resourceVersion without relisting and loses nothing', async () => {
    const forwarder = await env.forwarder({ kinds: ['Node'], watchBackoffInitialMs: 10, watchBackoffMaxMs: 50 });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    const collector = new QueueCollector(env.messaging);
    const names: string[] = [];
    let cut = 0;
    for (let i = 0; i < 30; i++) {
      const name = `cut-${i}`;
      names.push(name);
      env.kube.store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
      if (i % 5 === 4) cut += env.kube.cutWatches();
      await sleep(i % 5 === 4 ? 100 : 5);
    }
    assert.ok(cut >= 4, `watches cut: ${cut}`);
    await collector.until(
      () => names.every((n) => collector.received['label-sync'].some((e) => e.key === n && e.type === 'ADDED')),
      20_000,
      'an ADDED for every node',
    );
    const restarts = (await forwarder.metrics.watchRestarts.get()).values.filter((v) => v.labels.kind === 'Node').reduce((s, v) => s + v.value, 0);
    assert.ok(restarts >= 4, `watch restarts: ${restarts}`);
    assert.equal((await forwarder.metrics.relists.get()).values[0].value, 1, 'only the initial list: each cut re-watched from its resourceVersion');
    for (const n of names) assert.equal(collector.received['label-sync'].filter((e) => e.key === n && e.type === 'ADDED').length, 1, `${n} published once`);
  });
});
