/** Gate `reconcile` as a table: what the controller did → the outcome. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { reconcile } from '../../../../lib/runtime/gates/reconcile.ts';
import type { Outcome } from '../../../../lib/runtime/job.ts';
import type { ReconcileResult } from '../../../../lib/runtime/reconcile.ts';
import { NEXT, fakeRuntime, parsedJob } from './fakes.ts';

describe('gate reconcile', () => {
  const boom = new Error('boom');
  const rows: Array<{ name: string; reconcile: () => Promise<ReconcileResult>; want: Outcome }> = [
    { name: 'done', reconcile: async () => undefined, want: { kind: 'reconciled', result: undefined } },
    { name: 'requeueAfter', reconcile: async () => ({ requeueAfterMs: 500 }), want: { kind: 'reconciled', result: { requeueAfterMs: 500 } } },
    { name: 'an error', reconcile: async () => Promise.reject(boom), want: { kind: 'failed', error: boom } },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { rt, counts } = fakeRuntime({ reconcile: row.reconcile });
      const outcome = await reconcile(rt)(await parsedJob(rt), async () => NEXT);
      assert.deepEqual(outcome, row.want);
      assert.equal(counts.ReconcileLatency, 0);
    });
  }
});
