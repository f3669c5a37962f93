import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, parseDuration } from '../../lib/forwarder/config.ts';
import { ForwarderConfigError } from '../../lib/forwarder/errors.ts';
import { WATCHED_KINDS } from '../../lib/runtime/message.ts';

const base = { CLUSTER_ID: 'c1', EVENTS_TOPIC_ARN: 'arn:aws:sns:us-east-1:000000000000:events.fifo', CACHE_TABLE: 'cache', CONTROL_TABLE: 'control' };

describe('forwarder configuration', () => {
  it('parses durations', () => {
    for (const [text, ms] of [['15s', 15_000], ['500ms', 500], ['2m', 120_000], ['1h', 3_600_000], ['250', 250], ['1.5s', 1500]] as const) {
      assert.equal(parseDuration(text), ms, text);
    }
    assert.throws(() => parseDuration('soon'), ForwarderConfigError);
  });

  it('takes the environment with client-go leader-election defaults', () => {
    const config = loadConfig([], { ...base, POD_NAME: 'forwarder-abc', POD_NAMESPACE: 'claimflow' });
    assert.equal(config.cluster, 'c1');
    assert.deepEqual(config.tables, { cache: 'cache', control: 'control' });
    assert.deepEqual(config.kinds, [...WATCHED_KINDS]);
    assert.deepEqual(config.lease, { namespace: 'claimflow', name: 'claimflow-forwarder', identity: 'forwarder-abc', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    assert.equal(config.httpPort, 8080);
    assert.equal(config.ownWriteHoldMs, 100);
    assert.equal(loadConfig([], { ...base, OWN_WRITE_HOLD: '0' }).ownWriteHoldMs, 0);
    assert.equal(loadConfig(['--own-write-hold', '250ms'], { ...base, OWN_WRITE_HOLD: '0' }).ownWriteHoldMs, 250);
    assert.equal(loadConfig([], base).bookmarkIntervalMs, 10_000);
    assert.equal(loadConfig([], { ...base, BOOKMARK_INTERVAL: '2s' }).bookmarkIntervalMs, 2_000);
    assert.equal(loadConfig(['--bookmark-interval', '500ms'], { ...base, BOOKMARK_INTERVAL: '2s' }).bookmarkIntervalMs, 500);
  });

  it('publishes only what a subscription of the topic takes, read every minute, unless told to publish all', () => {
    assert.equal(loadConfig([], base).publishAll, false);
    assert.equal(loadConfig([], base).subscriptionsRefreshMs, 60_000);
    assert.equal(loadConfig(['--subscriptions-refresh', '30s'], { ...base, SUBSCRIPTIONS_REFRESH: '5m' }).subscriptionsRefreshMs, 30_000);
    assert.throws(() => loadConfig([], { ...base, SUBSCRIPTIONS_REFRESH: '0' }), /subscriptions-refresh must be longer than 0/);
    assert.equal(loadConfig([], { ...base, PUBLISH_ALL: 'TRUE' }).publishAll, true);
    assert.equal(loadConfig(['--publish-all', 'false'], { ...base, PUBLISH_ALL: 'true' }).publishAll, false);
    assert.throws(() => loadConfig([], { ...base, PUBLISH_ALL: 'yes' }), (err: Error) => err instanceof ForwarderConfigError && /publish-all must be true or false/.test(err.message));
  });

  it('lets flags win over the environment', () => {
    const config = loadConfig(['--cluster-id', 'c2', '--kinds', 'Node,PersistentVolume', '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms', '--http-port', '0'], base);
    assert.equal(config.cluster, 'c2');
    assert.deepEqual(config.kinds, ['Node', 'PersistentVolume']);
    assert.ok(config.lease);
    assert.equal(config.lease.leaseDurationMs, 4000);
    assert.equal(config.lease.retryPeriodMs, 500);
    assert.equal(config.httpPort, 0);
    assert.equal(loadConfig(['--leader-elect', 'false'], base).lease, false);
  });

  it('names what is missing or wrong', () => {
    assert.throws(() => loadConfig([], { ...base, CLUSTER_ID: '' }), /--cluster-id or CLUSTER_ID must be set/);
    assert.throws(() => loadConfig(['--kinds', 'Pod'], base), /unknown kind Pod/);
    assert.throws(() => loadConfig(['--http-port=x1'], base), ForwarderConfigError);
    assert.throws(() => loadConfig([], { ...base, OWN_WRITE_HOLD: 'briefly' }), /invalid duration/);
    assert.throws(() => loadConfig([], { ...base, BOOKMARK_INTERVAL: 'soon' }), /invalid duration/);
  });
});
