import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';
import { microTime } from '../../lib/forwarder/leader-election.ts';
import type { Forwarder } from '../../lib/forwarder/forwarder.ts';

const node = (name: string) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const total = async (f: Forwarder, metric: 'published' | 'eventsSeen') =>
  (await f.metrics[metric].get()).values.reduce((sum, v) => sum + v.value, 0);

describe('forwarder leader election on a coordination.k8s.io/v1 Lease', () => {
  let env: StandIns;
  before(async () => {
    env = await startStandIns();
  });
  after(() => env?.stop());

  const lease = (name: string) => env.kube.store.get({ resource: 'coordination.k8s.io/leases', namespace: 'default', name });

  it('two replicas: only the leader watches and publishes; the standby takes over when it stops', async () => {
    const leaseConfig = (identity: string) => ({ namespace: 'default', name: 'forwarder', identity, ...timing });
    const a = await env.forwarder({ kinds: ['Node'], lease: leaseConfig('replica-a'), httpPort: 0 });
    await eventually(() => a.isLeader() && a.isReady(), 10_000, 'a leads');
    const b = await env.forwarder({ kinds: ['Node'], lease: leaseConfig('replica-b'), httpPort: 0 });
    assert.equal(lease('forwarder')?.spec.holderIdentity, 'replica-a');

    for (let i = 0; i < 10; i++) env.kube.store.create('/nodes', node(`first-${i}`));
    const collector = new QueueCollector(env.messaging);
    await collector.until(() => collector.received['label-sync'].length === 10, 20_000, 'first batch');
    await sleep(3 * timing.retryPeriodMs); // b keeps campaigning meanwhile
    assert.equal(b.isLeader(), false);
    assert.equal(await total(b, 'published'), 0, 'the standby published nothing');
    assert.equal(await total(b, 'eventsSeen'), 0, 'the standby watched nothing');
    assert.equal(await total(a, 'published'), 10);
    const standbyReady = await fetch(`http://127.0.0.1:${b.port}/readyz`);
    assert.equal(standbyReady.status, 200, 'a standby is ready');
    assert.match(await (await fetch(`http://127.0.0.1:${b.port}/metrics`)).text(), /claimflow_forwarder_is_leader 0/);

    await a.stop(); // flushes and releases the lease
    await eventually(() => b.isLeader() && b.isReady(), 10_000, 'b takes over');
    assert.equal(lease('forwarder')?.spec.holderIdentity, 'replica-b');
    assert.equal(lease('forwarder')?.spec.leaseTransitions, 1);
    for (let i = 0; i < 10; i++) env.kube.store.create('/nodes', node(`second-${i}`));
    await collector.until(() => collector.received['label-sync'].length === 20, 20_000, 'second batch');
    await b.flush();
    assert.equal(await total(b, 'published'), 10, 'b published only what changed after it took over');
    assert.deepEqual(collector.received['label-sync'].slice(10).map((e) => e.key).sort(), Array.from({ length: 10 }, (_, i) => `second-${i}`).sort());
    await b.stop();
  });

  it('a crashed holder (lease not released) is taken over only after the lease duration', async () => {
    const now = microTime(Date.now());
    env.kube.store.create('coordination.k8s.io/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'crashed', namespace: 'default' },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds: 3, acquireTime: now, renewTime: now, leaseTransitions: 4 },
    });
    // When the API server stored the takeover (not when a test timer got to look): a sleep to the lease's half-life
    // and 'not leader yet' failed only on a very late timer, and proved less than this.
    let takenOverAt: number | undefined;
    const unsubscribe = env.kube.store.subscribe((e) => {
      if (e.object.metadata?.name === 'crashed' && (e.object as { spec?: { holderIdentity?: string } }).spec?.holderIdentity === 'heir') takenOverAt ??= Date.now();
    });
    // Before the start: the candidate may observe the lease (the start of its duration) before forwarder() returns.
    const startedAt = Date.now();
    const candidate = await env.forwarder({ kinds: ['Node'], lease: { namespace: 'default', name: 'crashed', identity: 'heir', ...timing } });
    try {
      await eventually(() => candidate.isLeader(), 15_000, 'takeover after expiry');
    } finally {
      unsubscribe();
    }
    assert.ok(takenOverAt !== undefined, 'the takeover was written to the Lease');
    assert.ok(takenOverAt - startedAt >= timing.leaseDurationMs, `not before the lease duration passed (taken over after ${takenOverAt - startedAt} ms)`);
    assert.equal(lease('crashed')?.spec.holderIdentity, 'heir');
    assert.equal(lease('crashed')?.spec.leaseTransitions, 5);
    await candidate.stop();
    assert.equal(lease('crashed')?.spec.holderIdentity ?? '', '', 'released on stop');
  });

  it('a leader that cannot renew within the renew deadline stops leading', async () => {
    const leader = await env.forwarder({ kinds: ['Node'], lease: { namespace: 'default', name: 'flaky', identity: 'solo', ...timing } });
    await eventually(() => leader.isLeader(), 10_000, 'leads');
    env.kube.faults.inject({ verb: 'update', resource: 'leases', count: 1000, status: 500 });
    await eventually(() => !leader.isLeader(), 10_000, 'steps down');
    assert.match(await leader.metrics.registry.metrics(), /claimflow_forwarder_is_leader 0/);
    env.kube.faults.clear();
    await eventually(() => leader.isLeader(), 15_000, 'leads again once renewals work');
    await leader.stop();
  });
});
