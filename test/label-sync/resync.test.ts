/**
 * The label resync's cadence on the real stand-ins (dynalite for the cache and the control table's
 * period slots, the embedded storage control plane over HTTP): the schedule ticks often, each tick
 * takes the period's slot per cluster with a conditional write, so the first tick resyncs and then
 * exactly one run happens per `NODE_LABEL_RESYNC_INTERVAL`; an idle tick is one conditional write.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Context } from 'aws-lambda';
import { labelSyncConfigFromEnv, type LabelSyncConfig } from '../../lib/label-sync/config.ts';
import { createLabelSyncHandler } from '../../lib/label-sync/handler.ts';
import { LabelResyncSlots, runLabelResync, type LabelResyncReport } from '../../lib/label-sync/resync.ts';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { silentLogger } from '../runtime/harness.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';
import { startStorage, type StorageFixture } from '../storage/support.ts';
import { createStorageClientFromEnv } from '../../lib/storage/storageos/from-env.ts';

const MINUTE = 60_000;
const T0 = Date.parse('2026-03-01T00:00:00Z');

describe('label resync cadence', () => {
  let db: Dynalite;
  let s: StorageFixture;
  let cache: ObjectCache;
  let slots: LabelResyncSlots;
  /** DynamoDB commands sent through {@link countedDoc}, by command name. */
  let dynamoCalls: string[] = [];
  let countedDoc: DocumentClient;
  let cluster = '';
  let n = 0;
  let rv = 1;

  before(async () => {
    db = await startDynalite();
    s = await startStorage();
    cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
    slots = new LabelResyncSlots(db.doc, db.tables.control);
    countedDoc = new Proxy(db.doc, {
      get(target, prop, receiver) {
        if (prop === 'send') return (command: object, ...rest: unknown[]) => {
          dynamoCalls.push(command.constructor.name);
          return (target.send as (...args: unknown[]) => unknown).call(target, command, ...rest);
        };
        return Reflect.get(target, prop, receiver);
      },
    });
  });
  after(async () => {
    await s?.stop();
    await db?.stop();
  });
  beforeEach(() => {
    // every test has its own cluster (its own slot) and nodes
    cluster = `c${++n}`;
  });

  /** A Kubernetes node in the cache and a storage node of the same name, with different labels. */
  const differingNode = async (name: string, labels: Record<string, string>): Promise<void> => {
    await s.api.state.addNode(name);
    await cache.put(cluster, 'Node', { apiVersion: 'v1', kind: 'Node', metadata: { name, uid: `uid-${name}`, resourceVersion: String(++rv), labels } });
  };
  const labelsOf = async (name: string) => (await s.client.listNodes()).find((x) => x.name === name)?.labels;
  const storageCalls = () => s.api.requests.total();
  const tick = (config: LabelSyncConfig, at: number, context?: Context) =>
    createLabelSyncHandler({ config, storage: s.client, doc: countedDoc, clusters: [cluster], runtime: { tables: db.tables, logger: silentLogger() }, now: () => at })(
      { source: 'claimflow.label-sync', 'detail-type': 'Node label resync' },
      context,
    ) as Promise<LabelResyncReport>;
  const fakeContext = (remainingMs: () => number): Context => ({ getRemainingTimeInMillis: remainingMs }) as unknown as Context;

  it('NODE_LABEL_RESYNC_INTERVAL=30m: the first tick resyncs, ticks within 30 minutes cost one conditional write, the tick at 30 minutes resyncs again', async () => {
    const config = labelSyncConfigFromEnv({ NODE_LABEL_RESYNC_INTERVAL: '30m' });
    assert.equal(config.resyncIntervalMs, 30 * MINUTE);
    await differingNode(`${cluster}-a`, { rack: 'r1' });

    const first = await tick(config, T0);
    assert.deepEqual(first.clusters, [cluster]);
    assert.equal(first.differed, 1);
    assert.deepEqual(await labelsOf(`${cluster}-a`), { rack: 'r1' });

    // The label changes with no Node event reaching the function: only a resync can apply it.
    await cache.put(cluster, 'Node', { apiVersion: 'v1', kind: 'Node', metadata: { name: `${cluster}-a`, uid: `uid-${cluster}-a`, resourceVersion: String(++rv), labels: { rack: 'r2' } } });

    for (const at of [T0 + MINUTE, T0 + 15 * MINUTE, T0 + 30 * MINUTE - 1]) {
      s.api.requests.reset();
      dynamoCalls = [];
      const idle = await tick(config, at);
      assert.equal(idle.skipped, 'not-due', `tick at +${(at - T0) / MINUTE} min`);
      assert.deepEqual(idle.clusters, []);
      assert.equal(storageCalls(), 0, 'an idle tick makes no storage call');
      assert.deepEqual(dynamoCalls, ['UpdateCommand'], 'an idle tick is one conditional write (no cache listing)');
    }
    assert.deepEqual(await labelsOf(`${cluster}-a`), { rack: 'r1' }, 'nothing resynced within the interval');

    const second = await tick(config, T0 + 30 * MINUTE);
    assert.deepEqual(second.clusters, [cluster], 'the tick at +30 min resyncs');
    assert.equal(second.differed, 1);
    assert.deepEqual(await labelsOf(`${cluster}-a`), { rack: 'r2' });
    assert.equal((await tick(config, T0 + 31 * MINUTE)).skipped, 'not-due', 'and the period starts over');
    assert.equal((await slots.get(cluster))?.lastRunAt, T0 + 30 * MINUTE);
  });

  it('NODE_LABEL_RESYNC_INTERVAL=0: no tick ever resyncs, nor touches DynamoDB or the control plane', async () => {
    const config = labelSyncConfigFromEnv({ NODE_LABEL_RESYNC_INTERVAL: '0' });
    await differingNode(`${cluster}-a`, { rack: 'r1' });
    for (const at of [T0, T0 + MINUTE, T0 + 24 * 60 * MINUTE]) {
      s.api.requests.reset();
      dynamoCalls = [];
      const report = await tick(config, at);
      assert.equal(report.skipped, 'resync-disabled');
      assert.equal(storageCalls(), 0);
      assert.deepEqual(dynamoCalls, []);
    }
    assert.deepEqual(await labelsOf(`${cluster}-a`), {});
    assert.equal(await slots.get(cluster), undefined);
  });

  it('overlapping ticks: exactly one of them resyncs', async () => {
    const config = labelSyncConfigFromEnv({});
    for (const x of ['a', 'b', 'c']) await differingNode(`${cluster}-${x}`, { x });
    s.api.requests.reset();
    const reports = await Promise.all(Array.from({ length: 6 }, () => tick(config, T0)));
    // one diff list, then per differing node EnsureNodeLabels' two lists and one write
    assert.equal(s.api.requests.get('GET', '/v2/nodes'), 1 + 3 * 2, 'one resync against the control plane');
    assert.equal(s.api.requests.get('PUT', '/v2/nodes/{id}'), 3);
    assert.equal(reports.filter((r) => r.clusters.length === 1).length, 1, JSON.stringify(reports));
    assert.equal(reports.filter((r) => r.skipped === 'not-due').length, 5);
  });

  it('a run that fails (control plane unreachable) gives its slot back: the next tick resyncs, the one after waits for the interval', async () => {
    const config = labelSyncConfigFromEnv({});
    await differingNode(`${cluster}-a`, { rack: 'r1' });
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', status: 503, times: Infinity });
    try {
      await assert.rejects(tick(config, T0));
    } finally {
      s.api.faults.clear();
    }
    assert.deepEqual(await slots.get(cluster), {}, 'no run recorded, no run held');
    const retried = await tick(config, T0 + MINUTE);
    assert.deepEqual(retried.clusters, [cluster]);
    assert.deepEqual(await labelsOf(`${cluster}-a`), { rack: 'r1' });
    assert.equal((await tick(config, T0 + 2 * MINUTE)).skipped, 'not-due');
    assert.equal((await tick(config, T0 + 61 * MINUTE)).clusters.length, 1, 'due an interval after the run that finished');
  });

  it('a run that runs short of time ensures what it can and leaves the rest to the next tick', async () => {
    const config = labelSyncConfigFromEnv({});
    for (const x of ['a', 'b', 'c']) await differingNode(`${cluster}-${x}`, { x });
    // 30 s left at the claim and before the first ensure, then less than the margin
    const left = [30_000, 30_000];
    const report = await runLabelResync({
      cache,
      storage: s.client,
      slots,
      clusters: [cluster],
      config,
      now: () => T0,
      remainingMs: () => left.shift() ?? 1_000,
      marginMs: 5_000,
      workers: 1,
    });
    assert.equal(report.differed, 3);
    assert.equal(report.deferred, 2);
    const record = await slots.get(cluster);
    assert.equal(record?.lastRunAt, undefined, 'the period is not spent');
    assert.equal(record?.runToken, undefined, 'the slot is given back');

    const next = await tick(config, T0 + MINUTE, fakeContext(() => 30_000));
    assert.equal(next.differed, 2, 'the next tick finds only the nodes left over');
    assert.equal(next.deferred, 0);
    for (const x of ['a', 'b', 'c']) assert.deepEqual(await labelsOf(`${cluster}-${x}`), { x });
    assert.equal((await slots.get(cluster))?.lastRunAt, T0 + MINUTE);
  });

  it('a run whose invocation died holds the slot only until its invocation deadline', async () => {
    const config = labelSyncConfigFromEnv({});
    await differingNode(`${cluster}-a`, { rack: 'r1' });
    // An invocation took the slot with 30 s left and never finished (crash, timeout).
    assert.ok(await slots.claim(cluster, config.resyncIntervalMs, T0, 30_000));
    assert.equal((await tick(config, T0 + 10_000)).skipped, 'not-due', 'held while that invocation may still run');
    const report = await tick(config, T0 + MINUTE);
    assert.deepEqual(report.clusters, [cluster], 'taken over once its deadline passed');
    assert.deepEqual(await labelsOf(`${cluster}-a`), { rack: 'r1' });
  });

  it('a run in progress holds the slot for its invocation\'s remaining time: overlapping ticks skip, a finished run records its start', async () => {
    const config = labelSyncConfigFromEnv({});
    await differingNode(`${cluster}-a`, { rack: 'r1' });
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', latencyMs: 500 }); // the diff's list is slow
    const running = tick(config, T0, fakeContext(() => 25_000));
    try {
      const deadline = Date.now() + 5_000;
      while ((await slots.get(cluster))?.runToken === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      const held = await slots.get(cluster);
      assert.equal(held?.runStartedAt, T0);
      assert.equal(held?.runUntil, T0 + 25_000, 'the lease ends with the invocation');
      assert.equal((await tick(config, T0 + 20_000)).skipped, 'not-due', 'an overlapping tick skips');
    } finally {
      await running;
    }
    assert.deepEqual((await running).clusters, [cluster]);
    assert.deepEqual(await slots.get(cluster), { lastRunAt: T0, lastCompletedAt: T0 });
  });

  // Found in review for issue #13: the resync listed one control plane's nodes for every cluster and ensured
  // every cluster's labels there, so a node name two clusters share got the other cluster's labels.
  it('each cluster is resynced against its own control plane, even where node names repeat', async () => {
    const config = labelSyncConfigFromEnv({ NODE_LABEL_RESYNC_INTERVAL: '10m' });
    const other = `${cluster}-b`;
    const b = await startStorage();
    try {
      const storage = createStorageClientFromEnv({
        STORAGE_API_URL: s.api.url,
        CLUSTERS: JSON.stringify({ [cluster]: { kubeconfig: '/a.yaml', storage: { url: s.api.url } }, [other]: { kubeconfig: '/b.yaml', storage: { url: b.api.url } } }),
      });
      const name = `${cluster}-shared-name`;
      await s.api.state.addNode(name);
      await b.api.state.addNode(name);
      await cache.put(cluster, 'Node', { apiVersion: 'v1', kind: 'Node', metadata: { name, uid: 'uid-a', resourceVersion: String(++rv), labels: { zone: 'a' } } });
      await cache.put(other, 'Node', { apiVersion: 'v1', kind: 'Node', metadata: { name, uid: 'uid-b', resourceVersion: String(++rv), labels: { zone: 'b' } } });
      const report = (await createLabelSyncHandler({ config, storage, doc: db.doc, clusters: [cluster, other], runtime: { tables: db.tables, logger: silentLogger() }, now: () => T0 })(
        {},
      )) as LabelResyncReport;
      assert.deepEqual(report.clusters, [cluster, other]);
      assert.equal(report.differed, 2);
      assert.deepEqual((await s.client.listNodes()).find((x) => x.name === name)?.labels, { zone: 'a' });
      assert.deepEqual((await b.client.listNodes()).find((x) => x.name === name)?.labels, { zone: 'b' });
    } finally {
      await b.stop();
    }
  });

  it('each cluster has its own period', async () => {
    const config = labelSyncConfigFromEnv({ NODE_LABEL_RESYNC_INTERVAL: '10m' });
    const other = `${cluster}-other`;
    const handler = (at: number) =>
      createLabelSyncHandler({ config, storage: s.client, doc: db.doc, clusters: [cluster, other], runtime: { tables: db.tables, logger: silentLogger() }, now: () => at })({}) as Promise<LabelResyncReport>;
    assert.ok(await slots.claim(other, config.resyncIntervalMs, T0 - 5 * MINUTE, 1).then((c) => c && slots.complete(c, T0 - 5 * MINUTE)));
    assert.deepEqual((await handler(T0)).clusters, [cluster], 'the other cluster ran 5 minutes ago');
    assert.deepEqual((await handler(T0 + 5 * MINUTE)).clusters, [other]);
    assert.deepEqual((await handler(T0 + 10 * MINUTE)).clusters, [cluster]);
  });
});
