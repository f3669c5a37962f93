/**
 * The forwarder's publish queue: a bounded in-memory FIFO drained into the SNS FIFO topic with
 * `PublishBatch`, retried with exponential backoff until it succeeds.
 *
 * - Batching: a batch goes out at once while the topic is idle; while one is in flight, only full batches
 *   (10 messages) join it, so batches grow with the load instead of the request count.
 * - Order: up to `maxInFlight` batches are in flight at once. A message group (one object) is in at most
 *   one of them, a batch never holds two messages of one group, and a group's messages are taken in queue
 *   order, so neither concurrent batches nor a partially failed batch (only its failed entries are
 *   retried) can reorder an object's events. Across groups the queue is not a line: a batch takes the
 *   oldest messages of groups that are free and skips a busy group's (the group then waits, whole, for its
 *   batch), so one object's burst of versions does not hold every other object behind it.
 * - Bounded memory: {@link EventPublisher.enqueue} waits while the queue is full; the reflectors await it,
 *   so their watches pause (TCP backpressure) and nothing is dropped.
 * - Bounded stop: {@link EventPublisher.stop} with `flush` waits for the queue to drain, but at most
 *   `timeoutMs`, and not at all once the publisher is failing (a publish or cache write failed and no
 *   publish has succeeded since): what is left was never acknowledged, so no bookmark passed it and the
 *   next leader re-derives it.
 * - Cache writes: a volume's or claim's event a controller may have written back itself comes `unwritten`
 *   (reflector.ts). The review before sending finds it tagged by the write-back (no write), superseded
 *   (dropped), its object gone (sent, nothing to write) or not there; the publisher writes what is not
 *   there with `write` just before sending it, retrying until the cache answers (the batch waits, as for a
 *   failed publish), so each version is in the cache before its message goes out, as with the reflector's
 *   own writes, except one whose object is gone and one too large to cache.
 * - Subscribers: with `subscribed`, an event no subscription of the topic takes is written to the cache
 *   as any other and not published (the forwarder's: topic-subscriptions.ts); it counts as published below.
 * - Progress: items may carry a progress marker (kind, resourceVersion). Items leave the queue in queue
 *   order, once they and everything before them are published (or left unpublished, no subscription
 *   taking them); `onProgress` is then called with their markers (the forwarder saves its bookmark there),
 *   so a bookmark never runs ahead of what the topic accepted. Markers are reported beside the publish
 *   loop, one call at a time, consecutive markers of a kind coalesced: a bookmark write never holds up the
 *   next batch. Plain bookmarks are reported
 *   `progressIntervalMs` after the first of them not yet reported (a crash replays at most that much: the
 *   cache refuses the older versions or the review drops them, one still cached at its version is held
 *   once more for its writer's tag, and the FIFO deduplication drops the replays); a completed LIST,
 *   flush() and stop() report at once.
 *
 * @example
 * const publisher = new EventPublisher({ sns, topicArn, metrics, onProgress: async (p) => save(p) });
 * publisher.start();
 * await publisher.enqueue({ event, progress: { kind: event.kind, rv: event.resourceVersion } });
 * await publisher.stop({ flush: true });
 */
import { PublishBatchCommand, type PublishBatchRequestEntry, type SNSClient } from '@aws-sdk/client-sns';
import { messageAttributes, messageDeduplicationId, messageGroupId, type ClusterEvent, type WatchedKind } from '../runtime/message.ts';
import { attributeValues, type AttributeValues } from './filter-policy.ts';
import type { CachePutOutcome } from '../state/cache.ts';
import { DEFAULT_BOOKMARK_INTERVAL_MS } from './config.ts';
import type { ForwarderMetrics } from './metrics.ts';
import { mayBeHeld, type EventReview, type ReviewedEvent } from './review.ts';

