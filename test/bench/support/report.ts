/**
 * The shape of a controller benchmark's JSON and the short human table printed from it (stderr, so
 * stdout stays one JSON document).
 */

export interface ControllerReport {
  bench: string;
  operation: string;
  budget: { qps: number; burst: number };
  /** Absent when skipped (`BENCH_SINGLES=0`, `BENCH_CLAIMS=0`). */
  single?: Record<string, unknown>;
  burst?: Record<string, unknown>;
  /** The same burst again on the warm stack (harness.ts `WARM_BURST`). */
  warmBurst?: Record<string, unknown>;
  /** The median of more bursts after it (harness.ts `STEADY_BURSTS`), with every round's figures. */
  steadyBurst?: Record<string, unknown>;
  kcmBudget: Record<string, unknown>[];
  [more: string]: unknown;
}

type Json = Record<string, any>;

const fmt = (v: unknown, digits = 2): string => {
  if (typeof v !== 'number' || !Number.isFinite(v)) return v === undefined || v === null ? '–' : String(v);
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return String(Math.round(v * 10 ** digits) / 10 ** digits);
};

/**
 * The steady row of a series of bursts: the burst with the median throughput (the lower of the two middle
 * ones for an even count; the first run of equal ones) among those that completed, or among all when none
 * did (a burst cut short by its timeout counts only what finished, so its rate is no rate of the whole).
 * With `medianOfBursts` (how many ran), `incompleteBursts` and `rounds`: each burst's p50, p99, rate, CPU (in
 * all and by where it ran), messages, stage p50s and completeness in the order run. Undefined for none.
 */
export function steadyOf(bursts: readonly Record<string, unknown>[]): Record<string, unknown> | undefined {
  if (bursts.length === 0) return undefined;
  const rate = (r: Json): number => (typeof r.throughputPerSecond === 'number' ? r.throughputPerSecond : 0);
  const complete = bursts.filter((r: Json) => r.complete !== false);
  const from = complete.length > 0 ? complete : bursts;
  const median = [...from].sort((a, b) => rate(a) - rate(b))[Math.floor((from.length - 1) / 2)]!;
  return {
    ...median,
    medianOfBursts: bursts.length,
    incompleteBursts: bursts.length - complete.length,
    rounds: bursts.map((r: Json) => ({
      p50Ms: r.latencyMs?.p50,
      p99Ms: r.latencyMs?.p99,
      throughputPerSecond: r.throughputPerSecond,
      cpuMsPerOp: r.cpu?.msPerOp?.total,
      otherThreadsCpuMsPerOp: r.cpu?.msPerOpByThread?.otherThreads,
      mainThreadCpuMsPerOp: r.cpu?.msPerOpByThread?.mainThread,
      functionsThreadCpuMsPerOp: r.cpu?.msPerOpByThread?.functionsThread,
      awsStandInsCpuMsPerOp: r.cpu?.msPerOp?.awsStandIns,
      messagesPerOp: r.messagesPerOp,
      stagesP50Ms: r.stagesP50Ms,
      complete: r.complete,
    })),
  };
}

/** One table row per run of a controller bench. */
export function controllerRows(report: ControllerReport): string[][] {
  const row = (label: string, r: Json | undefined, latency: 'p50' | 'median'): string[] => {
    if (!r) return [];
    const lat = latency === 'median' ? r.latencyMs?.median : r.latencyMs?.p50;
    const budget = r.apiBudget as Json | undefined;
    return [
      `${report.bench} ${label}`,
      fmt(r.operations ?? r.repetitions, 0),
      fmt(lat, 0),
      fmt(r.latencyMs?.p99, 0),
      fmt(r.throughputPerSecond),
      `${fmt(r.api?.readsPerOp)} / ${fmt(r.api?.writesPerOp)}`,
      fmt(r.messagesPerOp),
      fmt(r.dynamo?.functions?.requestsPerOp),
      fmt(r.dynamo?.functions?.capacityUnitsPerOp),
      fmt(r.costPer1000OpsUsd?.total, 4),
      budget ? `${budget.maxRequestsInOneSecond}${budget.emulatorMaxWritesAppliedInOneSecond !== undefined ? ` (emulator ${budget.emulatorMaxWritesAppliedInOneSecond})` : ''} / ${budget.limitQpsPlusBurst}` : '–',
      budget ? fmt(budget.throughputToCeiling, 3) : '–',
      r.cpu ? `${fmt(r.cpu.msPerOp?.total, 1)} (${fmt(r.cpu.ceilingOpsPerSecond, 0)})` : '–',
      r.cpu?.msPerOpByThread
        ? `${fmt(r.cpu.msPerOpByThread.functionsThread, 1)} / ${fmt(r.cpu.msPerOpByThread.mainThread, 1)} / ${fmt(r.cpu.msPerOpByThread.otherThreads, 1)} / ${fmt(r.cpu.msPerOp?.awsStandIns, 1)}`
        : '–',
    ];
  };
  const rows = [row('one alone', report.single, 'median'), row(`burst @${report.budget.qps} QPS`, report.burst, 'p50'), row(`burst again, warm`, report.warmBurst, 'p50')];
  if (report.steadyBurst) {
    const cut = Number(report.steadyBurst.incompleteBursts ?? 0);
    rows.push(row(`burst, steady (median of ${fmt(report.steadyBurst.medianOfBursts, 0)} more${cut > 0 ? `, ${cut} cut short` : ''})`, report.steadyBurst, 'p50'));
  }
  for (const k of report.kcmBudget) rows.push(row(`KCM budget, ${k.claims}`, k, 'p50'));
  return rows.filter((r) => r.length > 0);
}

export const CONTROLLER_HEADER = [
  'run',
  'ops',
  'p50 ms',
  'p99 ms',
  'ops/s',
  'API r / w per op',
  'msgs/op',
  'DDB req/op',
  'DDB units/op',
  '$ / 1k ops',
  'max API req in 1 s / QPS+burst',
  'ops/s ÷ ceiling',
  'CPU ms/op (ops/s the cores allow)',
  'CPU ms/op: functions / emulator+forwarder / other threads / AWS stand-ins',
];

/** A plain text table. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (c ?? '').padEnd(widths[i])).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Prints the controller rows of `reports` on stderr. */
export function printTable(reports: ControllerReport[]): void {
  process.stderr.write(`\n${table(CONTROLLER_HEADER, reports.flatMap(controllerRows))}\n\n`);
}
