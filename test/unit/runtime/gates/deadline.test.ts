/** Gate `deadline` as a table: Lambda time left → go on, or defer for a second (`DeferredForTime`). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { deadline } from '../../../../lib/runtime/gates/deadline.ts';
import { NOW, NEXT, fakeRuntime, event, job, lambda } from './fakes.ts';

describe('gate deadline', () => {
  const rows = [
    { name: 'outside Lambda: no deadline', context: undefined, want: 'reconciled', deadline: undefined },
    { name: '10 s left, 5 s margin: goes on', context: lambda(10_000), want: 'reconciled', deadline: NOW + 5_000 },
    { name: '5 s left: deferred for 1 s', context: lambda(5_000), want: 'defer', deadline: NOW },
    { name: '3 s left: deferred for 1 s', context: lambda(3_000), want: 'defer', deadline: NOW - 2_000 },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { rt, counts } = fakeRuntime();
      const j = job(rt, event(), { lambdaContext: row.context });
      const outcome = await deadline(rt)(j, async () => NEXT);
      assert.equal(outcome.kind, row.want);
      assert.equal(j.deadline, row.deadline);
      if (outcome.kind === 'defer') assert.equal(outcome.visibilityS, 1);
      assert.equal(counts.DeferredForTime ?? 0, row.want === 'defer' ? 1 : 0);
    });
  }
});
