/**
 * The benches' steady row (test/bench/support/report.ts `steadyOf`): which burst of a series it reports,
 * and that every burst of the series stays in it, in the order run.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controllerRows, steadyOf } from '../../bench/support/report.ts';

const burst = (rate: number, p50: number) => ({
  operations: 100,
  throughputPerSecond: rate,
  latencyMs: { p50, p99: p50 * 2 },
  cpu: { msPerOp: { total: 2000 / rate }, msPerOpByThread: { otherThreads: 3 } },
  complete: true,
});

describe('steadyOf', () => {
  const cases: Array<{ name: string; rates: number[]; want?: number }> = [
    { name: 'none: no row', rates: [] },
    { name: 'one burst: that burst', rates: [40], want: 40 },
    { name: 'odd count: the median rate, wherever it ran', rates: [32.6, 42.7, 34.0, 39.3, 39.1], want: 39.1 },
    { name: 'even count: the lower of the two middle rates', rates: [50, 20, 40, 30], want: 30 },
    { name: 'ties: one of them', rates: [25, 25, 25], want: 25 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const bursts = c.rates.map((r, i) => burst(r, 1000 + i));
      const steady = steadyOf(bursts);
      if (c.want === undefined) return assert.equal(steady, undefined);
      assert.equal(steady?.throughputPerSecond, c.want);
      // The row's other figures are one burst's own (one of that rate), not a mix.
      const candidates = bursts.filter((b) => b.throughputPerSecond === c.want);
      assert.ok(candidates.some((b) => b.latencyMs === steady?.latencyMs && b.cpu === steady?.cpu));
      assert.equal(steady?.medianOfBursts, c.rates.length);
      assert.deepEqual(
        (steady?.rounds as Array<{ throughputPerSecond: number; p50Ms: number }>).map((r) => [r.throughputPerSecond, r.p50Ms]),
        bursts.map((b) => [b.throughputPerSecond, b.latencyMs.p50]),
      );
    });
  }

  it('is printed as its own row, after the warm burst', () => {
    const rows = controllerRows({ bench: 'binder', operation: 'bind', budget: { qps: 400, burst: 600 }, burst: burst(25, 2500), warmBurst: burst(45, 1600), steadyBurst: steadyOf([burst(60, 1100), burst(70, 980), burst(74, 990)]), kcmBudget: [] });
    assert.deepEqual(rows.map((r) => [r[0], r[2], r[4]]), [
      ['binder burst @400 QPS', '2,500', '25'],
      ['binder burst again, warm', '1,600', '45'],
      ['binder burst, steady (median of 3 more)', '980', '70'],
    ]);
  });
});
