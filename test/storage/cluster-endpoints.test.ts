/**
 * One storage control plane per cluster: the `storage` field of a `CLUSTERS` entry routes the calls made
 * for that cluster (inside `runWithStorageCluster`) to its own control plane; everything else, and every
 * configuration without such a field, keeps using `STORAGE_API_URL` as before.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClusterStorageConfigError, parseClusterStorage, runWithStorageCluster, storageCluster } from '../../lib/storage/clusters.ts';
import { StorageError } from '../../lib/storage/errors.ts';
import { createStorageClientFromEnv } from '../../lib/storage/storageos/from-env.ts';
import { startStorage, type StorageFixture } from './support.ts';

describe('parseClusterStorage', () => {
  it('reads only the storage field of each entry', () => {
    const json = JSON.stringify({
      a: { kubeconfig: '/a.yaml', storage: { url: 'http://a:5705' } },
      b: { eks: { name: 'b' }, storage: { url: 'http://b:5705', username: 'u', password: 'p' } },
      c: { kubeconfig: '/c.yaml' },
    });
    assert.deepEqual(parseClusterStorage(json), { a: { url: 'http://a:5705' }, b: { url: 'http://b:5705', username: 'u', password: 'p' } });
  });
  it('is empty without CLUSTERS', () => {
    assert.deepEqual(parseClusterStorage(undefined), {});
    assert.deepEqual(parseClusterStorage(''), {});
  });
  it('rejects invalid JSON and an invalid storage field', () => {
    assert.throws(() => parseClusterStorage('{'), ClusterStorageConfigError);
    assert.throws(() => parseClusterStorage(JSON.stringify({ a: { storage: { url: '' } } })), ClusterStorageConfigError);
    assert.throws(() => parseClusterStorage(JSON.stringify({ a: { storage: 'http://a' } })), ClusterStorageConfigError);
  });
  it('nests cluster scopes', async () => {
    assert.equal(storageCluster(), undefined);
    await runWithStorageCluster('a', async () => {
      await new Promise((r) => setImmediate(r));
      assert.equal(storageCluster(), 'a');
      runWithStorageCluster('b', () => assert.equal(storageCluster(), 'b'));
      assert.equal(storageCluster(), 'a');
    });
  });
});

describe('createStorageClientFromEnv with per-cluster endpoints', () => {
  let a: StorageFixture;
  let b: StorageFixture;
  let fallback: StorageFixture;
  before(async () => {
    a = await startStorage();
    b = await startStorage({ username: 'bee', password: 'bee-secret' });
    fallback = await startStorage();
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop(), fallback?.stop()]);
  });

  const volumeNames = (f: StorageFixture) => f.api.state.allVolumes().map((v) => v.name).sort();

  it('routes each cluster to its control plane, with its own credentials', async () => {
    const env = {
      STORAGE_API_URL: fallback.api.url,
      CLUSTERS: JSON.stringify({
        a: { kubeconfig: '/a.yaml', storage: { url: a.api.url } },
        b: { kubeconfig: '/b.yaml', storage: { url: b.api.url, username: 'bee', password: 'bee-secret' } },
        c: { kubeconfig: '/c.yaml' },
      }),
    };
    const client = createStorageClientFromEnv(env);
    await runWithStorageCluster('a', () => client.createVolume({ namespace: 'default', name: 'vol-a', sizeBytes: 1 << 20 }));
    await runWithStorageCluster('b', async () => {
      await new Promise((r) => setTimeout(r, 5));
      await client.createVolume({ namespace: 'default', name: 'vol-b', sizeBytes: 1 << 20 });
    });
    await runWithStorageCluster('c', () => client.createVolume({ namespace: 'default', name: 'vol-c', sizeBytes: 1 << 20 }));
    await client.createVolume({ namespace: 'default', name: 'vol-none', sizeBytes: 1 << 20 });
    assert.deepEqual(volumeNames(a), ['vol-a']);
    assert.deepEqual(volumeNames(b), ['vol-b']);
    assert.deepEqual(volumeNames(fallback), ['vol-c', 'vol-none']);
    // namespace IDs are per control plane: the same namespace name resolves independently in each
    const listed = await runWithStorageCluster('b', () => client.listVolumes('default'));
    assert.deepEqual(listed.map((v) => v.name), ['vol-b']);
  });

  it('without STORAGE_API_URL, a call outside a configured cluster fails', async () => {
    const client = createStorageClientFromEnv({ CLUSTERS: JSON.stringify({ a: { kubeconfig: '/a.yaml', storage: { url: a.api.url } } }) });
    assert.ok((await runWithStorageCluster('a', () => client.listNodes())).length >= 0);
    await assert.rejects(() => client.listNodes(), StorageError);
  });

  it('without any storage field, the single-URL client is unchanged', () => {
    assert.throws(() => createStorageClientFromEnv({ CLUSTERS: JSON.stringify({ a: { kubeconfig: '/a.yaml' } }) }), /STORAGE_API_URL is not set/);
    const client = createStorageClientFromEnv({ STORAGE_API_URL: fallback.api.url, CLUSTERS: JSON.stringify({ a: { kubeconfig: '/a.yaml' } }) });
    assert.equal(Object.getPrototypeOf(client).constructor.name, 'StorageOSClient');
    assert.equal(client.constructor.name, 'StorageOSClient');
  });
});
