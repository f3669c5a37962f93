/**
 * lib/provisioner/kube-writer.ts against the API emulator: the provisioner's writes send and return the
 * server's JSON, so a claim's fields client-node's models do not know (a newer API's) survive its PUT:
 * through the generated client they are dropped, and the server refuses the PUT as a change of an immutable
 * spec; a create answers AlreadyExists as `exists`; a finalizer patch
 * is conditional on the volume's resourceVersion; a delete's UID precondition spares a re-created volume.
 * Updates are written back to the object cache tagged with the provisioner's name; a created volume is
 * not (the forwarder caches it from the watch, as upstream leaves it to its informer since v11).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import { isConflict, isInvalid } from '../../lib/kube/errors.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../lib/kube/objects.ts';
import { KubeWriter } from '../../lib/provisioner/kube-writer.ts';
import { VolumeGoneError } from '../../lib/provisioner/sync-volume.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { startDynalite } from '../support/dynalite.ts';

describe('KubeWriter', () => {
  let kube: KubeApi;
  let json: KubeJsonApi;
  let core: CoreV1Api;
  before(async () => {
    kube = await startKubeApi({ port: 0 });
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    json = kc.makeApiClient(KubeJsonApi);
    core = kc.makeApiClient(CoreV1Api);
  });
  after(() => kube.stop());

  const claimPath = (name: string) => `/api/v1/namespaces/default/persistentvolumeclaims/${name}`;
  /** A claim with a field of a newer API in its spec, as the server holds it. */
  async function futureClaim(name: string): Promise<PersistentVolumeClaim & { spec: { futureField?: string } }> {
    return json.post(`/api/v1/namespaces/default/persistentvolumeclaims`, {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, futureField: 'kept' },
    });
  }

  test("a claim's unknown fields survive the provisioner's PUT (the generated client's drops them, and the server refuses it)", async () => {
    const claim = await futureClaim('future');
    assert.equal(claim.spec.futureField, 'kept', 'the emulator keeps a field it does not know');
    const writer = new KubeWriter(json, undefined, 'c1');
    const updated = await writer.updateClaim({ ...claim, metadata: { ...claim.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'n1' } } });
    assert.equal((updated.spec as { futureField?: string }).futureField, 'kept');
    assert.equal((await json.get<{ spec: { futureField?: string } }>(claimPath('future'))).spec.futureField, 'kept');

    // The control: through client-node's models the field is dropped, which changes an immutable spec.
    await futureClaim('future-control');
    const read = await core.readNamespacedPersistentVolumeClaim({ name: 'future-control', namespace: 'default' });
    read.metadata!.annotations = { 'volume.kubernetes.io/selected-node': 'n1' };
    const refused = await core.replaceNamespacedPersistentVolumeClaim({ name: 'future-control', namespace: 'default', body: read }).then(() => undefined, (error: unknown) => error);
    assert.ok(isInvalid(refused), 'the PUT without the field is refused (422: spec is immutable)');
    assert.equal((await json.get<{ spec: { futureField?: string } }>(claimPath('future-control'))).spec.futureField, 'kept');
  });

  test('create, conditional finalizer patch and a delete that spares a re-created volume', async () => {
    const writer = new KubeWriter(json, undefined, 'c1');
    const pv = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-writer' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } } as unknown as PersistentVolume;
    assert.equal(await writer.createVolume(pv), 'created');
    assert.equal(await writer.createVolume(pv), 'exists');
    const created = (await writer.getVolume('pv-writer'))!;
    const patched = await writer.patchFinalizers(created, ['claimflow.io/keep']);
    assert.deepEqual(patched.metadata.finalizers, ['claimflow.io/keep']);
    const stale = await writer.patchFinalizers(created, null).then(() => undefined, (error: unknown) => error);
    assert.ok(isConflict(stale), 'a patch under an old resourceVersion is a conflict');
    await writer.patchFinalizers(patched, null);
    await writer.deleteVolume({ ...created, metadata: { ...created.metadata, uid: 'another-uid' } }).then(
      () => assert.fail('deleted a volume of another UID'),
      (error: unknown) => assert.ok(isConflict(error)),
    );
    await writer.deleteVolume(created);
    assert.equal(await writer.getVolume('pv-writer'), undefined);
    await assert.rejects(writer.deleteVolume(created), VolumeGoneError);
  });

  test('a created volume is left to the watch; its updates and a claim update are written back, tagged', async () => {
    const db = await startDynalite();
    try {
      const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
      const writer = new KubeWriter(json, cache, 'c1');
      const pv = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-left' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/left' } } } as unknown as PersistentVolume;
      assert.equal(await writer.createVolume(pv), 'created');
      assert.equal(await cache.get('c1', 'PersistentVolume', 'pv-left'), undefined, 'the new volume is not cached by the writer');
      const patched = await writer.patchFinalizers((await writer.getVolume('pv-left'))!, ['claimflow.io/keep']);
      const entry = await cache.get('c1', 'PersistentVolume', 'pv-left');
      assert.equal(entry?.rv, Number(patched.metadata.resourceVersion), 'the patched version is cached');
      assert.equal(entry?.writer, 'provisioner', 'tagged with its writer');
      const claim = await futureClaim('written-back');
      const updated = await writer.updateClaim({ ...claim, metadata: { ...claim.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'n2' } } });
      const claimEntry = await cache.get('c1', 'PersistentVolumeClaim', 'default/written-back');
      assert.equal(claimEntry?.rv, Number(updated.metadata.resourceVersion));
      assert.equal(claimEntry?.writer, 'provisioner');
    } finally {
      await db.stop();
    }
  });

  test('a parked volume is cached when its create succeeds (tagged) and when it meets the volume an earlier create made (untagged)', async () => {
    const db = await startDynalite();
    try {
      const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
      const writer = new KubeWriter(json, cache, 'c1');
      const volume = (name: string) => ({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/tmp/${name}` } } }) as unknown as PersistentVolume;
      assert.equal(await writer.createVolume(volume('pv-parked'), { writeBack: true }), 'created');
      const entry = await cache.get('c1', 'PersistentVolume', 'pv-parked');
      assert.equal(entry?.writer, 'provisioner', 'a created parked volume is cached, tagged');
      // An earlier save's POST went through and its record was not cleared: the volume is there already,
      // and has changed since (its claim deleted, the binder released it).
      const earlier = await json.post<PersistentVolume>('/api/v1/persistentvolumes', volume('pv-parked-again'));
      const released = await json.put<PersistentVolume>('/api/v1/persistentvolumes/pv-parked-again/status', { ...earlier, status: { phase: 'Released' } });
      assert.equal(await writer.createVolume(volume('pv-parked-again'), { writeBack: true }), 'exists');
      const again = await cache.get('c1', 'PersistentVolume', 'pv-parked-again');
      assert.equal(again?.rv, Number(released.metadata.resourceVersion), 'the volume as it is now is cached, so the next sync finds it');
      assert.equal(again?.writer, undefined, 'untagged: the provisioner did not write that version, and its Released event must reach the provisioner');
      // Without writeBack nothing is read or cached.
      await json.post('/api/v1/persistentvolumes', volume('pv-exists-plain'));
      assert.equal(await writer.createVolume(volume('pv-exists-plain')), 'exists');
      assert.equal(await cache.get('c1', 'PersistentVolume', 'pv-exists-plain'), undefined);
    } finally {
      await db.stop();
    }
  });
});
