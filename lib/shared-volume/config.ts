/**
 * The controller's flags as configuration, with upstream's defaults (api-manager `main.go`:
 * `-volume-poll-interval`, `-volume-expiry-interval`, `-k8s-create-poll-interval`,
 * `-k8s-create-wait-duration`), plus the serverless-only knobs of the scheduled poll.
 */
import { z } from 'zod';

/** Configuration of the shared volume controller. */
export interface SharedVolumeConfig {
  /** Sleep between two poll iterations, measured from the end of one (default 5 s). */
  pollIntervalMs: number;
  /** Lifetime of a per-volume cache entry (default 1 min; 0 = the default, -1 = never expires, as go-cache). */
  cacheExpiryMs: number;
  /** Interval of the create-then-wait poll for a new Service's ClusterIP (default 1 s). */
  createPollIntervalMs: number;
  /** Timeout of that wait (default 20 s). */
  createWaitMs: number;
  /** Period of the scheduled invocation (default 1 min, the `sharedVolumePollSchedule` rate). */
  scheduleIntervalMs: number;
  /**
   * A scheduled invocation stops polling this long before it must end: the next invocation's due time or the
   * Lambda timeout, whichever is first (default 2 s: every call in flight is aborted at the stop, so the
   * margin only covers the lease handover and the metrics flush).
   */
  scheduleMarginMs: number;
}

/** Upstream's defaults. */
export const DEFAULT_CONFIG: SharedVolumeConfig = {
  pollIntervalMs: 5000,
  cacheExpiryMs: 60_000,
  createPollIntervalMs: 1000,
  createWaitMs: 20_000,
  scheduleIntervalMs: 60_000,
  scheduleMarginMs: 2000,
};

/** Environment variables of each knob. */
export const CONFIG_ENV = {
  pollIntervalMs: 'SHARED_VOLUME_POLL_INTERVAL_MS',
  cacheExpiryMs: 'SHARED_VOLUME_CACHE_EXPIRY_MS',
  createPollIntervalMs: 'SHARED_VOLUME_CREATE_POLL_INTERVAL_MS',
  createWaitMs: 'SHARED_VOLUME_CREATE_WAIT_MS',
  scheduleIntervalMs: 'SHARED_VOLUME_SCHEDULE_INTERVAL_MS',
  scheduleMarginMs: 'SHARED_VOLUME_SCHEDULE_MARGIN_MS',
} as const satisfies Record<keyof SharedVolumeConfig, string>;

/** A configuration value that is not an integer in range. */
export class SharedVolumeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SharedVolumeConfigError';
  }
}

const nonNegative = z.coerce.number().int().min(0);
const expiry = z.coerce.number().int().min(-1);

/**
 * Reads the configuration from the environment; unset or empty variables keep the defaults.
 *
 * @example
 * const config = sharedVolumeConfigFromEnv({ SHARED_VOLUME_POLL_INTERVAL_MS: '1000' });
 * config.pollIntervalMs; // 1000
 */
export function sharedVolumeConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SharedVolumeConfig {
  const config = { ...DEFAULT_CONFIG };
  for (const key of Object.keys(CONFIG_ENV) as (keyof SharedVolumeConfig)[]) {
    const raw = env[CONFIG_ENV[key]];
    if (raw === undefined || raw.trim() === '') continue;
    const parsed = (key === 'cacheExpiryMs' ? expiry : nonNegative).safeParse(raw);
    if (!parsed.success) throw new SharedVolumeConfigError(`${CONFIG_ENV[key]}=${raw} is not a valid integer of milliseconds`);
    config[key] = parsed.data;
  }
  return config;
}

/** The effective cache lifetime (go-cache: 0 → the default of 1 min; -1 → never). */
export function effectiveExpiryMs(config: SharedVolumeConfig): number {
  if (config.cacheExpiryMs === 0) return DEFAULT_CONFIG.cacheExpiryMs;
  return config.cacheExpiryMs < 0 ? Infinity : config.cacheExpiryMs;
}
