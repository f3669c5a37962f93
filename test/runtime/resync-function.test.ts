import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { ClusterEventSchema } from '../../lib/runtime/message.ts';
import { BackoffStore } from '../../lib/state/backoff.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { LOCAL_REGION } from '../support/dynalite.ts';
import { startRuntimeFixture, type RuntimeFixture } from './harness.ts';

let fx: RuntimeFixture;
before(async () => {
  fx = await startRuntimeFixture();
  Object.assign(process.env, {
    CACHE_TABLE: fx.db.tables.cache,
    CONTROL_TABLE: fx.db.tables.control,
    BINDER_QUEUE_URL: fx.queue.url,
    CLUSTER_ID: 'local',
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: fx.db.endpoint,
    AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${fx.sqsServer.port}`,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  });
  delete process.env.CLUSTERS;
});
after(() => fx.stop());

test('functions/resync.ts from its environment: due keys and the binder’s registered source', async () => {
  const { handler } = await import('../../functions/resync.ts');
  const backoff = new BackoffStore({ doc: fx.db.doc, table: fx.db.tables.control });
  await backoff.park({ controller: 'binder', cluster: 'local', kind: 'PersistentVolume', key: 'pv-due' }, Date.now() - 1, { uid: 'u-pv', resourceVersion: '4' });
  const cache = new ObjectCache(fx.db.doc, fx.db.tables.cache, { indexer: indexAttributes });
  await cache.put('local', 'PersistentVolumeClaim', { metadata: { name: 'pending', namespace: 'ns', uid: 'u-claim', resourceVersion: '9' }, status: { phase: 'Pending' } });
  await cache.put('local', 'PersistentVolumeClaim', { metadata: { name: 'bound', namespace: 'ns', uid: 'u-bound', resourceVersion: '10' }, status: { phase: 'Bound' } });
  const report = await handler({});
  assert.equal(report.due, 1);
  assert.equal(report.resynced.binder, 1, 'the binder re-enqueues only its pending claim');
  assert.deepEqual(report.errors, []);
  const out = await fx.sqs.send(new ReceiveMessageCommand({ QueueUrl: fx.queue.url, MaxNumberOfMessages: 10 }));
  const keys = (out.Messages ?? []).map((m) => ClusterEventSchema.parse(JSON.parse(m.Body ?? '')).key).sort();
  assert.deepEqual(keys, ['ns/pending', 'pv-due']);
});
