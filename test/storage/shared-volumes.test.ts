import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError, StaleVersionError } from '../../lib/storage/errors.ts';
import { ensureExternalEndpoint } from '../../lib/storage/retry.ts';
import { LABELS } from '../../lib/storage/types.ts';
import { csiLabels, startStorage, type StorageFixture } from './support.ts';

describe('shared volumes: list, publish the mount endpoint, failover', () => {
  let s: StorageFixture;
  before(async () => {
    s = await startStorage();
  });
  after(() => s.stop());

  test('only Kubernetes volumes with a parsable nfs.serviceEndpoint qualify (toSharedVolume table)', async () => {
    // [volume name, labels, serviceEndpoint to share with (undefined = not shared), qualifies]
    const rows: Array<[string, Record<string, string>, string | undefined, boolean]> = [
      ['pvc-shared', csiLabels('pvc-shared', 'data', 'app'), '10.0.0.5:25805', true],
      ['pvc-v6', csiLabels('pvc-v6', 'data6', 'app'), '[fd00::5]:2049', true],
      ['pvc-not-shared', csiLabels('pvc-not-shared', 'plain', 'app'), undefined, false],
      ['not-kubernetes', { team: 'x' }, '10.0.0.6:2049', false],
      ['pvc-no-pvc-ns', { [LABELS.pvName]: 'pvc-no-pvc-ns', [LABELS.pvcName]: 'x' }, '10.0.0.7:2049', false],
      ['pvc-bad-endpoint', csiLabels('pvc-bad-endpoint', 'bad', 'app'), 'no-port-here', false],
    ];
    for (const [name, labels, endpoint] of rows) {
      const v = await s.client.createVolume({ namespace: 'app', name, sizeBytes: 2 ** 30, labels });
      if (endpoint !== undefined) await s.api.state.shareVolume(v.id, endpoint);
    }
    const shared = await s.client.listSharedVolumes();
    assert.deepEqual(shared.map((v) => v.serviceName).sort(), rows.filter((r) => r[3]).map((r) => r[0]).sort());
    const one = shared.find((v) => v.serviceName === 'pvc-shared');
    assert.ok(one);
    assert.equal(one.pvcName, 'data');
    assert.equal(one.namespace, 'app');
    assert.equal(one.internalEndpoint, '10.0.0.5:25805');
    assert.equal(one.externalEndpoint, '');
  });

  test('shares across namespaces; an allocated endpoint looks like 10.x.y.z:port', async () => {
    const v = await s.client.createVolume({ namespace: 'other', name: 'pvc-other', sizeBytes: 2 ** 30, labels: csiLabels('pvc-other', 'o', 'other') });
    const wire = await s.api.state.shareVolume(v.id);
    assert.match(wire.nfs?.serviceEndpoint ?? '', /^10\.\d+\.\d+\.\d+:\d+$/);
    const listed = (await s.client.listSharedVolumes()).find((x) => x.id === v.id);
    assert.equal(listed?.internalEndpoint, wire.nfs?.serviceEndpoint);
    assert.equal(listed?.namespace, 'other');
  });

  test('setExternalEndpoint writes with the version; it shows as the mount-endpoint label', async () => {
    const v = await s.client.createVolume({ namespace: 'app', name: 'pvc-publish', sizeBytes: 2 ** 30, labels: csiLabels('pvc-publish', 'p', 'app') });
    await s.api.state.shareVolume(v.id);
    const listed = (await s.client.listSharedVolumes()).find((x) => x.id === v.id);
    assert.ok(listed);
    await s.client.setExternalEndpoint({ id: v.id, namespace: 'app', endpoint: '10.96.0.10:2049', version: listed.version });
    const after = await s.client.getVolume({ namespace: 'app', id: v.id });
    assert.equal(after.labels[LABELS.nfsMountEndpoint], '10.96.0.10:2049');
    assert.notEqual(after.version, listed.version, 'the write bumps the version');
    // With the namespace ID from the list, no namespace lookup is needed.
    const lists = s.api.requests.get('GET', '/v2/namespaces');
    await s.client.setExternalEndpoint({ id: v.id, namespace: 'app', namespaceID: listed.namespaceID, endpoint: '10.96.0.12:2049', version: after.version });
    assert.equal(s.api.requests.get('GET', '/v2/namespaces'), lists);
    assert.equal((await s.client.getVolume({ namespace: 'app', id: v.id })).labels[LABELS.nfsMountEndpoint], '10.96.0.12:2049');
    // The same (now stale) version again is a 412 stale write.
    await assert.rejects(
      s.client.setExternalEndpoint({ id: v.id, namespace: 'app', endpoint: '10.96.0.11:2049', version: listed.version }),
      (err: unknown) => err instanceof StaleVersionError && err.status === 412,
    );
  });

  test('stale → 412 → re-read → retry succeeds (ensureExternalEndpoint)', async () => {
    const v = await s.client.createVolume({ namespace: 'app', name: 'pvc-race', sizeBytes: 2 ** 30, labels: csiLabels('pvc-race', 'r', 'app') });
    await s.api.state.shareVolume(v.id);
    // The first mount-endpoint PUT answers 412 as if another writer got there first.
    s.api.faults.add({ method: 'PUT', path: `/v2/namespaces/*/volumes/${v.id}/nfs/mount-endpoint`, stale: true });
    const reads = s.api.requests.get('GET', '/v2/namespaces/{namespaceID}/volumes/{id}');
    const outcome = await ensureExternalEndpoint(s.client, { namespace: 'app', id: v.id }, '10.96.0.20:2049');
    assert.equal(outcome, 'updated');
    assert.equal(s.api.requests.get('GET', '/v2/namespaces/{namespaceID}/volumes/{id}') - reads, 2, 'read, 412, read again');
    assert.equal((await s.client.getVolume({ namespace: 'app', id: v.id })).labels[LABELS.nfsMountEndpoint], '10.96.0.20:2049');
    // Already published: no write at all.
    const puts = s.api.requests.get('PUT', '/v2/namespaces/{namespaceID}/volumes/{id}/nfs/mount-endpoint');
    assert.equal(await ensureExternalEndpoint(s.client, { namespace: 'app', id: v.id }, '10.96.0.20:2049'), 'unchanged');
    assert.equal(s.api.requests.get('PUT', '/v2/namespaces/{namespaceID}/volumes/{id}/nfs/mount-endpoint'), puts);
  });

  test('a write that stays stale gives up with StaleVersionError after the attempts', async () => {
    const v = await s.client.createVolume({ namespace: 'app', name: 'pvc-contended', sizeBytes: 2 ** 30, labels: csiLabels('pvc-contended', 'c', 'app') });
    await s.api.state.shareVolume(v.id);
    s.api.faults.add({ method: 'PUT', path: `/v2/namespaces/*/volumes/${v.id}/nfs/mount-endpoint`, stale: true, times: 3 });
    await assert.rejects(ensureExternalEndpoint(s.client, { namespace: 'app', id: v.id }, '10.96.0.30:2049', { attempts: 3 }), StaleVersionError);
    assert.equal(s.api.faults.list().length, 0, 'all three attempts reached the server');
  });

  test('failover: in progress drops the volume from the list; then it returns at a new endpoint', async () => {
    const v = await s.client.createVolume({ namespace: 'app', name: 'pvc-failover', sizeBytes: 2 ** 30, labels: csiLabels('pvc-failover', 'f', 'app') });
    const shared = await s.api.state.shareVolume(v.id);
    const before = shared.nfs?.serviceEndpoint;
    await s.api.state.failoverVolume(v.id, { inProgress: true });
    assert.equal((await s.client.listSharedVolumes()).some((x) => x.id === v.id), false);
    assert.equal(await s.client.getSharedVolume({ namespace: 'app', id: v.id }), undefined);
    // Over HTTP, as an operator or another process would drive it.
    const res = await fetch(`${s.api.url}/_storage/volumes/${v.id}/failover`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
    const moved = (await s.client.listSharedVolumes()).find((x) => x.id === v.id);
    assert.ok(moved);
    assert.notEqual(moved.internalEndpoint, before);
    assert.match(moved.internalEndpoint, /^10\.\d+\.\d+\.\d+:\d+$/);
  });

  test('getSharedVolume of an absent volume is NotFound', async () => {
    await assert.rejects(s.client.getSharedVolume({ namespace: 'app', id: 'missing' }), NotFoundError);
  });
});
