/**
 * The `storageos` and `local` Provisioners against the embedded storage control plane over HTTP
 * (the real StorageOS client, the real server, its fault injection), and one claim provisioned end to
 * end through the pure core with each.
 */
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { startStorageApi, type StorageApiHandle } from '../../infra/local/storage-api/server.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { InfeasibleError, IgnoredError } from '../../lib/provisioner/errors.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../lib/kube/objects.ts';
import { LocalProvisioner, annLocalVolume } from '../../lib/provisioner/provisioners/local.ts';
import { StorageOSProvisioner, STORAGEOS_DRIVER, parseVolumeHandle } from '../../lib/provisioner/provisioners/storageos.ts';
import { BackoffStore, type PersistentVolumeCreator } from '../../lib/provisioner/store.ts';
import { syncClaim } from '../../lib/provisioner/sync-claim.ts';
import { syncVolume, type VolumeWriter } from '../../lib/provisioner/sync-volume.ts';
import type { ProvisionOptions } from '../../lib/provisioner/types.ts';

const ctx = { signal: new AbortController().signal };

function claim(name: string, uid: string, extra: Partial<PersistentVolumeClaim['spec']> = {}, annotations: Record<string, string> = {}): PersistentVolumeClaim {
  return {
    metadata: { name, namespace: 'apps', uid, resourceVersion: '7', annotations },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'fast', ...extra },
  };
}

function cls(provisioner: string, extra: Partial<StorageClass> = {}): StorageClass {
  return { metadata: { name: 'fast', uid: 'uid-fast' }, provisioner, reclaimPolicy: 'Delete', ...extra };
}

const options = (c: PersistentVolumeClaim, sc: StorageClass, selectedNodeName = ''): ProvisionOptions =>
  ({ storageClass: sc, pvName: `pvc-${c.metadata.uid}`, pvc: c, selectedNodeName });

