/**
 * The forwarder leader's heartbeat (lib/forwarder/heartbeat.ts) on dynalite, with a recording CloudWatch:
 * a beat at once and every interval (record + `ForwarderHeartbeat` metric with the cluster dimension +
 * Prometheus gauge), each kind's first bookmark reported at once, a failed write counted and not fatal,
 * a graceful stop recorded — but never over a newer leader's record — and bounded. And the configuration
 * that turns it on.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { Heartbeat, heartbeatPk, HEARTBEAT_METRIC, type HeartbeatRecord } from '../../lib/forwarder/heartbeat.ts';
import { ForwarderMetrics } from '../../lib/forwarder/metrics.ts';
import { loadConfig } from '../../lib/forwarder/config.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('forwarder heartbeat', () => {
  let db: Dynalite;
  before(async () => {
    db = await startDynalite();
  });
  after(() => db.stop());

  const read = async (cluster: string) =>
    (await db.doc.send(new GetCommand({ TableName: db.tables.control, Key: { pk: heartbeatPk(cluster) }, ConsistentRead: true }))).Item as HeartbeatRecord | undefined;

  test('beats at once and every interval: the control-table record, the CloudWatch metric, the Prometheus gauge', async () => {
    const put: PutMetricDataCommand[] = [];
    const metrics = new ForwarderMetrics();
    const heartbeat = new Heartbeat({
      doc: db.doc,
      table: db.tables.control,
      cluster: 'c1',
      identity: 'forwarder-0',
      intervalMs: 100,
      cloudwatch: { client: { send: async (command) => void put.push(command) }, namespace: 'claimflow' },
      metrics,
    });
    heartbeat.start();
    await heartbeat.settled();
    const first = await read('c1');
    assert.equal(first?.pk, 'sync#c1#forwarder');
    assert.deepEqual([first?.holder, first?.leading, first?.intervalMs, first?.bookmarks], ['forwarder-0', true, 100, {}]);
    heartbeat.progress('PersistentVolume', '42');
    await wait(320);
    await heartbeat.settled();
    const later = await read('c1');
    assert.ok(later!.heartbeatAt > first!.heartbeatAt, 'beats again');
    assert.equal(later!.leadingSince, first!.leadingSince);
    assert.equal(later!.bookmarks.PersistentVolume.rv, '42');
    assert.ok(put.length >= 3);
    assert.equal(put[0].input.Namespace, 'claimflow');
    assert.deepEqual(
      put[0].input.MetricData!.map((d) => [d.MetricName, d.Dimensions, d.Value, d.Unit]),
      [[HEARTBEAT_METRIC, [{ Name: 'cluster', Value: 'c1' }], 1, 'Count']],
    );
    const gauge = (await metrics.registry.getSingleMetricAsString('claimflow_forwarder_heartbeat_timestamp_seconds')).split('\n').at(-1)!;
    assert.ok(Math.abs(Number(gauge.split(' ')[1]) - Date.now() / 1000) < 5, gauge);

    await heartbeat.stop();
    const stopped = await read('c1');
    assert.equal(stopped?.leading, false, 'a graceful stop says nobody leads');
    const count = put.length;
    await wait(250);
    assert.equal(put.length, count, 'no beat after stop');
  });

  test("a kind's first bookmark is reported without waiting for the interval", async () => {
    const heartbeat = new Heartbeat({ doc: db.doc, table: db.tables.control, cluster: 'c2', identity: 'a', intervalMs: 60_000 });
    heartbeat.start();
    heartbeat.progress('Node', '7');
    await wait(400);
    await heartbeat.settled();
    assert.equal((await read('c2'))?.bookmarks.Node?.rv, '7');
    await heartbeat.stop();
  });

  test('a failed write is counted and reported, never thrown; stepping down leaves a newer leader’s record alone', async () => {
    const errors: unknown[] = [];
    const metrics = new ForwarderMetrics();
    const failing = new Heartbeat({
      doc: db.doc,
      table: db.tables.control,
      cluster: 'c3',
      identity: 'old',
      intervalMs: 60_000,
      cloudwatch: { client: { send: async () => Promise.reject(new Error('AccessDenied')) }, namespace: 'claimflow' },
      metrics,
      onError: (error) => errors.push(error),
    });
    failing.start();
    await failing.settled();
    assert.match(String(errors[0]), /AccessDenied/);
    assert.match(await metrics.registry.getSingleMetricAsString('claimflow_forwarder_heartbeat_errors_total'), / 1$/m);
    assert.equal((await read('c3'))?.holder, 'old', 'the record is still written');

    const successor = new Heartbeat({ doc: db.doc, table: db.tables.control, cluster: 'c3', identity: 'new', intervalMs: 60_000 });
    successor.start();
    await successor.settled();
    await failing.stop();
    const record = await read('c3');
    assert.deepEqual([record?.holder, record?.leading], ['new', true]);
    assert.equal(errors.length, 1, 'losing the record to a successor is not an error');
    await successor.stop();
  });

  test('stop is bounded when the table does not answer (a shutdown never waits on the heartbeat)', async () => {
    const hung = { send: () => new Promise(() => {}) } as unknown as Dynalite['doc'];
    const heartbeat = new Heartbeat({ doc: hung, table: 't', cluster: 'c4', identity: 'a', stopTimeoutMs: 200 });
    heartbeat.start();
    const started = Date.now();
    await heartbeat.stop();
    assert.ok(Date.now() - started < 1000);
  });

  test('configuration: HEARTBEAT_INTERVAL (default 1m, 0 = none) and CLOUDWATCH_NAMESPACE (default none)', () => {
    const base = { CLUSTER_ID: 'c', EVENTS_TOPIC_ARN: 't', CACHE_TABLE: 'a', CONTROL_TABLE: 'b' };
    const defaults = loadConfig([], base);
    assert.equal(defaults.heartbeatIntervalMs, 60_000);
    assert.equal(defaults.cloudwatchNamespace, undefined);
    const set = loadConfig(['--heartbeat-interval', '30s'], { ...base, CLOUDWATCH_NAMESPACE: 'claimflow' });
    assert.deepEqual([set.heartbeatIntervalMs, set.cloudwatchNamespace], [30_000, 'claimflow']);
    assert.equal(loadConfig([], { ...base, HEARTBEAT_INTERVAL: '0' }).heartbeatIntervalMs, 0);
  });
});
