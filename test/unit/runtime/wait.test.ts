import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planWait, type WaitPlan } from '../../../lib/runtime/wait.ts';

const now = 10_000_000_000;
const base = { now, receiveCount: 1, firstReceiveAt: now, maxReceiveCount: 5, maxVisibilityDelayMs: 900_000 };

const cases: Array<[name: string, input: Partial<typeof base> & { delayMs: number }, want: WaitPlan]> = [
  ['5 ms rounds up to 1 s of visibility', { delayMs: 5 }, { via: 'visibility', visibilityTimeoutS: 1 }],
  ['0 ms: visible at once', { delayMs: 0 }, { via: 'visibility', visibilityTimeoutS: 0 }],
  ['2.5 s → 3 s', { delayMs: 2500 }, { via: 'visibility', visibilityTimeoutS: 3 }],
  ['receive 3 of 5: the 4th still leaves one in reserve', { delayMs: 1000, receiveCount: 3 }, { via: 'visibility', visibilityTimeoutS: 1 }],
  ['receive 4 of 5: park (the 5th is the reserve)', { delayMs: 1000, receiveCount: 4 }, { via: 'park', dueAt: now + 1000 }],
  ['maxReceiveCount 2: always park', { delayMs: 1000, maxReceiveCount: 2 }, { via: 'park', dueAt: now + 1000 }],
  ['longer than the visibility cap: park', { delayMs: 900_001 }, { via: 'park', dueAt: now + 900_001 }],
  ['would pass 12 h after the first receive: park', { delayMs: 600_000, firstReceiveAt: now - 12 * 3600_000 + 300_000 }, { via: 'park', dueAt: now + 600_000 }],
  ['1000 s (client-go max) with a generous cap: visibility', { delayMs: 1_000_000, maxVisibilityDelayMs: 2_000_000 }, { via: 'visibility', visibilityTimeoutS: 1000 }],
];

for (const [name, input, want] of cases) {
  test(`planWait: ${name}`, () => {
    assert.deepEqual(planWait({ ...base, ...input }), want);
  });
}
