/** Gate `budget` as a table: what the reconcile ended with → the same, or a 1 s wait for a budget timeout. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { UnknownClusterError } from '../../../../lib/kube/client.ts';
import { BudgetTimeoutError } from '../../../../lib/state/bucket.ts';
import { budget } from '../../../../lib/runtime/gates/budget.ts';
import type { Outcome } from '../../../../lib/runtime/job.ts';
import { NOW, NEXT, fakeRuntime, parsedJob } from './fakes.ts';

describe('gate budget', () => {
  const rows: Array<{ name: string; inner: Outcome; want: string; metric: number }> = [
    { name: 'success passes through', inner: NEXT, want: 'reconciled', metric: 0 },
    { name: 'a failure passes through', inner: { kind: 'failed', error: new Error('boom') }, want: 'failed', metric: 0 },
    { name: 'a budget timeout is a 1 s wait', inner: { kind: 'failed', error: new BudgetTimeoutError('c1', 900) }, want: 'wait', metric: 1 },
    { name: 'a wrapped budget timeout too', inner: { kind: 'failed', error: new Error('list', { cause: new BudgetTimeoutError('c1', 900) }) }, want: 'wait', metric: 1 },
    { name: 'an unknown cluster stays a failure', inner: { kind: 'failed', error: Object.assign(new UnknownClusterError('zz'), { cause: new BudgetTimeoutError('zz', 1) }) }, want: 'failed', metric: 0 },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { rt, counts } = fakeRuntime();
      const j = await parsedJob(rt);
      j.deadline = NOW + 60_000;
      const outcome = await budget(rt)(j, async () => row.inner);
      assert.equal(outcome.kind, row.want);
      if (outcome.kind === 'wait') assert.equal(outcome.delayMs, 1000);
      assert.equal(counts.BudgetWait ?? 0, row.metric);
    });
  }
});
