/**
 * The resync run publishes ParkedKeys per controller (lib/resync/parked.ts): every parked key counts,
 * due or not, given-up and merely backing-off keys do not, and a controller with none publishes 0 — in
 * the namespace and with the dimensions the ParkedKeysAlarm reads.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { runResync } from '../../lib/resync/run.ts';
import { PARKED_KEYS_METRIC } from '../../lib/resync/parked.ts';
import { BackoffStore } from '../../lib/state/backoff.ts';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

/** Keeps every single-metric blob instead of printing it. */
class Captured extends Metrics {
  readonly blobs: any[];
  constructor(blobs: any[] = []) {
    super({ namespace: 'claimflow', serviceName: 'claimflow' });
    this.blobs = blobs;
  }
  override singleMetric(): Metrics {
    const blobs = this.blobs;
    return new (class extends Metrics {
      override publishStoredMetrics(): this {
        blobs.push(this.serializeMetrics());
        this.clearMetrics();
        return this;
      }
    })({ namespace: 'claimflow', serviceName: 'claimflow', singleMetric: true });
  }
}

let db: Dynalite;
before(async () => {
  db = await startDynalite();
});
after(() => db.stop());

test('each resync run publishes the parked keys per controller', async () => {
  const now = Date.now();
  const backoff = new BackoffStore({ doc: db.doc, table: db.tables.control });
  const id = (controller: string, key: string) => ({ controller, cluster: 'c1', kind: 'PersistentVolumeClaim', key });
  await backoff.park(id('binder', 'ns/a'), now + 3_600_000);
  await backoff.park(id('binder', 'ns/b'), now + 60_000);
  await backoff.park(id('provisioner', 'ns/c'), now + 600_000);
  await backoff.recordFailure(id('provisioner', 'ns/gave-up'), 'x', {}, undefined, 1);
  await backoff.recordFailure(id('label-sync', 'ns/short'), 'x');

  const metrics = new Captured();
  const noSqs = { send: async () => assert.fail('nothing is due: nothing is sent') } as unknown as SQSClient;
  await runResync({
    doc: db.doc,
    tables: db.tables,
    sqs: noSqs,
    queueUrls: { binder: 'q1', provisioner: 'q2', 'shared-volume': 'q3', 'label-sync': 'q4' },
    clusters: ['c1'],
    sources: new Map(),
    metrics,
  });
  const published = Object.fromEntries(metrics.blobs.map((b) => [b.controller, b[PARKED_KEYS_METRIC]]));
  assert.deepEqual(published, { binder: 2, provisioner: 1, 'shared-volume': 0, 'label-sync': 0 });
  for (const blob of metrics.blobs) {
    assert.equal(blob._aws.CloudWatchMetrics[0].Namespace, 'claimflow');
    assert.deepEqual(blob._aws.CloudWatchMetrics[0].Dimensions, [['service', 'controller']]);
    assert.equal(blob.service, 'claimflow');
  }
});
