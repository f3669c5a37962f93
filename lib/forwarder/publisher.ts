/**
 * The forwarder's publish queue: a bounded in-memory FIFO drained into the SNS FIFO topic with
 * `PublishBatch`, one batch at a time, retried with exponential backoff until it succeeds.
 *
 * - Order: up to `maxInFlight` batches are in flight at once, but a message group (one object) is in at
 *   most one of them and a batch never holds two messages of one group, so neither concurrent batches nor a
 *   partially failed batch (only its failed entries are retried) can reorder an object's events. A batch
 *   is the longest run of queued items that keeps to this, so the queue is taken in order.
 * - Bounded memory: {@link EventPublisher.enqueue} waits while the queue is full; the reflectors await it,
 *   so their watches pause (TCP backpressure) and nothing is dropped.
 * - Bounded stop: {@link EventPublisher.stop} with `flush` waits for the queue to drain, but at most
 *   `timeoutMs`, and not at all once the topic is failing (a publish failed and has not succeeded since):
 *   what is left was never acknowledged, so no bookmark passed it and the next leader re-derives it.
 * - Progress: items may carry a progress marker (kind, resourceVersion); once every item before it has been
 *   published, `onProgress` is called with it (the forwarder saves its bookmark there), so a bookmark never
 *   runs ahead of what the topic accepted.
 *
 * @example
 * const publisher = new EventPublisher({ sns, topicArn, metrics, onProgress: async (p) => save(p) });
 * publisher.start();
 * await publisher.enqueue({ event, progress: { kind: event.kind, rv: event.resourceVersion } });
 * await publisher.stop({ flush: true });
 */
import { PublishBatchCommand, type PublishBatchRequestEntry, type SNSClient } from '@aws-sdk/client-sns';
import { messageAttributes, messageDeduplicationId, messageGroupId, type ClusterEvent, type WatchedKind } from '../runtime/message.ts';
import type { ForwarderMetrics } from './metrics.ts';
import type { EventReview } from './review.ts';

/** SNS caps a message, and a whole PublishBatch request, at 256 KiB. */
export const SNS_MAX_BYTES = 262_144;
/** Room kept for attributes and the request envelope. */
const SIZE_MARGIN = 4_096;
export const MAX_BATCH_ENTRIES = 10;

export interface Progress {
  kind: WatchedKind;
  rv: string;
  /** The LIST of this kind at `rv` is complete (the forwarder marks it in the sync record). */
  listComplete?: boolean;
}

export interface PublishItem {
  /** The message to publish; absent for a pure progress marker. */
  event?: ClusterEvent;
  progress?: Progress;
  /** When the event was seen (epoch ms), for the lag histogram. */
  seenAt?: number;
}

export interface PublisherOptions {
  sns: SNSClient;
  topicArn: string;
  metrics: ForwarderMetrics;
  /** Items held in memory before enqueue waits. Default 1000. */
  capacity?: number;
  /** First retry delay, ms (doubles, jittered). Default 100. */
  retryInitialMs?: number;
  /** Longest retry delay, ms. Default 5000. */
  retryMaxMs?: number;
  onProgress?: (progress: Progress) => Promise<void>;
  onError?: (err: unknown) => void;
  /** Batches in flight at once (default 4). */
  maxInFlight?: number;
  /** A last look at each batch's events before it is sent (review.ts): retag or drop; a failure sends them as they are. */
  review?: EventReview;
}

