/**
 * The node label sync's configuration: api-manager's flags as environment variables.
 *
 * | flag | variable | default |
 * |---|---|---|
 * | `-enable-node-label-sync` | `ENABLE_NODE_LABEL_SYNC` | `true` |
 * | `-node-label-resync-interval` | `NODE_LABEL_RESYNC_INTERVAL` (Go duration; `0` disables) | `1h` |
 *
 * The interval is the resync's period: the schedule (`labelSyncResyncSchedule` in serverless.yml) only
 * ticks, every minute, and a tick resyncs a cluster when its last resync started at least the interval
 * ago (resync.ts), so the first tick after deploy resyncs. `-node-label-resync-delay` (10 s) is that
 * first tick (within a minute of deploy); `-node-label-sync-workers` (5) is the event source mapping's
 * concurrency and the resync's parallel ensures.
 */

export const ENV_ENABLE = 'ENABLE_NODE_LABEL_SYNC';
export const ENV_RESYNC_INTERVAL = 'NODE_LABEL_RESYNC_INTERVAL';

/** The configuration value is not valid. */
export class LabelSyncConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabelSyncConfigError';
  }
}

export interface LabelSyncConfig {
  /** `enableNodeLabelSync`: when false, events and scheduled runs are acknowledged and dropped. */
  enabled: boolean;
  /** `nodeLabelResyncInterval` in ms: the period of the scheduled resync; 0 disables it. */
  resyncIntervalMs: number;
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's `time.ParseDuration` (e.g. `1h`, `1h30m`, `10s`, `0`), in milliseconds. */
export function parseGoDuration(text: string): number {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (const m of text.matchAll(re)) {
    total += Number(m[1]) * UNITS[m[2]];
    matched += m[0].length;
  }
  if (matched === 0 || matched !== text.length) throw new LabelSyncConfigError(`invalid duration ${JSON.stringify(text)}`);
  return total;
}

/** Go's `strconv.ParseBool` for a flag value. */
function parseFlagBool(name: string, text: string): boolean {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(text)) return false;
  throw new LabelSyncConfigError(`${name}: invalid boolean ${JSON.stringify(text)}`);
}

/** The configuration from `env` (unset or empty means the default). */
export function labelSyncConfigFromEnv(env: Record<string, string | undefined> = process.env): LabelSyncConfig {
  const enabled = env[ENV_ENABLE] ? parseFlagBool(ENV_ENABLE, env[ENV_ENABLE]) : true;
  const resyncIntervalMs = env[ENV_RESYNC_INTERVAL] ? parseGoDuration(env[ENV_RESYNC_INTERVAL]) : 3_600_000;
  return { enabled, resyncIntervalMs };
}
