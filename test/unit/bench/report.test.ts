/**
 * The benches' steady row (test/bench/support/report.ts `steadyOf`): which burst of a series it reports,
 * and that every burst of the series stays in it, in the order run.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controllerRows, steadyOf } from '../../bench/support/report.ts';

type Burst = {
  operations: number;
  throughputPerSecond?: number;
  latencyMs: { p50: number; p99: number };
  cpu: { msPerOp: { total: number; awsStandIns: number }; msPerOpByThread: { otherThreads: number; mainThread: number; functionsThread: number } };
  messagesPerOp: number;
  stagesP50Ms: { createToQueued: number };
  complete: boolean;
};

/** A burst at `rate` ops/s (undefined: none reported); `p50` tells the bursts apart. */
const burst = (rate: number | undefined, p50: number, complete = true): Burst => ({
  operations: 100,
  ...(rate !== undefined ? { throughputPerSecond: rate } : {}),
  latencyMs: { p50, p99: p50 * 2 },
  cpu: { msPerOp: { total: p50 / 10, awsStandIns: p50 / 40 }, msPerOpByThread: { otherThreads: p50 / 100, mainThread: p50 / 30, functionsThread: p50 / 20 } },
  messagesPerOp: p50 / 1000,
  stagesP50Ms: { createToQueued: p50 / 4 },
  complete,
});

describe('steadyOf', () => {
  // Each burst is [rate, complete]; `want` is the index (in the order run) of the burst the row must be.
  const cases: Array<{ name: string; bursts: Array<[number | undefined, boolean]>; want?: number; incomplete?: number }> = [
    { name: 'none: no row', bursts: [] },
    { name: 'one burst: that burst', bursts: [[40, true]], want: 0 },
    { name: 'odd count: the median rate, wherever it ran', bursts: [[32.6, true], [39.1, true], [42.7, true], [34.0, true], [39.3, true]], want: 1 },
    { name: 'even count: the lower of the two middle rates', bursts: [[50, true], [30, true], [20, true], [40, true]], want: 1 },
    { name: 'ties: the first run of them', bursts: [[25, true], [25, true], [25, true]], want: 1 },
    { name: 'no rate reported counts as the slowest', bursts: [[undefined, true], [30, true], [40, true]], want: 1 },
    { name: 'a burst cut short is not chosen', bursts: [[90, false], [30, true], [40, true], [20, true]], want: 1, incomplete: 1 },
    { name: 'every burst cut short: chosen among them', bursts: [[10, false], [30, false], [20, false]], want: 2, incomplete: 3 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const bursts = c.bursts.map(([rate, complete], i) => burst(rate, 1000 + i, complete));
      const steady = steadyOf(bursts);
      if (c.want === undefined) return assert.equal(steady, undefined);
      // The row is that one burst's own figures, not a mix.
      const chosen = bursts[c.want]!;
      assert.equal(steady?.throughputPerSecond, chosen.throughputPerSecond);
      assert.equal(steady?.latencyMs, chosen.latencyMs);
      assert.equal(steady?.cpu, chosen.cpu);
      assert.equal(steady?.medianOfBursts, c.bursts.length);
      assert.equal(steady?.incompleteBursts, c.incomplete ?? 0);
      assert.deepEqual(
        steady?.rounds,
        c.bursts.map(([rate, complete], i) => {
          const p50 = 1000 + i;
          return {
            p50Ms: p50, p99Ms: 2 * p50, throughputPerSecond: rate, cpuMsPerOp: p50 / 10, otherThreadsCpuMsPerOp: p50 / 100,
            mainThreadCpuMsPerOp: p50 / 30, functionsThreadCpuMsPerOp: p50 / 20, awsStandInsCpuMsPerOp: p50 / 40,
            messagesPerOp: p50 / 1000, stagesP50Ms: { createToQueued: p50 / 4 }, complete,
          };
        }),
      );
    });
  }

  it('leaves the series as it was run', () => {
    const bursts = [burst(50, 1), burst(20, 2), burst(30, 3)];
    const before = bursts.map((b) => b.latencyMs.p50);
    steadyOf(bursts);
    assert.deepEqual(bursts.map((b) => b.latencyMs.p50), before);
  });

  it('is printed as its own row after the warm burst, saying how many were cut short', () => {
    const report = { bench: 'binder', operation: 'bind', budget: { qps: 400, burst: 600 }, burst: burst(25, 2500), warmBurst: burst(45, 1600), kcmBudget: [] };
    const rows = (steady: Burst[]) => controllerRows({ ...report, steadyBurst: steadyOf(steady) }).map((r) => [r[0], r[2], r[4]]);
    assert.deepEqual(rows([burst(60, 1100), burst(70, 980), burst(74, 990)]), [
      ['binder burst @400 QPS', '2,500', '25'],
      ['binder burst again, warm', '1,600', '45'],
      ['binder burst, steady (median of 3 more)', '980', '70'],
    ]);
    assert.deepEqual(rows([burst(60, 1100), burst(70, 980, false), burst(74, 990)])[2], ['binder burst, steady (median of 3 more, 1 cut short)', '1,100', '60']);
  });
});