/** SNS caps a message, and a whole PublishBatch request, at 256 KiB. */
export const SNS_MAX_BYTES = 262_144;
/** Room kept for attributes and the request envelope. */
const SIZE_MARGIN = 4_096;
export const MAX_BATCH_ENTRIES = 10;
/** Most events held for their writer's tag at once: ~40 batches' worth, far above a burst's few (see review.ts). */
export const DEFAULT_MAX_HELD = 400;

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
  /** The event is not in the cache yet: the review may find it written back, else it is written before it is sent. */
  unwritten?: true;
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
  /**
   * How long a MODIFIED event the review found untagged (not yet written back, or cached untagged) waits for its
   * writer's tag, ms (default 0: sent at once, written first if unwritten). Stretched by twice the recent time
   * the review's looks at unwritten events took (a look includes any wait for a read already out), up to {@link
   * HOLD_STRETCH_LIMIT} times this: a write-back is a DynamoDB write sent when the writer's API response
   * arrives, about when the watch event does, so it lands about one DynamoDB round trip after the look, later on
   * a loaded table. With a hold, an untagged `unwritten` MODIFIED event (review.ts `mayBeHeld`) is first looked
   * at on the holds' next tick rather than at once: its write-back has had up to a tick to land, and the
   * versions one sync wrote go in one read. The review looks again every {@link ownWriteLookMs} meanwhile; the
   * event goes out tagged as soon as a controller's write-back tags it, untagged (written first) when the time
   * is up (a user's write), and is dropped when a newer version is cached first. Its group waits with it; other
   * groups do not. The events of one group share one window, which newer versions seen meanwhile extend (see
   * GroupState).
   */
  ownWriteHoldMs?: number;
  /** How often a held event is looked at again, ms (default 25), on a tick all holds share. */
  ownWriteLookMs?: number;
  /**
   * Most events held at once, those waiting for their first look on the tick included (default
   * {@link DEFAULT_MAX_HELD}); past it they are looked at at once and, found untagged, sent untagged.
   */
  maxHeld?: number;
  /**
   * Writes an `unwritten` event's object to the cache (a conditional put: `stale` drops the event unless
   * its object is gone, `unchanged` with a writer tags it). Required to enqueue unwritten items. A failure
   * is retried with the publish's backoff (`retryInitialMs`, `retryMaxMs`), its batch waiting meanwhile.
   */
  write?: (event: ClusterEvent) => Promise<CachePutOutcome>;
  /** Called for each failed cache write before it is retried. */
  onWriteError?: (err: unknown, event: ClusterEvent) => void;
  /**
   * Bookmarks are reported this long after the first of them not yet reported, ms (default
   * {@link DEFAULT_BOOKMARK_INTERVAL_MS}), so at most once per interval: a watch streaming events saves its
   * bookmark once per interval, not once per batch, and one object's handful of versions saves one
   * bookmark, not two. A completed LIST, flush() and stop() report at once.
   */
  progressIntervalMs?: number;
  /**
   * Whether a subscription of the topic takes a message with these attributes (the forwarder's: as SNS
   * reports its subscriptions, topic-subscriptions.ts). An event none takes is written to the cache as any
   * other, counted (`unsubscribed`) and not published: nothing would receive it; it leaves the queue as a
   * published one does, so bookmarks pass it. Default: every event is published.
   */
  subscribed?: (attributes: AttributeValues) => boolean;
}

/** The JSON body of an event, without its object when that would exceed the SNS size limit. */
export function messageBody(event: ClusterEvent): string {
  return encoded(event).body;
}

/**
 * Each event's body and its size in bytes, built once per event (events are never changed once made): the
 * batch that takes an event sizes it, and its message, sent once or again on each retry, is the same string.
 * The body lives as long as its event (at most the queue's `capacity` of them wait).
 */
const bodies = new WeakMap<ClusterEvent, { body: string; bytes: number }>();

