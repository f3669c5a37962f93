/** Upstream's flag defaults as configuration, go-cache's expiry quirks, and wait.Poll's timing. */
import { describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_CONFIG, effectiveExpiryMs, SharedVolumeConfigError, sharedVolumeConfigFromEnv } from '../../../lib/shared-volume/config.ts';
import { pollUntil } from '../../../lib/shared-volume/wait.ts';

describe('sharedVolumeConfigFromEnv', () => {
  it('defaults are api-manager’s: poll 5 s, expiry 1 min, create poll 1 s, create wait 20 s', () => {
    const config = sharedVolumeConfigFromEnv({});
    assert.deepEqual(config, DEFAULT_CONFIG);
    assert.equal(config.pollIntervalMs, 5000);
    assert.equal(config.cacheExpiryMs, 60_000);
    assert.equal(config.createPollIntervalMs, 1000);
    assert.equal(config.createWaitMs, 20_000);
  });
  it('reads every variable', () => {
    const config = sharedVolumeConfigFromEnv({
      SHARED_VOLUME_POLL_INTERVAL_MS: '1000',
      SHARED_VOLUME_CACHE_EXPIRY_MS: '-1',
      SHARED_VOLUME_CREATE_POLL_INTERVAL_MS: '30000',
      SHARED_VOLUME_CREATE_WAIT_MS: '2000',
      SHARED_VOLUME_SCHEDULE_INTERVAL_MS: '120000',
      SHARED_VOLUME_SCHEDULE_MARGIN_MS: '',
    });
    assert.deepEqual(config, { ...DEFAULT_CONFIG, pollIntervalMs: 1000, cacheExpiryMs: -1, createPollIntervalMs: 30_000, createWaitMs: 2000, scheduleIntervalMs: 120_000 });
  });
  for (const bad of ['abc', '1.5', '-2']) {
    it(`rejects ${bad}`, () => assert.throws(() => sharedVolumeConfigFromEnv({ SHARED_VOLUME_CACHE_EXPIRY_MS: bad }), SharedVolumeConfigError));
  }
  it('go-cache expiry: 0 = the 1 min default, -1 = never', () => {
    assert.equal(effectiveExpiryMs({ ...DEFAULT_CONFIG, cacheExpiryMs: 0 }), 60_000);
    assert.equal(effectiveExpiryMs({ ...DEFAULT_CONFIG, cacheExpiryMs: -1 }), Infinity);
    assert.equal(effectiveExpiryMs({ ...DEFAULT_CONFIG, cacheExpiryMs: 100 }), 100);
  });
});

describe('pollUntil (wait.Poll)', () => {
  it('first check after one interval; returns the first value', async () => {
    const calls: number[] = [];
    const start = Date.now();
    const value = await pollUntil(20, 1000, undefined, async () => {
      calls.push(Date.now() - start);
      return calls.length === 3 ? 'ip' : undefined;
    });
    assert.equal(value, 'ip');
    assert.equal(calls.length, 3);
    assert.ok(calls[0]! >= 15, 'no check before the first interval');
  });
  it('interval longer than the timeout: exactly one check, at the timeout', async () => {
    let calls = 0;
    const value = await pollUntil(30_000, 30, undefined, async () => {
      calls++;
      return undefined;
    });
    assert.equal(value, undefined);
    assert.equal(calls, 1);
  });
  it('a timer that fires before the clock reaches the deadline still makes the timeout check the last', async (t) => {
    mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    t.after(() => mock.timers.reset());
    let calls = 0;
    const value = await pollUntil(30_000, 30, undefined, async () => {
      calls++;
      // The timer ran a millisecond before the clock reached the deadline (libuv rounds); any later check sees it.
      mock.timers.setTime(1_000_000 + (calls === 1 ? 29 : 30));
      return undefined;
    });
    assert.equal(value, undefined);
    assert.equal(calls, 1);
  });
  it('errors abort the wait', async () => {
    await assert.rejects(pollUntil(5, 1000, undefined, async () => Promise.reject(new Error('boom'))), /boom/);
  });
});
