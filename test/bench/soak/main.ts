/**
 * `npm run soak -- --minutes N --seed S [--ops-per-second R] [--fault-rate F] [--param name=value …] [--json]`: the soak benchmark
 * (run.ts). Prints the report (and with `--json` the report as JSON); exits 1 when an invariant failed.
 */
import { parseArgs } from 'node:util';
import { formatReport } from './report.ts';
import { runSoak } from './run.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    'ops-per-second': { type: 'string' },
    'fault-rate': { type: 'string' },
    'settle-timeout': { type: 'string' },
    'state-dir': { type: 'string' },
    param: { type: 'string', multiple: true },
    json: { type: 'boolean', default: false },
  },
});
const report = await runSoak({
  minutes: Number(values.minutes),
  seed: Number(values.seed),
  ...(values['ops-per-second'] ? { opsPerSecond: Number(values['ops-per-second']) } : {}),
  ...(values['fault-rate'] ? { faultRate: Number(values['fault-rate']) } : {}),
  ...(values['settle-timeout'] ? { settleTimeoutMs: Number(values['settle-timeout']) * 1000 } : {}),
  ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
  ...(values.param ? { params: Object.fromEntries(values.param.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)])) } : {}),
  keepLogs: true,
  progress: (line) => console.error(`[soak] ${line}`),
});
console.log(formatReport(report));
if (values.json) console.log(JSON.stringify(report, null, 2));
process.exit(report.ok ? 0 : 1);
