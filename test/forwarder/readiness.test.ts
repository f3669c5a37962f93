import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startStandIns, type StandIns } from './harness.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';

describe('forwarder readiness', () => {
  let env: StandIns;
  before(async () => {
    env = await startStandIns();
  });
  after(() => env?.stop());

  it('a leader is not ready (and the kind not marked listed) until its LIST succeeds; list errors are retried', async () => {
    env.kube.faults.inject({ verb: 'list', resource: 'persistentvolumes', count: 1000, status: 403, message: 'forbidden' });
    const forwarder = await env.forwarder({ kinds: ['Node', 'PersistentVolume'], httpPort: 0 });
    const readyz = async () => (await fetch(`http://127.0.0.1:${forwarder.port}/readyz`)).status;
    await eventually(async () => ((await forwarder.metrics.watchRestarts.get()).values.find((v) => v.labels.reason === 'error')?.value ?? 0) >= 2, 10_000, 'retries');
    assert.equal(await readyz(), 503);
    assert.equal((await fetch(`http://127.0.0.1:${forwarder.port}/healthz`)).status, 200);
    const sync = new SyncMarkers(env.db.doc, env.db.tables.control);
    await forwarder.flush();
    assert.equal((await sync.getSync('c1', 'Node'))?.listComplete, true);
    assert.equal(await sync.getSync('c1', 'PersistentVolume'), undefined);

    env.kube.faults.clear();
    await eventually(async () => (await readyz()) === 200, 10_000, 'ready');
    await forwarder.flush();
    assert.equal((await sync.getSync('c1', 'PersistentVolume'))?.listComplete, true);
    await forwarder.stop();
    assert.equal((await fetch(`http://127.0.0.1:${forwarder.port}/healthz`).catch(() => undefined))?.status, undefined, 'server closed on stop');
  });
});
