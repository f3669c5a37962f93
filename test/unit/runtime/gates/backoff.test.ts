/** Gate `backoff` as a table: backoff record × event type × receive count → how long to wait. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackoffRecord } from '../../../../lib/state/backoff.ts';
import { backoff, backoffWaitMs } from '../../../../lib/runtime/gates/backoff.ts';
import type { CachedObject } from '../../../../lib/state/cache.ts';
import { NOW, NEXT, event, fakeRuntime, record, parsedJob } from './fakes.ts';

describe('gate backoff', () => {
  const known = (inMs: number): BackoffRecord => ({ controller: 'test', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim', pk: 'p', failures: 2, nextAttemptAt: NOW + inMs, updatedAt: NOW, expiresAt: 0 });
  const rows = [
    { name: 'no record: go', known: null, type: 'REQUEUE' as const, receives: '1', want: 0 },
    { name: 'REQUEUE before it is due: wait the rest', known: known(10_000), type: 'REQUEUE' as const, receives: '1', want: 10_000 },
    { name: 'a fresh watch event: go (queue.Add)', known: known(10_000), type: 'MODIFIED' as const, receives: '1', want: 0 },
    { name: 'a redelivered watch event: wait', known: known(10_000), type: 'MODIFIED' as const, receives: '2', want: 10_000 },
    { name: 'due within the slack: go', known: known(800), type: 'REQUEUE' as const, receives: '1', want: 0 },
    { name: 'already due: go', known: known(-5_000), type: 'REQUEUE' as const, receives: '3', want: 0 },
  ];
  for (const row of rows) {
    test(row.name, () => {
      assert.equal(backoffWaitMs(row.known, row.type, record('', { ApproximateReceiveCount: row.receives }), NOW), row.want);
    });
  }
  test('the gate hands the cache entry to the request and keeps the record', async () => {
    const { rt } = fakeRuntime();
    const j = await parsedJob(rt);
    const outcome = await backoff(rt)(j, async () => NEXT);
    assert.equal(outcome.kind, 'reconciled');
    assert.equal(j.parsed?.request.cached, null);
    assert.equal(j.known, null);
  });

  describe('request.retry: an attempt after a failure', () => {
    const failure = { controller: 'test', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim', pk: 'p', failures: 1, nextAttemptAt: NOW - 1, updatedAt: NOW, expiresAt: 0 };
    const rows = [
      { name: 'a fresh watch event, nothing on record: first attempt', type: 'MODIFIED' as const, receives: '1', failed: false, retry: false },
      { name: 'a requeue with nothing on record (another key\'s sync asked for it)', type: 'REQUEUE' as const, receives: '1', failed: false, retry: false },
      { name: 'a redelivery', type: 'MODIFIED' as const, receives: '2', failed: false, retry: true },
      { name: 'a failure on record', type: 'MODIFIED' as const, receives: '1', failed: true, retry: true },
    ];
    for (const row of rows) {
      test(row.name, async () => {
        const { rt } = fakeRuntime({ state: row.failed ? { backoff: failure } : {} });
        const j = await parsedJob(rt, event({ type: row.type }), { ApproximateReceiveCount: row.receives });
        await backoff(rt)(j, async () => NEXT);
        assert.equal(j.parsed?.request.retry, row.retry);
      });
    }
  });
  describe('an own write tagged after the forwarder published it', () => {
    // The fake controller is named `test`; the event is MODIFIED at resourceVersion 7 unless a row says otherwise.
    const entry = (partial: Partial<CachedObject> = {}): CachedObject => ({ object: { metadata: { name: 'claim', namespace: 'ns', resourceVersion: '7' } }, rv: 7, uid: 'u1', deleted: false, writer: 'test', ...partial });
    const rows: Array<{ name: string; cached?: CachedObject; type?: 'ADDED' | 'MODIFIED' | 'SYNC' | 'REQUEUE' | 'DELETED'; pending?: boolean; skipped: boolean }> = [
      { name: 'its version, tagged by this controller: done without a reconcile', cached: entry(), skipped: true },
      { name: 'ADDED of an object it created: done', cached: entry(), type: 'ADDED', skipped: true },
      { name: 'tagged by another controller: reconciled', cached: entry({ writer: 'binder' }), skipped: false },
      { name: 'untagged: reconciled', cached: entry({ writer: undefined }), skipped: false },
      { name: 'the cache holds a newer version of its own: reconciled (this one is not what it wrote last)', cached: entry({ rv: 8 }), skipped: false },
      { name: 'a newer version of its own that names this one among its writes (writerRvs): done', cached: entry({ rv: 8, writerRvs: [7] }), skipped: true },
      { name: 'a newer version of its own naming other versions: reconciled', cached: entry({ rv: 8, writerRvs: [6] }), skipped: false },
      { name: 'another controller’s newer version naming this one: reconciled', cached: entry({ rv: 8, writerRvs: [7], writer: 'binder' }), skipped: false },
      { name: 'the cache holds an older version: reconciled', cached: entry({ rv: 6 }), skipped: false },
      { name: 'a tombstone at that version: reconciled', cached: entry({ deleted: true }), skipped: false },
      { name: 'no entry: reconciled', skipped: false },
      { name: 'a resync (SYNC) of its own version: reconciled', cached: entry(), type: 'SYNC', skipped: false },
      { name: 'a REQUEUE at its own version: reconciled', cached: entry(), type: 'REQUEUE', skipped: false },
      { name: 'a retry pending for the key: reconciled', cached: entry(), pending: true, skipped: false },
    ];
    for (const row of rows) {
      test(row.name, async () => {
        const pending = row.pending ? { controller: 'test', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim', pk: 'p', failures: 1, nextAttemptAt: NOW - 1, updatedAt: NOW, expiresAt: 0 } : undefined;
        const { rt, counts } = fakeRuntime({ state: { ...(row.cached ? { cached: row.cached } : {}), ...(pending ? { backoff: pending } : {}) } });
        const j = await parsedJob(rt, event({ type: row.type ?? 'MODIFIED' }));
        let reconciled = false;
        const outcome = await backoff(rt)(j, async () => ((reconciled = true), NEXT));
        assert.equal(outcome.kind, row.skipped ? 'done' : 'reconciled');
        assert.equal(reconciled, !row.skipped);
        assert.equal(counts.OwnWriteSkipped ?? 0, row.skipped ? 1 : 0);
      });
    }
  });
});
