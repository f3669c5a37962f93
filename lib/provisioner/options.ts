/**
 * Every ProvisionController option (upstream `controller.go` option functions) as configuration read
 * from the environment, with upstream's default. Options that have no meaning for a function are listed
 * in `OPTIONS.md` with the reason and what replaces them.
 *
 * @example
 * const options = provisionerOptionsFromEnv(process.env);
 * options.failedProvisionThreshold; // 15 unless PROVISIONER_FAILED_PROVISION_THRESHOLD says otherwise
 */
import { InvalidOptionError } from './errors.ts';
import type { Backoff } from './store.ts';

/** Which Provisioner the function runs. */
export type ProvisionerBackend = 'storageos' | 'local';

/** Which volume store saves the PV: the bounded backoff store (default) or the retry-forever queue store. */
export type VolumeStoreKind = 'backoff' | 'queue';

export interface ProvisionerOptions {
  backend: ProvisionerBackend;
  /** Primary provisioner name (`provisionerName` argument of `NewProvisionController`). */
  provisionerName: string;
  /** `AdditionalProvisionerNames`: default none. */
  additionalProvisionerNames: string[];
  /** `ResyncPeriod`: default 15 min; the resync schedule re-enqueues every claim and PV this often. */
  resyncPeriodMs: number;
  /** `ExponentialBackOffOnError`: default true (15 s doubling to 1000 s); false → flat 15 s. */
  exponentialBackOffOnError: boolean;
  /** `RateLimiter`: when both are set they replace the default per-key backoff (start, max). */
  retryIntervalStartMs?: number;
  retryIntervalMaxMs?: number;
  /** `FailedProvisionThreshold`: default 15; 0 = retry forever. */
  failedProvisionThreshold: number;
  /** `FailedDeleteThreshold`: default 15; 0 = retry forever. */
  failedDeleteThreshold: number;
  /** `CreateProvisionedPVRetryCount` (deprecated upstream): default 5. */
  createProvisionedPVRetryCount: number;
  /** `CreateProvisionedPVInterval` (deprecated upstream): default 10 s. */
  createProvisionedPVIntervalMs: number;
  /** `CreateProvisionedPVBackoff` (deprecated upstream): factor; unset → linear (factor 1). */
  createProvisionedPVBackoffFactor?: number;
  /** `CreateProvisionedPVLimiter` set → `queue` (retry forever, never delete the asset); default `backoff`. */
  volumeStore: VolumeStoreKind;
  /** `ProvisionTimeout`: default 0 = unlimited (bounded by the Lambda timeout). */
  provisionTimeoutMs: number;
  /** `DeletionTimeout`: default 0 = unlimited. */
  deletionTimeoutMs: number;
  /** `AddFinalizer`: default false. */
  addFinalizer: boolean;
  /** `RetryIntervalMax` / slowSet retention: default 5 min (honoured here; upstream ignores the option). */
  slowRetryPeriodMs: number;
  /** Provisioning lease length per claim UID (no upstream option: replaces leader election). */
  provisionLeaseMs: number;
}

/** Upstream's defaults (reference §2). */
export const DEFAULTS = Object.freeze({
  resyncPeriodMs: 15 * 60_000,
  exponentialBackOffOnError: true,
  failedProvisionThreshold: 15,
  failedDeleteThreshold: 15,
  createProvisionedPVRetryCount: 5,
  createProvisionedPVIntervalMs: 10_000,
  provisionTimeoutMs: 0,
  deletionTimeoutMs: 0,
  addFinalizer: false,
  slowRetryPeriodMs: 5 * 60_000,
  provisionLeaseMs: 5 * 60_000,
  /** The default rate limiter: ItemExponentialFailure(15 s, 1000 s). */
  retryIntervalStartMs: 15_000,
  retryIntervalMaxMs: 1_000_000,
});

/** Default provisioner names per backend. */
export const DEFAULT_PROVISIONER_NAME: Record<ProvisionerBackend, string> = {
  storageos: 'csi.storageos.com',
  local: 'claimflow.io/local',
};

