/**
 * The provisioner with the binder, through the emulator, dynalite and the storage control plane. A small
 * loop plays the forwarder and the queues: it lists claims and volumes, writes what changed into the
 * cache, and reconciles each changed key with both controllers (and the binder's own requeues) until
 * nothing changes. A claim of the default class (no class named: the emulator's DefaultStorageClass
 * admission fills it in) is annotated by the binder, provisioned by us, bound by the binder; deleting
 * it releases the volume, and the provisioner deletes the backend volume and the PV (Delete) or keeps
 * both (Retain).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BinderApi } from '../../lib/binder/api.ts';
import { reconcileBinder } from '../../lib/binder/controller.ts';
import type { WatchedKind } from '../../lib/runtime/message.ts';
import { createProvisionerController } from '../../lib/provisioner/controller.ts';
import { toJson } from '../support/json.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import { LocalProvisioner } from '../../lib/provisioner/provisioners/local.ts';
import { CLUSTER, startProvisionerStack, type ProvisionerStack } from './stack.ts';

const NAME = 'claimflow.io/local';

describe('provisioner + binder hand-off', () => {
  let stack: ProvisionerStack;
  const seen = new Map<string, { rv: string; obj: Record<string, any> }>();

  before(async () => {
    stack = await startProvisionerStack({ nodes: ['node-1'] });
    await stack.createClass('local', NAME, { reclaimPolicy: 'Delete', metadata: { name: 'local', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } });
    await stack.createClass('local-retain', NAME, { reclaimPolicy: 'Retain' });
  });
  after(async () => stack.stop());

  /** One forwarder pass: every changed claim/volume into the cache; returns the changed keys. */
  async function forward(): Promise<Array<{ kind: WatchedKind; key: string; uid: string; rv: string }>> {
    const changed: Array<{ kind: WatchedKind; key: string; uid: string; rv: string }> = [];
    const current = new Map<string, { kind: WatchedKind; key: string; obj: Record<string, any> }>();
    for (const pvc of (await stack.core.listNamespacedPersistentVolumeClaim({ namespace: 'default' })).items) {
      current.set(`PersistentVolumeClaim/default/${pvc.metadata!.name}`, { kind: 'PersistentVolumeClaim', key: `default/${pvc.metadata!.name}`, obj: toJson(pvc) });
    }
    for (const pv of (await stack.core.listPersistentVolume()).items) {
      current.set(`PersistentVolume/${pv.metadata!.name}`, { kind: 'PersistentVolume', key: pv.metadata!.name!, obj: toJson(pv) });
    }
    for (const [id, { kind, key, obj }] of current) {
      if (seen.get(id)?.rv === obj.metadata.resourceVersion) continue;
      seen.set(id, { rv: obj.metadata.resourceVersion, obj });
      await stack.cache.put(CLUSTER, kind, obj);
      changed.push({ kind, key, uid: obj.metadata.uid, rv: obj.metadata.resourceVersion });
    }
    for (const [id, { rv, obj }] of seen) {
      if (current.has(id)) continue;
      seen.delete(id);
      const kind = id.startsWith('PersistentVolumeClaim/') ? 'PersistentVolumeClaim' : 'PersistentVolume';
      await stack.cache.remove(CLUSTER, kind, obj, Number(rv) + 1);
      changed.push({ kind, key: kind === 'PersistentVolume' ? obj.metadata.name : `default/${obj.metadata.name}`, uid: obj.metadata.uid, rv: String(Number(rv) + 1) });
    }
    return changed;
  }

  /** Runs forwarder passes and both controllers until nothing changes (bounded). */
  async function settle(provisioner: ReturnType<typeof createProvisionerController>): Promise<void> {
    const binderQueue: Array<{ kind: WatchedKind; key: string; uid: string; rv: string }> = [];
    const binderDeps = {
      cluster: CLUSTER, cache: stack.cache, api: new BinderApi(stack.json), recorder: stack.recorder,
      async enqueue(kind: WatchedKind, key: string, uid: string, rv: string) { binderQueue.push({ kind, key, uid, rv }); },
    };
    for (let round = 0; round < 20; round++) {
      const changed = await forward();
      const work = [...changed, ...binderQueue.splice(0)];
      if (work.length === 0) return;
      for (const item of work) {
        const event = { v: 1 as const, cluster: CLUSTER, kind: item.kind, type: 'MODIFIED' as const, key: item.key, uid: item.uid ?? '', resourceVersion: /^[0-9]+$/.test(item.rv) ? item.rv : '0', observedAt: new Date().toISOString() };
        await reconcileBinder({ kind: item.kind, key: item.key, event }, binderDeps).catch(() => undefined);
        await stack.reconcile(provisioner, item.kind, item.key, item.uid).catch(() => undefined);
      }
      // The emulator's own controllers (pvc-protection, pv-protection) act asynchronously.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('did not settle in 20 rounds');
  }

  for (const addFinalizer of [false, true]) {
    it(`a default-class claim becomes Bound to a fresh volume; deleting it deletes volume and PV (AddFinalizer ${addFinalizer})`, async () => {
      const provisioner = createProvisionerController({
        options: provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local', PROVISIONER_ADD_FINALIZER: String(addFinalizer) }),
        provisioner: new LocalProvisioner(stack.storage),
      });
      const name = `app-data-${addFinalizer}`;
      await stack.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: {
        metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      } });
      await settle(provisioner);
      const claim = await stack.core.readNamespacedPersistentVolumeClaim({ name, namespace: 'default' });
      assert.equal(claim.spec!.storageClassName, 'local');
      assert.equal(claim.status!.phase, 'Bound');
      const pvName = claim.spec!.volumeName!;
      assert.equal(pvName, `pvc-${claim.metadata!.uid}`);
      const pv = await stack.core.readPersistentVolume({ name: pvName });
      assert.equal(pv.status!.phase, 'Bound');
      assert.equal(pv.metadata!.finalizers?.includes('external-provisioner.volume.kubernetes.io/finalizer') ?? false, addFinalizer);
      assert.equal((await stack.storage.listVolumes('default')).filter((v) => v.name === pvName).length, 1);
      assert.ok(stack.recorder.events.some((e) => e.reason === 'ExternalProvisioning' && e.object.metadata?.name === name), 'the binder hands over');

      await stack.core.deleteNamespacedPersistentVolumeClaim({ name, namespace: 'default' });
      await settle(provisioner);
      assert.equal((await stack.storage.listVolumes('default')).filter((v) => v.name === pvName).length, 0, 'backend volume deleted');
      await assert.rejects(stack.core.readPersistentVolume({ name: pvName }), (e: any) => e.code === 404);
    });
  }

  it('Retain: deleting the claim keeps the PV (Released) and the backend volume', async () => {
    const provisioner = createProvisionerController({ options: provisionerOptionsFromEnv({ PROVISIONER_BACKEND: 'local' }), provisioner: new LocalProvisioner(stack.storage) });
    await stack.core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: {
      metadata: { name: 'kept' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'local-retain' },
    } });
    await settle(provisioner);
    const claim = await stack.core.readNamespacedPersistentVolumeClaim({ name: 'kept', namespace: 'default' });
    assert.equal(claim.status!.phase, 'Bound');
    const pvName = claim.spec!.volumeName!;
    await stack.core.deleteNamespacedPersistentVolumeClaim({ name: 'kept', namespace: 'default' });
    await settle(provisioner);
    const pv = await stack.core.readPersistentVolume({ name: pvName });
    assert.equal(pv.status!.phase, 'Released');
    assert.equal((await stack.storage.listVolumes('default')).filter((v) => v.name === pvName).length, 1);
  });
});
