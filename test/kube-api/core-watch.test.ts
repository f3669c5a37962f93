// WATCH through @kubernetes/client-node's Watch and informer over real HTTP (generic fixture kinds).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ListWatch, makeInformer, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import { startHarness, collectWatch, type Harness } from '../../infra/local/kube-api/testing/client.ts';

const PATH = '/api/v1/namespaces/default/configmaps';

describe('kube-api WATCH', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ watchHistory: 20, bookmarkIntervalMs: 300 }); });
  after(async () => { await h.api.stop(); });

  const create = (name: string, labels: Record<string, string> = {}) =>
    h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name, labels }, data: { v: '0' } } });
  const update = (name: string, data: Record<string, string>, labels?: Record<string, string>) =>
    h.core.patchNamespacedConfigMap({ name, namespace: 'default', body: [
      { op: 'replace', path: '/data', value: data },
      ...(labels ? [{ op: 'replace', path: '/metadata/labels', value: labels }] : []),
    ] });

  it('from resourceVersion unset or "0": synthetic ADDED for the current state, then changes', async () => {
    await create('w-existing');
    for (const resourceVersion of [undefined, '0']) {
      const events = await collectWatch(h, PATH, { resourceVersion, fieldSelector: 'metadata.name=w-existing' }, (e) => e.length >= 2, 3000,
        () => update('w-existing', { v: resourceVersion ?? 'unset' }).then(() => undefined));
      assert.deepEqual(events.map((e) => e.type), ['ADDED', 'MODIFIED']);
      assert.equal(events[0].object.kind, 'ConfigMap');
      assert.equal(events[0].object.apiVersion, 'v1');
    }
  });

  it('from resourceVersion N: only changes after N, in order; DELETED carries the final state with the deletion RV', async () => {
    const cm = await create('w-from');
    await update('w-from', { v: '1' });
    await update('w-from', { v: '2' });
    await h.core.deleteNamespacedConfigMap({ name: 'w-from', namespace: 'default' });
    const events = await collectWatch(h, PATH, { resourceVersion: cm.metadata!.resourceVersion, fieldSelector: 'metadata.name=w-from' }, (e) => e.length >= 3);
    assert.deepEqual(events.map((e) => e.type), ['MODIFIED', 'MODIFIED', 'DELETED']);
    assert.deepEqual(events.map((e) => e.object.data.v), ['1', '2', '2']);
    const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
    assert.ok(rvs[0] < rvs[1] && rvs[1] < rvs[2]);
    assert.equal(events[2].object.kind, 'ConfigMap');
  });

  it('selector transitions: ADDED when starting to match, DELETED with the previous content when stopping', async () => {
    await create('w-sel', { role: 'other' });
    const rv = String(h.api.store.revision);
    await update('w-sel', { v: 'in' }, { role: 'db' });
    await update('w-sel', { v: 'still' }, { role: 'db' });
    await update('w-sel', { v: 'out' }, { role: 'web' });
    const events = await collectWatch(h, PATH, { resourceVersion: rv, labelSelector: 'role=db' }, (e) => e.length >= 3);
    assert.deepEqual(events.map((e) => e.type), ['ADDED', 'MODIFIED', 'DELETED']);
    assert.equal(events[2].object.data.v, 'still');
    assert.deepEqual(events[2].object.metadata.labels, { role: 'db' });
    assert.equal(events[2].object.metadata.resourceVersion, String(h.api.store.revision));
  });

  it('a resourceVersion older than the history: HTTP 200, then an ERROR 410 Expired event, then the stream ends', async () => {
    const old = String(h.api.store.revision);
    for (let i = 0; i < 25; i++) await update('w-sel', { v: String(i) });
    const res = await fetch(`${h.api.url}${PATH}?watch=true&resourceVersion=${old}`);
    assert.equal(res.status, 200);
    const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.length, 1);
    assert.equal(lines[0].type, 'ERROR');
    assert.deepEqual({ ...lines[0].object, message: undefined }, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: undefined, reason: 'Expired', code: 410 });
    assert.match(lines[0].object.message, /^too old resource version: \d+ \(\d+\)$/);
  });

  it('BOOKMARK with allowWatchBookmarks (periodic and before the deadline); timeoutSeconds ends the stream', async () => {
    const started = Date.now();
    const res = await fetch(`${h.api.url}${PATH}?watch=1&resourceVersion=${h.api.store.revision}&allowWatchBookmarks=true&timeoutSeconds=1`);
    const text = await res.text();
    assert.ok(Date.now() - started >= 900);
    const lines = text.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(lines.length >= 2, `bookmarks received: ${text}`);
    for (const l of lines) {
      assert.equal(l.type, 'BOOKMARK');
      assert.deepEqual(l.object, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(h.api.store.revision) } });
    }
    const none = await fetch(`${h.api.url}${PATH}?watch=1&resourceVersion=${h.api.store.revision}&timeoutSeconds=1`);
    assert.equal(await none.text(), '');
  });

  it('sendInitialEvents is rejected with 422 as a server without WatchList does', async () => {
    const res = await h.http(`${PATH}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    assert.equal(res.status, 422);
    assert.match(res.body.message, /sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled/);
  });

  it('a watch on a single object by name path and an unsupported field selector (400, no stream)', async () => {
    await create('w-single');
    const events = await collectWatch(h, `${PATH}/w-single`, {}, (e) => e.length >= 1, 2000);
    assert.deepEqual(events.map((e) => [e.type, e.object.metadata.name]), [['ADDED', 'w-single']]);
    const res = await h.http(`${PATH}?watch=true&fieldSelector=data.v%3D1`);
    assert.equal(res.status, 400);
  });

  it('hundreds of concurrent watchers all see a write', async () => {
    const n = 200;
    const controllers: AbortController[] = [];
    const seen = new Set<number>();
    let resolveAll!: () => void;
    const all = new Promise<void>((r) => { resolveAll = r; });
    const rv = String(h.api.store.revision);
    for (let i = 0; i < n; i++) {
      controllers.push(await h.watch.watch(PATH, { resourceVersion: rv, fieldSelector: 'metadata.name=w-many' }, (type) => {
        if (type === 'ADDED') seen.add(i);
        if (seen.size === n) resolveAll();
      }, () => undefined));
    }
    await create('w-many');
    const timer = setTimeout(resolveAll, 10_000);
    await all;
    clearTimeout(timer);
    for (const c of controllers) c.abort();
    assert.equal(seen.size, n);
  });

  it('a slow watcher never blocks writers and is closed once it falls too far behind', async () => {
    const slow = await startHarness({ maxWatchBufferBytes: 64 * 1024 });
    try {
      await slow.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'big' }, data: { v: '' } } });
      const res = await fetch(`${slow.api.url}${PATH}?watch=true&resourceVersion=${slow.api.store.revision}`);
      assert.equal(res.status, 200);
      const payload = 'x'.repeat(32 * 1024);
      for (let i = 0; i < 200; i++) {
        slow.api.store.update('/configmaps', { metadata: { name: 'big', namespace: 'default' }, data: { v: `${i}${payload}` } });
      }
      assert.equal(slow.api.store.get({ resource: '/configmaps', namespace: 'default', name: 'big' })!.data.v.startsWith('199'), true);
      await assert.rejects(res.text(), 'the lagging watch is cut off');
    } finally {
      await slow.api.stop();
    }
  });

  it('a client-node informer keeps its cache through re-watches and relists after 410', async () => {
    const informerApi = await startHarness({ watchHistory: 5 });
    try {
      const informer = makeInformer<V1ConfigMap>(informerApi.kc, PATH, () => informerApi.core.listNamespacedConfigMap({ namespace: 'default' }));
      const adds: string[] = [];
      informer.on('add', (o) => adds.push(o.metadata!.name!));
      await informer.start();
      await informerApi.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'inf-1' } } });
      const until = async (cond: () => boolean) => {
        for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
      };
      await until(() => informer.get('inf-1', 'default') !== undefined);
      assert.ok(informer.get('inf-1', 'default'));
      await informer.stop();
      // while stopped, more changes than the history holds: the resume RV is gone ⇒ 410 ⇒ relist
      for (let i = 0; i < 10; i++) await informerApi.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `inf-later-${i}` } } });
      await informer.start();
      await until(() => informer.list('default').length === 11);
      assert.equal(informer.list('default').length, 11);
      await informer.stop();
    } finally {
      await informerApi.api.stop();
    }
  });

  it('survives client-node re-opening its watch on inactivity (every 30 s; shortened here): resumes by RV, never relists', async () => {
    const rewatch = await startHarness();
    try {
      const watch = new Watch(rewatch.kc);
      (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 250;
      const cache = new ListWatch<V1ConfigMap>(PATH, watch, () => rewatch.core.listNamespacedConfigMap({ namespace: 'default' }), false);
      await cache.start();
      const wait = async (ms: number) => new Promise((r) => setTimeout(r, ms));
      for (let i = 0; i < 4; i++) {
        await wait(400); // longer than the inactivity timeout: the client aborts and re-watches from its last RV
        await rewatch.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `rw-${i}` } } });
      }
      for (let i = 0; i < 100 && cache.list('default').length < 4; i++) await wait(20);
      assert.deepEqual(cache.list('default').map((o) => o.metadata!.name).sort(), ['rw-0', 'rw-1', 'rw-2', 'rw-3']);
      assert.ok(rewatch.api.requests.count('watch', 'configmaps') >= 4, `re-watches: ${rewatch.api.requests.count('watch', 'configmaps')}`);
      assert.equal(rewatch.api.requests.count('list', 'configmaps'), 1, 'resumed from the resourceVersion, no relist');
      await cache.stop();
    } finally {
      await rewatch.api.stop();
    }
  });
});
