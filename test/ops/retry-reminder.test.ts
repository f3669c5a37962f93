/**
 * `claimflow retry … --uid` (lib/ops/backoff.ts `retryKey` with a scope) against dynalite and fauxqs: a
 * provisioner's reminder for a deleted claim's UID is made due and requeued with that UID, the key's own
 * record left as it was; the wait sees the reminder end.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { startFauxqs } from 'fauxqs';
import { retryKey, waitForRetry } from '../../lib/ops/backoff.ts';
import { main } from '../../lib/ops/cli.ts';
import { CONTROLLERS, SERVICE, queueNames, tableNamesOf } from '../../lib/ops/controllers.ts';
import { BackoffStore, backoffIdPk } from '../../lib/state/backoff.ts';
import { startDynalite } from '../support/dynalite.ts';
import { startRuntimeFixture, type RuntimeFixture } from '../runtime/harness.ts';

let fx: RuntimeFixture;
before(async () => {
  fx = await startRuntimeFixture();
});
after(() => fx.stop());

test('a reminder is retried by its UID: its record made due, a REQUEUE naming the UID; the key’s own record untouched', async () => {
  const now = Date.now();
  const store = new BackoffStore({ doc: fx.db.doc, table: fx.db.tables.control });
  const own = { controller: 'provisioner', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'default/data' };
  const reminder = { ...own, scope: 'uid-deleted' };
  await store.park(own, now + 600_000, { uid: 'uid-live', resourceVersion: '40' });
  await store.park(reminder, now + 120_000, { uid: 'uid-deleted', resourceVersion: '31' }, { rearms: 10, rearmEveryMs: 60_000 });
  const ownBefore = await store.get(own);

  const retried = await retryKey({ doc: fx.db.doc, sqs: fx.sqs, table: fx.db.tables.control, queueUrl: fx.queue.url, now: () => now }, reminder);
  assert.equal(retried.madeDue, true);
  assert.equal(retried.before?.pk, backoffIdPk(reminder));
  const after = await store.get(reminder);
  assert.equal(after?.dueAt, now, 'the reminder is due now (the sweep sends it if the REQUEUE is lost)');
  assert.equal(after?.nextAttemptAt, now);
  assert.deepEqual(await store.get(own), ownBefore, 'the key’s own record is another stream: untouched');

  const batch = await fx.receive(1);
  assert.equal(batch.Records.length, 1);
  const event = JSON.parse(batch.Records[0]!.body) as { type: string; key: string; uid: string; controller: string };
  assert.deepEqual([event.type, event.key, event.uid, event.controller], ['REQUEUE', 'default/data', 'uid-deleted', 'provisioner']);
  await fx.settle(batch, { batchItemFailures: [] });

  // The reminder ends (its claim's message ended without a wait): the wait reports it reconciled.
  await fx.db.doc.send(new DeleteCommand({ TableName: fx.db.tables.control, Key: { pk: backoffIdPk(reminder) } }));
  assert.equal((await waitForRetry({ doc: fx.db.doc, table: fx.db.tables.control }, retried, { timeoutMs: 2000 })).outcome, 'reconciled');
});

test('claimflow retry … --uid on a local stack: the reminder for that UID, not the key’s own record', async () => {
  const stage = 'retry-uid';
  const db = await startDynalite({ tables: tableNamesOf(SERVICE, stage) });
  const sqsServer = await startFauxqs({ port: 0, logger: false, defaultRegion: 'us-east-1' });
  const dir = await mkdtemp(join(tmpdir(), 'claimflow-retry-uid-'));
  try {
    const endpoint = `http://127.0.0.1:${sqsServer.port}`;
    let provisionerQueue = '';
    for (const spec of CONTROLLERS) {
      const names = queueNames(SERVICE, stage, spec);
      const queue = sqsServer.createQueue(names.queue, { attributes: { FifoQueue: 'true' } });
      sqsServer.createQueue(names.dlq, { attributes: { FifoQueue: 'true' } });
      if (spec.name === 'provisioner') provisionerQueue = queue.queueUrl;
    }
    const stackFile = join(dir, 'stack.json');
    await writeFile(stackFile, JSON.stringify({ sqs: endpoint, dynamodb: db.endpoint, region: 'us-east-1', stage }));
    const store = new BackoffStore({ doc: db.doc, table: db.tables.control });
    const own = { controller: 'provisioner', cluster: 'local', kind: 'PersistentVolumeClaim', key: 'default/data' };
    const now = Date.now();
    await store.park(own, now + 600_000, { uid: 'uid-live', resourceVersion: '40' });
    await store.park({ ...own, scope: 'uid-deleted' }, now + 120_000, { uid: 'uid-deleted', resourceVersion: '31' }, { rearms: 10, rearmEveryMs: 60_000 });

    let stdout = '';
    let stderr = '';
    const code = await main(['retry', 'provisioner', 'pvc', 'default/data', '--uid', 'uid-deleted', '--stack-file', stackFile, '--json'], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      now: () => now,
    });
    assert.equal(code, 0, stderr);
    const out = JSON.parse(stdout) as { cluster: string; uid: string; madeDue: boolean; before: { parked: boolean } };
    assert.deepEqual([out.cluster, out.uid, out.madeDue, out.before.parked], ['local', 'uid-deleted', true, true], 'the cluster found from the reminder’s own record');
    assert.equal((await store.get({ ...own, scope: 'uid-deleted' }))?.dueAt, now);
    assert.equal((await store.get(own))?.dueAt, now + 600_000, 'the key’s own record untouched');
    const sent = sqsServer.inspectQueue(provisionerQueue.split('/').pop()!)?.messages.ready ?? [];
    assert.deepEqual(sent.map((m) => (JSON.parse(m.body) as { uid: string }).uid), ['uid-deleted']);
  } finally {
    await rm(dir, { recursive: true, force: true });
    await sqsServer.stop();
    await db.stop();
  }
});
