import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiBudget, budgetFromEnv, BudgetTimeoutError, KCM_CLIENT_DEFAULTS, withBudgetDeadline } from '../../lib/state/bucket.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

/** A simulated clock: sleeping moves time to the sleeper's wake-up instant (parallel sleepers overlap). */
function simulatedClock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    sleep: async (ms: number) => {
      const wake = now + ms;
      await new Promise((resolve) => setImmediate(resolve));
      now = Math.max(now, wake);
    },
  };
}

describe('ApiBudget (shared token bucket in DynamoDB)', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
  });
  after(() => db.stop());

  test('defaults are kube-controller-manager’s 20 QPS / 30 burst', () => {
    assert.deepEqual(KCM_CLIENT_DEFAULTS, { qps: 20, burst: 30 });
    assert.deepEqual(budgetFromEnv({}), { qps: 20, burst: 30 });
    assert.deepEqual(budgetFromEnv({ KUBE_API_QPS: '5', KUBE_API_BURST: '10' }), { qps: 5, burst: 10 });
  });

  test('two containers together stay within burst + qps × time', async () => {
    const clock = simulatedClock();
    const start = clock.now();
    const options = { doc: db.doc, table: db.tables.control, cluster: 'shared', qps: 10, burst: 5, slice: 2, ...clock };
    const a = new ApiBudget(options);
    const b = new ApiBudget(options);
    const sent: number[] = [];
    await Promise.all(
      [a, b].map(async (budget) => {
        for (let i = 0; i < 15; i++) {
          await budget.take();
          sent.push(clock.now());
        }
      }),
    );
    assert.equal(sent.length, 30);
    // 30 requests with 5 in the burst need at least 25 refilled tokens: ≥ 2.5 s of simulated time.
    const elapsed = clock.now() - start;
    assert.ok(elapsed >= 2500, `30 requests took only ${elapsed} simulated ms`);
    // Over every window, sends never exceed burst + qps × window (+ one slice in flight per container).
    for (let i = 0; i < sent.length; i++) {
      for (let j = i; j < sent.length; j++) {
        const window = sent[j] - sent[i];
        assert.ok(j - i + 1 <= 5 + (window * 10) / 1000 + 4, `${j - i + 1} requests in ${window} ms`);
      }
    }
    const stored = await a.read();
    assert.ok(stored && stored.tokens < 5);
  });

  test('a 429 pause in one container holds back the other', async () => {
    const clock = simulatedClock();
    const options = { doc: db.doc, table: db.tables.control, cluster: 'paused', qps: 100, burst: 10, ...clock };
    const a = new ApiBudget(options);
    const b = new ApiBudget(options);
    const start = clock.now();
    await a.pause(3000);
    assert.equal((await b.read())?.pausedUntil, start + 3000);
    await b.take();
    assert.ok(clock.now() - start >= 3000, 'b waited for the pause to end');
  });

  test('gives up after maxWaitMs', async () => {
    const clock = simulatedClock();
    const budget = new ApiBudget({ doc: db.doc, table: db.tables.control, cluster: 'slow', qps: 0.1, burst: 1, maxWaitMs: 2000, ...clock });
    await budget.take();
    await assert.rejects(budget.take(), BudgetTimeoutError);
  });

  test('a budget deadline (the Lambda time left) caps the wait below maxWaitMs', async () => {
    const clock = simulatedClock();
    const budget = new ApiBudget({ doc: db.doc, table: db.tables.control, cluster: 'deadline', qps: 1, burst: 1, maxWaitMs: 60_000, ...clock });
    await budget.take();
    const start = clock.now();
    await assert.rejects(withBudgetDeadline(start + 500, () => budget.take()), BudgetTimeoutError);
    assert.ok(clock.now() - start < 500, 'gave up without sleeping past the deadline');
    await withBudgetDeadline(clock.now() + 5000, () => budget.take());
    assert.ok(clock.now() - start >= 1000, 'a deadline the refill fits in still waits for the token');
  });
});
