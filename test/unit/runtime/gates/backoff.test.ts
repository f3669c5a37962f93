/** Gate `backoff` as a table: backoff record × event type × receive count → how long to wait. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackoffRecord } from '../../../../lib/state/backoff.ts';
import { backoff, backoffWaitMs } from '../../../../lib/runtime/gates/backoff.ts';
import { NOW, NEXT, fakeRuntime, record, parsedJob } from './fakes.ts';

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
});
