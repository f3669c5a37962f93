/**
 * The forwarder completes the cluster's match-index partition list (lib/state/cache.ts) with each LIST of
 * PersistentVolumes, and relists once when it would resume from a bookmark over a list never completed
 * (a cache written before the lists existed), so the binder can trust a complete list.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
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
