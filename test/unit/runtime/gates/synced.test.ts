/** Gate `synced` as a table: sync markers → go on, or wait (`CacheNotSynced`). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { synced } from '../../../../lib/runtime/gates/synced.ts';
import { NEXT, fakeRuntime, parsedJob } from './fakes.ts';

describe('gate synced', () => {
  for (const row of [{ synced: true, want: 'reconciled' }, { synced: false, want: 'wait' }]) {
    test(`markers ${row.synced ? 'complete: goes on' : 'incomplete: waits syncWaitMs'}`, async () => {
      const { rt, counts } = fakeRuntime({ synced: row.synced });
      const outcome = await synced(rt)(await parsedJob(rt), async () => NEXT);
      assert.equal(outcome.kind, row.want);
      if (outcome.kind === 'wait') assert.equal(outcome.delayMs, 2000);
      assert.equal(counts.CacheNotSynced ?? 0, row.synced ? 0 : 1);
    });
  }
  test('concurrent records share one read', async () => {
    const { rt, syncReads } = fakeRuntime();
    const jobs = await Promise.all([1, 2, 3, 4].map(() => parsedJob(rt)));
    const outcomes = await Promise.all(jobs.map((j) => synced(rt)(j, async () => NEXT)));
    assert.deepEqual(outcomes.map((o) => o.kind), ['reconciled', 'reconciled', 'reconciled', 'reconciled']);
    assert.equal(syncReads(), 1);
  });
  test('a complete answer is remembered', async () => {
    const { rt, syncReads } = fakeRuntime();
    for (let i = 0; i < 3; i++) await synced(rt)(await parsedJob(rt), async () => NEXT);
    assert.equal(syncReads(), 1);
  });
});
