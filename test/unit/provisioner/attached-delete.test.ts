/**
 * An attached volume is never deleted: the CSI external-provisioner's `TestDelete` rows about
 * VolumeAttachments (`pkg/controller/controller_test.go`: "fail - delete when attached to node", "… exists
 * but not attached to node", "… with deletionTimestamp set", "simple - valid case with existing
 * volumeattachment on different pv"), run through claimflow's `syncVolume` with the library's
 * consequences (Warning `VolumeFailedDelete` with the error text, failed delete metric, retried), for the
 * default configuration and `AddFinalizer`. Plus the pure helpers the VolumeAttachment events use.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { attachedVolumeName, canDeleteVolume, detachedVolumeName, type VolumeAttachment } from '../../../lib/provisioner/attachments.ts';
import { annDynamicallyProvisioned } from '../../../lib/provisioner/constants.ts';
import type { PersistentVolume } from '../../../lib/kube/objects.ts';
import { syncVolume } from '../../../lib/provisioner/sync-volume.ts';
import { config, countMetrics, finalizerPV, newCSIVolume, newVolume, TestProvisioner, timestamp, World, type TestMetrics } from './fixtures.ts';

const fb = 'foo.bar/baz';
const byFb = { [annDynamicallyProvisioned]: fb };

/** A VolumeAttachment in the shape the cache holds (upstream test: attacher-less, node `node`). */
function newVolumeAttachment(name: string, pvName: string | null, options: { attached?: boolean; deletionTimestamp?: string; nodeName?: string } = {}): VolumeAttachment {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'VolumeAttachment',
    metadata: { name, uid: `uid-${name}`, ...(options.deletionTimestamp ? { deletionTimestamp: options.deletionTimestamp } : {}) },
    spec: {
      attacher: fb,
      nodeName: options.nodeName ?? 'node',
      source: pvName === null ? { inlineVolumeSpec: { csi: { driver: fb, volumeHandle: 'inline' } } } : { persistentVolumeName: pvName },
    },
    ...(options.attached === undefined ? {} : { status: { attached: options.attached } }),
  };
}

interface Row {
  name: string;
  volume: PersistentVolume;
  attachments: VolumeAttachment[];
  /** The lister fails with this message. */
  listError?: string;
  addFinalizer?: boolean;
  expectedVolumes: PersistentVolume[];
  expectedDeletes: string[];
  expectedEvents: string[];
  expectedMetrics: TestMetrics;
  expectedResult: 'done' | 'requeue';
  /** Whether the lister is read at all (only on the delete path). */
  expectedListed: boolean;
}

const releasedPv = (finalizers: string[] | null = null) => newVolume('pv', 'Released', 'Delete', byFb, finalizers, null);
const attachedEvent = 'Warning VolumeFailedDelete persistentvolume pv is still attached to node node';
const failedMetric: TestMetrics = { deleted: { '': { failed: 1 } } };

