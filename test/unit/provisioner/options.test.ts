import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionError } from '../../../lib/provisioner/errors.ts';
import { createProvisionedPVBackoff, provisionerOptionsFromEnv, retryDelayMs, shouldRetry } from '../../../lib/provisioner/options.ts';

describe('provisioner options', () => {
  it("defaults are upstream's", () => {
    const o = provisionerOptionsFromEnv({});
    assert.deepEqual(o, {
      backend: 'storageos', provisionerName: 'csi.storageos.com', additionalProvisionerNames: [], resyncPeriodMs: 900_000,
      exponentialBackOffOnError: true, retryIntervalStartMs: undefined, retryIntervalMaxMs: undefined,
      failedProvisionThreshold: 15, failedDeleteThreshold: 15, createProvisionedPVRetryCount: 5, createProvisionedPVIntervalMs: 10_000,
      createProvisionedPVBackoffFactor: undefined, volumeStore: 'backoff', provisionTimeoutMs: 0, deletionTimeoutMs: 0,
      addFinalizer: false, slowRetryPeriodMs: 300_000, provisionLeaseMs: 300_000,
    });
    assert.deepEqual(createProvisionedPVBackoff(o), { durationMs: 10_000, factor: 1, steps: 5 });
  });

  const rows: Array<{ name: string; env: Record<string, string>; check?: (o: ReturnType<typeof provisionerOptionsFromEnv>) => void; error?: RegExp }> = [
    { name: 'local backend has its own default name', env: { PROVISIONER_BACKEND: 'local' }, check: (o) => assert.equal(o.provisionerName, 'claimflow.io/local') },
    { name: 'additional names are comma separated', env: { PROVISIONER_ADDITIONAL_NAMES: 'a/b, c/d,' }, check: (o) => assert.deepEqual(o.additionalProvisionerNames, ['a/b', 'c/d']) },
    { name: 'AddFinalizer on', env: { PROVISIONER_ADD_FINALIZER: 'true' }, check: (o) => assert.equal(o.addFinalizer, true) },
    { name: 'threshold 0 = forever', env: { PROVISIONER_FAILED_PROVISION_THRESHOLD: '0' }, check: (o) => assert.equal(shouldRetry(o.failedProvisionThreshold, 10_000), true) },
    { name: 'queue store', env: { PROVISIONER_VOLUME_STORE: 'queue' }, check: (o) => assert.equal(o.volumeStore, 'queue') },
    { name: 'bad backend', env: { PROVISIONER_BACKEND: 'nfs' }, error: /PROVISIONER_BACKEND: expected one of storageos, local/ },
    { name: 'bad integer', env: { PROVISIONER_FAILED_DELETE_THRESHOLD: '-1' }, error: /non-negative integer/ },
    { name: 'bad boolean', env: { PROVISIONER_ADD_FINALIZER: 'yes' }, error: /expected true or false/ },
    { name: 'rate limiter needs both bounds', env: { PROVISIONER_RETRY_INTERVAL_START_MS: '1000' }, error: /go together/ },
    { name: 'queue store excludes the deprecated backoff options', env: { PROVISIONER_VOLUME_STORE: 'queue', PROVISIONER_CREATE_PV_RETRY_COUNT: '3' }, error: /cannot be combined/ },
  ];
  for (const row of rows) {
    it(row.name, () => {
      if (row.error) {
        assert.throws(() => provisionerOptionsFromEnv(row.env), (e: unknown) => e instanceof InvalidOptionError && row.error!.test(e.message));
      } else {
        row.check!(provisionerOptionsFromEnv(row.env));
      }
    });
  }

  it('default per-key delays: 15, 30, 60 … capped at 1000 s', () => {
    const o = provisionerOptionsFromEnv({});
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => retryDelayMs(o, n) / 1000), [15, 30, 60, 120, 240, 480, 960, 1000, 1000]);
  });
  it('ExponentialBackOffOnError=false: flat 15 s', () => {
    const o = provisionerOptionsFromEnv({ PROVISIONER_EXPONENTIAL_BACKOFF_ON_ERROR: 'false' });
    assert.deepEqual([1, 2, 5].map((n) => retryDelayMs(o, n)), [15_000, 15_000, 15_000]);
  });
  it('RateLimiter replaces the default', () => {
    const o = provisionerOptionsFromEnv({ PROVISIONER_RETRY_INTERVAL_START_MS: '1000', PROVISIONER_RETRY_INTERVAL_MAX_MS: '300000' });
    assert.deepEqual([1, 2, 10].map((n) => retryDelayMs(o, n)), [1000, 2000, 300_000]);
  });
  it('threshold 15 allows 16 attempts', () => {
    assert.equal(shouldRetry(15, 15), true);
    assert.equal(shouldRetry(15, 16), false);
  });
});
