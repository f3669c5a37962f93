import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SNSClient } from '@aws-sdk/client-sns';
import { QueueCollector, startMessaging, type Messaging } from './harness.ts';
import { EventPublisher, HOLD_STRETCH_LIMIT, type Progress } from '../../lib/forwarder/publisher.ts';
import { ForwarderMetrics } from '../../lib/forwarder/metrics.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynalite, type Dynalite } from '../support/dynalite.ts';
import type { ClusterEvent } from '../../lib/runtime/message.ts';
import { createEventReview, type EventReview } from '../../lib/forwarder/review.ts';
import { ObjectCache, type CacheableObject, type CachePutOutcome } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import type { AttributeValues } from '../../lib/forwarder/filter-policy.ts';

const event = (name: string, rv: number, object: Record<string, unknown> = {}): ClusterEvent => ({
  v: 1,
  cluster: 'c1',
  kind: 'Node',
  type: 'MODIFIED',
  key: name,
  uid: `uid-${name}`,
  resourceVersion: String(rv),
  object: { metadata: { name, resourceVersion: String(rv) }, ...object },
  observedAt: new Date().toISOString(),
});

describe('EventPublisher against fauxqs', () => {
  let messaging: Messaging;
  before(async () => {
    messaging = await startMessaging();
  });
  after(() => messaging?.stop());

  it('batches ≤10 messages with distinct groups, in order, and reports progress after publishing', async () => {
    const batches: string[][] = [];
    const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    sns.middlewareStack.add(
      (next) => async (args: any) => {
        batches.push(args.input.PublishBatchRequestEntries.map((e: any) => e.MessageGroupId));
        return next(args);
      },
      { step: 'initialize', name: 'recordBatches' },
    );
    const progress: Progress[] = [];
    const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics: new ForwarderMetrics(), onProgress: async (p) => void progress.push(p) });
    // Fill the queue before the loop starts, so batching is decided on a full queue.
    let rv = 100;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 8; i++) await publisher.enqueue({ event: event(`n-${i}`, ++rv), progress: { kind: 'Node', rv: String(rv) } });
    }
    await publisher.enqueue({ progress: { kind: 'Node', rv: String(++rv), listComplete: true } });
    publisher.start();
    await publisher.flush();
    await publisher.stop();
    sns.destroy();

    assert.ok(batches.length >= 3);
    for (const batch of batches) {
      assert.ok(batch.length <= 10);
      assert.equal(new Set(batch).size, batch.length, 'one message per group per batch');
    }
    assert.equal(batches.flat().length, 24);
    assert.deepEqual(progress.at(-1), { kind: 'Node', rv: String(rv), listComplete: true });
    const rvs = progress.filter((p) => !p.listComplete).map((p) => Number(p.rv));
    assert.deepEqual(rvs, [...rvs].sort((x, y) => x - y), 'progress only moves forward');

    const collector = new QueueCollector(messaging);
    await collector.until(() => collector.received['label-sync'].length === 24, 20_000, 'all 24');
    for (let i = 0; i < 8; i++) {
      const mine = collector.received['label-sync'].filter((e) => e.key === `n-${i}`).map((e) => Number(e.resourceVersion));
      assert.equal(mine.length, 3);
      assert.deepEqual(mine, [...mine].sort((x, y) => x - y), `n-${i} in order`);
    }
  });

  it('keeps several batches in flight, never one group in two of them, and reports progress in queue order', async () => {
    const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    let inFlight = 0;
    let mostInFlight = 0;
    const busy = new Set<string>();
    const overlaps: string[] = [];
    let call = 0;
    sns.middlewareStack.add(
      (next) => async (args: any) => {
        const groups: string[] = args.input.PublishBatchRequestEntries.map((e: any) => e.MessageGroupId);
        for (const g of groups) {
          if (busy.has(g)) overlaps.push(g);
          busy.add(g);
        }
        inFlight++;
        mostInFlight = Math.max(mostInFlight, inFlight);
        // Slow, uneven responses, so later batches finish before earlier ones.
        await new Promise((resolve) => setTimeout(resolve, [60, 10, 35, 5][call++ % 4]));
        try {
          return await next(args);
        } finally {
          inFlight--;
          for (const g of groups) busy.delete(g);
        }
      },
      { step: 'initialize', name: 'slowTopic' },
    );
    const progress: Progress[] = [];
    const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics: new ForwarderMetrics(), maxInFlight: 4, onProgress: async (p) => void progress.push(p) });
    // 60 events over 30 objects, each followed by its bookmark, before the loop starts.
    let rv = 1000;
    for (let i = 0; i < 60; i++) await publisher.enqueue({ event: event(`p-${i % 30}`, ++rv), progress: { kind: 'Node', rv: String(rv) } });
    publisher.start();
    await publisher.flush();
    await publisher.stop();
    sns.destroy();
    assert.ok(mostInFlight >= 2, `batches overlapped (${mostInFlight} at most)`);
    assert.deepEqual(overlaps, [], 'no message group in two batches in flight');
    const rvs = progress.map((p) => Number(p.rv));
    assert.deepEqual(rvs, [...rvs].sort((x, y) => x - y), 'bookmarks only move forward');
    assert.equal(rvs.at(-1), rv, 'the last bookmark is the last event');
    const collector = new QueueCollector(messaging);
    await collector.until(() => collector.received['label-sync'].filter((e) => e.key.startsWith('p-')).length === 60, 20_000, 'all 60');
    for (let i = 0; i < 30; i++) {
      const mine = collector.received['label-sync'].filter((e) => e.key === `p-${i}`).map((e) => Number(e.resourceVersion));
      assert.equal(mine.length, 2);
      assert.deepEqual(mine, [...mine].sort((x, y) => x - y), `p-${i} in order`);
    }
  });

  it("does not hold other objects behind a busy object's versions, and keeps each object's order", async () => {
    // Group p-a's batches take 150 ms at the topic, everyone else's go straight through.
    const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const sent: Array<{ groups: string[]; at: number }> = [];
    // p-a's first batch stays at the topic until p-d is queued (then its 150 ms), however late the test runs.
    let firstAtTopic!: () => void;
    const firstIsAtTopic = new Promise<void>((resolve) => (firstAtTopic = resolve));
    let pdQueued!: () => void;
    const pdIsQueued = new Promise<void>((resolve) => (pdQueued = resolve));
    sns.middlewareStack.add(
      (next) => async (args: any) => {
        const groups: string[] = args.input.PublishBatchRequestEntries.map((e: any) => e.MessageGroupId.split(':').pop());
        sent.push({ groups, at: performance.now() });
        if (groups.includes('p-a') && sent.length === 1) {
          firstAtTopic();
          await pdIsQueued;
        }
        if (groups.includes('p-a')) await new Promise((resolve) => setTimeout(resolve, 150));
        return next(args);
      },
      { step: 'initialize', name: 'slowGroup' },
    );
    const progress: Array<{ rv: number; at: number }> = [];
    const publisher = new EventPublisher({
      sns,
      topicArn: messaging.topicArn,
      metrics: new ForwarderMetrics(),
      onProgress: async (p) => void progress.push({ rv: Number(p.rv), at: performance.now() }),
    });
    // Three versions of p-a first, then one each of p-b and p-c, all queued before the loop starts.
    let rv = 2000;
    for (const name of ['p-a', 'p-a', 'p-a', 'p-b', 'p-c']) await publisher.enqueue({ event: event(name, ++rv), progress: { kind: 'Node', rv: String(rv) } });
    publisher.start();
    // A new object while p-a's first batch is at the topic goes out with the next batch, beside p-a's second
    // version, not behind all of p-a's versions.
    await firstIsAtTopic;
    await publisher.enqueue({ event: event('p-d', ++rv), progress: { kind: 'Node', rv: String(rv) } });
    pdQueued();
    await publisher.flush();
    await publisher.stop();
    sns.destroy();

    assert.deepEqual(sent[0].groups.sort(), ['p-a', 'p-b', 'p-c'], 'the first batch takes the oldest message of every group');
    const d = sent.find((batch) => batch.groups.includes('p-d'))!;
    assert.deepEqual(d.groups.sort(), ['p-a', 'p-d'], "p-d went out beside p-a's second version");
    const paBatches = sent.filter((batch) => batch.groups.includes('p-a'));
    assert.deepEqual(
      paBatches.map((batch) => batch.groups.filter((g) => g === 'p-a').length),
      [1, 1, 1],
      "p-a's versions went one batch at a time",
    );
    assert.equal(sent.indexOf(d), sent.indexOf(paBatches[1]), "p-d went out with p-a's second batch, not after it returned");
    // Bookmarks never pass a message the topic has not accepted: nothing before p-a's first batch returned.
    const firstAccepted = sent[0].at + 150;
    assert.ok(progress.length > 0);
    assert.ok(progress.every((p) => p.at >= firstAccepted - 5), 'no bookmark before the oldest message was published');
    const rvs = progress.map((p) => p.rv);
    assert.deepEqual(rvs, [...rvs].sort((x, y) => x - y), 'bookmarks only move forward');
    assert.equal(rvs.at(-1), rv);
    const collector = new QueueCollector(messaging);
    await collector.until(() => collector.received['label-sync'].filter((e) => e.key.startsWith('p-') && Number(e.resourceVersion) > 2000).length === 6, 20_000, 'all 6');
    const mine = collector.received['label-sync'].filter((e) => e.key === 'p-a' && Number(e.resourceVersion) > 2000).map((e) => Number(e.resourceVersion));
    assert.deepEqual(mine, [2001, 2002, 2003], 'p-a in order');
  });

  it('after discard() (the lease is lost), moves no bookmark past the dropped messages', async () => {
    const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    sns.middlewareStack.add(
      (next) => async (args: any) => {
        if (args.input.PublishBatchRequestEntries.some((e: any) => e.MessageGroupId.includes(':x-'))) await held;
        return next(args);
      },
      { step: 'initialize', name: 'holdGroup' },
    );
    const progress: Progress[] = [];
    const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics: new ForwarderMetrics(), onProgress: async (p) => void progress.push(p) });
    publisher.start();
    await publisher.enqueue({ event: event('x-a', 3001), progress: { kind: 'Node', rv: '3001' } });
    await new Promise((resolve) => setTimeout(resolve, 20)); // x-a's batch is at the topic (held there)
    await publisher.enqueue({ event: event('x-a', 3002), progress: { kind: 'Node', rv: '3002' } }); // waits for x-a
    // Ten other objects: a full batch, at the topic too (held as well).
    for (let i = 0; i < 10; i++) await publisher.enqueue({ event: event(`x-b${i}`, 3003 + i), progress: { kind: 'Node', rv: String(3003 + i) } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    publisher.discard(); // drops x-a@3002
    release();
    await publisher.flush(); // the batch in flight finishes
    await publisher.stop();
    sns.destroy();
    assert.ok(
      progress.every((p) => Number(p.rv) < 3002),
      `no bookmark at or past the dropped x-a@3002 (got ${progress.map((p) => p.rv).join(', ')})`,
    );
    // What was in flight still went out; the dropped version did not.
    const collector = new QueueCollector(messaging);
    await collector.until(() => collector.received['label-sync'].filter((e) => e.key.startsWith('x-')).length >= 11, 20_000, 'x-a@3001 and the ten others');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const received = collector.received['label-sync'].filter((e) => e.key.startsWith('x-')).map((e) => `${e.key}@${e.resourceVersion}`);
    assert.equal(received.length, 11);
    assert.ok(received.includes('x-a@3001') && !received.includes('x-a@3002'));
  });

  it('saves bookmarks at most once per interval while events stream, and at once on flush', async () => {
    const saved: Array<{ rv: number; at: number }> = [];
    const publisher = new EventPublisher({
      sns: messaging.sns,
      topicArn: messaging.topicArn,
      metrics: new ForwarderMetrics(),
      progressIntervalMs: 400,
      onProgress: async (p) => void saved.push({ rv: Number(p.rv), at: performance.now() }),
    });
    publisher.start();
    const started = performance.now();
    let rv = 4000;
    // 40 events over ~800 ms, each followed by its bookmark.
    for (let i = 0; i < 40; i++) {
      await publisher.enqueue({ event: event(`s-${i % 5}`, ++rv), progress: { kind: 'Node', rv: String(rv) } });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const streamed = performance.now() - started;
    const beforeFlush = saved.length;
    await publisher.flush();
    await publisher.stop();
    assert.ok(beforeFlush <= Math.ceil(streamed / 400) + 1, `${beforeFlush} bookmark saves in ${Math.round(streamed)} ms at one per 400 ms`);
    assert.ok(beforeFlush >= 1, 'bookmarks are saved while the stream goes on');
    assert.equal(saved.at(-1)!.rv, rv, 'flush saved the last bookmark at once');
    const rvs = saved.map((p) => p.rv);
    assert.deepEqual(rvs, [...rvs].sort((x, y) => x - y));
    const collector = new QueueCollector(messaging);
    await collector.until(() => collector.received['label-sync'].filter((e) => e.key.startsWith('s-')).length === 40, 20_000, 'all 40');
  });

  it("saves one bookmark per kind for a short run of events, an interval after its first (not one at once and one after)", async () => {
    const saved: Array<{ kind: string; rv: number; at: number }> = [];
    const publisher = new EventPublisher({
      sns: messaging.sns,
      topicArn: messaging.topicArn,
      metrics: new ForwarderMetrics(),
      progressIntervalMs: 1000,
      onProgress: async (p) => void saved.push({ kind: p.kind, rv: Number(p.rv), at: performance.now() }),
    });
    publisher.start();
    try {
      // A quiet publisher, then one claim's handful of versions: a few ms apart, two kinds.
      const started = performance.now();
      let rv = 7000;
      for (let i = 0; i < 5; i++) {
        await publisher.enqueue({ event: event(`t-${i % 2}`, ++rv), progress: { kind: i % 2 ? 'Node' : 'PersistentVolume', rv: String(rv) } });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // Published well within this (the publisher used to save the first bookmark as soon as it was).
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(publisher.depth, 0, 'published');
      assert.equal(saved.length, 0, 'no bookmark saved before the interval is out');
      const deadline = Date.now() + 5_000;
      while (saved.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(
        saved.map(({ kind, rv }) => ({ kind, rv })).sort((a, b) => a.rv - b.rv),
        [{ kind: 'Node', rv: 7004 }, { kind: 'PersistentVolume', rv: 7005 }],
        'one save per kind, each the last of its kind',
      );
      const collector = new QueueCollector(messaging);
      await collector.until(() => collector.received['label-sync'].filter((e) => e.key.startsWith('t-')).length === 5, 20_000, 'all 5');
      for (const s of saved) assert.ok(s.at - started >= 950, `saved ${Math.round(s.at - started)} ms after the first event`);
    } finally {
      await publisher.stop();
    }
  });

  it('serializes each event once, for the size of its batch and for its message alike', async () => {
    const publisher = new EventPublisher({ sns: messaging.sns, topicArn: messaging.topicArn, metrics: new ForwarderMetrics() });
    const serialized = new Map<string, number>();
    // Three versions of each of 8 objects: each later version waits while the batches before it are taken.
    let rv = 700;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 8; i++) {
        const e = event(`once-${i}`, ++rv);
        const id = `${e.key}@${e.resourceVersion}`;
        const { ...plain } = e;
        Object.defineProperty(e, 'toJSON', { enumerable: false, value: () => (serialized.set(id, (serialized.get(id) ?? 0) + 1), plain) });
        await publisher.enqueue({ event: e });
      }
    }
    publisher.start();
    await publisher.flush();
    await publisher.stop();
    assert.equal(serialized.size, 24);
    assert.deepEqual([...serialized.values()].filter((n) => n !== 1), [], 'every event serialized exactly once');
    const collector = new QueueCollector(messaging);
    await collector.until(() => collector.received['label-sync'].filter((e) => e.key.startsWith('once-')).length === 24, 20_000, 'all 24');
  });

  it('omits the object of a message over the SNS size limit', async () => {
    const publisher = new EventPublisher({ sns: messaging.sns, topicArn: messaging.topicArn, metrics: new ForwarderMetrics(), onError: (e) => console.error('ERR', (e as Error).message) });
    publisher.start();
    await publisher.enqueue({ event: event('huge', 500, { data: 'x'.repeat(300_000) }) });
    await publisher.enqueue({ event: event('small', 501) });
    await publisher.flush();
    await publisher.stop();
    const collector = new QueueCollector(messaging);
    await collector.until(() => collector.received['label-sync'].length === 2, 20_000, 'both');
    const huge = collector.received['label-sync'].find((e) => e.key === 'huge')!;
    assert.equal(huge.object, undefined);
    assert.equal(huge.resourceVersion, '500');
    assert.equal(collector.received['label-sync'].find((e) => e.key === 'small')!.object?.metadata !== undefined, true);
  });

  it('holds enqueue back while full and reports no progress until the topic accepts', async () => {
    // An endpoint nothing listens on: every publish fails until stop.
    const sns = new SNSClient({ endpoint: 'http://127.0.0.1:9', region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
    const metrics = new ForwarderMetrics();
    const progress: Progress[] = [];
    const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, capacity: 3, retryInitialMs: 20, retryMaxMs: 50, onProgress: async (p) => void progress.push(p) });
    publisher.start();
    for (let i = 0; i < 3; i++) await publisher.enqueue({ event: event(`q-${i}`, 600 + i), progress: { kind: 'Node', rv: String(600 + i) } });
    let fourthQueued = false;
    const fourth = publisher.enqueue({ event: event('q-3', 603) }).then(() => (fourthQueued = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(fourthQueued, false, 'the producer waits while the queue is full');
    assert.equal(publisher.depth, 3);
    assert.ok((await metrics.publishErrors.get()).values[0].value >= 2, 'kept retrying');
    assert.deepEqual(progress, []);
    await publisher.stop();
    await fourth;
    sns.destroy();
  });
  describe('the own-write hold (ownWriteHoldMs)', () => {
    /** The entries of every PublishBatch, in the order sent: `<key>@<rv>` and the `writer` attribute. */
    /** An SNS client that records each entry as its publish starts, and answers `delayMs` later. */
    const recordingSns = (delayMs = 0) => {
      const sent: Array<{ id: string; writer: string | undefined }> = [];
      const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      sns.middlewareStack.add(
        (next) => async (args: any) => {
          for (const e of args.input.PublishBatchRequestEntries) {
            const body = JSON.parse(e.Message) as ClusterEvent;
            sent.push({ id: `${body.key}@${body.resourceVersion}`, writer: body.writer });
          }
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
          return next(args);
        },
        { step: 'initialize', name: 'recordEntries' },
      );
      return { sns, sent };
    };
    const pv = (name: string, rv: number): ClusterEvent => ({ ...event(name, rv), kind: 'PersistentVolume' });
    /** A review that finds `held`'s versions cached untagged until `tag` is set, then tagged by it. */
    const fakeReview = (state: { tag?: string; looks: number }): EventReview => async (events) => {
      state.looks++;
      return events.map((e) => (e.key !== 'held' ? { event: e } : state.tag ? { event: { ...e, writer: state.tag } } : { event: e, untagged: true as const }));
    };
    /** Polls `check` every 5 ms, for 20 s at most. */
    const wait = async (check: () => boolean, what: string) => {
      const deadline = Date.now() + 20_000;
      while (!check()) {
        if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const held = async (metrics: ForwarderMetrics, outcome: string) =>
      (await metrics.held.get()).values.find((v) => v.labels.outcome === outcome && v.labels.kind === 'PersistentVolume')?.value ?? 0;

    it('sends the rest of the batch at once, the held event with its writer once the tag appears, and its group’s later versions after it', async () => {
      const { sns, sent } = recordingSns();
      const metrics = new ForwarderMetrics();
      const state: { tag?: string; looks: number } = { looks: 0 };
      // One batch in flight at most: a held event must not take it.
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: fakeReview(state), ownWriteHoldMs: 60_000, ownWriteLookMs: 5, maxInFlight: 1 });
      await publisher.enqueue({ event: pv('held', 700) });
      await publisher.enqueue({ event: pv('other', 701) });
      await publisher.enqueue({ event: pv('held', 702) });
      publisher.start();
      await wait(() => sent.some((e) => e.id === 'other@701'), 'the other group is sent');
      await wait(() => state.looks >= 4, 'the held event is looked at again');
      await publisher.enqueue({ event: pv('later', 703) });
      await wait(() => sent.some((e) => e.id === 'later@703'), 'a later batch goes out while the event is held');
      assert.deepEqual(sent.map((e) => e.id), ['other@701', 'later@703'], 'the held version, and its group’s next one, wait for the tag');
      state.tag = 'binder';
      await publisher.flush();
      await publisher.stop();
      sns.destroy();
      assert.deepEqual(sent.map((e) => e.id), ['other@701', 'later@703', 'held@700', 'held@702'], 'the group keeps its order');
      assert.equal(sent[2].writer, 'binder', 'the held version goes out tagged');
      assert.equal(await held(metrics, 'tagged'), 1, 'held@700 was held; held@702 found its tag at its first look');
      assert.equal(sent[3].writer, 'binder');
    });

    it('a newer version of the held object seen during the hold extends it from when it was seen (a write-back may name both)', async () => {
      const { sns, sent } = recordingSns();
      const metrics = new ForwarderMetrics();
      const state: { tag?: string; looks: number } = { looks: 0 };
      const holdMs = 1_000;
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: fakeReview(state), ownWriteHoldMs: holdMs, ownWriteLookMs: 10, maxInFlight: 1 });
      publisher.start();
      await publisher.enqueue({ event: pv('held', 800) });
      await wait(() => state.looks >= 1, 'the first look');
      const opened = Date.now();
      await wait(() => Date.now() >= opened + 0.7 * holdMs, 'well into the hold');
      await publisher.enqueue({ event: pv('held', 801) });
      // Past the first version's own hold, short of the newer one's: still held.
      await wait(() => Date.now() >= opened + 1.3 * holdMs, 'past the first hold');
      assert.deepEqual(sent, [], 'still held after its own hold: a newer version came meanwhile');
      const looks = state.looks;
      await wait(() => state.looks > looks, 'looked at again');
      state.tag = 'binder';
      await publisher.flush();
      await publisher.stop();
      sns.destroy();
      assert.deepEqual(sent, [{ id: 'held@800', writer: 'binder' }, { id: 'held@801', writer: 'binder' }]);
      assert.equal(await held(metrics, 'untagged'), 0);
    });

    it('a quick run of untagged versions of one object waits one hold, not one per version (a user’s writes)', async () => {
      const { sns, sent } = recordingSns();
      const metrics = new ForwarderMetrics();
      const state = { looks: 0 };
      const holdMs = 300;
      const lookMs = 10;
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: fakeReview(state), ownWriteHoldMs: holdMs, ownWriteLookMs: lookMs });
      for (const rv of [810, 811, 812]) await publisher.enqueue({ event: pv('held', rv) });
      publisher.start();
      await publisher.flush();
      await publisher.stop();
      sns.destroy();
      assert.deepEqual(sent, ['held@810', 'held@811', 'held@812'].map((id) => ({ id, writer: undefined })));
      assert.equal(await held(metrics, 'untagged'), 3);
      // The first version is looked at through one hold; the later ones once each (the window is over).
      assert.ok(state.looks <= holdMs / lookMs + 6, `one hold's looks (${state.looks}), not three (${(3 * holdMs) / lookMs})`);
    });

    it('a version seen after its group’s window ended (the group busy all along) gets a window of its own', async () => {
      const { sns, sent } = recordingSns();
      // held@900's publish waits at the topic until released: the group still has it unsent when 901 comes.
      let release!: () => void;
      const blocked = new Promise<void>((resolve) => (release = resolve));
      let atTopic = false;
      sns.middlewareStack.add(
        (next) => async (args: any) => {
          if (args.input.PublishBatchRequestEntries.some((e: any) => JSON.parse(e.Message).resourceVersion === '900')) {
            atTopic = true;
            await blocked;
          }
          return next(args);
        },
        { step: 'initialize', name: 'blockFirst' },
      );
      const metrics = new ForwarderMetrics();
      const state: { tag?: string; looks: number } = { looks: 0 };
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: fakeReview(state), ownWriteHoldMs: 200, ownWriteLookMs: 10 });
      publisher.start();
      await publisher.enqueue({ event: pv('held', 900) });
      await wait(() => atTopic, 'held@900 sent untagged after its window (and stuck at the topic)');
      // Past the most a window can be extended (3 holds from its opening), the group still busy with 900.
      await new Promise((resolve) => setTimeout(resolve, 3 * 200 + 100));
      await publisher.enqueue({ event: pv('held', 901) });
      release();
      await wait(() => sent.some((e) => e.id === 'held@900'), 'held@900 published');
      const looks = state.looks;
      await wait(() => state.looks >= looks + 2, 'held@901 looked at again: held, not sent at once');
      assert.deepEqual(sent.map((e) => e.id), ['held@900'], 'held@901 held in a window of its own');
      state.tag = 'binder';
      await publisher.flush();
      await publisher.stop();
      sns.destroy();
      assert.deepEqual(sent, [{ id: 'held@900', writer: undefined }, { id: 'held@901', writer: 'binder' }]);
    });

    it('a held event’s group is free once it is sent, while the other events of its hold still wait', async () => {
      // Each publish answers 50 ms after it starts: a@912 arrives while a@910's send is under way, and goes
      // out when that send ends (nothing else wakes the publisher then).
      const { sns, sent } = recordingSns(50);
      const metrics = new ForwarderMetrics();
      const tags = new Map<string, string>();
      let looks = 0;
      // `a` and `b` are cached untagged until their tag is set.
      const review: EventReview = async (events) => {
        looks++;
        return events.map((e) => (tags.has(e.key) ? { event: { ...e, writer: tags.get(e.key) } } : { event: e, untagged: true as const }));
      };
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review, ownWriteHoldMs: 60_000, ownWriteLookMs: 5, maxInFlight: 1 });
      // Stopped whatever happens: a hold left running would send b when the topic is gone, and retry forever.
      try {
        await publisher.enqueue({ event: pv('a', 910) });
        await publisher.enqueue({ event: pv('b', 911) });
        publisher.start();
        await wait(() => looks >= 2, 'both held, in one hold');
        tags.set('a', 'binder');
        await wait(() => sent.some((e) => e.id === 'a@910'), 'a@910 sent once tagged');
        await publisher.enqueue({ event: pv('a', 912) });
        await wait(() => sent.some((e) => e.id === 'a@912'), 'a’s next version sent while b is still held');
        assert.deepEqual(sent.map((e) => e.id), ['a@910', 'a@912']);
        tags.set('b', 'provisioner');
        await publisher.flush();
      } finally {
        await publisher.stop();
        sns.destroy();
      }
      assert.deepEqual(sent.map((e) => `${e.id} ${e.writer}`), ['a@910 binder', 'a@912 binder', 'b@911 provisioner']);
    });

    it('sends a held event untagged when the hold runs out (a user’s write)', async () => {
      const { sns, sent } = recordingSns();
      const metrics = new ForwarderMetrics();
      const state = { looks: 0 };
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: fakeReview(state), ownWriteHoldMs: 50, ownWriteLookMs: 10 });
      publisher.start();
      await publisher.enqueue({ event: pv('held', 710) });
      await publisher.flush();
      await publisher.stop();
      sns.destroy();
      assert.deepEqual(sent, [{ id: 'held@710', writer: undefined }]);
      assert.ok(state.looks >= 2, `looked again before giving up (${state.looks} looks)`);
      assert.equal(await held(metrics, 'untagged'), 1);
    });

    it('holds at most maxHeld events; the rest go out at once, untagged', async () => {
      const { sns, sent } = recordingSns();
      const metrics = new ForwarderMetrics();
      // Every PersistentVolume event here looks untagged until the test tags them.
      const state: { tag?: string; looks: number } = { looks: 0 };
      const review: EventReview = async (events) => {
        state.looks++;
        return events.map((e) => (state.tag ? { event: { ...e, writer: state.tag } } : { event: e, untagged: true as const }));
      };
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review, ownWriteHoldMs: 60_000, ownWriteLookMs: 5, maxHeld: 2 });
      for (const [index, name] of ['a', 'b', 'c', 'd'].entries()) await publisher.enqueue({ event: pv(name, 730 + index) });
      publisher.start();
      const deadline = Date.now() + 20_000;
      while (sent.length < 2) {
        if (Date.now() > deadline) throw new Error('timed out: the events over the bound');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.deepEqual(sent.map((e) => e.id).sort(), ['c@732', 'd@733'], 'two held, two sent at once');
      assert.equal(await held(metrics, 'full'), 2);
      state.tag = 'binder';
      await publisher.flush();
      await publisher.stop();
      sns.destroy();
      assert.deepEqual(sent.slice(2).map((e) => [e.id, e.writer]).sort(), [['a@730', 'binder'], ['b@731', 'binder']]);
    });

    it('sends nothing it holds once discarded (the lease is lost), and moves no bookmark past it', async () => {
      const { sns, sent } = recordingSns();
      const metrics = new ForwarderMetrics();
      const state: { tag?: string; looks: number } = { looks: 0 };
      const progress: Progress[] = [];
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: fakeReview(state), ownWriteHoldMs: 60_000, ownWriteLookMs: 5, onProgress: async (p) => void progress.push(p) });
      await publisher.enqueue({ event: pv('held', 740), progress: { kind: 'PersistentVolume', rv: '740' } });
      await publisher.enqueue({ progress: { kind: 'PersistentVolume', rv: '741' } });
      publisher.start();
      const deadline = Date.now() + 20_000;
      while (state.looks < 3) {
        if (Date.now() > deadline) throw new Error('timed out: the hold');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      publisher.discard();
      state.tag = 'binder';
      await new Promise((resolve) => setTimeout(resolve, 50));
      await publisher.stop({ flush: true, timeoutMs: 1000 });
      sns.destroy();
      assert.deepEqual(sent, [], 'the held event was not sent after the discard');
      assert.deepEqual(progress, [], 'no bookmark passed it');
    });

    it('stretches the hold by the review’s round trip: a write-back a slow table lands late still tags its version', async () => {
      const holdMs = 100;
      /** A publisher whose review of the unwritten versions takes `readMs`, finding them untagged until `tag` is set. */
      const publisherWith = (readMs: number) => {
        const { sns, sent } = recordingSns();
        const state: { looks: number; tag?: string; writes: string[] } = { looks: 0, writes: [] };
        const review: EventReview = async (events) => {
          state.looks++;
          await new Promise((resolve) => setTimeout(resolve, readMs));
          return events.map((e) => (state.tag ? { event: { ...e, writer: state.tag } } : { event: e, untagged: true as const, unwritten: true as const }));
        };
        const write = async (e: ClusterEvent): Promise<CachePutOutcome> => (state.writes.push(`${e.key}@${e.resourceVersion}`), { result: 'written' });
        const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics: new ForwarderMetrics(), review, write, ownWriteHoldMs: holdMs, ownWriteLookMs: 10 });
        publisher.start();
        const stop = async () => {
          await publisher.stop();
          sns.destroy();
        };
        return { publisher, sent, state, stop };
      };

      // A fast table: the hold stays about the configured one; a user's write goes out after it, written.
      const fast = publisherWith(0);
      try {
        await fast.publisher.enqueue({ event: pv('quick', 1000), unwritten: true });
        await fast.publisher.flush();
        assert.ok(fast.publisher.holdMs < holdMs + 20, `a fast review barely stretches it (${fast.publisher.holdMs} ms)`);
      } finally {
        await fast.stop();
      }
      assert.deepEqual(fast.sent, [{ id: 'quick@1000', writer: undefined }]);
      assert.deepEqual(fast.state.writes, ['quick@1000']);

      // A slow table: each read takes 100 ms; the write-back lands well past the configured 100 ms.
      const slow = publisherWith(100);
      try {
        const started = Date.now();
        await slow.publisher.enqueue({ event: pv('slow', 1001), unwritten: true });
        await wait(() => slow.publisher.holdMs > holdMs, 'the first look answered');
        assert.ok(slow.publisher.holdMs >= 2.8 * holdMs, `stretched by twice its 100 ms, about to the limit (${slow.publisher.holdMs} ms)`);
        // The first look ends ~100 ms in and opens the window. Unstretched, it would end ~100 ms later and
        // the event go out untagged at the next look's end (~210 ms in); stretched, it ends ~400 ms in.
        await wait(() => Date.now() >= started + 100 + holdMs + 80, 'past the configured hold');
        assert.deepEqual(slow.sent, [], 'still held');
        slow.state.tag = 'binder';
        await slow.publisher.flush();
      } finally {
        await slow.stop();
      }
      assert.deepEqual(slow.sent, [{ id: 'slow@1001', writer: 'binder' }]);
      assert.deepEqual(slow.state.writes, [], 'the late write-back wrote it: the forwarder did not');
      assert.ok(slow.publisher.holdMs <= HOLD_STRETCH_LIMIT * holdMs, 'never past the limit');
    });

    it('without a hold, sends at once after one look', async () => {
      const { sns, sent } = recordingSns();
      const metrics = new ForwarderMetrics();
      const state = { looks: 0 };
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: fakeReview(state) });
      publisher.start();
      await publisher.enqueue({ event: pv('held', 720) });
      await publisher.flush();
      await publisher.stop();
      sns.destroy();
      assert.deepEqual(sent, [{ id: 'held@720', writer: undefined }]);
      assert.equal(state.looks, 1);
      assert.equal(await held(metrics, 'untagged'), 0);
    });
  });

  describe('unwritten events: looked up, and written before they are sent when no write-back had (write)', () => {
    let db: Dynalite;
    let cache: ObjectCache;
    before(async () => {
      db = await startDynalite();
      cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
    });
    after(() => db?.stop());

    const volume = (name: string, rv: number, type: ClusterEvent['type'] = 'MODIFIED'): ClusterEvent => {
      const object = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name, uid: `uid-${name}`, resourceVersion: String(rv) }, spec: { capacity: { storage: '1Gi' } } };
      return { ...event(name, rv), kind: 'PersistentVolume', type, object };
    };
    const objectOf = (e: ClusterEvent) => e.object as unknown as CacheableObject;
    /** dynalite's client, recording the keys of each read (the review's BatchGetItems) in `reads`. */
    const countingReads = () => {
      const reads: number[] = [];
      const doc = {
        send: (c: { input: { RequestItems: Record<string, { Keys: unknown[] }> } }) => {
          reads.push(Object.values(c.input.RequestItems)[0].Keys.length);
          return (db.doc.send as (x: unknown) => Promise<unknown>)(c);
        },
      } as unknown as typeof db.doc;
      return { reads, doc };
    };
    /**
     * A publisher on dynalite and fauxqs with the forwarder's review and write; `sent` records each entry as
     * its publish starts, with the version the cache held for it at that moment.
     */
    const start = (options: { holdMs?: number; write?: (e: ClusterEvent) => Promise<CachePutOutcome>; progress?: Progress[]; subscribed?: (attributes: AttributeValues) => boolean } = {}) => {
      const sent: Array<{ id: string; writer: string | undefined; cachedRv: number | undefined }> = [];
      const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      sns.middlewareStack.add(
        (next) => async (args: any) => {
          for (const e of args.input.PublishBatchRequestEntries) {
            const body = JSON.parse(e.Message) as ClusterEvent;
            sent.push({ id: `${body.key}@${body.resourceVersion}`, writer: body.writer, cachedRv: (await cache.get('c1', 'PersistentVolume', body.key))?.rv });
          }
          return next(args);
        },
        { step: 'initialize', name: 'recordEntries' },
      );
      const metrics = new ForwarderMetrics();
      const publisher = new EventPublisher({
        sns,
        topicArn: messaging.topicArn,
        metrics,
        review: createEventReview({ doc: db.doc, table: db.tables.cache, onOutcome: (e, outcome) => metrics.reviewed.inc({ kind: e.kind, outcome }) }),
        write: options.write ?? ((e) => cache.putDetailed(e.cluster, e.kind, objectOf(e))),
        ownWriteHoldMs: options.holdMs ?? 0,
        ownWriteLookMs: 10,
        retryInitialMs: 5,
        ...(options.progress ? { onProgress: async (p: Progress) => void options.progress!.push(p) } : {}),
        ...(options.subscribed ? { subscribed: options.subscribed } : {}),
      });
      publisher.start();
      const stop = async () => {
        await publisher.flush();
        await publisher.stop();
        sns.destroy();
      };
      const counted = async (name: 'cacheWrites' | 'reviewed') =>
        Object.fromEntries((await metrics[name].get()).values.filter((v) => v.value > 0).map((v) => [String(v.labels.outcome), v.value]));
      /** Events left unpublished, by `kind type`. */
      const unsubscribed = async () =>
        Object.fromEntries((await metrics.unsubscribed.get()).values.filter((v) => v.value > 0).map((v) => [`${v.labels.kind} ${v.labels.type}`, v.value]));
      return { publisher, sent, stop, counted, unsubscribed };
    };

    it('the table: tagged by its write-back (not written), written (then sent), superseded (dropped), deleted since (sent, not written)', async () => {
      // The superseded one last: its bookmark must still move.
      const cases = {
        writtenBack: volume('u-back', 10),
        notThere: volume('u-new', 20),
        deletedSince: volume('u-gone', 40),
        recreatedSince: volume('u-again', 50),
        superseded: volume('u-old', 60),
      };
      await cache.put('c1', 'PersistentVolume', objectOf(cases.writtenBack), { writer: 'binder' });
      await cache.put('c1', 'PersistentVolume', objectOf(volume('u-new', 19)));
      await cache.put('c1', 'PersistentVolume', objectOf(volume('u-old', 61)), { writer: 'provisioner' });
      await cache.put('c1', 'PersistentVolume', objectOf(volume('u-gone', 39)));
      await cache.remove('c1', 'PersistentVolume', objectOf(volume('u-gone', 39)), 41);
      const again = objectOf(volume('u-again', 52));
      await cache.put('c1', 'PersistentVolume', { ...again, metadata: { ...again.metadata, uid: 'uid-u-again-2' } });
      const progress: Progress[] = [];
      const { publisher, sent, stop, counted } = start({ progress });
      for (const e of Object.values(cases)) await publisher.enqueue({ event: e, unwritten: true, progress: { kind: 'PersistentVolume', rv: e.resourceVersion } });
      await stop();
      assert.deepEqual(
        [...sent].sort((a, b) => a.id.localeCompare(b.id)),
        [
          { id: 'u-again@50', writer: undefined, cachedRv: 52 },
          { id: 'u-back@10', writer: 'binder', cachedRv: 10 },
          { id: 'u-gone@40', writer: undefined, cachedRv: 41 },
          { id: 'u-new@20', writer: undefined, cachedRv: 20 },
        ],
        'each sent with the cache holding it (or its object’s successor); the superseded version not at all',
      );
      const gone = await cache.get('c1', 'PersistentVolume', 'u-gone');
      assert.deepEqual([gone?.rv, gone?.deleted], [41, true], 'the tombstone stays');
      assert.equal((await cache.get('c1', 'PersistentVolume', 'u-old'))?.rv, 61, 'the newer version stays');
      assert.equal((await cache.get('c1', 'PersistentVolume', 'u-again'))?.uid, 'uid-u-again-2', 'the new object stays');
      assert.deepEqual(await counted('cacheWrites'), { written: 1 }, 'only the version no write-back had was written');
      assert.deepEqual(await counted('reviewed'), { 'own-write': 1, superseded: 1 });
      assert.equal(progress.at(-1)?.rv, '60', 'the dropped event moved the bookmark on like the others');
    });

    it('versions a controller may have written back are first looked at on the tick: two of one sync, one read', async () => {
      const { reads, doc } = countingReads();
      const lookMs = 100;
      // A volume and its claim as a bind leaves them, both written back already.
      const claim = { ...volume('sync-claim', 21), kind: 'PersistentVolumeClaim' as const, key: 'ns/sync-claim' };
      await cache.put('c1', 'PersistentVolume', objectOf(volume('sync-volume', 20)), { writer: 'binder' });
      await cache.put('c1', 'PersistentVolumeClaim', { ...objectOf(claim), kind: 'PersistentVolumeClaim', metadata: { name: 'sync-claim', namespace: 'ns', uid: 'uid-sync-claim', resourceVersion: '21' } }, { writer: 'binder' });
      const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      const sent: Array<{ id: string; writer: string | undefined }> = [];
      let publishes = 0;
      sns.middlewareStack.add(
        (next) => async (args: any) => {
          publishes++;
          for (const e of args.input.PublishBatchRequestEntries) {
            const body = JSON.parse(e.Message) as ClusterEvent;
            sent.push({ id: `${body.key}@${body.resourceVersion}`, writer: body.writer });
          }
          return next(args);
        },
        { step: 'initialize', name: 'recordEntries' },
      );
      const metrics = new ForwarderMetrics();
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: createEventReview({ doc, table: db.tables.cache }), write: (e) => cache.putDetailed(e.cluster, e.kind, objectOf(e)), ownWriteHoldMs: 200, ownWriteLookMs: lookMs });
      publisher.start();
      try {
        // Early in a tick, so both wait for the same one.
        while (Date.now() % lookMs > 10) await new Promise((resolve) => setTimeout(resolve, 1));
        await publisher.enqueue({ event: volume('sync-volume', 20), unwritten: true });
        await publisher.enqueue({ event: claim, unwritten: true });
        await publisher.flush();
      } finally {
        await publisher.stop();
        sns.destroy();
      }
      // Looked at one by one as they came, the first alone in its batch, they took two reads (and two
      // PublishBatches: each hold sent its own).
      assert.deepEqual(reads, [2], 'both in one read');
      assert.equal(publishes, 1, 'both settled on the tick: sent in one PublishBatch');
      assert.deepEqual([...sent].sort((a, b) => a.id.localeCompare(b.id)), [{ id: 'ns/sync-claim@21', writer: 'binder' }, { id: 'sync-volume@20', writer: 'binder' }]);
    });

    it('an event leaves the bound on held events when it is sent, not when the rest of its hold ends', async () => {
      await cache.put('c1', 'PersistentVolume', objectOf(volume('bound-mine', 30)), { writer: 'binder' });
      const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      const sent: string[] = [];
      sns.middlewareStack.add(
        (next) => async (args: any) => {
          const keys = args.input.PublishBatchRequestEntries.map((e: any) => (JSON.parse(e.Message) as ClusterEvent).key);
          sent.push(...keys);
          // The first batch (a Node's) stays at the topic a while, so the next batch takes both volumes.
          if (keys.includes('bound-slow')) await new Promise((resolve) => setTimeout(resolve, 150));
          return next(args);
        },
        { step: 'initialize', name: 'recordEntries' },
      );
      const metrics = new ForwarderMetrics();
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics, review: createEventReview({ doc: db.doc, table: db.tables.cache }), write: (e) => cache.putDetailed(e.cluster, e.kind, objectOf(e)), ownWriteHoldMs: 400, ownWriteLookMs: 20, maxHeld: 2 });
      publisher.start();
      try {
        await publisher.enqueue({ event: event('bound-slow', 1) });
        // One batch, one hold of two: the binder's own write (sent at its first look) and a user's (held to the end).
        await publisher.enqueue({ event: volume('bound-mine', 30), unwritten: true });
        await publisher.enqueue({ event: volume('bound-user', 31), unwritten: true });
        const deadline = Date.now() + 5_000;
        while (!sent.includes('bound-mine') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
        assert.ok(sent.includes('bound-mine') && !sent.includes('bound-user'), 'the own write sent, the user write still held');
        // One of the two places is free again: another user's write is held, not sent at once untagged.
        await publisher.enqueue({ event: volume('bound-other', 32), unwritten: true });
        await publisher.flush();
      } finally {
        await publisher.stop();
        sns.destroy();
      }
      const held = Object.fromEntries((await metrics.held.get()).values.filter((v) => v.value > 0).map((v) => [String(v.labels.outcome), v.value]));
      assert.deepEqual(held, { tagged: 1, untagged: 2 }, 'none past the bound (full)');
    });

    it('holds begun apart look again on a shared tick: their looks share the reads', async () => {
      const { reads, doc } = countingReads();
      const holdMs = 600;
      const lookMs = 20;
      const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      const metrics = new ForwarderMetrics();
      const publisher = new EventPublisher({
        sns,
        topicArn: messaging.topicArn,
        metrics,
        review: createEventReview({ doc, table: db.tables.cache }),
        write: (e) => cache.putDetailed(e.cluster, e.kind, objectOf(e)),
        ownWriteHoldMs: holdMs,
        ownWriteLookMs: lookMs,
      });
      publisher.start();
      try {
        // Two users' writes (never tagged), half a look apart: each held for the whole window.
        await publisher.enqueue({ event: volume('tick-a', 10), unwritten: true });
        await new Promise((resolve) => setTimeout(resolve, lookMs / 2));
        await publisher.enqueue({ event: volume('tick-b', 10), unwritten: true });
        await publisher.flush();
      } finally {
        await publisher.stop();
        sns.destroy();
      }
      const untagged = (await metrics.held.get()).values.find((v) => v.labels.outcome === 'untagged')?.value;
      assert.equal(untagged, 2, 'both held to the end of their windows');
      assert.equal((await cache.get('c1', 'PersistentVolume', 'tick-a'))?.rv, 10, 'then written');
      assert.equal((await cache.get('c1', 'PersistentVolume', 'tick-b'))?.rv, 10, 'then written');
      // Each window is ~holdMs / lookMs looks. On a shared tick nearly every look after the second hold's
      // first reads both events (27-32 of 30 in a run of six); on their own ticks, half a look apart, only
      // those a read still out happened to join (17-22).
      const both = reads.filter((keys) => keys === 2).length;
      assert.ok(both >= 0.8 * (holdMs / lookMs), `${both} of ${reads.length} reads looked at both held events`);
    });

    it('a MODIFIED event held for its write-back is sent tagged and never written; one whose hold runs out is written, then sent untagged', async () => {
      await cache.put('c1', 'PersistentVolume', objectOf(volume('h-mine', 50)), { writer: 'provisioner' });
      await cache.put('c1', 'PersistentVolume', objectOf(volume('h-user', 60)));
      const writes: string[] = [];
      const { publisher, sent, stop, counted } = start({
        holdMs: 400,
        write: (e) => (writes.push(`${e.key}@${e.resourceVersion}`), cache.putDetailed(e.cluster, e.kind, objectOf(e))),
      });
      await publisher.enqueue({ event: volume('h-mine', 51), unwritten: true });
      await publisher.enqueue({ event: volume('h-user', 61), unwritten: true });
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(sent.length, 0, 'both held');
      // The binder's write-back lands within the hold.
      await cache.put('c1', 'PersistentVolume', objectOf(volume('h-mine', 51)), { writer: 'binder' });
      await stop();
      assert.deepEqual(
        [...sent].sort((a, b) => a.id.localeCompare(b.id)),
        [
          { id: 'h-mine@51', writer: 'binder', cachedRv: 51 },
          { id: 'h-user@61', writer: undefined, cachedRv: 61 },
        ],
      );
      assert.deepEqual(writes, ['h-user@61'], 'only the version no write-back brought');
      assert.deepEqual(await counted('cacheWrites'), { written: 1 });
    });

    it('events no subscription takes: written as any other, never sent, counted, and their bookmarks move (looked up at once, or after a hold)', async () => {
      // Tagged at the first look (sent from the batch), tagged during its hold (sent from the hold), and
      // never tagged (the hold runs out: written by the publisher first).
      await cache.put('c1', 'PersistentVolume', objectOf(volume('n-first', 90)), { writer: 'binder' });
      await cache.put('c1', 'PersistentVolume', objectOf(volume('n-held', 94)));
      await cache.put('c1', 'PersistentVolume', objectOf(volume('n-user', 97)));
      const progress: Progress[] = [];
      const asked: string[] = [];
      const { publisher, sent, stop, unsubscribed } = start({
        holdMs: 1_500,
        progress,
        subscribed: (attributes) => (asked.push(String(attributes.writer)), false),
      });
      const events = [volume('n-first', 90), volume('n-held', 95), volume('n-user', 98)];
      for (const e of events) await publisher.enqueue({ event: e, unwritten: true, progress: { kind: 'PersistentVolume', rv: e.resourceVersion } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      await cache.put('c1', 'PersistentVolume', objectOf(volume('n-held', 95)), { writer: 'binder' });
      await stop();
      assert.deepEqual(sent, [], 'nothing reached the topic');
      assert.deepEqual(asked.sort(), ['binder', 'binder', 'cluster'], 'each asked about once, with its writer as the review left it');
      assert.equal((await cache.get('c1', 'PersistentVolume', 'n-user'))?.rv, 98, 'the untagged one written before it was left out');
      assert.deepEqual(await unsubscribed(), { 'PersistentVolume MODIFIED': 3 }, 'all three counted');
      assert.equal(progress.at(-1)?.rv, '98', 'the bookmark moved past all of them');
    });

    it('an unwritten event the review does not hold (an ADDED; the reflector now writes those itself) is written and sent at once', async () => {
      const { publisher, sent, stop } = start({ holdMs: 60_000 });
      await publisher.enqueue({ event: volume('a-new', 70, 'ADDED'), unwritten: true });
      await stop();
      assert.deepEqual(sent, [{ id: 'a-new@70', writer: undefined, cachedRv: 70 }]);
    });

    it('a failed write is retried, the event waiting for it; a write-back that lands meanwhile tags it', async () => {
      let failures = 2;
      const { publisher, sent, stop, counted } = start({
        write: async (e) => {
          if (failures-- > 0) throw Object.assign(new Error('Throughput exceeds the current capacity'), { name: 'ThrottlingException' });
          return cache.putDetailed(e.cluster, e.kind, objectOf(e));
        },
      });
      await publisher.enqueue({ event: volume('f-retry', 80), unwritten: true });
      await stop();
      assert.deepEqual(sent, [{ id: 'f-retry@80', writer: undefined, cachedRv: 80 }], 'sent once, after its write');
      assert.deepEqual(await counted('cacheWrites'), { failed: 2, written: 1 });

      // A write refused because the version is there, tagged: the event goes out with the tag.
      const second = start({
        write: async (e) => {
          await cache.put('c1', 'PersistentVolume', objectOf(e), { writer: 'binder' });
          return cache.putDetailed(e.cluster, e.kind, objectOf(e));
        },
      });
      await second.publisher.enqueue({ event: volume('f-late', 90), unwritten: true });
      await second.stop();
      assert.deepEqual(second.sent, [{ id: 'f-late@90', writer: 'binder', cachedRv: 90 }]);
      assert.deepEqual(await second.counted('cacheWrites'), { unchanged: 1 });
    });

    it('a failed review still writes before sending; a write refused by a new object of the name sends the old one’s version', async () => {
      const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      const sent: string[] = [];
      sns.middlewareStack.add(
        (next) => async (args: any) => {
          for (const e of args.input.PublishBatchRequestEntries) sent.push(`${JSON.parse(e.Message).key}@${JSON.parse(e.Message).resourceVersion}`);
          return next(args);
        },
        { step: 'initialize', name: 'recordEntries' },
      );
      const metrics = new ForwarderMetrics();
      let reviews = 0;
      const publisher = new EventPublisher({
        sns,
        topicArn: messaging.topicArn,
        metrics,
        // The first review fails (its events go out as they are: written first); later ones read the cache.
        review: async (events, unwritten) => {
          if (reviews++ === 0) throw new Error('ProvisionedThroughputExceededException');
          return createEventReview({ doc: db.doc, table: db.tables.cache })(events, unwritten);
        },
        write: async (e) => {
          if (e.key === 'r-again') {
            // Deleted and created again between the look and the write: the new object is cached first.
            const next = objectOf(volume('r-again', 112));
            await cache.put('c1', 'PersistentVolume', { ...next, metadata: { ...next.metadata, uid: 'uid-r-again-2' } });
          }
          return cache.putDetailed(e.cluster, e.kind, objectOf(e));
        },
        retryInitialMs: 5,
      });
      publisher.start();
      try {
        await publisher.enqueue({ event: volume('r-failed', 100), unwritten: true });
        await publisher.flush();
        await publisher.enqueue({ event: volume('r-again', 110), unwritten: true });
        await publisher.flush();
      } finally {
        await publisher.stop();
        sns.destroy();
      }
      assert.deepEqual(sent, ['r-failed@100', 'r-again@110']);
      assert.equal((await cache.get('c1', 'PersistentVolume', 'r-failed'))?.rv, 100, 'written although the review failed');
      assert.equal((await cache.get('c1', 'PersistentVolume', 'r-again'))?.uid, 'uid-r-again-2', 'the new object stays');
      const writes = Object.fromEntries((await metrics.cacheWrites.get()).values.filter((v) => v.value > 0).map((v) => [String(v.labels.outcome), v.value]));
      assert.deepEqual(writes, { written: 1, gone: 1 });
    });

    it('refuses an unwritten event without a write to make', async () => {
      const sns = new SNSClient({ endpoint: messaging.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      const publisher = new EventPublisher({ sns, topicArn: messaging.topicArn, metrics: new ForwarderMetrics() });
      await assert.rejects(publisher.enqueue({ event: volume('x', 1), unwritten: true }), /needs the publisher’s `write`/);
      assert.equal(publisher.depth, 0);
      await publisher.stop();
      sns.destroy();
    });
  });
});