describe('storage-backed Provisioners against the embedded control plane', () => {
  let api: StorageApiHandle;
  let storage: StorageOSClient;

  before(async () => {
    api = await startStorageApi({ port: 0, nodes: ['node-1', 'node-2'] });
    storage = new StorageOSClient({ endpoint: api.url, username: 'storageos', password: 'storageos' });
  });
  after(async () => {
    await api.stop();
  });

  const volumesNamed = async (name: string) => (await storage.listVolumes('apps').catch(() => [])).filter((v) => v.name === name);

  describe('storageos', () => {
    it('creates one volume per PV name, returns a CSI PV, and is idempotent', async () => {
      const p = new StorageOSProvisioner(storage);
      const c = claim('data', 'u1');
      const sc = cls(STORAGEOS_DRIVER, { parameters: { 'storageos.com/replicas': '1', 'csi.storage.k8s.io/fstype': 'xfs', other: 'x' }, mountOptions: ['noatime'], reclaimPolicy: 'Retain' });
      const first = await p.provision(ctx, options(c, sc));
      const second = await p.provision(ctx, options(c, sc));
      assert.equal(first.state, 'Finished');
      assert.deepEqual(second.pv, first.pv, 'a repeated provision adopts the same volume');
      const volumes = await volumesNamed('pvc-u1');
      assert.equal(volumes.length, 1);
      const v = volumes[0];
      assert.equal(v.sizeBytes, 1 << 30);
      assert.equal(v.fsType, 'xfs');
      assert.equal(v.labels['storageos.com/replicas'], '1');
      assert.equal(v.labels['csi.storage.k8s.io/pvc/name'], 'data');
      assert.equal(v.labels.other, undefined, 'only storageos.com/* parameters become labels');
      assert.deepEqual(first.pv!.spec, {
        capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', volumeMode: 'Filesystem',
        mountOptions: ['noatime'],
        csi: { driver: STORAGEOS_DRIVER, volumeHandle: `apps/${v.id}`, fsType: 'xfs', volumeAttributes: {
          'csi.storage.k8s.io/pv/name': 'pvc-u1', 'csi.storage.k8s.io/pvc/name': 'data', 'csi.storage.k8s.io/pvc/namespace': 'apps', 'storageos.com/volume-id': v.id,
        } },
      });
      await p.delete(ctx, first.pv!);
      assert.equal((await volumesNamed('pvc-u1')).length, 0);
      await p.delete(ctx, first.pv!); // already gone: success
    });

    it('places the master on the selected node and supports block', async () => {
      const p = new StorageOSProvisioner(storage);
      const c = claim('blk', 'u2', { volumeMode: 'Block' });
      const { pv } = await p.provision(ctx, options(c, cls(STORAGEOS_DRIVER), 'node-2'));
      assert.equal(p.supportsBlock(), true);
      assert.equal(pv!.spec.volumeMode, 'Block');
      assert.equal(pv!.spec.csi!.fsType, undefined);
      const ref = parseVolumeHandle(pv!.spec.csi!.volumeHandle)!;
      const volume = await storage.getVolume(ref);
      const node2 = (await storage.listNodes()).find((n) => n.name === 'node-2')!;
      assert.equal(volume.masterNodeID, node2.id);
      assert.equal(volume.fsType, 'block');
      await p.delete(ctx, pv!);
    });

    it('refuses an unusable size as infeasible and ignores PVs of other drivers', async () => {
      const p = new StorageOSProvisioner(storage);
      await assert.rejects(p.provision(ctx, options(claim('bad', 'u3', { resources: { requests: { storage: '0' } } }), cls(STORAGEOS_DRIVER))), InfeasibleError);
      await assert.rejects(p.delete(ctx, { metadata: { name: 'x' }, spec: { csi: { driver: 'other', volumeHandle: 'a/b' } } }), IgnoredError);
    });

    it('a 5xx from the control plane is retried by the client; a persistent one fails the provision in the background (the create may be under way)', async () => {
      const p = new StorageOSProvisioner(storage);
      api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', status: 500, times: 1 });
      const ok = await p.provision(ctx, options(claim('flaky', 'u4'), cls(STORAGEOS_DRIVER)));
      assert.equal((await volumesNamed('pvc-u4')).length, 1, 'one volume after a retried 500');
      api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', status: 503, times: Infinity });
      try {
        const down = await p.provision(ctx, options(claim('down', 'u5'), cls(STORAGEOS_DRIVER)));
        assert.equal(down.state, 'InBackground');
        assert.match(String(down.error?.message), /503/);
        assert.equal(down.pv, undefined);
        // a 4xx answer says the create did not happen: final
        api.faults.clear();
        api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', status: 422, times: 1 });
        const refused = await p.provision(ctx, options(claim('refused', 'u7'), cls(STORAGEOS_DRIVER)));
        assert.equal(refused.state, 'Finished');
        assert.match(String(refused.error?.message), /422/);
      } finally {
        api.faults.clear();
      }
      assert.equal((await volumesNamed('pvc-u5')).length, 0);
      await p.delete(ctx, ok.pv!);
    });
  });

  describe('local', () => {
    it('exposes the volume directory as a local PV pinned to its node; delete removes it', async () => {
      const p = new LocalProvisioner(storage);
      const c = claim('logs', 'u6');
      const { pv, state } = await p.provision(ctx, options(c, cls('claimflow.io/local'), 'node-1'));
      assert.equal(state, 'Finished');
      const path = pv!.spec.local!.path;
      assert.ok((await stat(path)).isDirectory());
      assert.deepEqual(pv!.spec.nodeAffinity, { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] }] } });
      assert.match(pv!.metadata.annotations![annLocalVolume], /^apps\//);
      await p.delete(ctx, pv!);
      await assert.rejects(stat(path), { code: 'ENOENT' });
      assert.equal((await volumesNamed('pvc-u6')).length, 0);
    });

    it('without a selected node, pins the PV to the node the control plane chose', async () => {
      const p = new LocalProvisioner(storage);
      const { pv } = await p.provision(ctx, options(claim('any', 'u7'), cls('claimflow.io/local')));
      const nodeName = pv!.spec.nodeAffinity!.required!.nodeSelectorTerms[0].matchExpressions![0].values![0];
      assert.ok(['node-1', 'node-2'].includes(nodeName));
      await p.delete(ctx, pv!);
    });

    it('reschedules when the selected node holds no storage, creating nothing', async () => {
      const p = new LocalProvisioner(storage);
      const result = await p.provision(ctx, options(claim('wfc', 'u8'), cls('claimflow.io/local'), 'node-9'));
      assert.equal(result.state, 'Reschedule');
      assert.equal(result.error?.message, 'node "node-9" holds no local storage');
      assert.equal((await volumesNamed('pvc-u8')).length, 0);
    });

    it('before rescheduling, removes a volume an earlier attempt made (cut short after the create), and stays in progress while that fails', async () => {
      const p = new LocalProvisioner(storage);
      const c = claim('wfc-cut', 'u10');
      // An attempt killed after its create on node-1; node-1 has since left the storage cluster.
      await storage.createVolume({ namespace: 'apps', name: 'pvc-u10', sizeBytes: 1 << 30, labels: { 'csi.storage.k8s.io/pv/name': 'pvc-u10' }, nodeName: 'node-1' });
      for (const [fault, want] of [
        [{ method: 'GET', path: '/v2/namespaces/*/volumes', status: 400, times: Infinity }, /^node "node-9" holds no local storage; looking up an earlier attempt's volume failed, retrying: /],
        [{ method: 'DELETE', path: '/v2/namespaces/*/volumes/*', status: 400, times: Infinity }, /^node "node-9" holds no local storage; removing it failed, retrying: /],
      ] as const) {
        api.faults.add(fault);
        let result;
        try {
          result = await p.provision(ctx, options(c, cls('claimflow.io/local'), 'node-9'));
        } finally {
          api.faults.clear();
        }
        assert.equal(result.state, 'InBackground', `not Reschedule while the volume may exist (${fault.method})`);
        assert.match(result.error!.message, want);
        assert.equal((await volumesNamed('pvc-u10')).length, 1);
      }
      const again = await p.provision(ctx, options(c, cls('claimflow.io/local'), 'node-9'));
      assert.equal(again.state, 'Reschedule');
      assert.equal(again.error!.message, 'node "node-9" holds no local storage');
      assert.equal((await volumesNamed('pvc-u10')).length, 0, 'removed');
      // A volume of that name that another PV owns is not this claim's: left alone.
      await storage.createVolume({ namespace: 'apps', name: 'pvc-u11', sizeBytes: 1 << 30, labels: { 'csi.storage.k8s.io/pv/name': 'pvc-other' }, nodeName: 'node-1' });
      const foreign = await p.provision(ctx, options(claim('wfc-foreign', 'u11'), cls('claimflow.io/local'), 'node-9'));
      assert.equal(foreign.state, 'Reschedule');
      assert.equal((await volumesNamed('pvc-u11')).length, 1, 'another PV\'s volume kept');
    });
  });

  describe('local: a volume on the wrong node', () => {
    it('is removed before rescheduling; if the removal fails, the claim stays in progress (InBackground) until it succeeds', async () => {
      const p = new LocalProvisioner(storage);
      const c = claim('misplaced', 'u9');
      // A previous attempt's volume, placed on node-2; the scheduler now selects node-1.
      await storage.createVolume({ namespace: 'apps', name: 'pvc-u9', sizeBytes: 1 << 30, labels: { 'csi.storage.k8s.io/pv/name': 'pvc-u9' }, nodeName: 'node-2' });
      api.faults.add({ method: 'DELETE', path: '/v2/namespaces/*/volumes/*', status: 400, times: Infinity });
      let result;
      try {
        result = await p.provision(ctx, options(c, cls('claimflow.io/local'), 'node-1'));
      } finally {
        api.faults.clear();
      }
      assert.equal(result.state, 'InBackground', 'not Reschedule: the volume still exists');
      assert.match(result.error!.message, /^volume was placed on "node-2", not on the selected node "node-1"; removing it failed, retrying: /);
      assert.equal((await volumesNamed('pvc-u9')).length, 1);
      const again = await p.provision(ctx, options(c, cls('claimflow.io/local'), 'node-1'));
      assert.equal(again.state, 'Reschedule');
      assert.equal(again.error!.message, 'volume was placed on "node-2", not on the selected node "node-1"');
      assert.equal((await volumesNamed('pvc-u9')).length, 0, 'removed');
    });
  });

  describe('through the core', () => {
    /** The PV objects the store saves and the volume sync deletes (the emulator comes with the shell). */
    class Objects implements PersistentVolumeCreator, VolumeWriter {
      pvs = new Map<string, PersistentVolume>();
      async createVolume(pv: PersistentVolume): Promise<'created' | 'exists'> {
        if (this.pvs.has(pv.metadata.name!)) return 'exists';
        this.pvs.set(pv.metadata.name!, structuredClone(pv));
        return 'created';
      }
      async patchFinalizers(pv: PersistentVolume): Promise<PersistentVolume> { return pv; }
      async deleteVolume(pv: PersistentVolume): Promise<void> { this.pvs.delete(pv.metadata.name!); }
      async getVolume(name: string): Promise<PersistentVolume | undefined> { return this.pvs.get(name); }
    }

    for (const backend of ['storageos', 'local'] as const) {
      it(`${backend}: provisions a claim, then deletes the volume when the PV is Released`, async () => {
        const provisioner = backend === 'storageos' ? new StorageOSProvisioner(storage) : new LocalProvisioner(storage);
        const name = backend === 'storageos' ? STORAGEOS_DRIVER : 'claimflow.io/local';
        const config = { provisionerName: name, additionalProvisionerNames: [], addFinalizer: false };
        const objects = new Objects();
        const c = claim(`e2e-${backend}`, `u-${backend}`, {}, { 'volume.kubernetes.io/storage-provisioner': name });
        const outcome = await syncClaim({ config, provisioner, store: new BackoffStore({ creator: objects, provisioner, backoff: { durationMs: 0, factor: 1, steps: 1 } }), slowRetryPeriodMs: 300_000 },
          { claim: c, storageClass: cls(name), now: Date.now() });
        assert.equal(outcome.result, 'done');
        assert.deepEqual(outcome.events.map((e) => e.reason), ['Provisioning', 'ProvisioningSucceeded']);
        const pv = objects.pvs.get(`pvc-u-${backend}`)!;
        assert.equal(pv.metadata.annotations!['pv.kubernetes.io/provisioned-by'], name);
        assert.equal(pv.spec.claimRef!.uid, `u-${backend}`);
        assert.equal((await volumesNamed(`pvc-u-${backend}`)).length, 1);

        pv.status = { phase: 'Released' };
        const deleted = await syncVolume({ config, provisioner, writer: objects, attachments: { list: async () => [] } }, pv);
        assert.equal(deleted.result, 'done');
        assert.equal(deleted.deletedAsset, true);
        assert.equal(objects.pvs.size, 0);
        assert.equal((await volumesNamed(`pvc-u-${backend}`)).length, 0);
      });
    }
  });
});
