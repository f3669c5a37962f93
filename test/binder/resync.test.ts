/**
 * The binder's resync source (run by the scheduled resync function) against dynalite: every pending
 * claim and every Released or Failed volume of the cluster is re-enqueued; bound and lost claims,
 * Available and Bound volumes, other clusters and deleted objects are not.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import '../../lib/binder/resync.ts';
import { binderResync } from '../../lib/binder/resync.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

let db: Dynalite;
before(async () => {
  db = await startDynalite();
});
after(async () => {
  await db.stop();
});

it('re-enqueues pending claims, Released/Failed volumes and half-written ones only', async () => {
  const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
  let rv = 10;
  const claim = (name: string, phase?: string) => ({
    metadata: { name, namespace: 'ns', uid: `u-${name}`, resourceVersion: String(rv++) },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    ...(phase ? { status: { phase } } : {}),
  });
  const volume = (name: string, phase: string, claimName?: string) => ({
    metadata: { name, uid: `u-${name}`, resourceVersion: String(rv++) },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], ...(claimName ? { claimRef: { namespace: 'ns', name: claimName, uid: `u-${claimName}` } } : {}) },
    status: { phase },
  });
  for (const c of [claim('pending', 'Pending'), claim('fresh'), claim('bound', 'Bound'), claim('lost', 'Lost')]) await cache.put('c1', 'PersistentVolumeClaim', c);
  // `half-unbound`: Bound with no claimRef, what an unbind whose status write failed leaves.
  for (const v of [volume('avail', 'Available'), volume('used', 'Bound', 'bound'), volume('half-unbound', 'Bound'), volume('released', 'Released'), volume('failed', 'Failed')]) await cache.put('c1', 'PersistentVolume', v);
  await cache.put('c2', 'PersistentVolumeClaim', claim('other-cluster', 'Pending'));
  const gone = claim('gone', 'Pending');
  await cache.put('c1', 'PersistentVolumeClaim', gone);
  await cache.remove('c1', 'PersistentVolumeClaim', gone, rv++);

  const source = binderResync;
  const items = [];
  for await (const item of source('c1', cache, { doc: db.doc, tables: db.tables })) items.push(item);
  assert.deepEqual(
    items.map((i) => `${i.kind} ${i.key} ${i.uid}`).sort(),
    [
      'PersistentVolume failed u-failed',
      'PersistentVolume half-unbound u-half-unbound',
      'PersistentVolume released u-released',
      'PersistentVolumeClaim ns/fresh u-fresh',
      'PersistentVolumeClaim ns/pending u-pending',
    ],
  );
  assert.ok(items.every((i) => /^[0-9]+$/.test(i.resourceVersion)));
});

it('reads only what it re-enqueues: 300 bound claims and volumes cost nothing', async () => {
  const cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
  let rv = 1000;
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < 300; i++) {
    writes.push(cache.put('big', 'PersistentVolumeClaim', {
      metadata: { name: `bound-${i}`, namespace: 'ns', uid: `c-${i}`, resourceVersion: String(rv++) },
      spec: { volumeName: `pv-${i}` }, status: { phase: 'Bound' },
    }));
    writes.push(cache.put('big', 'PersistentVolume', {
      metadata: { name: `pv-${i}`, uid: `v-${i}`, resourceVersion: String(rv++) },
      spec: { claimRef: { namespace: 'ns', name: `bound-${i}` } }, status: { phase: 'Bound' },
    }));
  }
  await Promise.all(writes);
  await cache.put('big', 'PersistentVolumeClaim', { metadata: { name: 'waiting', namespace: 'ns', uid: 'w', resourceVersion: String(rv++) }, spec: {}, status: { phase: 'Pending' } });
  await cache.put('big', 'PersistentVolume', { metadata: { name: 'freed', uid: 'f', resourceVersion: String(rv) }, spec: { claimRef: { namespace: 'ns', name: 'gone' } }, status: { phase: 'Released' } });

  let itemsRead = 0;
  const counted = new ObjectCache({
    send: async (command: any) => {
      const out: any = await db.doc.send(command);
      itemsRead += out.Items?.length ?? (out.Item ? 1 : 0);
      return out;
    },
  } as typeof db.doc, db.tables.cache);
  const items = [];
  for await (const item of binderResync('big', counted, { doc: db.doc, tables: db.tables })) items.push(`${item.kind} ${item.key}`);
  assert.deepEqual(items.sort(), ['PersistentVolume freed', 'PersistentVolumeClaim ns/waiting']);
  assert.equal(itemsRead, 2, 'the resync index holds just the two');
});
