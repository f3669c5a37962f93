/**
 * lib/runtime/observability.ts:
 * - a record's logger (`recordLogger`): every entry carries the record's keys and the function logger's
 *   persistent keys as they are when it is written, alongside the call's own attributes, error or string,
 *   which win over the record's keys; the level is the function logger's; two records' loggers never mix,
 *   and the function logger's own entries carry neither;
 * - the reused single metric (`singleMetricOf`): each metric published with its own dimensions and the
 *   function's defaults, none left over from the one before, even one that failed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { createMetrics, recordLogger, singleMetricOf } from '../../../lib/runtime/observability.ts';

/** Runs `write` with stdout and stderr captured (warnings and errors go to stderr), and returns the JSON entries Powertools printed. */
function entries(write: () => void): Array<Record<string, unknown>> {
  const lines: string[] = [];
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((s) => s.write);
  for (const s of streams) s.write = ((chunk: string | Uint8Array) => (lines.push(String(chunk)), true)) as typeof s.write;
  try {
    write();
  } finally {
    streams.forEach((s, i) => (s.write = originals[i]!));
  }
  return lines.flatMap((l) => l.split('\n')).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}

const keys = (i: number) => ({ cluster: 'c1', kind: 'PersistentVolumeClaim', key: `default/claim-${i}`, messageId: `m-${i}`, eventType: 'ADDED' });

test('every entry carries the record keys, the function logger keys at the time, and its own attributes, error or string', () => {
  const parent = new Logger({ serviceName: 'claimflow-test', logLevel: 'DEBUG', persistentKeys: { controller: 'binder' } });
  const log = recordLogger(parent, keys(1));
  const printed = entries(() => {
    parent.appendKeys({ invocation: 'inv-1' });
    log.debug('debugging', { step: 'match' });
    log.info('bound', { volume: 'pv-1' }, { rv: '12' });
    log.warn('went wrong', new Error('boom'));
    parent.removeKeys(['invocation']);
    log.error('failed', 'a plain string');
  });
  assert.equal(printed.length, 4);
  for (const entry of printed) assert.deepEqual({ ...keys(1), controller: 'binder' }, pick(entry, [...Object.keys(keys(1)), 'controller']));
  assert.deepEqual(printed.map((e) => [e.level, e.message]), [['DEBUG', 'debugging'], ['INFO', 'bound'], ['WARN', 'went wrong'], ['ERROR', 'failed']]);
  assert.equal(printed[0]!.step, 'match');
  assert.equal(printed[1]!.volume, 'pv-1');
  assert.equal(printed[1]!.rv, '12');
  assert.equal((printed[2]!.error as { message?: string }).message, 'boom');
  assert.equal(printed[3]!.extra, 'a plain string');
  assert.deepEqual(printed.map((e) => e.invocation), ['inv-1', 'inv-1', 'inv-1', undefined]);
});

test("the function logger's level holds; two records' keys never mix, nor reach the function logger's own entries", () => {
  const parent = new Logger({ serviceName: 'claimflow-test', logLevel: 'WARN' });
  const a = recordLogger(parent, keys(1));
  const b = recordLogger(parent, { ...keys(2), cluster: 'c2', attempt: 3 });
  const printed = entries(() => {
    a.info('not printed at WARN');
    b.debug('nor this');
    a.warn('a');
    b.warn('b');
    parent.warn('the function itself');
    a.error('a again');
  });
  assert.deepEqual(
    printed.map((e) => [e.message, e.cluster, e.key, e.messageId, e.attempt]),
    [
      ['a', 'c1', 'default/claim-1', 'm-1', undefined],
      ['b', 'c2', 'default/claim-2', 'm-2', 3],
      ['the function itself', undefined, undefined, undefined, undefined],
      ['a again', 'c1', 'default/claim-1', 'm-1', undefined],
    ],
  );
});

test("an entry's own attributes win over the record's keys, as over a child logger's", () => {
  const parent = new Logger({ serviceName: 'claimflow-test', logLevel: 'INFO' });
  const log = recordLogger(parent, keys(1));
  const printed = entries(() => {
    log.info('wrote a Service', { kind: 'Service' });
    log.info({ message: 'an object message', key: 'default/own' });
    log.info({ message: 'an object message and an extra', key: 'default/own' }, { key: 'default/extra' });
  });
  assert.deepEqual(
    printed.map((e) => [e.message, e.kind, e.key, e.messageId]),
    [
      ['wrote a Service', 'Service', 'default/claim-1', 'm-1'],
      ['an object message', 'PersistentVolumeClaim', 'default/own', 'm-1'],
      ['an object message and an extra', 'PersistentVolumeClaim', 'default/extra', 'm-1'],
    ],
  );
});

test('the single metric is one instance per Metrics, and each publish carries only its own dimensions', () => {
  const metrics = createMetrics('provisioner');
  const single = singleMetricOf(metrics);
  assert.equal(singleMetricOf(metrics), single);
  assert.notEqual(singleMetricOf(createMetrics('binder')), single);
  const printed = entries(() => {
    single.addDimension('class', 'fast');
    single.addDimension('source', 'none');
    single.addMetric('ProvisionTotal', MetricUnit.Count, 1);
    const again = singleMetricOf(metrics);
    again.addDimension('class', 'slow');
    again.addMetric('DeleteTotal', MetricUnit.Count, 1);
    metrics.addMetric('ReconcileSuccess', MetricUnit.Count, 1); // the function's own, stored, not published here
  });
  const emf = printed.map((e) => ({ dimensions: (e._aws as { CloudWatchMetrics: Array<{ Dimensions: string[][] }> }).CloudWatchMetrics[0]!.Dimensions[0]!.sort(), e }));
  assert.equal(emf.length, 2);
  assert.deepEqual(emf[0]!.dimensions, ['class', 'controller', 'service', 'source']);
  assert.deepEqual([emf[0]!.e.class, emf[0]!.e.source, emf[0]!.e.controller, emf[0]!.e.ProvisionTotal], ['fast', 'none', 'provisioner', 1]);
  assert.deepEqual(emf[1]!.dimensions, ['class', 'controller', 'service']);
  assert.deepEqual([emf[1]!.e.class, emf[1]!.e.source, emf[1]!.e.DeleteTotal, emf[1]!.e.ProvisionTotal], ['slow', undefined, 1, undefined]);
});

test('a metric that failed leaves no dimension to the next one', () => {
  const metrics = createMetrics('binder');
  const printed = entries(() => {
    const failing = singleMetricOf(metrics);
    failing.addDimension('plugin_name', 'left-behind');
    assert.throws(() => failing.addMetric('VolumeOperationTotalSeconds', MetricUnit.Seconds, 'soon' as unknown as number), /not a valid number/);
    const next = singleMetricOf(metrics);
    next.addDimension('operation_name', 'bind');
    next.addMetric('VolumeOperationTotalSeconds', MetricUnit.Seconds, 1.5);
  });
  assert.equal(printed.length, 1);
  assert.equal(printed[0]!.plugin_name, undefined);
  assert.equal(printed[0]!.operation_name, 'bind');
});

function pick(entry: Record<string, unknown>, names: string[]): Record<string, unknown> {
  return Object.fromEntries(names.map((n) => [n, entry[n]]));
}
