import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ApiBudget, bucketTokens, budgetFromEnv, BudgetTimeoutError, KCM_CLIENT_DEFAULTS, withBudgetDeadline } from '../../lib/state/bucket.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { bucketPk } from '../../lib/state/schema.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

/** A document client that counts the commands sent through it by name. */
function counting(doc: DocumentClient): { doc: DocumentClient; counts: Record<string, number> } {
  const counts: Record<string, number> = {};
  const wrapped = {
    send: (command: { constructor: { name: string } }) => {
      counts[command.constructor.name] = (counts[command.constructor.name] ?? 0) + 1;
      return (doc.send as (c: unknown) => Promise<unknown>)(command);
    },
  } as unknown as DocumentClient;
  return { doc: wrapped, counts };
}

/** The most timestamps in any window of `ms` (inclusive). */
function mostInWindow(times: number[], ms: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < sorted.length; j++) {
    while (sorted[j] - sorted[i] >= ms) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

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
    // Over every window, sends never exceed burst + qps × window.
    for (let i = 0; i < sent.length; i++) {
      for (let j = i; j < sent.length; j++) {
        const window = sent[j] - sent[i];
        assert.ok(j - i + 1 <= 5 + (window * 10) / 1000, `${j - i + 1} requests in ${window} ms`);
      }
    }
    assert.ok(mostInWindow(sent, 1000) <= 10 + 5, 'never more than qps + burst in one second');
    const stored = await a.read();
    assert.ok(stored && stored.tokens < 5);
  });

  test('a slot used as late as it may be still keeps every second within qps + burst', async () => {
    // Three containers; each request reaches the server up to sliceTtlMs + marginMs after its slot.
    const clock = simulatedClock();
    const options = { doc: db.doc, table: db.tables.control, cluster: 'late', qps: 20, burst: 30, sliceTtlMs: 250, marginMs: 100, ...clock };
    const arrivals: number[] = [];
    const start = clock.now();
    await Promise.all(
      [0, 1, 2].map(async () => {
        const budget = new ApiBudget(options);
        for (let i = 0; i < 40; i++) {
          await budget.take();
          // The worst case: everything taken in the first 349 ms arrives 349 ms late, the rest on time.
          arrivals.push(clock.now() + (clock.now() - start < 349 ? 349 : 0));
        }
      }),
    );
    assert.equal(arrivals.length, 120);
    const most = mostInWindow(arrivals, 1000);
    assert.ok(most <= 50, `${most} requests reached the server in one second (limit 50)`);
  });

  test('one write per slice and no reads: containers never poll the bucket or lose a race', async () => {
    const clock = simulatedClock();
    const counted = counting(db.doc);
    const options = { doc: counted.doc, table: db.tables.control, cluster: 'cheap', qps: 1000, burst: 1500, slice: 10, ...clock };
    const containers = [new ApiBudget(options), new ApiBudget(options), new ApiBudget(options)];
    await Promise.all(
      containers.map(async (budget) => {
        // Each container runs 4 requests at a time, 40 in all.
        await Promise.all([0, 1, 2, 3].map(async () => {
          for (let i = 0; i < 10; i++) await budget.take();
        }));
      }),
    );
    assert.equal(counted.counts.GetCommand ?? 0, 0, 'no reads');
    const writes = counted.counts.UpdateCommand ?? 0;
    assert.ok(writes <= 40, `${writes} bucket writes for 120 requests (slices grow to 10)`);
    const stored = await containers[0].read();
    assert.ok(Number(stored?.granted) >= 120 && Number(stored?.granted) <= 120 + 3 * 10, `granted ${stored?.granted}`);
  });

  test('saturated at 20/30: one write serves the requests already waiting (up to 5), and every second stays within qps + burst', async () => {
    // Three containers, each reconciling five claims at once, each claim four requests one after another.
    const clock = simulatedClock();
    const counted = counting(db.doc);
    const options = { doc: counted.doc, table: db.tables.control, cluster: 'saturated', qps: 20, burst: 30, ...clock };
    const sent: number[] = [];
    await Promise.all(
      [0, 1, 2].map(async () => {
        const budget = new ApiBudget(options);
        await Promise.all([0, 1, 2, 3, 4].map(async () => {
          for (let i = 0; i < 8; i++) {
            await budget.take();
            sent.push(clock.now());
          }
        }));
      }),
    );
    assert.equal(sent.length, 120);
    const writes = counted.counts.UpdateCommand ?? 0;
    // 120 ÷ 5 = 24, and a few while the containers start; 4 at a time would take 30, a slice of 2 60.
    assert.ok(writes <= 28, `${writes} bucket writes for 120 requests`);
    assert.ok(mostInWindow(sent, 1000) <= 50, 'never more than qps + burst in one second');
    const stored = await new ApiBudget(options).read();
    assert.ok(Number(stored?.granted) >= 120 && Number(stored?.granted) <= 120 + 3 * 5, `granted ${stored?.granted}: nothing hoarded`);
  });

  test('with plenty left a container takes whole slices: one write for many requests', async () => {
    const clock = simulatedClock();
    const counted = counting(db.doc);
    const budget = new ApiBudget({ doc: counted.doc, table: db.tables.control, cluster: 'plenty', qps: 400, burst: 600, ...clock });
    for (let i = 0; i < 40; i++) await budget.take(); // one at a time, as one reconcile's requests come
    const writes = counted.counts.UpdateCommand ?? 0;
    assert.ok(writes <= 4, `${writes} bucket writes for 40 requests at 400 QPS`);
  });

  test('a new container takes a whole slice at once: one write for a bind’s four requests at 400 QPS', async () => {
    const clock = simulatedClock();
    const counted = counting(db.doc);
    const budget = new ApiBudget({ doc: counted.doc, table: db.tables.control, cluster: 'first', qps: 400, burst: 600, ...clock });
    for (let i = 0; i < 4; i++) await budget.take();
    assert.equal(counted.counts.UpdateCommand ?? 0, 1);
    const small = counting(db.doc);
    const kcm = new ApiBudget({ doc: small.doc, table: db.tables.control, cluster: 'first-kcm', qps: 20, burst: 30, ...clock });
    for (let i = 0; i < 4; i++) await kcm.take();
    assert.equal(small.counts.UpdateCommand ?? 0, 2, 'at 20 QPS a slice is two tokens (~100 ms of the budget)');
  });

  test('slots outlive slow requests: half the burst pays for their life (650 ms at 20/30 and at 400/600)', async () => {
    for (const budget of [{ qps: 20, burst: 30 }, { qps: 400, burst: 600 }]) {
      const clock = simulatedClock();
      const counted = counting(db.doc);
      const bucket = new ApiBudget({ doc: counted.doc, table: db.tables.control, cluster: `slow-${budget.qps}`, ...budget, ...clock });
      assert.equal(bucket.effectiveBurst, budget.burst / 2 - budget.qps / 10, 'burst − qps × (650 ms life + 100 ms margin + 100 ms idle grace)');
      // One reconcile under load: a request every 300 ms. With 250-ms slots each one lapsed before use.
      for (let i = 0; i < 8; i++) {
        await bucket.take();
        await clock.sleep(300);
      }
      const writes = counted.counts.UpdateCommand ?? 0;
      assert.ok(writes <= 4, `${writes} bucket writes for 8 requests 300 ms apart at ${budget.qps} QPS`);
    }
  });

  test('at the default slot life, late use still keeps every second within qps + burst', async () => {
    const clock = simulatedClock();
    const options = { doc: db.doc, table: db.tables.control, cluster: 'late-default', qps: 20, burst: 30, ...clock };
    const arrivals: number[] = [];
    const start = clock.now();
    await Promise.all(
      [0, 1, 2].map(async () => {
        const budget = new ApiBudget(options);
        for (let i = 0; i < 40; i++) {
          await budget.take();
          // The worst case: everything taken in the first 749 ms arrives 749 ms late (life + margin).
          arrivals.push(clock.now() + (clock.now() - start < 749 ? 749 : 0));
        }
      }),
    );
    const most = mostInWindow(arrivals, 1000);
    assert.ok(most <= 50, `${most} requests reached the server in one second (limit 50)`);
  });

  test('one write per reservation when the guess is right: which form a container tries first', async () => {
    // [case, the bucket's tat relative to now as others left it (undefined: never used), takes at once,
    // bucket writes]. Each container is new: it knows nothing of the bucket but how busy it is itself.
    const cases: Array<[string, number | undefined, number, number]> = [
      ['booked ahead, a busy container: goes after the bookings at once', 200, 3, 1],
      ['idle 60 ms (within the grace), a busy container: goes after the last booking', -60, 3, 1],
      ['idle 60 ms, a request on its own: starts at now', -60, 1, 1],
      ['idle 5 s, a request on its own: starts at now', -5000, 1, 1],
      ['never used, a request on its own', undefined, 1, 1],
      ['never used, a busy container', undefined, 3, 1],
      ['booked ahead, a request on its own: the wrong guess costs a refused write', 200, 1, 2],
      ['idle 5 s, a busy container: the wrong guess costs a refused write', -5000, 3, 2],
    ];
    for (const [name, bucketTat, takes, writes] of cases) {
      const clock = simulatedClock();
      const cluster = `guess-${name}`;
      if (bucketTat !== undefined) {
        await db.doc.send(new UpdateCommand({ TableName: db.tables.control, Key: { pk: bucketPk(cluster) }, UpdateExpression: 'SET tat = :tat', ExpressionAttributeValues: { ':tat': clock.now() + bucketTat } }));
      }
      const counted = counting(db.doc);
      const budget = new ApiBudget({ doc: counted.doc, table: db.tables.control, cluster, qps: 400, burst: 600, ...clock });
      await Promise.all(Array.from({ length: takes }, () => budget.take()));
      assert.equal(counted.counts.UpdateCommand ?? 0, writes, name);
      const stored = await budget.read();
      const expectedTat = bucketTat !== undefined && bucketTat >= -budget.idleGraceMs && writes === 1 && takes > 1
        ? clock.now() + bucketTat + 20 * 2.5 // after the bookings: a whole slice of 20 slots of 2.5 ms
        : undefined;
      if (expectedTat !== undefined) assert.equal(stored?.tat, expectedTat, `${name}: the slice follows the last booking`);
    }
  });

  test('after its own slice a container goes after it, even when the bucket fell idle meanwhile', async () => {
    const clock = simulatedClock();
    const counted = counting(db.doc);
    const budget = new ApiBudget({ doc: counted.doc, table: db.tables.control, cluster: 'own-slice', qps: 400, burst: 600, ...clock });
    for (let i = 0; i < 20; i++) await budget.take(); // one whole slice, 50 ms of the budget
    assert.equal(counted.counts.UpdateCommand ?? 0, 1);
    const start = clock.now();
    await clock.sleep(120); // its tat is 70 ms in the past now: idle, within the grace
    await budget.take();
    assert.equal(counted.counts.UpdateCommand ?? 0, 2, 'one more write, no refused one');
    assert.equal((await budget.read())?.tat, start + 50 + 20 * 2.5, 'the new slice follows the old one, not now');
  });

  test('going after a briefly idle bucket still keeps every second within qps + burst', async () => {
    // The grace at its worst: one slice booked, the bucket idle until just inside the grace, then three
    // containers saturate it. The first of them goes after the old booking and hands out the grace's past
    // slots on top of the burst; the burst was shrunk by as much. Any request may arrive up to slot life +
    // margin (750 ms) after it was let go: no window of 1,750 ms may hold more than qps + burst sends.
    const clock = simulatedClock();
    const options = { doc: db.doc, table: db.tables.control, cluster: 'grace-worst', qps: 20, burst: 30, ...clock };
    const first = new ApiBudget(options);
    const start = clock.now();
    await first.take(); // a whole slice: 2 slots, tat = start + 100
    await clock.sleep(100 + first.idleGraceMs - 5); // idle 95 ms: within the grace
    const sent: number[] = [start];
    await Promise.all(
      [first, new ApiBudget(options), new ApiBudget(options)].map(async (budget) => {
        await Promise.all(Array.from({ length: 20 }, async () => {
          for (let i = 0; i < 3; i++) {
            await budget.take();
            sent.push(clock.now());
          }
        }));
      }),
    );
    assert.equal(sent.length, 181);
    const most = mostInWindow(sent, 1750);
    assert.ok(most <= 50, `${most} requests let go within 1,750 ms (limit qps + burst = 50)`);
  });

  test('waiting is exact: one sleep per slot due later, none polling', async () => {
    const clock = simulatedClock();
    const sleeps: number[] = [];
    const budget = new ApiBudget({
      doc: db.doc,
      table: db.tables.control,
      cluster: 'exact',
      qps: 10,
      burst: 1,
      now: clock.now,
      sleep: async (ms) => {
        sleeps.push(ms);
        await clock.sleep(ms);
      },
    });
    const start = clock.now();
    for (let i = 0; i < 5; i++) await budget.take();
    assert.equal(clock.now() - start, 400, 'five requests at 10 QPS with a burst of one: 0, 100, … 400 ms');
    assert.ok(sleeps.length <= 4, `slept ${sleeps.length} times`);
  });

  test('bucketTokens reads a stored record', () => {
    assert.equal(bucketTokens(undefined, { qps: 20, burst: 30 }, 1000), 30, 'never used: full');
    assert.equal(bucketTokens({ tat: 500 }, { qps: 20, burst: 30 }, 1000), 30, 'idle since: full');
    assert.equal(bucketTokens({ tat: 1500 }, { qps: 20, burst: 30 }, 1000), 20, '10 slots of 50 ms ahead');
    assert.equal(bucketTokens({ tat: 9000 }, { qps: 20, burst: 30 }, 1000), 0, 'booked beyond the burst');
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
    const granted = (await budget.read())?.granted;
    await assert.rejects(budget.take(), BudgetTimeoutError);
    assert.equal((await budget.read())?.granted, granted, 'a refused take reserves nothing');
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