/** The JSON body of an event, without its object when that would exceed the SNS size limit. */
export function messageBody(event: ClusterEvent): string {
  const body = JSON.stringify(event);
  if (Buffer.byteLength(body) <= SNS_MAX_BYTES - SIZE_MARGIN) return body;
  const { object: _omitted, ...rest } = event;
  return JSON.stringify(rest);
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** See the module comment. */
export class EventPublisher {
  #options: PublisherOptions;
  #capacity: number;
  #queue: PublishItem[] = [];
  #spaceWaiters: Array<() => void> = [];
  /** Woken after every batch (and on stop): flush() re-checks its target. */
  #progressWaiters: Array<() => void> = [];
  /** Items ever enqueued, and items ever finished (published or discarded). */
  #enqueued = 0;
  #finished = 0;
  #wake: (() => void) | undefined;
  /** A wake-up arrived while the loop was not waiting: it looks again before it waits. */
  #woken = false;
  #abort = new AbortController();
  #loop: Promise<void> | undefined;
  /** Items at the front of the queue handed to batches (in flight, or done and not yet retired). */
  #taken = 0;
  /** Batches in queue order, in flight or done. */
  #batches: Array<{ items: PublishItem[]; groups: Set<string>; done: boolean }> = [];
  /** Message groups of the batches in flight. */
  #busyGroups = new Set<string>();
  /** The last publish attempt failed and none has succeeded since. */
  #failing = false;
  /** Set by stop(): called when a publish attempt fails, ending a shutdown flush. */
  #onFailure: (() => void) | undefined;

  constructor(options: PublisherOptions) {
    this.#options = options;
    this.#capacity = options.capacity ?? 1000;
  }

  /** Items waiting (including the batch in flight). */
  get depth(): number {
    return this.#queue.length;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** True while the topic is failing (the last publish attempt failed and none succeeded since). */
  get failing(): boolean {
    return this.#failing;
  }

  /**
   * Adds an item; waits while the queue is full. Returns without adding it when the publisher stops or
   * `signal` (the caller's own stop) aborts while it waits.
   */
  async enqueue(item: PublishItem, signal?: AbortSignal): Promise<void> {
    while (this.#queue.length >= this.#capacity && !this.#abort.signal.aborted && !signal?.aborted) {
      await this.#waitOn(this.#spaceWaiters, signal);
    }
    if (this.#abort.signal.aborted || signal?.aborted) return;
    this.#queue.push(item);
    this.#enqueued++;
    this.#options.metrics.queueDepth.set(this.#queue.length);
    this.#signal();
  }

  /**
   * Resolves once everything enqueued before the call has been published (items enqueued later do not
   * hold it up, so a busy stream cannot starve it), the publisher stopped, or `signal` aborted.
   */
  async flush(signal?: AbortSignal): Promise<void> {
    const target = this.#enqueued;
    while (this.#finished < target && !this.#abort.signal.aborted && !signal?.aborted) {
      await this.#waitOn(this.#progressWaiters, signal);
    }
  }

  /** Waits until `waiters` is released or `signal` aborts. */
  async #waitOn(waiters: Array<() => void>, signal: AbortSignal | undefined): Promise<void> {
    await new Promise<void>((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        resolve();
      };
      waiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Drops everything not yet published (a replica that lost its lease must not publish). */
  discard(): void {
    // The batches in flight finish by themselves; everything behind them is dropped.
    const dropped = this.#queue.splice(this.#taken);
    this.#finished += dropped.length;
    this.#release(this.#progressWaiters);
    this.#options.metrics.queueDepth.set(0);
    this.#release(this.#spaceWaiters);
  }

  /**
   * Stops the loop; with `flush`, first publishes what is queued, waiting at most `timeoutMs` and giving
   * up at once when the topic is failing (now, or at any attempt while it waits).
   */
  async stop(options: { flush?: boolean; timeoutMs?: number } = {}): Promise<void> {
    if (options.flush && !this.#failing) {
      const giveUp = new AbortController();
      this.#onFailure = () => giveUp.abort();
      const timer = setTimeout(() => giveUp.abort(), options.timeoutMs ?? 25_000);
      await this.flush(giveUp.signal);
      clearTimeout(timer);
      this.#onFailure = undefined;
    }
    this.#abort.abort();
    this.#signal();
    this.#release(this.#spaceWaiters);
    this.#release(this.#progressWaiters);
    await this.#loop;
  }

  #release(waiters: Array<() => void>): void {
    for (const resolve of waiters.splice(0)) resolve();
  }

  /** Wakes the loop, or tells it to look again before it next waits. */
  #signal(): void {
    this.#woken = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    const maxInFlight = Math.max(1, this.#options.maxInFlight ?? 4);
    const inFlight = new Set<Promise<void>>();
    while (!signal.aborted) {
      await this.#retire();
      if (signal.aborted) break;
      const batch = inFlight.size < maxInFlight ? this.#takeBatch() : undefined;
      if (batch) {
        const task = this.#publish(batch.items, signal).then(() => {
          batch.done = true;
          for (const group of batch.groups) this.#busyGroups.delete(group);
        });
        inFlight.add(task);
        void task.finally(() => {
          inFlight.delete(task);
          this.#signal();
        });
        continue;
      }
      if (this.#woken) {
        this.#woken = false;
        continue;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
      this.#woken = false;
    }
    await Promise.allSettled([...inFlight]);
  }

  /** Retires the done batches at the front, in order: their items leave the queue and their progress is reported. */
  async #retire(): Promise<void> {
    while (this.#batches[0]?.done) {
      const { items } = this.#batches.shift()!;
      // The queue may have been cut by discard() meanwhile (lost lease): only remove what is still there.
      const finished = this.#queue[0] === items[0] ? this.#queue.splice(0, items.length).length : 0;
      this.#taken = Math.max(0, this.#taken - items.length);
      this.#options.metrics.queueDepth.set(this.#queue.length);
      this.#release(this.#spaceWaiters);
      await this.#reportProgress(items);
      this.#finished += finished;
      this.#release(this.#progressWaiters);
    }
  }

  /**
   * The next batch: the longest run of untaken items with ≤10 messages of distinct groups, none of them in
   * flight, within the size limit; undefined when the run would be empty.
   */
  #takeBatch(): { items: PublishItem[]; groups: Set<string>; done: boolean } | undefined {
    const groups = new Set<string>();
    let bytes = 0;
    let messages = 0;
    let count = 0;
    for (let index = this.#taken; index < this.#queue.length; index++) {
      const item = this.#queue[index];
      if (item.event) {
        const group = messageGroupId(item.event.cluster, item.event.kind, item.event.key);
        const size = Buffer.byteLength(messageBody(item.event)) + SIZE_MARGIN / MAX_BATCH_ENTRIES;
        if (messages === MAX_BATCH_ENTRIES || groups.has(group) || this.#busyGroups.has(group) || (messages > 0 && bytes + size > SNS_MAX_BYTES - SIZE_MARGIN)) break;
        groups.add(group);
        bytes += size;
        messages++;
      }
      count++;
      if (count >= 100) break;
    }
    if (count === 0) return undefined;
    const batch = { items: this.#queue.slice(this.#taken, this.#taken + count), groups, done: false };
    this.#taken += count;
    for (const group of groups) this.#busyGroups.add(group);
    this.#batches.push(batch);
    return batch;
  }

  async #publish(items: PublishItem[], signal: AbortSignal): Promise<void> {
    let pending = await this.#review(items.filter((item) => item.event));
    let delay = this.#options.retryInitialMs ?? 100;
    while (pending.length > 0 && !signal.aborted) {
      const entries: PublishBatchRequestEntry[] = pending.map((item, index) => ({
        Id: String(index),
        Message: messageBody(item.event!),
        MessageGroupId: messageGroupId(item.event!.cluster, item.event!.kind, item.event!.key),
        MessageDeduplicationId: messageDeduplicationId(item.event!),
        MessageAttributes: messageAttributes(item.event!),
      }));
      let failed: PublishItem[];
      try {
        const out = await this.#options.sns.send(new PublishBatchCommand({ TopicArn: this.#options.topicArn, PublishBatchRequestEntries: entries }), {
          abortSignal: signal,
        });
        const failedIds = new Set((out.Failed ?? []).map((f) => f.Id));
        const now = Date.now();
        for (const [index, item] of pending.entries()) {
          if (failedIds.has(String(index))) continue;
          this.#options.metrics.published.inc({ kind: item.event!.kind, type: item.event!.type });
          if (item.seenAt !== undefined) this.#options.metrics.publishLag.observe((now - item.seenAt) / 1000);
        }
        failed = pending.filter((_, index) => failedIds.has(String(index)));
        this.#failing = failed.length > 0;
        if (failed.length > 0) {
          this.#options.metrics.publishErrors.inc(failed.length);
          this.#options.onError?.(new Error(`PublishBatch: ${failed.length} entries failed: ${(out.Failed ?? []).map((f) => f.Code).join(', ')}`));
        }
      } catch (err) {
        if (signal.aborted) return;
        this.#options.metrics.publishErrors.inc();
        this.#options.onError?.(err);
        failed = pending;
        this.#failing = true;
      }
      if (this.#failing) this.#onFailure?.();
      pending = failed;
      if (pending.length > 0) {
        await sleep(delay / 2 + Math.random() * (delay / 2), signal);
        delay = Math.min(delay * 2, this.#options.retryMaxMs ?? 5000);
      }
    }
  }

  /** The batch as the review leaves it (see {@link PublisherOptions.review}). */
  async #review(items: PublishItem[]): Promise<PublishItem[]> {
    const review = this.#options.review;
    if (!review || items.length === 0) return items;
    try {
      const reviewed = await review(items.map((item) => item.event!));
      return items.flatMap((item, index) => (reviewed[index] ? [{ ...item, event: reviewed[index] }] : []));
    } catch (err) {
      this.#options.onError?.(err);
      return items;
    }
  }

  /** Reports progress in queue order, coalescing consecutive bookmarks of a kind into the last one. */
  async #reportProgress(items: PublishItem[]): Promise<void> {
    if (!this.#options.onProgress) return;
    const ordered: Progress[] = [];
    const latest = new Map<string, Progress>();
    for (const item of items) {
      const progress = item.progress;
      if (!progress) continue;
      if (!progress.listComplete) {
        latest.set(progress.kind, progress);
        continue;
      }
      const pending = latest.get(progress.kind);
      if (pending) ordered.push(pending);
      latest.delete(progress.kind);
      ordered.push(progress);
    }
    ordered.push(...latest.values());
    for (const progress of ordered) {
      try {
        await this.#options.onProgress(progress);
      } catch (err) {
        this.#options.onError?.(err);
      }
    }
  }

}
