/**
 * The binder under contention and faults, end to end through the local stack: 300 claims race for 100
 * volumes while the API server answers some writes with 409 and 500 (a 500 on the claim write after
 * both volume writes succeeded is the function "crashing" between the PV and the PVC write), and every
 * claim's message is delivered more than once. At the end exactly 100 claims are Bound, no volume is
 * bound to two claims, every Bound claim's volume points back to it, and the other 200 are Pending
 * with a FailedBinding event.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { KubeClients } from '../../lib/kube/client.ts';
import { MESSAGE_VERSION } from '../../lib/runtime/message.ts';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { RequeueSender } from '../../lib/resync/sender.ts';
import { runResync } from '../../lib/resync/run.ts';
import { createBinderController } from '../../lib/binder/controller.ts';
import { COMPONENT } from '../../lib/binder/constants.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const VOLUMES = Number(process.env.RACE_VOLUMES ?? 100);
const CLAIMS = Number(process.env.RACE_CLAIMS ?? 300);
const NS = 'race';

describe('binder under contention and faults', () => {
  let stack: Stack;
  let core: CoreV1Api;
  let handler: SqsHandler | undefined;

  before(async () => {
    let records = 0;
    let busyMs = 0;
    stack = await startTestStack({
      functions: {
        binder: async (event, context) => {
          const started = Date.now();
          try {
            return await handler!(event, context);
          } finally {
            records += event.Records.length;
            busyMs += Date.now() - started;
            if (process.env.RACE_DEBUG && records % 100 < event.Records.length) console.log(`records ${records}, busy ${busyMs} ms`);
          }
        },
      },
      withForwarder: true,
      storageApi: false,
    });
    const queueUrl = stack.queues.BinderQueue.url;
    handler = createSqsHandler(createBinderController({ sqs: stack.sqs.client, queueUrl }), {
      component: COMPONENT,
      doc: stack.dynamodb.doc,
      tables: stack.tables,
      sqs: stack.sqs.client,
      queueUrl,
      dlqUrl: stack.queues.BinderDlq.url,
      kube: new KubeClients({ env: { KUBECONFIG: stack.functionEnv.binder.KUBECONFIG } }),
      syncWaitMs: 100,
      limiter: { baseDelayMs: 5, maxDelayMs: 500 },
    });
    const kc = new KubeConfig();
    kc.loadFromString(stack.kubeApi!.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
    await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });
  after(async () => {
    await stack?.stop();
  });

  it(`${CLAIMS} claims race for ${VOLUMES} volumes with duplicates, 409s, 500s and a crash between the PV and PVC writes`, async () => {
    for (let i = 0; i < VOLUMES; i++) {
      await core.createPersistentVolume({
        body: { metadata: { name: `race-${i}` }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: '', hostPath: { path: `/tmp/race-${i}` } } },
      });
    }
    await eventually(
      async () => (await core.listPersistentVolume()).items.filter((v) => v.metadata?.name?.startsWith('race-') && v.status?.phase === 'Available').length === VOLUMES,
      60_000,
      'volumes Available',
    );
    const faults = stack.kubeApi!.faults;
    faults.inject({ verb: 'update', resource: 'persistentvolumes', count: 15, status: 409 });
    faults.inject({ verb: 'update', resource: 'persistentvolumes/status', count: 10, status: 500 });
    // The claim write after both volume writes: the function "crashes" between the PV and the PVC write.
    faults.inject({ verb: 'update', resource: 'persistentvolumeclaims', count: 15, status: 500 });
    faults.inject({ verb: 'update', resource: 'persistentvolumeclaims/status', count: 10, status: 409 });

    const sender = new RequeueSender(stack.sqs.client, 'duplicates');
    for (let i = 0; i < CLAIMS; i++) {
      const claim = await core.createNamespacedPersistentVolumeClaim({
        namespace: NS,
        body: { metadata: { name: `claim-${i}` }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: '' } },
      });
      // A duplicate delivery of every claim's message, besides the forwarder's own.
      await sender.add(stack.queues.BinderQueue.url, {
        v: MESSAGE_VERSION, cluster: stack.env.CLUSTER_ID ?? 'local', kind: 'PersistentVolumeClaim', type: 'REQUEUE',
        key: `${NS}/claim-${i}`, uid: claim.metadata!.uid!, resourceVersion: claim.metadata!.resourceVersion!,
        observedAt: new Date().toISOString(), controller: 'binder',
      });
    }
    await sender.flush();

    const settled = async () => {
      const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: NS })).items;
      const bound = claims.filter((c) => c.status?.phase === 'Bound').length;
      const events = (await core.listNamespacedEvent({ namespace: NS })).items.filter((e) => e.reason === 'FailedBinding');
      const failed = new Set(events.map((e) => e.involvedObject.name));
      if (process.env.RACE_DEBUG) {
        const phases = claims.reduce<Record<string, number>>((acc, c) => ((acc[c.status?.phase ?? '?'] = (acc[c.status?.phase ?? '?'] ?? 0) + 1), acc), {});
        console.log(JSON.stringify({ phases, failedBinding: failed.size, faults: faults.pending().length, withVolumeName: claims.filter((c) => c.spec?.volumeName).length }));
      }
      return bound === VOLUMES && claims.filter((c) => c.status?.phase !== 'Bound').every((c) => failed.has(c.metadata!.name!)) && faults.pending().length === 0;
    };
    // The scheduled resync's first half (every minute in AWS; here every 2 s): parked retries that are
    // due go back to the queue. (Its second half, re-enqueueing every pending claim, would only add
    // load here; the binder's resync source is tested on its own.)
    const cluster = stack.env.CLUSTER_ID ?? 'local';
    let resyncs = 0;
    // One run at a time, as the schedule's single function would; the last one is awaited before the stack stops.
    let resyncing: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      resyncs++;
      resyncing = resyncing.then(() =>
        runResync({ doc: stack.dynamodb.doc, tables: stack.tables, sqs: stack.sqs.client, queueUrls: { binder: stack.queues.BinderQueue.url }, clusters: [cluster], sources: new Map() }),
      );
    }, 2000);
    try {
      await eventually(settled, 240_000, `${VOLUMES} claims Bound and the rest Pending with FailedBinding`);
    } finally {
      clearInterval(timer);
      await resyncing;
    }
    if (process.env.RACE_DEBUG) console.log(`resyncs: ${resyncs}`);

    const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: NS })).items;
    const volumes = new Map((await core.listPersistentVolume()).items.filter((v) => v.metadata?.name?.startsWith('race-')).map((v) => [v.metadata!.name!, v]));
    const bound = claims.filter((c) => c.status?.phase === 'Bound');
    assert.equal(bound.length, VOLUMES);
    const owners = new Set<string>();
    for (const c of bound) {
      const v = volumes.get(c.spec!.volumeName!)!;
      assert.ok(v, `${c.metadata!.name} is bound to an existing volume`);
      assert.equal(v.spec?.claimRef?.uid, c.metadata!.uid, `${v.metadata!.name} points back to ${c.metadata!.name}`);
      assert.equal(v.status?.phase, 'Bound');
      assert.ok(!owners.has(v.metadata!.name!), `${v.metadata!.name} bound to two claims`);
      owners.add(v.metadata!.name!);
    }
    assert.equal(owners.size, VOLUMES);
    const pending = claims.filter((c) => c.status?.phase !== 'Bound');
    assert.equal(pending.length, CLAIMS - VOLUMES);
    for (const c of pending) {
      assert.equal(c.status?.phase, 'Pending');
      assert.equal(c.spec?.volumeName ?? '', '', `${c.metadata!.name} names no volume`);
    }
    // No volume is left pointing at a claim that is not bound to it.
    for (const v of volumes.values()) assert.ok(owners.has(v.metadata!.name!));
  });
});
