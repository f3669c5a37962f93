/** `settle` as a table: outcome (× known backoff record) → store calls, visibility or parking, metrics, events. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { UnknownClusterError } from '../../../../lib/kube/client.ts';
import type { BackoffRecord } from '../../../../lib/state/backoff.ts';
import { settle } from '../../../../lib/runtime/gates/settle.ts';
import type { Outcome } from '../../../../lib/runtime/job.ts';
import { TerminalError } from '../../../../lib/runtime/reconcile.ts';
import { RecordDeferredError } from '../../../../lib/runtime/visibility.ts';
import { NOW, NEXT, fakeRuntime, event, parsedJob } from './fakes.ts';

describe('gate settle', () => {
  const givenUp = (failures: number): BackoffRecord => ({ controller: 'test', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim', pk: 'p', failures, nextAttemptAt: NOW, updatedAt: NOW, expiresAt: 0, givenUp: true });
  const rows: Array<{
    name: string; outcome: Outcome; known?: BackoffRecord | null; failure?: Partial<BackoffRecord> & { delayMs?: number }; receives?: string;
    calls: string[]; deferred?: boolean; metrics: Record<string, number>; events?: string[];
  }> = [
    { name: 'success with no record: nothing to forget', outcome: NEXT, calls: [], metrics: { ReconcileSuccess: 1 } },
    { name: 'success forgets the record', outcome: NEXT, known: givenUp(4), calls: ['backoff clear'], metrics: { ReconcileSuccess: 1 } },
    { name: 'requeueAfter 5 s: visibility', outcome: { kind: 'reconciled', result: { requeueAfterMs: 5_000 } }, calls: ['sqs ChangeMessageVisibilityCommand'], deferred: true, metrics: { ReconcileSuccess: 1, Requeue: 1 } },
    { name: 'requeueAfter 5 min: parked', outcome: { kind: 'reconciled', result: { requeueAfterMs: 300_000 } }, calls: ['backoff park 300000'], metrics: { ReconcileSuccess: 1, Requeue: 1, Parked: 1 } },
    { name: 'a wait with one receive left in reserve: parked', outcome: { kind: 'wait', delayMs: 2_000, why: 'sync' }, receives: '4', calls: ['backoff park 2000'], metrics: { Parked: 1 } },
    { name: 'defer: visibility, no failure counted', outcome: { kind: 'defer', visibilityS: 1, why: 'time' }, calls: ['sqs ChangeMessageVisibilityCommand'], deferred: true, metrics: {} },
    { name: 'a failure counts and waits', outcome: { kind: 'failed', error: new Error('boom') }, calls: ['backoff failure boom', 'sqs ChangeMessageVisibilityCommand'], deferred: true, metrics: { ReconcileError: 1 } },
    {
      name: 'the threshold: give up, with an event the first time', outcome: { kind: 'failed', error: new Error('boom') }, failure: { givenUp: true, failures: 3 },
      calls: ['backoff failure boom'], metrics: { ReconcileError: 1, ThresholdExceeded: 1 }, events: ['Warning RetryThresholdExceeded'],
    },
    {
      name: 'after the threshold: give up again, quietly', outcome: { kind: 'failed', error: new Error('boom') }, known: givenUp(3), failure: { givenUp: true, failures: 4 },
      calls: ['backoff failure boom'], metrics: { ReconcileError: 1 }, events: [],
    },
    { name: 'terminal: no retry, an event', outcome: { kind: 'failed', error: new TerminalError('bad spec') }, calls: ['backoff clear'], metrics: { TerminalErrors: 1 }, events: ['Warning ReconcileFailed'] },
    { name: 'unknown cluster: dropped', outcome: { kind: 'failed', error: new UnknownClusterError('zz') }, calls: ['backoff clear'], metrics: { UnknownCluster: 1 } },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { rt, calls, counts, recorder } = fakeRuntime({ failure: row.failure });
      const j = await parsedJob(rt, event(), { ApproximateReceiveCount: row.receives ?? '1' });
      j.known = row.known ?? null;
      const settled = settle(rt, j, row.outcome);
      if (row.deferred) await assert.rejects(settled, RecordDeferredError);
      else await settled;
      assert.deepEqual(calls, row.calls);
      delete counts.ReconcileLatency;
      assert.deepEqual(counts, row.metrics);
      if (row.events) assert.deepEqual(recorder.events.map((e) => `${e.type} ${e.reason}`), row.events);
      assert.equal(j.batch.deferredGroups.has('g1'), Boolean(row.deferred));
    });
  }
});
