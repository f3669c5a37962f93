/** The reconciler's poll loop (`pollUntil`) against a clock and timers that run late, without any stand-in. */
import { describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import type { CoreV1Api } from '@kubernetes/client-node';
import { MemoryEventRecorder } from '../../../lib/kube/recorder.ts';
import type { SharedVolumeCache } from '../../../lib/shared-volume/cache.ts';
import { DEFAULT_CONFIG } from '../../../lib/shared-volume/config.ts';
import { SharedVolumeReconciler, type PollOnceOptions, type PollResult, type SharedVolumeApi } from '../../../lib/shared-volume/reconciler.ts';

const T0 = 1_000_000;
const PASS_MS = 20;

/** A reconciler whose passes take {@link PASS_MS} of the mocked clock and whose sleeps end `lateMs` late. */
class ClockedReconciler extends SharedVolumeReconciler {
  readonly passes: { at: number; deadline: number | undefined }[] = [];
  readonly sleeps: number[] = [];

  constructor(pollIntervalMs: number, lateMs: number) {
    super({
      storage: {} as SharedVolumeApi,
      core: {} as CoreV1Api,
      recorder: new MemoryEventRecorder(),
      cache: {} as SharedVolumeCache,
      config: { ...DEFAULT_CONFIG, pollIntervalMs },
      sleep: async (ms) => {
        this.sleeps.push(ms);
        mock.timers.setTime(Date.now() + ms + lateMs);
      },
    });
  }

  override async pollOnce(options: PollOnceOptions = {}): Promise<PollResult> {
    this.passes.push({ at: Date.now() - T0, deadline: options.deadline });
    mock.timers.setTime(Date.now() + PASS_MS);
    return { listed: 0, outcomes: new Map(), durationMs: PASS_MS, deadlineReached: false, reads: { cacheHits: 0, apiGets: 0, cacheAbsent: 0 } };
  }
}

describe('SharedVolumeReconciler.pollUntil', () => {
  // Poll interval 2 s: start reserve 1 s, final pass at least 1 s after the previous one. Stop at +3 s: after the
  // first pass (+20 ms) a regular pass (+2020 ms) would not leave the reserve, so the final pass is slept for, to
  // start at 3000 - 20 - 1000 = +1980 ms.
  const run = async (t: { after(fn: () => void): void }, lateMs: number) => {
    mock.timers.enable({ apis: ['Date'], now: T0 });
    t.after(() => mock.timers.reset());
    const reconciler = new ClockedReconciler(2000, lateMs);
    const results = await reconciler.pollUntil(T0 + 3000);
    return { reconciler, results };
  };

  it('runs the final pass as late as still fits', async (t) => {
    const { reconciler, results } = await run(t, 0);
    assert.deepEqual(reconciler.sleeps, [1960]);
    assert.deepEqual(reconciler.passes, [{ at: 0, deadline: T0 + 3000 }, { at: 1980, deadline: T0 + 3000 }]);
    assert.equal(results.length, 2);
  });

  it('runs the final pass when its timer fires late (less than the reserve then left), bounded by the stop', async (t) => {
    const { reconciler, results } = await run(t, 50);
    assert.deepEqual(reconciler.sleeps, [1960]);
    assert.deepEqual(reconciler.passes, [{ at: 0, deadline: T0 + 3000 }, { at: 2030, deadline: T0 + 3000 }]);
    assert.equal(results.length, 2);
  });

  it('skips the final pass when its timer fires after the stop', async (t) => {
    const { reconciler, results } = await run(t, 1100);
    assert.deepEqual(reconciler.passes, [{ at: 0, deadline: T0 + 3000 }]);
    assert.equal(results.length, 1);
  });

  it('a regular pass still needs the reserve: a late regular timer ends the loop', async (t) => {
    mock.timers.enable({ apis: ['Date'], now: T0 });
    t.after(() => mock.timers.reset());
    // Poll interval 200 ms (reserve 200 ms), stop at +600 ms: the regular sleep to +220 ms ends at +500 ms.
    const reconciler = new ClockedReconciler(200, 280);
    const results = await reconciler.pollUntil(T0 + 600);
    assert.deepEqual(reconciler.sleeps, [200]);
    assert.equal(results.length, 1);
  });
});
