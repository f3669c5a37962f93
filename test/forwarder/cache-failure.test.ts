import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';
import { createDocumentClient } from '../../lib/state/client.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynalite.ts';

describe('forwarder: a failed cache write mid-stream', () => {
  let env: StandIns;
  before(async () => {
    env = await startStandIns();
  });
  after(() => env?.stop());

  it('re-watches from the first event not yet queued: nothing lost, order kept', async () => {
    // The forwarder's own client to dynalite, whose first three writes of one key fail.
    const doc = createDocumentClient({ endpoint: env.db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    let failures = 0;
    doc.middlewareStack.add(
      (next) => async (args: any) => {
        if (args.input?.Item?.sk === 'n-5' && failures < 3) {
          failures++;
          throw Object.assign(new Error('injected write failure'), { name: 'InternalServerError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failSomeWrites' },
    );
    const forwarder = await env.forwarder({ kinds: ['Node'], doc });
    await eventually(() => forwarder.isReady(), 10_000, 'synced');
    const truth: string[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) {
        const name = `n-${i}`;
        const current = env.kube.store.get({ resource: '/nodes', namespace: '', name });
        const written = current
          ? env.kube.store.update('/nodes', { ...current, metadata: { ...current.metadata, labels: { round: String(round) } } })
          : env.kube.store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { round: String(round) } } });
        truth.push(`${name}@${written.metadata.resourceVersion}`);
      }
    }
    const collector = new QueueCollector(env.messaging);
    // Final versions: writes of other objects overlap the failed one, so after the re-watch their earlier
    // versions may be found older than the cache and skipped (coalesced, as an informer's relist does);
    // their latest versions are always delivered.
    const finals = new Map<string, string>();
    for (const t of truth) finals.set(t.split('@')[0], t);
    const received = () => new Set(collector.received['label-sync'].map((e) => `${e.key}@${e.resourceVersion}`));
    await collector.until(() => [...finals.values()].every((t) => received().has(t)), 30_000, 'every final version');
    await forwarder.flush();
    await collector.drain();
    // Everything up to the first failed write arrived unchanged.
    const firstFailed = truth.indexOf('n-5@' + truth.find((t) => t.startsWith('n-5@'))!.split('@')[1]);
    for (const t of truth.slice(0, firstFailed + 1)) assert.ok(received().has(t), t);
    assert.equal(failures, 3);
    assert.ok(((await forwarder.metrics.watchRestarts.get()).values.find((v) => v.labels.reason === 'error')?.value ?? 0) >= 1);
    const last = new Map<string, number>();
    for (const e of collector.received['label-sync']) {
      assert.ok(Number(e.resourceVersion) > (last.get(e.key) ?? 0), `${e.key} in order`);
      last.set(e.key, Number(e.resourceVersion));
    }
    doc.destroy();
  });
});