/** Environment variable per option. */
export const OPTION_ENV = {
  backend: 'PROVISIONER_BACKEND',
  provisionerName: 'PROVISIONER_NAME',
  additionalProvisionerNames: 'PROVISIONER_ADDITIONAL_NAMES',
  resyncPeriodMs: 'PROVISIONER_RESYNC_PERIOD_MS',
  exponentialBackOffOnError: 'PROVISIONER_EXPONENTIAL_BACKOFF_ON_ERROR',
  retryIntervalStartMs: 'PROVISIONER_RETRY_INTERVAL_START_MS',
  retryIntervalMaxMs: 'PROVISIONER_RETRY_INTERVAL_MAX_MS',
  failedProvisionThreshold: 'PROVISIONER_FAILED_PROVISION_THRESHOLD',
  failedDeleteThreshold: 'PROVISIONER_FAILED_DELETE_THRESHOLD',
  createProvisionedPVRetryCount: 'PROVISIONER_CREATE_PV_RETRY_COUNT',
  createProvisionedPVIntervalMs: 'PROVISIONER_CREATE_PV_INTERVAL_MS',
  createProvisionedPVBackoffFactor: 'PROVISIONER_CREATE_PV_BACKOFF_FACTOR',
  volumeStore: 'PROVISIONER_VOLUME_STORE',
  provisionTimeoutMs: 'PROVISIONER_PROVISION_TIMEOUT_MS',
  deletionTimeoutMs: 'PROVISIONER_DELETION_TIMEOUT_MS',
  addFinalizer: 'PROVISIONER_ADD_FINALIZER',
  slowRetryPeriodMs: 'PROVISIONER_SLOW_RETRY_PERIOD_MS',
  provisionLeaseMs: 'PROVISIONER_LEASE_MS',
} as const;

function int(env: NodeJS.ProcessEnv, key: string, fallback: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new InvalidOptionError(`${key}: expected a non-negative integer, got "${raw}"`);
  return Number(raw);
}

function optionalInt(env: NodeJS.ProcessEnv, key: string): number | undefined {
  return env[key] === undefined || env[key] === '' ? undefined : int(env, key, 0);
}

