import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { KubeTransport, type WatchEvent } from '../../lib/forwarder/kube-transport.ts';
import { KubeApiError, ResourceExpiredError, WatchSilenceError } from '../../lib/forwarder/errors.ts';

describe('KubeTransport against the emulator', () => {
  let kube: KubeApi;
  let transport: KubeTransport;
  before(async () => {
    kube = await startKubeApi({ watchHistory: 3, bookmarkIntervalMs: 60_000 });
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    transport = new KubeTransport(kc);
    for (let i = 0; i < 20; i++) kube.store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: `n-${String(i).padStart(2, '0')}` } });
  });
  after(() => kube?.stop());

  it('lists in pages with continue tokens, one consistent resourceVersion, kind and apiVersion filled in', async () => {
    const list = await transport.list('/api/v1/nodes', { limit: 7, apiVersion: 'v1', kind: 'Node' });
    assert.equal(list.items.length, 20);
    assert.deepEqual(list.items.map((n) => n.metadata.name), Array.from({ length: 20 }, (_, i) => `n-${String(i).padStart(2, '0')}`));
    assert.ok(list.items.every((n) => n.kind === 'Node' && n.apiVersion === 'v1'));
    assert.equal(list.resourceVersion, String(kube.store.revision));
    assert.equal(kube.requests.count('list', 'nodes'), 3, 'three pages');
  });

  it('watches changes after a resourceVersion and stops on silence', async () => {
    const from = String(kube.store.revision);
    kube.store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'late' } });
    const seen: WatchEvent[] = [];
    await assert.rejects(async () => {
      for await (const event of transport.watch('/api/v1/nodes', { resourceVersion: from, silenceMs: 300 })) seen.push(event);
    }, WatchSilenceError);
    assert.deepEqual(seen.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED late']);
  });

  it('turns a too-old resourceVersion into ResourceExpiredError and other failures into KubeApiError', async () => {
    for (let i = 0; i < 5; i++) kube.store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: `churn-${i}` } });
    await assert.rejects(async () => {
      for await (const _ of transport.watch('/api/v1/nodes', { resourceVersion: '1', silenceMs: 2000 })) { /* expect ERROR 410 */ }
    }, ResourceExpiredError);
    kube.faults.inject({ verb: 'list', resource: 'nodes', count: 1, status: 403 });
    await assert.rejects(transport.list('/api/v1/nodes'), (err: unknown) => err instanceof KubeApiError && err.code === 403 && !(err instanceof ResourceExpiredError));
  });
});
