// LIST: selectors, paging, resourceVersion rules and list shape (generic fixture kinds).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';

describe('kube-api LIST', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ watchHistory: 50 });
    const labels: Array<Record<string, string>> = [{ app: 'a', tier: 'db' }, { app: 'b', tier: 'web' }, { app: 'c' }, {}, { tier: 'db' }];
    for (const [i, l] of labels.entries()) {
      await h.core.createNamespacedConfigMap({ namespace: i % 2 ? 'kube-system' : 'default', body: { metadata: { name: `cm${i}`, labels: l } } });
    }
  });
  after(async () => { await h.api.stop(); });

  const names = async (labelSelector?: string, fieldSelector?: string) =>
    (await h.core.listConfigMapForAllNamespaces({ ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) })).items.map((i) => i.metadata!.name).sort();

  const table: Array<[string, string[]]> = [
    ['app=a', ['cm0']],
    ['app==b', ['cm1']],
    ['app!=a', ['cm1', 'cm2', 'cm3', 'cm4']],
    ['app in (a, c)', ['cm0', 'cm2']],
    ['app notin (a,c)', ['cm1', 'cm3', 'cm4']],
    ['tier', ['cm0', 'cm1', 'cm4']],
    ['!tier', ['cm2', 'cm3']],
    ['tier=db,app', ['cm0']],
    ['', ['cm0', 'cm1', 'cm2', 'cm3', 'cm4']],
  ];
  for (const [selector, expected] of table) {
    it(`label selector "${selector}"`, async () => {
      assert.deepEqual(await names(selector), expected);
    });
  }

  for (const bad of ['app in (', 'a b', '=x', 'app=in=x', '!', 'app notin ()', 'bad key!=x']) {
    it(`malformed label selector "${bad}" is 400`, async () => {
      const err = await rejection(h.core.listConfigMapForAllNamespaces({ labelSelector: bad }));
      assert.deepEqual([err.code, err.reason], [400, 'BadRequest']);
    });
  }

  it('field selectors: metadata.name/namespace with = == !=; unsupported fields are 400 with the upstream text', async () => {
    assert.deepEqual(await names(undefined, 'metadata.name=cm2'), ['cm2']);
    assert.deepEqual(await names(undefined, 'metadata.namespace==kube-system'), ['cm1', 'cm3']);
    assert.deepEqual(await names(undefined, 'metadata.namespace!=kube-system,metadata.name!=cm0'), ['cm2', 'cm4']);
    const err = await rejection(h.core.listConfigMapForAllNamespaces({ fieldSelector: 'spec.volumeName=pv1' }));
    assert.deepEqual([err.code, err.reason, err.message], [400, 'BadRequest', '"spec.volumeName" is not a known field selector: only "metadata.name", "metadata.namespace"']);
    const nodes = await h.core.listNode({ fieldSelector: 'spec.unschedulable=false' });
    assert.deepEqual(nodes.items, []);
  });

  it('list items carry no kind/apiVersion; the list does', async () => {
    const res = await h.http('/api/v1/namespaces/default/configmaps');
    assert.equal(res.body.kind, 'ConfigMapList');
    assert.equal(res.body.apiVersion, 'v1');
    assert.ok(res.body.items.length > 0);
    for (const item of res.body.items) {
      assert.equal(item.kind, undefined);
      assert.equal(item.apiVersion, undefined);
    }
    const sc = await h.http('/apis/storage.k8s.io/v1/storageclasses');
    assert.deepEqual([sc.body.kind, sc.body.apiVersion], ['StorageClassList', 'storage.k8s.io/v1']);
  });

  it('limit/continue: ordered pages, the first page RV on every page, remainingItemCount without selectors', async () => {
    const p1 = await h.http('/api/v1/configmaps?limit=2');
    assert.deepEqual(p1.body.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`), ['default/cm0', 'default/cm2']);
    assert.equal(p1.body.metadata.remainingItemCount, 3);
    const token = JSON.parse(Buffer.from(p1.body.metadata.continue, 'base64url').toString());
    assert.equal(token.v, 'meta.k8s.io/v1');
    assert.equal(token.rv, Number(p1.body.metadata.resourceVersion));
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'zz-late' } } });
    const p2 = await h.http(`/api/v1/configmaps?limit=2&continue=${p1.body.metadata.continue}`);
    assert.equal(p2.body.metadata.resourceVersion, p1.body.metadata.resourceVersion);
    assert.deepEqual(p2.body.items.map((i: any) => i.metadata.name), ['cm4', 'zz-late']);
    const filtered = await h.http('/api/v1/configmaps?limit=1&labelSelector=tier');
    assert.equal(filtered.body.metadata.remainingItemCount, undefined);
    assert.ok(filtered.body.metadata.continue);
    const bad = await h.http('/api/v1/configmaps?limit=2&continue=not-a-token');
    assert.deepEqual([bad.status, bad.body.reason], [400, 'BadRequest']);
    await h.core.deleteNamespacedConfigMap({ name: 'zz-late', namespace: 'default' });
  });

  it('an expired continue token is 410 Expired', async () => {
    const p1 = await h.http('/api/v1/configmaps?limit=1');
    for (let i = 0; i < 60; i++) await h.core.patchNamespacedConfigMap({ name: 'cm0', namespace: 'default', body: [{ op: 'replace', path: '/metadata/labels/n', value: String(i) }] }).catch(async () =>
      h.core.patchNamespacedConfigMap({ name: 'cm0', namespace: 'default', body: [{ op: 'add', path: '/metadata/labels/n', value: String(i) }] }));
    const res = await h.http(`/api/v1/configmaps?limit=1&continue=${p1.body.metadata.continue}`);
    assert.equal(res.status, 410);
    assert.equal(res.body.reason, 'Expired');
    assert.equal(res.body.message, 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
  });

  it('resourceVersion rules: resourceVersionMatch without RV is 422, sendInitialEvents on a list is 422, exact old RV is 410', async () => {
    const noRv = await h.http('/api/v1/configmaps?resourceVersionMatch=NotOlderThan');
    assert.equal(noRv.status, 422);
    assert.match(noRv.body.message, /resourceVersionMatch is forbidden unless resourceVersion is provided/);
    const sie = await h.http('/api/v1/configmaps?sendInitialEvents=true');
    assert.equal(sie.status, 422);
    const current = await h.http('/api/v1/configmaps?resourceVersion=0');
    assert.equal(current.status, 200);
    const notOlder = await h.http(`/api/v1/configmaps?resourceVersion=1&resourceVersionMatch=NotOlderThan`);
    assert.equal(notOlder.status, 200);
    assert.equal(notOlder.body.metadata.resourceVersion, String(h.api.store.revision));
    const exact = await h.http('/api/v1/configmaps?resourceVersion=1&resourceVersionMatch=Exact');
    assert.deepEqual([exact.status, exact.body.reason], [410, 'Expired']);
    const exactNow = await h.http(`/api/v1/configmaps?resourceVersion=${h.api.store.revision}&limit=1`);
    assert.equal(exactNow.status, 200);
  });
});