function bool(env: NodeJS.ProcessEnv, key: string, fallback: boolean): boolean {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new InvalidOptionError(`${key}: expected true or false, got "${raw}"`);
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, key: string, allowed: readonly T[], fallback: T): T {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new InvalidOptionError(`${key}: expected one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** Reads and validates every option; throws {@link InvalidOptionError} on a bad value (upstream exits 1). */
export function provisionerOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): ProvisionerOptions {
  const backend = oneOf(env, OPTION_ENV.backend, ['storageos', 'local'] as const, 'storageos');
  const start = optionalInt(env, OPTION_ENV.retryIntervalStartMs);
  const max = optionalInt(env, OPTION_ENV.retryIntervalMaxMs);
  if ((start === undefined) !== (max === undefined)) {
    throw new InvalidOptionError(`${OPTION_ENV.retryIntervalStartMs} and ${OPTION_ENV.retryIntervalMaxMs} go together (they replace the rate limiter)`);
  }
  const factorRaw = env[OPTION_ENV.createProvisionedPVBackoffFactor];
  let factor: number | undefined;
  if (factorRaw !== undefined && factorRaw !== '') {
    factor = Number(factorRaw);
    if (!Number.isFinite(factor) || factor < 1) throw new InvalidOptionError(`${OPTION_ENV.createProvisionedPVBackoffFactor}: expected a number >= 1, got "${factorRaw}"`);
  }
  const volumeStore = oneOf(env, OPTION_ENV.volumeStore, ['backoff', 'queue'] as const, 'backoff');
  if (volumeStore === 'queue' && (factor !== undefined || env[OPTION_ENV.createProvisionedPVRetryCount] || env[OPTION_ENV.createProvisionedPVIntervalMs])) {
    // Upstream: CreateProvisionedPVLimiter excludes the deprecated backoff options.
    throw new InvalidOptionError(`${OPTION_ENV.volumeStore}=queue cannot be combined with the CreateProvisionedPV backoff options`);
  }
  const names = (env[OPTION_ENV.additionalProvisionerNames] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return {
    backend,
    provisionerName: env[OPTION_ENV.provisionerName] || DEFAULT_PROVISIONER_NAME[backend],
    additionalProvisionerNames: names,
    resyncPeriodMs: int(env, OPTION_ENV.resyncPeriodMs, DEFAULTS.resyncPeriodMs),
    exponentialBackOffOnError: bool(env, OPTION_ENV.exponentialBackOffOnError, DEFAULTS.exponentialBackOffOnError),
    retryIntervalStartMs: start,
    retryIntervalMaxMs: max,
    failedProvisionThreshold: int(env, OPTION_ENV.failedProvisionThreshold, DEFAULTS.failedProvisionThreshold),
    failedDeleteThreshold: int(env, OPTION_ENV.failedDeleteThreshold, DEFAULTS.failedDeleteThreshold),
    createProvisionedPVRetryCount: int(env, OPTION_ENV.createProvisionedPVRetryCount, DEFAULTS.createProvisionedPVRetryCount),
    createProvisionedPVIntervalMs: int(env, OPTION_ENV.createProvisionedPVIntervalMs, DEFAULTS.createProvisionedPVIntervalMs),
    createProvisionedPVBackoffFactor: factor,
    volumeStore,
    provisionTimeoutMs: int(env, OPTION_ENV.provisionTimeoutMs, DEFAULTS.provisionTimeoutMs),
    deletionTimeoutMs: int(env, OPTION_ENV.deletionTimeoutMs, DEFAULTS.deletionTimeoutMs),
    addFinalizer: bool(env, OPTION_ENV.addFinalizer, DEFAULTS.addFinalizer),
    slowRetryPeriodMs: int(env, OPTION_ENV.slowRetryPeriodMs, DEFAULTS.slowRetryPeriodMs),
    provisionLeaseMs: int(env, OPTION_ENV.provisionLeaseMs, DEFAULTS.provisionLeaseMs),
  };
}

/**
 * The per-key retry delay after `failures` consecutive failures (upstream's claim/volume rate limiter):
 * `RateLimiter` if configured, else ItemExponentialFailure(15 s, 1000 s), or a flat 15 s when
 * `ExponentialBackOffOnError` is off. (The global 10 qps token bucket is the runtime's API budget.)
 */
export function retryDelayMs(options: ProvisionerOptions, failures: number): number {
  const start = options.retryIntervalStartMs ?? DEFAULTS.retryIntervalStartMs;
  const max = options.retryIntervalStartMs !== undefined ? options.retryIntervalMaxMs! : options.exponentialBackOffOnError ? DEFAULTS.retryIntervalMaxMs : start;
  const exp = Math.max(0, failures - 1);
  return Math.min(max, start * 2 ** Math.min(exp, 40));
}

/**
 * Whether a key that has failed `failures` times should be retried (`processNextClaimWorkItem`):
 * threshold 0 retries forever; otherwise retries while the requeue count is below the threshold, i.e.
 * `threshold + 1` attempts in all. Giving up is not final: the next resync or object update tries again.
 */
export function shouldRetry(threshold: number, failures: number): boolean {
  return threshold === 0 || failures <= threshold;
}

/** The volume store's `wait.Backoff`: linear interval × retry count unless a factor is configured. */
export function createProvisionedPVBackoff(options: ProvisionerOptions): Backoff {
  return { durationMs: options.createProvisionedPVIntervalMs, factor: options.createProvisionedPVBackoffFactor ?? 1, steps: options.createProvisionedPVRetryCount };
}

/** The runtime's default time margin (`TIME_MARGIN_MS`), when the variable is unset or invalid. */
export const DEFAULT_TIME_MARGIN_MS = 5_000;

/**
 * The runtime's time margin as the runtime reads it (`TIME_MARGIN_MS`, a non-negative integer, else 5 s):
 * the handler starts no record with less Lambda time left, and the provisioner's PV save retries stop
 * early enough to keep it free (no upstream option).
 */
export function timeMarginMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TIME_MARGIN_MS;
  const n = Number(raw);
  return raw !== undefined && raw !== '' && Number.isInteger(n) && n >= 0 ? n : DEFAULT_TIME_MARGIN_MS;
}

/** The core's view of the options. */
export function coreConfig(options: ProvisionerOptions): { provisionerName: string; additionalProvisionerNames: string[]; addFinalizer: boolean } {
  return { provisionerName: options.provisionerName, additionalProvisionerNames: options.additionalProvisionerNames, addFinalizer: options.addFinalizer };
}