const rows: Row[] = [
  {
    name: 'fail - delete when attached to node',
    volume: releasedPv(), attachments: [newVolumeAttachment('va', 'pv', { attached: true })],
    expectedVolumes: [releasedPv()], expectedDeletes: [], expectedEvents: [attachedEvent],
    expectedMetrics: failedMetric, expectedResult: 'requeue', expectedListed: true,
  },
  {
    name: 'fail - delete when volumeattachment exists but not attached to node',
    volume: releasedPv(), attachments: [newVolumeAttachment('va', 'pv', { attached: false })],
    expectedVolumes: [releasedPv()], expectedDeletes: [], expectedEvents: [attachedEvent],
    expectedMetrics: failedMetric, expectedResult: 'requeue', expectedListed: true,
  },
  {
    name: 'fail - delete when volumeattachment exists with deletionTimestamp set',
    volume: releasedPv(), attachments: [newVolumeAttachment('va', 'pv', { deletionTimestamp: timestamp })],
    expectedVolumes: [releasedPv()], expectedDeletes: [], expectedEvents: [attachedEvent],
    expectedMetrics: failedMetric, expectedResult: 'requeue', expectedListed: true,
  },
  {
    name: 'fail - the first attachment that names the volume is reported (its node)',
    volume: releasedPv(),
    attachments: [newVolumeAttachment('va-0', 'other-pv', { nodeName: 'node-0' }), newVolumeAttachment('va-1', 'pv', { nodeName: 'node-1' }), newVolumeAttachment('va-2', 'pv', { nodeName: 'node-2' })],
    expectedVolumes: [releasedPv()], expectedDeletes: [], expectedEvents: ['Warning VolumeFailedDelete persistentvolume pv is still attached to node node-1'],
    expectedMetrics: failedMetric, expectedResult: 'requeue', expectedListed: true,
  },
  {
    name: 'fail - attached static CSI volume of our driver',
    volume: newCSIVolume('pv', 'Released', 'Delete', null, null, null, fb), attachments: [newVolumeAttachment('va', 'pv', { attached: true })],
    expectedVolumes: [newCSIVolume('pv', 'Released', 'Delete', null, null, null, fb)], expectedDeletes: [], expectedEvents: [attachedEvent],
    expectedMetrics: failedMetric, expectedResult: 'requeue', expectedListed: true,
  },
  {
    name: 'fail - AddFinalizer: the Terminating volume keeps our finalizer while attached',
    volume: newVolume('pv', 'Released', 'Delete', byFb, [finalizerPV], timestamp), attachments: [newVolumeAttachment('va', 'pv', { attached: true })],
    addFinalizer: true,
    expectedVolumes: [newVolume('pv', 'Released', 'Delete', byFb, [finalizerPV], timestamp)], expectedDeletes: [], expectedEvents: [attachedEvent],
    expectedMetrics: failedMetric, expectedResult: 'requeue', expectedListed: true,
  },
  {
    name: 'fail - the VolumeAttachments cannot be listed',
    volume: releasedPv(), attachments: [], listError: 'dynamodb unavailable',
    expectedVolumes: [releasedPv()], expectedDeletes: [],
    expectedEvents: ['Warning VolumeFailedDelete failed to list volumeattachments: dynamodb unavailable'],
    expectedMetrics: failedMetric, expectedResult: 'requeue', expectedListed: true,
  },
  {
    name: 'simple - valid case',
    volume: releasedPv(), attachments: [],
    expectedVolumes: [], expectedDeletes: ['pv'], expectedEvents: [],
    expectedMetrics: { deleted: { '': { success: 1 } } }, expectedResult: 'done', expectedListed: true,
  },
  {
    name: 'simple - valid case with existing volumeattachment on different pv',
    volume: releasedPv(), attachments: [newVolumeAttachment('va', 'pv-other', { attached: true }), newVolumeAttachment('va-inline', null, { attached: true })],
    expectedVolumes: [], expectedDeletes: ['pv'], expectedEvents: [],
    expectedMetrics: { deleted: { '': { success: 1 } } }, expectedResult: 'done', expectedListed: true,
  },
  {
    name: 'simple - AddFinalizer: an unattached volume is deleted and our finalizer removed',
    volume: releasedPv([finalizerPV]), attachments: [newVolumeAttachment('va', 'pv-other', { attached: true })], addFinalizer: true,
    expectedVolumes: [], expectedDeletes: ['pv'], expectedEvents: [],
    expectedMetrics: { deleted: { '': { success: 1 } } }, expectedResult: 'done', expectedListed: true,
  },
  {
    name: 'no delete - a Bound volume is not deleted: the attachments are not read',
    volume: newVolume('pv', 'Bound', 'Delete', byFb, null, null), attachments: [newVolumeAttachment('va', 'pv', { attached: true })],
    expectedVolumes: [newVolume('pv', 'Bound', 'Delete', byFb, null, null)], expectedDeletes: [], expectedEvents: [],
    expectedMetrics: {}, expectedResult: 'done', expectedListed: false,
  },
  {
    name: 'no delete - a Released Retain volume: the attachments are not read',
    volume: newVolume('pv', 'Released', 'Retain', byFb, null, null), attachments: [newVolumeAttachment('va', 'pv', { attached: true })],
    expectedVolumes: [newVolume('pv', 'Released', 'Retain', byFb, null, null)], expectedDeletes: [], expectedEvents: [],
    expectedMetrics: {}, expectedResult: 'done', expectedListed: false,
  },
];

