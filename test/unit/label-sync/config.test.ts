import assert from 'node:assert/strict';
import { it } from 'node:test';
import { LabelSyncConfigError, labelSyncConfigFromEnv, parseGoDuration } from '../../../lib/label-sync/config.ts';

it('defaults as upstream: enabled, hourly resync', () => {
  assert.deepEqual(labelSyncConfigFromEnv({}), { enabled: true, resyncIntervalMs: 3_600_000 });
});

it('flags from the environment; a resync interval of 0 disables it', () => {
  assert.deepEqual(labelSyncConfigFromEnv({ ENABLE_NODE_LABEL_SYNC: 'false', NODE_LABEL_RESYNC_INTERVAL: '0' }), { enabled: false, resyncIntervalMs: 0 });
  assert.deepEqual(labelSyncConfigFromEnv({ ENABLE_NODE_LABEL_SYNC: '1', NODE_LABEL_RESYNC_INTERVAL: '1h30m' }), { enabled: true, resyncIntervalMs: 5_400_000 });
  assert.throws(() => labelSyncConfigFromEnv({ ENABLE_NODE_LABEL_SYNC: 'yes' }), LabelSyncConfigError);
});

it('Go durations', () => {
  const cases: [string, number][] = [['10s', 10_000], ['1m', 60_000], ['1h', 3_600_000], ['1.5s', 1500], ['250ms', 250], ['0', 0]];
  for (const [text, ms] of cases) assert.equal(parseGoDuration(text), ms, text);
  for (const bad of ['', '10', 'h', '1x', '1h ']) assert.throws(() => parseGoDuration(bad), LabelSyncConfigError, bad);
});
