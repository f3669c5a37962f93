/**
 * The forwarder completes the cluster's match-index partition list (lib/state/cache.ts) with each LIST of
 * PersistentVolumes, and relists once when it would resume from a bookmark over a list never completed
 * (a cache written before the lists existed), so the binder can trust a complete list.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { SyncMarkers } from '../../lib/state/sync.ts';
import { VOLUME_MATCH_INDEX, partitionsKey, volumeMatchPk } from '../../lib/state/schema.ts';
import { eventually, startStandIns, type StandIns } from './harness.ts';

const volume = (name: string, className: string, modes: string[], claimRef?: string) => ({
  apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name },
  spec: { capacity: { storage: '1Gi' }, accessModes: modes, storageClassName: className, hostPath: { path: `/tmp/${name}` }, ...(claimRef ? { claimRef: { namespace: 'ns', name: claimRef } } : {}) },
});

describe('forwarder: the match-index partition list', () => {
  let env: StandIns;
  let cache: ObjectCache;
  before(async () => {
    env = await startStandIns({ cluster: 'c1' });
    cache = new ObjectCache(env.db.doc, env.db.tables.cache, { indexer: indexAttributes });
  });
  after(() => env?.stop());

  it('a LIST completes it; a resume over a list never completed relists once, then resumes', async () => {
    const store = env.kube.store;
    store.create('/persistentvolumes', volume('gold-rwo', 'gold', ['ReadWriteOnce']));
    store.create('/persistentvolumes', volume('plain-rwx', '', ['ReadWriteMany']));
    store.create('/persistentvolumes', volume('taken', 'gold', ['ReadOnlyMany'], 'c'));
    const first = await env.forwarder({ kinds: ['PersistentVolume'] });
    await eventually(() => first.isReady(), 10_000, 'first forwarder synced');
    const expected = new Set([volumeMatchPk('c1', 'gold', ['ReadWriteOnce']), volumeMatchPk('c1', '', ['ReadWriteMany'])]);
    assert.deepEqual(await cache.partitions('c1', VOLUME_MATCH_INDEX), { complete: true, pks: expected });
    await first.stop();

    // A cache from before the lists: the bookmark says the LIST is complete, the list is gone.
    await env.db.doc.send(new DeleteCommand({ TableName: env.db.tables.cache, Key: partitionsKey('c1', VOLUME_MATCH_INDEX) }));
    const second = await env.forwarder({ kinds: ['PersistentVolume'] });
    await eventually(() => second.isReady(), 10_000, 'second forwarder synced');
    assert.equal((await second.metrics.relists.get()).values.reduce((n, v) => n + v.value, 0), 1, 'relisted once');
    assert.deepEqual(await cache.partitions('c1', VOLUME_MATCH_INDEX), { complete: true, pks: expected });
    // A volume created while it watches: its set is listed before its entry is written.
    store.create('/persistentvolumes', volume('silver-rwop', 'silver', ['ReadWriteOncePod']));
    await eventually(async () => Boolean(await cache.get('c1', 'PersistentVolume', 'silver-rwop')), 10_000, 'watched volume cached');
    assert.ok((await cache.partitions('c1', VOLUME_MATCH_INDEX))?.pks.has(volumeMatchPk('c1', 'silver', ['ReadWriteOncePod'])));
    await second.stop();

    const third = await env.forwarder({ kinds: ['PersistentVolume'] });
    await eventually(() => third.isReady(), 10_000, 'third forwarder synced');
    assert.equal((await third.metrics.relists.get()).values.length, 0, 'resumed from the bookmark');
    await third.stop();
  });
});

describe('forwarder: the attachments\' source entries', () => {
  let env: StandIns;
  let cache: ObjectCache;
  let sync: SyncMarkers;
  before(async () => {
    env = await startStandIns({ cluster: 'c1' });
    cache = new ObjectCache(env.db.doc, env.db.tables.cache, { indexer: indexAttributes });
    sync = new SyncMarkers(env.db.doc, env.db.tables.control);
  });
  after(() => env?.stop());

  const attachment = (name: string, pv: string) => ({
    apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', metadata: { name },
    spec: { attacher: 'attacher.claimflow.io', nodeName: 'node-1', source: { persistentVolumeName: pv } },
  });
  const relists = async (f: { metrics: { relists: { get(): Promise<{ values: Array<{ value: number }> }> } } }) => (await f.metrics.relists.get()).values.reduce((n, v) => n + v.value, 0);

  it('written with every attachment and vouched for; an older forwarder\'s bookmark makes the next one relist and write the missing ones', async () => {
    const store = env.kube.store;
    store.create('storage.k8s.io/volumeattachments', attachment('va-1', 'pv-1'));
    const first = await env.forwarder({ kinds: ['VolumeAttachment'] });
    await eventually(() => first.isReady(), 10_000, 'first forwarder synced');
    assert.deepEqual(await cache.attachmentsNaming('c1', 'pv-1'), ['va-1']);
    assert.equal((await sync.getSync('c1', 'VolumeAttachment'))?.sourcesIndexed, true);
    store.create('storage.k8s.io/volumeattachments', attachment('va-2', 'pv-1'));
    await eventually(async () => (await cache.attachmentsNaming('c1', 'pv-1')).length === 2, 10_000, 'watched attachment has its source entry');
    await first.stop();

    // An older forwarder ran meanwhile: it cached va-3 without its source entry and saved a bookmark.
    const created = store.create('storage.k8s.io/volumeattachments', attachment('va-3', 'pv-3'));
    await env.db.doc.send(new PutCommand({
      TableName: env.db.tables.cache,
      Item: { pk: 'c1#VolumeAttachment', sk: 'va-3', rv: Number(created.metadata.resourceVersion), uid: String(created.metadata.uid), obj: JSON.stringify(created), deleted: false, vaSource: 'pv-3' },
    }));
    await sync.saveBookmark('c1', 'VolumeAttachment', String(created.metadata.resourceVersion));
    assert.equal((await sync.getSync('c1', 'VolumeAttachment'))?.sourcesIndexed, false);

    const second = await env.forwarder({ kinds: ['VolumeAttachment'] });
    await eventually(() => second.isReady(), 10_000, 'second forwarder synced');
    assert.equal(await relists(second), 1, 'relisted, not resumed');
    assert.deepEqual(await cache.attachmentsNaming('c1', 'pv-3'), ['va-3'], 'the LIST wrote the source entry of an attachment cached at its version already');
    assert.equal((await sync.getSync('c1', 'VolumeAttachment'))?.sourcesIndexed, true);
    store.delete({ resource: 'storage.k8s.io/volumeattachments', namespace: '', name: 'va-2' });
    await eventually(async () => (await cache.attachmentsNaming('c1', 'pv-1')).length === 1, 10_000, 'a deletion takes its source entry');
    await second.stop();

    const third = await env.forwarder({ kinds: ['VolumeAttachment'] });
    await eventually(() => third.isReady(), 10_000, 'third forwarder synced');
    assert.equal(await relists(third), 0, 'vouched for: resumed from the bookmark');
    await third.stop();
  });
});