describe('attached volumes are not deleted (csi-provisioner TestDelete rows)', () => {
  for (const row of rows) {
    it(row.name, async () => {
      const world = new World([row.volume]);
      const provisioner = new TestProvisioner();
      let listed = 0;
      const askedFor: Array<string | undefined> = [];
      const attachments = {
        list: async (volumeName?: string): Promise<VolumeAttachment[]> => {
          listed++;
          askedFor.push(volumeName);
          if (row.listError) throw new Error(row.listError);
          return structuredClone(row.attachments);
        },
      };
      const outcome = await syncVolume(
        { config: config(fb, { addFinalizer: row.addFinalizer ?? false }), provisioner, writer: world, attachments },
        structuredClone(row.volume),
      );
      assert.equal(outcome.result, row.expectedResult, 'result');
      assert.deepEqual(provisioner.deletes, row.expectedDeletes, 'Provisioner.delete calls');
      assert.deepEqual([...world.volumes.values()], row.expectedVolumes, 'volumes');
      assert.deepEqual(outcome.events.map((e) => `${e.type} ${e.reason} ${e.message}`), row.expectedEvents, 'events');
      assert.deepEqual(countMetrics(outcome.metrics), row.expectedMetrics, 'metrics');
      assert.equal(listed > 0, row.expectedListed, 'attachments listed');
      assert.ok(askedFor.every((name) => name === row.volume.metadata.name), `the lister is asked for the volume's own attachments: ${askedFor}`);
      if (row.expectedResult === 'requeue') assert.equal(outcome.error?.message, row.expectedEvents[0]?.replace('Warning VolumeFailedDelete ', ''), 'the sync error is the event text');
    });
  }
});

describe('VolumeAttachment helpers', () => {
  it('canDeleteVolume: upstream text, the node of the first attachment naming the volume', () => {
    const pv = releasedPv();
    assert.equal(canDeleteVolume(pv, []), undefined);
    assert.equal(canDeleteVolume(pv, [newVolumeAttachment('va', 'other')]), undefined);
    const error = canDeleteVolume(pv, [newVolumeAttachment('va', 'pv', { nodeName: 'worker-7' })]);
    assert.equal(error?.message, 'persistentvolume pv is still attached to node worker-7');
    assert.equal(error?.attachment, 'va');
  });

  it('attachedVolumeName: the source PV; none for inline volumes or an empty name', () => {
    assert.equal(attachedVolumeName(newVolumeAttachment('va', 'pv')), 'pv');
    assert.equal(attachedVolumeName(newVolumeAttachment('va', null)), undefined);
    assert.equal(attachedVolumeName({ spec: { source: { persistentVolumeName: '' } } }), undefined);
    assert.equal(attachedVolumeName(undefined), undefined);
  });

  it('detachedVolumeName: only an attachment that is gone frees its volume', () => {
    const va = newVolumeAttachment('va', 'pv');
    assert.equal(detachedVolumeName({ deleted: false, object: va }, va), undefined, 'live: still attached');
    assert.equal(detachedVolumeName({ deleted: true, object: va }, undefined), 'pv', 'tombstone');
    assert.equal(detachedVolumeName(undefined, va), 'pv', 'expired tombstone: the event’s last state');
    assert.equal(detachedVolumeName(undefined, undefined), undefined, 'nothing known');
    assert.equal(detachedVolumeName({ deleted: true, object: newVolumeAttachment('va', null) }, undefined), undefined, 'inline volume');
  });
});
