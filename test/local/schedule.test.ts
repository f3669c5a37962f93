/**
 * EventBridge schedule expressions (rate and cron, UTC, AWS cron syntax) and the local scheduler.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseSchedule, rateMs, Scheduler, UnsupportedScheduleError } from '../../infra/local/stack/schedule.ts';

describe('parseSchedule', () => {
  const rows: { expression: string; from: string; next: string }[] = [
    { expression: 'rate(1 minute)', from: '2026-11-21T10:00:30.000Z', next: '2026-11-21T10:01:30.000Z' },
    { expression: 'rate(5 minutes)', from: '2026-11-21T10:00:00.000Z', next: '2026-11-21T10:05:00.000Z' },
    { expression: 'rate(1 hour)', from: '2026-11-21T10:00:00.000Z', next: '2026-11-21T11:00:00.000Z' },
    { expression: 'rate(2 days)', from: '2026-11-21T10:00:00.000Z', next: '2026-11-23T10:00:00.000Z' },
    { expression: 'cron(0 * * * ? *)', from: '2026-11-21T10:00:00.000Z', next: '2026-11-21T11:00:00.000Z' },
    { expression: 'cron(0/15 * * * ? *)', from: '2026-11-21T10:07:10.000Z', next: '2026-11-21T10:15:00.000Z' },
    { expression: 'cron(30 3 * * ? *)', from: '2026-11-21T10:00:00.000Z', next: '2026-11-22T03:30:00.000Z' },
    // 2026-11-21 is a Saturday; MON-FRI (2-6) → Monday 23rd
    { expression: 'cron(0 3 ? * MON-FRI *)', from: '2026-11-21T12:00:00.000Z', next: '2026-11-23T03:00:00.000Z' },
    { expression: 'cron(0 3 ? * 1 *)', from: '2026-11-21T12:00:00.000Z', next: '2026-11-22T03:00:00.000Z' },
    { expression: 'cron(0 0 1 JAN,JUL ? *)', from: '2026-11-21T12:00:00.000Z', next: '2027-01-01T00:00:00.000Z' },
    { expression: 'cron(15 10 29 2 ? 2028)', from: '2026-11-21T12:00:00.000Z', next: '2028-02-29T10:15:00.000Z' },
    { expression: 'cron(0,30 9-10 * * ? *)', from: '2026-11-21T09:30:00.000Z', next: '2026-11-21T10:00:00.000Z' },
  ];
  for (const row of rows) {
    it(`${row.expression} after ${row.from}`, () => {
      assert.equal(parseSchedule(row.expression).next(new Date(row.from)).toISOString(), row.next);
    });
  }

  const invalid = ['rate(1 minutes)', 'rate(2 minute)', 'rate(0 minutes)', 'cron(0 * * * * *)', 'cron(0 * ? * ? *)', 'cron(0 * L * ? *)', 'cron(0 * ? * 2#1 *)', 'every minute', 'cron(0 25 * * ? *)'];
  for (const expression of invalid) {
    it(`rejects ${expression}`, () => {
      assert.throws(() => parseSchedule(expression), UnsupportedScheduleError);
    });
  }

  it('rateMs is undefined for cron expressions', () => {
    assert.equal(rateMs('cron(0 * * * ? *)'), undefined);
    assert.equal(rateMs('rate(3 hours)'), 3 * 3_600_000);
  });
});

describe('Scheduler', () => {
  it('fires each rule repeatedly with its Input, or a Scheduled Event without one, until stopped', async () => {
    const withInput: unknown[] = [];
    const scheduled: Record<string, unknown>[] = [];
    const scheduler = new Scheduler(
      [
        { rule: 'PollRule', expression: 'rate(1 minute)', input: '{"action":"poll"}', invoke: async (e) => void withInput.push(e) },
        { rule: 'ResyncRule', expression: 'rate(1 minute)', invoke: async (e) => void scheduled.push(e as Record<string, unknown>) },
      ],
      { region: 'eu-west-1', speedup: 1200 }, // one minute → 50 ms
    );
    scheduler.start();
    const deadline = Date.now() + 10_000;
    while ((withInput.length < 3 || scheduled.length < 3) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await scheduler.stop();
    assert.ok(withInput.length >= 3 && scheduled.length >= 3, `fired ${withInput.length} and ${scheduled.length} times`);
    assert.deepEqual(withInput[0], { action: 'poll' });
    const e = scheduled[0];
    assert.equal(e['detail-type'], 'Scheduled Event');
    assert.equal(e.source, 'aws.events');
    assert.deepEqual(e.resources, ['arn:aws:events:eu-west-1:000000000000:rule/ResyncRule']);
    assert.match(String(e.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const count = scheduled.length;
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(scheduled.length, count, 'no firing after stop');
  });

  it('fires a rate() rule when started, then once per period; a cron() rule only at its times', async () => {
    const fired: { rule: string; at: number }[] = [];
    const started = Date.now();
    const scheduler = new Scheduler(
      [
        { rule: 'Hourly', expression: 'rate(1 hour)', input: '{"tick":true}', invoke: async () => void fired.push({ rule: 'Hourly', at: Date.now() }) },
        { rule: 'Nightly', expression: 'cron(0 3 * * ? *)', invoke: async () => void fired.push({ rule: 'Nightly', at: Date.now() }) },
      ],
      { region: 'eu-west-1' },
    );
    scheduler.start();
    try {
      const deadline = Date.now() + 5_000;
      while (fired.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      await scheduler.stop();
    }
    assert.deepEqual(fired.map((f) => f.rule), ['Hourly'], 'the rate rule once at start, the cron rule not');
    assert.ok(fired[0].at - started < 1_000, `fired ${fired[0].at - started} ms after start`);
  });

  it('sped up: the firing at start, then one per (scaled) period', async () => {
    const at: number[] = [];
    const scheduler = new Scheduler([{ rule: 'R', expression: 'rate(1 minute)', invoke: async () => void at.push(Date.now()) }], { region: 'eu-west-1', speedup: 300 }); // 200 ms
    const started = Date.now();
    scheduler.start();
    const deadline = Date.now() + 10_000;
    while (at.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await scheduler.stop();
    assert.ok(at.length >= 2, `${at.length} firings`);
    assert.ok(at[0] - started < 150, `the first at start (${at[0] - started} ms)`);
    assert.ok(at[1] - at[0] >= 150, `then a period later (${at[1] - at[0]} ms)`);
  });

  it("startFiring: 'period' keeps EventBridge's first firing one period after the rule is armed", async () => {
    const fired: number[] = [];
    const scheduler = new Scheduler([{ rule: 'R', expression: 'rate(1 minute)', invoke: async () => void fired.push(Date.now()) }], {
      region: 'eu-west-1',
      speedup: 300, // 200 ms
      startFiring: 'period',
    });
    const started = Date.now();
    scheduler.start();
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(fired.length, 0, 'nothing at start');
    const deadline = Date.now() + 5_000;
    while (fired.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await scheduler.stop();
    assert.ok(fired[0] - started >= 180, `first firing ${fired[0] - started} ms after start`);
  });

  it('stop() waits for the firing at start', async () => {
    let finished = false;
    const scheduler = new Scheduler(
      [{ rule: 'Slow', expression: 'rate(5 minutes)', invoke: async () => { await new Promise((r) => setTimeout(r, 200)); finished = true; } }],
      { region: 'eu-west-1' },
    );
    scheduler.start();
    await scheduler.stop();
    assert.equal(finished, true);
  });

  it('fire() invokes a rule now and returns its results', async () => {
    const scheduler = new Scheduler([{ rule: 'R', expression: 'cron(0 3 * * ? *)', input: '{"n":1}', invoke: async (e) => ({ got: e }) }], {
      region: 'eu-west-1',
    });
    assert.deepEqual(await scheduler.fire('R'), [{ got: { n: 1 } }]);
    await scheduler.stop();
  });
});