function encoded(event: ClusterEvent): { body: string; bytes: number } {
  let kept = bodies.get(event);
  if (kept === undefined) {
    let body = JSON.stringify(event);
    let bytes = Buffer.byteLength(body);
    if (bytes > SNS_MAX_BYTES - SIZE_MARGIN) {
      const { object: _omitted, ...rest } = event;
      body = JSON.stringify(rest);
      bytes = Buffer.byteLength(body);
    }
    kept = { body, bytes };
    bodies.set(event, kept);
  }
  return kept;
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

/** A queued item: waiting, in a batch in flight, or published (it leaves the queue once every item before it has). */
interface Slot {
  item: PublishItem;
  /** The message group of its event (none for a pure progress marker). */
  group?: string;
  /** When its event was seen (the item's `seenAt`, else when it was enqueued), epoch ms. */
  seenAt: number;
  state: 'waiting' | 'taken' | 'done';
}

/**
 * A message group with events not yet sent. Its held events share one window (`holdUntil`): it opens when
 * the first of them is held, for `ownWriteHoldMs`, and each newer version of the object seen meanwhile
 * reopens it for that long from when it was seen (a controller that wrote twice in one sync tags the first
 * version with the second's write-back, which lands only after its second write), up to
 * {@link HOLD_WINDOW_LIMIT} holds' worth from its opening. It is forgotten when the group has nothing left
 * to send, so a user's quick run of writes waits one window, not one per version; a version seen after the
 * window ended (the group busy all along) opens a new one.
 */
interface GroupState {
  /** Events of the group enqueued and not yet sent (or dropped). */
  unsent: number;
  /** When the group's hold window opened and when it ends (epoch ms); unset before its first hold. */
  holdStart?: number;
  holdUntil?: number;
}

/** Events holds settled in one turn, sent together (EventPublisher #sendTogether). */
interface SendPool {
  items: PublishItem[];
  signal: AbortSignal;
  /** Resolves when every batch of the pool is sent (or the stop). */
  sent: Promise<void>;
}

/** A group's hold window reopens for newer versions up to this many holds from its opening. */
export const HOLD_WINDOW_LIMIT = 3;
/** The hold stretches with the review's round trip up to this many times `ownWriteHoldMs`. */
export const HOLD_STRETCH_LIMIT = 3;
/** Weight of the newest review in the average of their round trips. */
const RTT_WEIGHT = 0.2;

/** Items a batch search looks at past the front of the queue (bounds its cost on a full queue). */
const SCAN_LIMIT = 500;

/** See the module comment. */
export class EventPublisher {
  #options: PublisherOptions;
  #capacity: number;
  #queue: Slot[] = [];
  #spaceWaiters: Array<() => void> = [];
  /** Woken whenever items finish (and on stop): flush() re-checks its target. */
  #progressWaiters: Array<() => void> = [];
  /** Items ever enqueued, and items ever finished (published and their progress reported, or discarded). */
  #enqueued = 0;
  #finished = 0;
  #wake: (() => void) | undefined;
  /** A wake-up arrived while the loop was not waiting: it looks again before it waits. */
  #woken = false;
  #abort = new AbortController();
  #loop: Promise<void> | undefined;
  /** Events held for their writer's tag, beside the in-flight slots (each resolves to its slots). */
  #holding = new Set<Promise<void>>();
  /** How many events those holds hold. */
  #held = 0;
  /** Message groups of the batches in flight. */
  #busyGroups = new Set<string>();
  /** Per message group with events not yet sent: their number, and the hold window its events share. */
  #groups = new Map<string, GroupState>();
  /** Items out of the queue whose progress is not yet reported, and the report under way. */
  #retired: PublishItem[] = [];
  #reporting: Promise<void> | undefined;
  /** flush() and stop() waiting for the progress reported (they cut the interval short). */
  #urgent = 0;
  #wakeReporter: (() => void) | undefined;
  /** discard() was called: nothing retired afterwards may move a bookmark (items before it were dropped). */
  #discarded = false;
  /** A publish attempt or cache write failed and no publish has succeeded since. */
  #failing = false;
  /** Set by stop(): called when a publish attempt or cache write fails, ending a shutdown flush. */
  #onFailure: (() => void) | undefined;
  /** The holds' ticks by the epoch ms each ends at (see #untilTick). */
  readonly #ticks = new Map<number, Promise<void>>();
  /** The holds' sends of this turn, not yet sent (see #sendTogether). */
  #pool: SendPool | undefined;
  /** How long the review's reads of unwritten events took lately, ms (a moving average from the first). */
  #reviewRtt: number | undefined;

  constructor(options: PublisherOptions) {
    this.#options = options;
    this.#capacity = options.capacity ?? 1000;
  }

  /** Items waiting (including those in flight). */
  get depth(): number {
    return this.#queue.length;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** True while publishing is failing (a publish attempt or cache write failed and no publish succeeded since). */
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
    if (item.unwritten && !this.#options.write) throw new Error('an unwritten event needs the publisher’s `write`');
    const group = item.event ? messageGroupId(item.event.cluster, item.event.kind, item.event.key) : undefined;
    const seenAt = item.seenAt ?? Date.now();
    if (group !== undefined) this.#countIn(group, seenAt);
    // A pure progress marker has nothing to publish: it is done, and leaves in its turn.
    this.#queue.push({ item, group, seenAt, state: group === undefined ? 'done' : 'waiting' });
    this.#enqueued++;
    this.#options.metrics.queueDepth.set(this.#queue.length);
    this.#signal();
  }

  /**
   * Resolves once everything enqueued before the call has been published or left unpublished, no
   * subscription taking it (items enqueued later do not hold it up, so a busy stream cannot starve it), the
   * publisher stopped, or `signal` aborted.
   */
  async flush(signal?: AbortSignal): Promise<void> {
    const target = this.#enqueued;
    this.#urgent++;
    this.#wakeReporter?.();
    try {
      while (this.#finished < target && !this.#abort.signal.aborted && !signal?.aborted) {
        await this.#waitOn(this.#progressWaiters, signal);
      }
    } finally {
      this.#urgent--;
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
    // The batches in flight finish by themselves; every waiting item is dropped, and since the items left
    // are no longer a prefix of what the watch delivered, no bookmark moves from here on.
    this.#discarded = true;
    const kept = this.#queue.filter((slot) => slot.state !== 'waiting');
    for (const slot of this.#queue) if (slot.state === 'waiting' && slot.group !== undefined) this.#countOut(slot.group);
    this.#finished += this.#queue.length - kept.length;
    this.#queue = kept;
    this.#release(this.#progressWaiters);
    this.#options.metrics.queueDepth.set(this.#queue.length);
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
    this.#urgent++;
    this.#wakeReporter?.();
    await this.#reporting;
  }

  #release(waiters: Array<() => void>): void {
    for (const resolve of waiters.splice(0)) resolve();
  }

  /**
   * The hold now, ms: `ownWriteHoldMs` stretched by twice the review's recent round trip, at most
   * {@link HOLD_STRETCH_LIMIT} times it (see {@link PublisherOptions.ownWriteHoldMs}); 0 when off.
   */
  get holdMs(): number {
    const base = this.#options.ownWriteHoldMs ?? 0;
    return base > 0 ? Math.min(base + 2 * (this.#reviewRtt ?? 0), HOLD_STRETCH_LIMIT * base) : 0;
  }

  /** An event of `group` seen at `seenAt` joined the queue: an open hold window reopens for it (GroupState). */
  #countIn(group: string, seenAt: number): void {
    const state = this.#groups.get(group) ?? { unsent: 0 };
    state.unsent++;
    const holdMs = this.holdMs;
    if (state.holdStart !== undefined && state.holdUntil !== undefined) {
      state.holdUntil = Math.min(Math.max(state.holdUntil, seenAt + holdMs), state.holdStart + HOLD_WINDOW_LIMIT * holdMs);
    }
    this.#groups.set(group, state);
  }

  /** An event of `group` was sent (or dropped); the group is forgotten once nothing of it is left. */
  #countOut(group: string): void {
    const state = this.#groups.get(group);
    if (state && --state.unsent <= 0) this.#groups.delete(group);
  }

  /** When a held event goes out untagged at the latest: its group's window, opened now if not yet. */
  #holdUntil(slot: Slot, holdMs: number): number {
    let state = this.#groups.get(slot.group!);
    if (!state) this.#groups.set(slot.group!, (state = { unsent: 1 }));
    // A version seen after the group's last window ended (its group busy all along) opens a new one.
    if (state.holdUntil === undefined || (state.holdUntil <= Date.now() && slot.seenAt > state.holdUntil)) {
      state.holdStart = Date.now();
      state.holdUntil = state.holdStart + holdMs;
    }
    return state.holdUntil;
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
      this.#retire();
      // A short batch goes out at once while the topic is idle; while a batch is in flight only a full one
      // does, and the rest waits for the next answer (one round trip at most), so batches grow with load.
      const batch = inFlight.size < maxInFlight ? this.#takeBatch(inFlight.size === 0 ? 1 : MAX_BATCH_ENTRIES) : undefined;
      if (batch) {
        // A batch holds its in-flight slot until its settled events are sent; events held for their
        // writer's tag (ownWriteHoldMs) wait beside the slots, their groups still busy.
        const finish = (slots: Slot[]) => {
          for (const slot of slots) {
            slot.state = 'done';
            this.#busyGroups.delete(slot.group!);
            this.#countOut(slot.group!);
          }
          // A hold's send ends apart from any batch: the groups it frees may have later versions waiting.
          this.#signal();
        };
        const task = this.#publish(batch, signal, finish, (held) => {
          const holding = held.then(finish);
          this.#holding.add(holding);
          void holding.finally(() => {
            this.#holding.delete(holding);
            this.#signal();
          });
        }).then(finish);
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
    // A batch still in flight may hand events to a hold as it ends: wait until neither is left.
    while (inFlight.size > 0 || this.#holding.size > 0) await Promise.allSettled([...inFlight, ...this.#holding]);
  }

  /** Takes the done items off the front of the queue, in order, and has their progress reported. */
  #retire(): void {
    let count = 0;
    while (count < this.#queue.length && this.#queue[count].state === 'done') count++;
    if (count === 0) return;
    const items = this.#queue.splice(0, count).map((slot) => slot.item);
    this.#options.metrics.queueDepth.set(this.#queue.length);
    this.#release(this.#spaceWaiters);
    // Only the progress markers wait for the report: the published events are let go.
    this.#retired.push(...items.map((item) => (item.progress ? { progress: item.progress } : {})));
    this.#reporting ??= this.#reportRetired();
  }

  /** Reports the retired items' progress until none is left; only then do they count as finished. */
  async #reportRetired(): Promise<void> {
    // Start on a later tick, so `#reporting` is set before this can end (it may not await anything else).
    await Promise.resolve();
    while (this.#retired.length > 0) {
      const items = this.#retired.splice(0);
      if (!this.#discarded && items.some((item) => item.progress)) {
        // Plain bookmarks wait out the interval from the first of them (more arrive meanwhile and are
        // coalesced with them): a burst of events saves one bookmark per kind, not one at once and one after.
        const wait = this.#options.progressIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS;
        if (wait > 0 && this.#urgent === 0 && !items.some((item) => item.progress?.listComplete)) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, wait);
            this.#wakeReporter = done;
            function done() {
              clearTimeout(timer);
              resolve();
            }
          });
          this.#wakeReporter = undefined;
          items.push(...this.#retired.splice(0));
        }
        if (!this.#discarded) {
          await this.#reportProgress(items);
        }
      }
      this.#finished += items.length;
      this.#release(this.#progressWaiters);
    }
    this.#reporting = undefined;
  }

  /**
   * The next batch: the oldest waiting messages, at most 10 and of distinct groups, none of a group in
   * flight or with an older message left behind, within the size limit; undefined when there are fewer
   * than `least` (or the size limit alone cut the batch short of it).
   */
  #takeBatch(least: number): Slot[] | undefined {
    const batch: Slot[] = [];
    /** Groups in this batch, and groups passed over (their later messages must wait too). */
    const groups = new Set<string>();
    const passed = new Set<string>();
    let bytes = 0;
    let full = false;
    const end = Math.min(this.#queue.length, SCAN_LIMIT);
    for (let index = 0; index < end && batch.length < MAX_BATCH_ENTRIES; index++) {
      const slot = this.#queue[index];
      if (slot.state !== 'waiting') continue;
      const group = slot.group!;
      if (groups.has(group) || passed.has(group) || this.#busyGroups.has(group)) {
        passed.add(group);
        continue;
      }
      const size = encoded(slot.item.event!).bytes + SIZE_MARGIN / MAX_BATCH_ENTRIES;
      if (batch.length > 0 && bytes + size > SNS_MAX_BYTES - SIZE_MARGIN) {
        full = true;
        break;
      }
      groups.add(group);
      bytes += size;
      batch.push(slot);
    }
    if (batch.length === 0 || (batch.length < least && !full)) return undefined;
    for (const slot of batch) {
      slot.state = 'taken';
      this.#busyGroups.add(slot.group!);
    }
    return batch;
  }

  /**
   * Reviews a batch and sends what is settled; returns the slots it sent. Events to hold for their writer's
   * tag are handed to `finish` one send at a time; `onHold` gets a promise of the slots the hold did not
   * send (a discard, or the stop), resolved once every send it started is over.
   */
  async #publish(batch: Slot[], signal: AbortSignal, finish: (sent: Slot[]) => void, onHold: (held: Promise<Slot[]>) => void): Promise<Slot[]> {
    const maxHeld = this.#options.maxHeld ?? DEFAULT_MAX_HELD;
    // A version its controller may have written back is looked at first on the holds' shared tick, beside
    // the batch's slot (see #hold): its write-back has had that long to land, and the versions of a sync
    // seen meanwhile go in the same read. Within the bound on held events; past it, looked at at once.
    const onTick = this.holdMs > 0 && this.#options.review ? batch.filter((slot) => slot.item.unwritten && slot.item.event && mayBeHeld(slot.item.event)).slice(0, Math.max(0, maxHeld - this.#held)) : [];
    if (onTick.length > 0) {
      this.#held += onTick.length;
      onHold(this.#hold(onTick, signal, finish, false));
    }
    const ticking = new Set(onTick);
    const reviewed = await this.#review(batch.filter((slot) => slot.item.event && !ticking.has(slot)));
    const untagged = this.holdMs > 0 ? reviewed.filter((r) => r.untagged) : [];
    // Held events are bounded (a user relabelling a thousand volumes must not start a hundred holds, each
    // looking every lookMs and retrying on its own): past the bound they go out at once, untagged.
    const held = untagged.slice(0, Math.max(0, maxHeld - this.#held));
    for (const { slot } of untagged.slice(held.length)) this.#options.metrics.held.inc({ kind: slot.item.event!.kind, outcome: 'full' });
    if (held.length > 0) {
      this.#held += held.length;
      onHold(this.#hold(held.map((r) => r.slot), signal, finish, true));
    }
    const heldSlots = new Set(held.map((r) => r.slot));
    await this.#send(reviewed.filter((r) => !heldSlots.has(r.slot)).map((r) => r.slot.item), signal);
    return batch.filter((slot) => !heldSlots.has(slot) && !ticking.has(slot));
  }

  /**
   * Looks at held events again until their writer tags them or the hold is over, sending each when settled
   * and handing it to `finish` once sent (its group is free then, whatever the others' holds). Resolves to
   * the slots it did not send (a discard, or the stop). Events not `looked` at yet get their first look on
   * the next tick, whatever their window. The caller counted `slots` in `#held`; each leaves the count as
   * it leaves the hold (sent, dropped, or handed back).
   */
  async #hold(slots: Slot[], signal: AbortSignal, finish: (sent: Slot[]) => void, looked: boolean): Promise<Slot[]> {
    let counted = slots.length;
    const release = (n: number) => {
      this.#held -= n;
      counted -= n;
    };
    try {
      return await this.#heldUntilSettled(slots, signal, finish, looked, release);
    } finally {
      this.#held -= counted;
    }
  }

  async #heldUntilSettled(slots: Slot[], signal: AbortSignal, finish: (sent: Slot[]) => void, looked: boolean, release: (n: number) => void): Promise<Slot[]> {
    // Each event until its group's window ends (GroupState: newer versions seen meanwhile extend it).
    // (the hold as it is when the window opens: stretched by the looks' round trips so far)
    const until = (slot: Slot) => this.#holdUntil(slot, this.holdMs);
    const lookMs = Math.max(1, this.#options.ownWriteLookMs ?? 25);
    const sends: Array<Promise<void>> = [];
    const sent = new Set<Slot>();
    const send = (batch: Slot[]) => {
      if (batch.length === 0) return;
      release(batch.length);
      sends.push(
        this.#sendTogether(batch.map((slot) => slot.item), signal).then(() => {
          if (signal.aborted) return; // not sent: the stop marks them
          for (const slot of batch) sent.add(slot);
          finish(batch);
        }),
      );
    };
    let waiting = slots;
    while (waiting.length > 0 && !signal.aborted) {
      // A replica that lost its lease sends nothing more (its successor re-derives these from its bookmark).
      if (this.#discarded) break;
      const now = Date.now();
      const over = looked ? waiting.filter((slot) => until(slot) <= now) : [];
      if (over.length > 0) {
        for (const slot of over) this.#options.metrics.held.inc({ kind: slot.item.event!.kind, outcome: 'untagged' });
        send(over);
        waiting = waiting.filter((slot) => !over.includes(slot));
        if (waiting.length === 0) break;
      }
      // On a tick every hold shares (one timer wakes them all in one turn), so the looks of holds begun apart
      // go in one read (review.ts); a look again stays 0.5–1.5 lookMs after the last.
      const tick = now - (now % lookMs) + lookMs;
      if (!looked) await this.#untilTick(tick, signal);
      else {
        const next = tick - now < lookMs / 2 ? tick + lookMs : tick;
        const end = Math.min(...waiting.map(until));
        await (end < next ? sleep(end - now, signal) : this.#untilTick(next, signal));
      }
      looked = true;
      if (this.#discarded || signal.aborted) break;
      const reviewed = await this.#review(waiting);
      if (this.#discarded) break;
      // Dropped by the look (a newer version cached first): done now, its group free for that version.
      const kept = new Set(reviewed.map((r) => r.slot));
      const dropped = waiting.filter((slot) => !kept.has(slot));
      if (dropped.length > 0) {
        release(dropped.length);
        for (const slot of dropped) {
          this.#options.metrics.held.inc({ kind: slot.item.event!.kind, outcome: 'superseded' });
          sent.add(slot);
        }
        finish(dropped);
      }
      const settled = reviewed.filter((r) => !r.untagged).map((r) => r.slot);
      for (const slot of settled) this.#options.metrics.held.inc({ kind: slot.item.event!.kind, outcome: slot.item.event!.writer ? 'tagged' : 'superseded' });
      send(settled);
      waiting = reviewed.filter((r) => r.untagged).map((r) => r.slot);
    }
    if (!this.#discarded) {
      for (const slot of waiting) this.#options.metrics.held.inc({ kind: slot.item.event!.kind, outcome: 'untagged' });
      send(waiting);
    }
    // Sends already under way finish before the rest is handed back.
    await Promise.all(sends);
    return slots.filter((slot) => !sent.has(slot));
  }

  /** Waits for the holds' tick that ends at `at` (epoch ms) with every other hold waiting for it, or the stop. */
  #untilTick(at: number, signal: AbortSignal): Promise<void> {
    let tick = this.#ticks.get(at);
    if (!tick) {
      tick = new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()))).then(() => void this.#ticks.delete(at));
      this.#ticks.set(at, tick);
    }
    const ended = tick;
    return new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      void ended.then(done);
    });
  }

  /**
   * Sends what holds settle in one turn of the event loop (the holds look on a shared tick) together, in
   * PublishBatches of up to {@link MAX_BATCH_ENTRIES}, as a batch's own events go; resolves when the
   * batches carrying `items` are sent (or the stop). Holds never share a message group, so neither do the
   * events sent together.
   */
  #sendTogether(items: PublishItem[], signal: AbortSignal): Promise<void> {
    let pool = this.#pool;
    if (!pool || pool.signal !== signal) {
      const fresh: SendPool = { items: [], signal, sent: Promise.resolve() };
      fresh.sent = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        if (this.#pool === fresh) this.#pool = undefined;
        const parts = Array.from({ length: Math.ceil(fresh.items.length / MAX_BATCH_ENTRIES) }, (_, i) => fresh.items.slice(i * MAX_BATCH_ENTRIES, (i + 1) * MAX_BATCH_ENTRIES));
        await Promise.all(parts.map((part) => this.#send(part, signal)));
      });
      this.#pool = fresh;
      pool = fresh;
    }
    pool.items.push(...items);
    return pool.sent;
  }

  async #send(items: PublishItem[], signal: AbortSignal): Promise<void> {
    const subscribed = this.#options.subscribed;
    const written = await this.#written(items, signal);
    let pending = written.flatMap((item) => {
      const attributes = messageAttributes(item.event!);
      if (!subscribed || subscribed(attributeValues(attributes))) return [{ item, attributes }];
      this.#options.metrics.unsubscribed.inc({ kind: item.event!.kind, type: item.event!.type });
      return [];
    });
    // Written, and nothing of it to publish: as healthy as a publish that succeeded.
    if (pending.length === 0 && written.length > 0 && !signal.aborted) this.#failing = false;
    const backOff = this.#retryBackoff();
    while (pending.length > 0 && !signal.aborted) {
      const entries: PublishBatchRequestEntry[] = pending.map(({ item, attributes }, index) => ({
        Id: String(index),
        Message: messageBody(item.event!),
        MessageGroupId: messageGroupId(item.event!.cluster, item.event!.kind, item.event!.key),
        MessageDeduplicationId: messageDeduplicationId(item.event!),
        MessageAttributes: attributes,
      }));
      let failed: typeof pending;
      try {
        const out = await this.#options.sns.send(new PublishBatchCommand({ TopicArn: this.#options.topicArn, PublishBatchRequestEntries: entries }), {
          abortSignal: signal,
        });
        const failedIds = new Set((out.Failed ?? []).map((f) => f.Id));
        const now = Date.now();
        for (const [index, { item }] of pending.entries()) {
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
      if (pending.length > 0) await backOff(signal);
    }
  }

  /** A retry loop's waits: equal jitter over a delay doubling from `retryInitialMs` up to `retryMaxMs`. */
  #retryBackoff(): (signal: AbortSignal) => Promise<void> {
    let delay = this.#options.retryInitialMs ?? 100;
    return async (signal) => {
      await sleep(delay / 2 + Math.random() * (delay / 2), signal);
      delay = Math.min(delay * 2, this.#options.retryMaxMs ?? 5000);
    };
  }

  /**
   * `items` with their unwritten events written to the cache: each write retried until the cache answers
   * (or the stop), an event the cache already holds newer dropped, one a controller wrote tagged.
   */
  async #written(items: PublishItem[], signal: AbortSignal): Promise<PublishItem[]> {
    if (!items.some((item) => item.unwritten)) return items;
    const write = this.#options.write!;
    const written = await Promise.all(
      items.map(async (item): Promise<PublishItem | undefined> => {
        if (!item.unwritten) return item;
        const { unwritten: _done, ...rest } = item;
        const event = item.event!;
        const backOff = this.#retryBackoff();
        // A replica that lost its lease writes nothing more (its successor re-derives these).
        while (!signal.aborted && !this.#discarded) {
          try {
            const outcome = await write(event);
            this.#options.metrics.cacheWrites.inc({ kind: event.kind, outcome: outcome.gone ? 'gone' : outcome.result });
            // Refused by the object's tombstone or a new object of its name: sent as the watch saw it (its
            // DELETED follows); by a newer version: dropped, as the reflector drops a stale event (that
            // version's event is published).
            if (outcome.gone) return rest;
            if (outcome.result === 'stale') return undefined;
            return outcome.writer ? { ...rest, event: { ...event, writer: outcome.writer } } : rest;
          } catch (err) {
            if (signal.aborted) break;
            this.#options.metrics.cacheWrites.inc({ kind: event.kind, outcome: 'failed' });
            this.#options.onWriteError?.(err, event);
            this.#failing = true;
            this.#onFailure?.();
            await backOff(signal);
          }
        }
        return undefined; // stopped or discarded: neither written nor sent, and no bookmark passes it
      }),
    );
    return written.filter((item): item is PublishItem => item !== undefined);
  }

  /** The batch as the review leaves it (see {@link PublisherOptions.review}). */
  async #review(slots: Slot[]): Promise<Array<{ slot: Slot; untagged?: true }>> {
    const review = this.#options.review;
    if (!review || slots.length === 0) return slots.map((slot) => ({ slot }));
    try {
      const unwritten = new Set(slots.flatMap((slot, index) => (slot.item.unwritten ? [index] : [])));
      const started = performance.now();
      const reviewed = await review(
        slots.map((slot) => slot.item.event!),
        unwritten,
      );
      if (unwritten.size > 0) {
        const took = performance.now() - started;
        this.#reviewRtt = this.#reviewRtt === undefined ? took : this.#reviewRtt + RTT_WEIGHT * (took - this.#reviewRtt);
      }
      return slots.flatMap((slot, index) => {
        const r: ReviewedEvent | undefined = reviewed[index];
        if (!r) return [];
        // The reviewed event replaces the slot's (a later look starts from the retagged one); a write-back
        // the review found leaves nothing to write.
        const { unwritten: _was, ...item } = slot.item;
        slot.item = { ...item, event: r.event, ...(r.unwritten ? { unwritten: true as const } : {}) };
        return [{ slot, ...(r.untagged ? { untagged: r.untagged } : {}) }];
      });
    } catch (err) {
      this.#options.onError?.(err);
      return slots.map((slot) => ({ slot }));
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
