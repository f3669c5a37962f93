/**
 * What one binder reconcile reads from the cache, counted on the real stand-ins (the emulator over HTTP,
 * dynalite): each read is a request, and the benches count them per bind.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { reconcileBinder } from '../../lib/binder/controller.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { startBinderShell, type BinderShell } from './shell.ts';

const CLUSTER = 'reads';
const json = <T>(o: unknown): T => JSON.parse(JSON.stringify(o)) as T;

describe('binder: cache reads per reconcile', () => {
  let shell: BinderShell;
  before(async () => {
    shell = await startBinderShell(CLUSTER);
    await shell.core.createNamespace({ body: { metadata: { name: 'app' } } });
  });
  after(() => shell.stop());

  it('a volume pre-bound to an unbound claim reads the claim once and requeues it at the version read', async () => {
    const claim = await shell.core.createNamespacedPersistentVolumeClaim({
      namespace: 'app',
      body: { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'fast' } },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolumeClaim', json(claim));
    const volume = await shell.core.createPersistentVolume({
      body: {
        metadata: { name: 'provisioned' },
        spec: {
          capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete', storageClassName: 'fast', hostPath: { path: '/tmp/p' },
          claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'app', name: 'data', uid: claim.metadata!.uid },
        },
      },
    });
    await shell.cache.put(CLUSTER, 'PersistentVolume', json(volume));
    const gets: string[] = [];
    const doc = {
      send: (command: { constructor: { name: string }; input: { Key?: { pk: string; sk: string } } }) => {
        if (command.constructor.name === 'GetCommand') gets.push(`${command.input.Key?.pk} ${command.input.Key?.sk}`);
        return (shell.db.doc.send as (c: unknown) => Promise<unknown>)(command);
      },
    } as unknown as DocumentClient;
    const requeued: Array<{ key: string; resourceVersion: string }> = [];
    const deps = {
      ...shell.deps,
      cache: new ObjectCache(doc, shell.db.tables.cache, { indexer: indexAttributes }),
      enqueue: async (_kind: string, key: string, _uid: string, resourceVersion: string) => void requeued.push({ key, resourceVersion }),
    };
    const event = { v: 1, cluster: CLUSTER, kind: 'PersistentVolume', type: 'ADDED', key: 'provisioned', uid: '', resourceVersion: '0', observedAt: new Date().toISOString() } as const;
    await reconcileBinder({ kind: 'PersistentVolume', key: 'provisioned', event }, deps);
    assert.deepEqual(requeued, [{ key: 'app/data', resourceVersion: claim.metadata!.resourceVersion }], 'the claim requeued at the version read');
    assert.equal(gets.filter((g) => g === `${CLUSTER}#PersistentVolumeClaim app/data`).length, 1, `claim read once: ${gets.join(', ')}`);
  });
});
