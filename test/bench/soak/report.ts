/** The soak's printed report. */
import type { SoakReport } from './run.ts';

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));

export function formatReport(r: SoakReport): string {
  const lines: string[] = [];
  lines.push(`soak: seed ${r.seed}, ${r.minutes} min of workload, ${Math.round(r.durationMs / 1000)} s in all — ${r.ok ? 'PASS' : 'FAIL'}`);
  lines.push('');
  lines.push('operations');
  for (const c of r.clusters) {
    lines.push(`  cluster ${c.id}: ${c.totalOperations} operations (${c.workloadRetries} writes retried under faults)`);
    for (const [op, n] of Object.entries(c.operations).sort()) lines.push(`    ${pad(op, 32)} ${n}`);
  }
  lines.push('');
  const total = Object.values(r.faults).reduce((s, n) => s + n, 0);
  lines.push(`faults injected: ${total} (${Object.entries(r.faultsByCluster).map(([c, n]) => `${c}: ${n}`).join(', ')}); ${r.invocationsCut} invocations cut by kills`);
  for (const [kind, n] of Object.entries(r.faults).sort()) lines.push(`  ${pad(kind, 36)} ${n}`);
  const hit = Object.entries(r.awsRequestsHit ?? {});
  if (hit.length > 0) {
    lines.push(`AWS requests hit by the fault proxy: ${hit.reduce((s, [, n]) => s + n, 0)}`);
    for (const [what, n] of hit.sort()) lines.push(`  ${pad(what, 48)} ${n}`);
  }
  lines.push('');
  lines.push(`last fault ended at +${(r.lastFaultAtMs / 1000).toFixed(1)} s; converged ${r.convergeMs === undefined ? 'NEVER (settle timeout)' : `${(r.convergeMs / 1000).toFixed(1)} s after it`}`);
  lines.push('');
  lines.push('invariants');
  const rows: [string, string, string, string][] = [];
  for (const c of r.clusters) for (const i of c.invariants) rows.push([c.id, i.ok ? 'ok' : 'FAIL', i.name, i.checked]);
  rows.push(['both', r.dlq.ok ? 'ok' : 'FAIL', r.dlq.name, r.dlq.checked]);
  const w = [7, 4, Math.max(...rows.map((x) => x[2].length)), 0];
  lines.push(`  ${pad('cluster', w[0])}  ${pad('', w[1])}  ${pad('invariant', w[2])}  checked`);
  for (const row of rows) lines.push(`  ${pad(row[0], w[0])}  ${pad(row[1], w[1])}  ${pad(row[2], w[2])}  ${row[3]}`);
  const failures = [...r.clusters.flatMap((c) => c.invariants.filter((i) => !i.ok).map((i) => ({ c: c.id, i }))), ...(r.dlq.ok ? [] : [{ c: 'both', i: r.dlq }])];
  if (failures.length > 0) {
    lines.push('');
    lines.push('violations');
    for (const { c, i } of failures) for (const v of i.violations) lines.push(`  [${c}] ${i.name}: ${v}`);
  }
  if (r.logDir) lines.push('', `logs: ${r.logDir}`);
  return lines.join('\n');
}
