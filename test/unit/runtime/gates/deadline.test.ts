/**
 * Gate `deadline` as a table: the Lambda time the invocation started with and the time left for this record
 * → go on (with its deadline), or defer for a second (`DeferredForTime`). The margin (5 s here) is never more
 * than half the starting time, so a function timeout at or below it does not defer every record into the DLQ;
 * such a timeout (below twice the margin) is warned about once per container.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { deadline, effectiveMarginMs } from '../../../../lib/runtime/gates/deadline.ts';
import type { SqsRuntime } from '../../../../lib/runtime/runtime.ts';
import { NOW, NEXT, fakeRuntime, event, job, lambda } from './fakes.ts';

/** The runtime's logger keeps its warnings. */
function warnings(rt: SqsRuntime<unknown>): string[] {
  const seen: string[] = [];
  (rt.logger as unknown as { warn: (m: string) => void }).warn = (m) => void seen.push(m);
  return seen;
}

describe('gate deadline', () => {
  const rows: { name: string; startedWith?: number; left?: number; want: 'reconciled' | 'defer'; deadline: number | undefined; warns: boolean }[] = [
    { name: 'outside Lambda: no deadline', want: 'reconciled', deadline: undefined, warns: false },
    { name: '60 s timeout, first record: 5 s margin', startedWith: 60_000, left: 60_000, want: 'reconciled', deadline: NOW + 55_000, warns: false },
    { name: '60 s timeout, 10 s left: goes on', startedWith: 60_000, left: 10_000, want: 'reconciled', deadline: NOW + 5_000, warns: false },
    { name: '60 s timeout, 5 s left: deferred for 1 s', startedWith: 60_000, left: 5_000, want: 'defer', deadline: NOW, warns: false },
    { name: '60 s timeout, 3 s left: deferred for 1 s', startedWith: 60_000, left: 3_000, want: 'defer', deadline: NOW - 2_000, warns: false },
    { name: '10 s timeout (twice the margin): 5 s margin, no warning', startedWith: 10_000, left: 10_000, want: 'reconciled', deadline: NOW + 5_000, warns: false },
    { name: '5 s timeout (the margin), first record: margin 2.5 s, warned', startedWith: 5_000, left: 5_000, want: 'reconciled', deadline: NOW + 2_500, warns: true },
    { name: '5 s timeout, 3 s left: goes on', startedWith: 5_000, left: 3_000, want: 'reconciled', deadline: NOW + 500, warns: true },
    { name: '5 s timeout, 2.5 s left: deferred', startedWith: 5_000, left: 2_500, want: 'defer', deadline: NOW, warns: true },
    { name: '3 s timeout (below the margin): margin 1.5 s, warned', startedWith: 3_000, left: 3_000, want: 'reconciled', deadline: NOW + 1_500, warns: true },
    { name: '8 s timeout: margin 4 s, warned', startedWith: 8_000, left: 6_000, want: 'reconciled', deadline: NOW + 2_000, warns: true },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { rt, counts } = fakeRuntime();
      const warned = warnings(rt);
      const gate = deadline(rt);
      const batch = { processed: new Set<string>(), deferredGroups: new Map<string, number>() };
      if (row.startedWith !== undefined && row.startedWith !== row.left) {
        // the invocation's first record, at its start
        assert.equal((await gate(job(rt, event(), { lambdaContext: lambda(row.startedWith), batch }), async () => NEXT)).kind, 'reconciled');
      }
      const j = job(rt, event(), { lambdaContext: row.left === undefined ? undefined : lambda(row.left), batch });
      const outcome = await gate(j, async () => NEXT);
      assert.equal(outcome.kind, row.want);
      assert.equal(j.deadline, row.deadline);
      if (outcome.kind === 'defer') assert.equal(outcome.visibilityS, 1);
      assert.equal(counts.DeferredForTime ?? 0, row.want === 'defer' ? 1 : 0);
      assert.equal(warned.length, row.warns ? 1 : 0, warned.join('\n'));
      if (row.warns) assert.match(warned[0], /below twice TIME_MARGIN_MS \(5000 ms\).*Raise the timeout to at least 10000 ms/);
    });
  }

  test('the warning is logged once per container, not per invocation', async () => {
    const { rt } = fakeRuntime();
    const warned = warnings(rt);
    const gate = deadline(rt);
    for (let i = 0; i < 3; i++) await gate(job(rt, event(), { lambdaContext: lambda(5_000) }), async () => NEXT);
    assert.equal(warned.length, 1);
  });

  test('a 5 s timeout no longer defers every record: a whole batch goes on', async () => {
    const { rt, counts } = fakeRuntime();
    warnings(rt);
    const gate = deadline(rt);
    const batch = { processed: new Set<string>(), deferredGroups: new Map<string, number>() };
    let left = 4_990;
    const outcomes: string[] = [];
    for (let i = 0; i < 5; i++, left -= 300) outcomes.push((await gate(job(rt, event(), { lambdaContext: lambda(left), batch }), async () => NEXT)).kind);
    assert.deepEqual(outcomes, ['reconciled', 'reconciled', 'reconciled', 'reconciled', 'reconciled']);
    assert.equal(counts.DeferredForTime ?? 0, 0);
  });

  const margins: [timeMarginMs: number, startedWith: number, want: number][] = [
    [5_000, 900_000, 5_000],
    [5_000, 10_000, 5_000],
    [5_000, 9_999, 4_999],
    [5_000, 5_000, 2_500],
    [5_000, 1_000, 500],
    [0, 5_000, 0],
    [5_000, 0, 0],
  ];
  for (const [margin, started, want] of margins) {
    test(`effective margin: ${margin} ms configured, started with ${started} ms ⇒ ${want} ms`, () => assert.equal(effectiveMarginMs(margin, started), want));
  }
});
