import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { AlreadyExistsError, NotFoundError, StaleVersionError } from '../../lib/storage/errors.ts';
import { LABELS } from '../../lib/storage/types.ts';
import { csiLabels, startStorage, type StorageFixture } from './support.ts';

describe('volumes: StorageOS client against the embedded control plane', () => {
  let s: StorageFixture;
  before(async () => {
    s = await startStorage({ nodes: ['worker-1', 'worker-2'] });
  });
  after(() => s.stop());

  test('create → get → delete, with a directory per volume', async () => {
    const created = await s.client.createVolume({
      namespace: 'default',
      name: 'pvc-1111',
      sizeBytes: 5 * 2 ** 30,
      labels: csiLabels('pvc-1111', 'data', 'app'),
    });
    assert.equal(created.name, 'pvc-1111');
    assert.equal(created.namespace, 'default');
    assert.equal(created.sizeBytes, 5 * 2 ** 30);
    assert.equal(created.fsType, 'ext4');
    assert.equal(created.labels[LABELS.pvcName], 'data');
    assert.equal(created.nfsServiceEndpoint, null);
    assert.ok(created.localPath, 'the local control plane reports the backing directory');
    assert.ok((await stat(created.localPath)).isDirectory());

    const read = await s.client.getVolume({ namespace: 'default', id: created.id });
    assert.deepEqual(read, created);

    assert.equal(await s.client.deleteVolume({ namespace: 'default', id: created.id, version: created.version }), true);
    await assert.rejects(stat(created.localPath), { code: 'ENOENT' });
    await assert.rejects(s.client.getVolume({ namespace: 'default', id: created.id }), NotFoundError);
    assert.equal(await s.client.deleteVolume({ namespace: 'default', id: created.id }), false, 'delete is idempotent');
  });

  test('a new namespace is created on first use and resolved by name', async () => {
    const v = await s.client.createVolume({ namespace: 'team-a', name: 'pvc-2222', sizeBytes: 2 ** 30 });
    const namespaces = await s.client.listNamespaces();
    const teamA = namespaces.find((ns) => ns.name === 'team-a');
    assert.ok(teamA);
    assert.equal(v.namespaceID, teamA.id);
    assert.equal(s.api.requests.get('POST', '/v2/namespaces'), 1);
    // A second volume reuses the cached namespace ID: no new namespace list or create.
    const listsBefore = s.api.requests.get('GET', '/v2/namespaces');
    await s.client.createVolume({ namespace: 'team-a', name: 'pvc-2223', sizeBytes: 2 ** 30 });
    assert.equal(s.api.requests.get('GET', '/v2/namespaces'), listsBefore);
    assert.equal(s.api.requests.get('POST', '/v2/namespaces'), 1);
    assert.deepEqual((await s.client.listVolumes('team-a')).map((x) => x.name).sort(), ['pvc-2222', 'pvc-2223']);
  });

  test('concurrent creates share one namespace list and one namespace create', async () => {
    const client = s.newClient();
    await client.listNodes(); // log in first so only namespace calls are counted
    s.api.requests.reset();
    const volumes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.createVolume({ namespace: `burst-${i % 2}`, name: `pvc-burst-${i}`, sizeBytes: 2 ** 30 })),
    );
    assert.equal(new Set(volumes.map((v) => v.id)).size, 20);
    assert.deepEqual(s.api.requests.snapshot(), {
      'GET /v2/namespaces': 1,
      'POST /v2/namespaces': 2,
      'POST /v2/namespaces/{namespaceID}/volumes': 20,
    });
  });

  test('names are unique per namespace: 409 AlreadyExists, adoptable by name', async () => {
    const first = await s.client.createVolume({ namespace: 'default', name: 'pvc-3333', sizeBytes: 2 ** 30 });
    await assert.rejects(
      s.client.createVolume({ namespace: 'default', name: 'pvc-3333', sizeBytes: 2 ** 30 }),
      (err: unknown) => err instanceof AlreadyExistsError && err.status === 409,
    );
    const found = await s.client.getVolumeByName('default', 'pvc-3333');
    assert.equal(found?.id, first.id);
    assert.equal(await s.client.getVolumeByName('default', 'pvc-none'), undefined);
    assert.equal(await s.client.getVolumeByName('no-such-namespace', 'pvc-3333'), undefined);
  });

  test('nodeName places the master on that node via the hint.master label', async () => {
    const nodes = await s.client.listNodes();
    const worker2 = nodes.find((n) => n.name === 'worker-2');
    assert.ok(worker2);
    const v = await s.client.createVolume({ namespace: 'default', name: 'pvc-4444', sizeBytes: 2 ** 30, nodeName: 'worker-2' });
    assert.equal(v.labels[LABELS.hintMaster], 'worker-2');
    assert.equal(v.masterNodeID, worker2.id);
  });

  test('delete with a stale version → 412; without a version the client reads it', async () => {
    const v = await s.client.createVolume({ namespace: 'default', name: 'pvc-5555', sizeBytes: 2 ** 30 });
    await s.api.state.shareVolume(v.id); // bumps the version behind the client's back
    await assert.rejects(s.client.deleteVolume({ namespace: 'default', id: v.id, version: v.version }), StaleVersionError);
    assert.equal(await s.client.deleteVolume({ namespace: 'default', id: v.id }), true);
    assert.equal(s.api.state.allVolumes().some((x) => x.id === v.id), false);
  });

  test('an unknown volume or namespace is NotFound', async () => {
    await assert.rejects(s.client.getVolume({ namespace: 'default', id: '00000000-0000-0000-0000-000000000000' }), NotFoundError);
    await assert.rejects(s.client.getVolume({ namespace: 'nowhere', id: 'x' }), NotFoundError);
  });
});
