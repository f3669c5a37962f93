/**
 * A sync's cache write-backs, one per object when its writes come quickly: a controller that writes an
 * object twice in one sync (a bind's `update`, then its `updateStatus`) writes back the second version
 * only, naming the first among its own (`earlier`, the entry's `writerRvs`: lib/state/cache.ts), so the
 * forwarder tags the watch events of both.
 *
 * The first version waits for the second at most `deferMs`: the forwarder holds an untagged event only so
 * long for its tag (lib/forwarder/publisher.ts `ownWriteHoldMs`), so when the second write is slow (a busy
 * API server) the first is written back on its own after `deferMs`, as if there were no second write,
 * and the second still names it. While the container's recent second writes came later than `deferMs`
 * (a {@link WriteGaps} average), a first version is written back at once instead of waiting in vain.
 *
 * A write-back never fails the sync: a failure costs the writer a message of its own write (its event then
 * goes out untagged), and is reported to `onError`.
 *
 * @example
 * const backs = new WriteBacks((kind, object, earlier) => cache.put(cluster, kind, object, { writer, earlier }));
 * await backs.wrote('PersistentVolumeClaim', updated, { more: true });   // deferred
 * await backs.wrote('PersistentVolumeClaim', withStatus, { more: false }); // one PutItem, naming `updated`
 * await backs.settle();                                                  // before the sync returns
 */
import { cacheKey, type CacheableObject } from './cache.ts';

/**
 * How long a version waits for a later write of the same object before it is written back alone, ms. Well
 * inside the forwarder's 100 ms hold (which a newer version seen meanwhile extends). Measured in the
 * provisioner bench's burst (two cores, all on one machine): at 25 ms 64–95 % of the binder's first claim
 * versions were written back alone (the second write came later), at 60 ms 18 %, with no more own writes
 * delivered untagged.
 */
export const DEFAULT_WRITE_BACK_DEFER_MS = 60;

export type WriteBack = (kind: string, object: CacheableObject, earlier: string[]) => Promise<unknown>;

/**
 * How long a sync's next write of an object came after the previous one's answer, ms: an exponentially
 * weighted average over the container's syncs (weight 0.2 for the newest).
 */
export class WriteGaps {
  average = 0;
  observe(gapMs: number): void {
    this.average += 0.2 * (gapMs - this.average);
  }
}

/** The container's: every sync's WriteBacks learns from the ones before it. */
const containerGaps = new WriteGaps();

interface Deferred {
  kind: string;
  object: CacheableObject;
  /** Versions of the object this sync wrote before `object`. */
  earlier: string[];
  timer?: ReturnType<typeof setTimeout>;
  /** Written back alone already (its later write was slow, or expected to be). */
  sent: boolean;
  /** When its write answered (epoch ms). */
  at: number;
}

export class WriteBacks {
  readonly #put: WriteBack;
  readonly #deferMs: number;
  readonly #onError: (error: unknown, kind: string, object: CacheableObject) => void;
  readonly #deferred = new Map<string, Deferred>();
  readonly #gaps: WriteGaps;
  readonly #now: () => number;
  readonly #sending = new Set<Promise<void>>();
  /** Write-backs sent (PutItems), for tests and metrics. */
  sent = 0;

  constructor(
    put: WriteBack,
    options: { deferMs?: number; onError?: (error: unknown, kind: string, object: CacheableObject) => void; gaps?: WriteGaps; now?: () => number } = {},
  ) {
    this.#put = put;
    this.#deferMs = options.deferMs ?? DEFAULT_WRITE_BACK_DEFER_MS;
    this.#onError = options.onError ?? (() => {});
    this.#gaps = options.gaps ?? containerGaps;
    this.#now = options.now ?? Date.now;
  }

  /**
   * `object` is what a write of `kind` returned. `more`: this sync writes the same object again later (its
   * write-back then waits for that one, at most `deferMs`).
   */
  async wrote(kind: string, object: CacheableObject, options: { more: boolean }): Promise<void> {
    const id = `${kind}/${cacheKey(object)}`;
    const now = this.#now();
    const previous = this.#deferred.get(id);
    if (previous?.timer) clearTimeout(previous.timer);
    // Clamped: one outlier (a throttled call) must not stop the waiting for long.
    if (previous) this.#gaps.observe(Math.min(now - previous.at, 4 * this.#deferMs));
    const earlier = previous ? [...previous.earlier, String(previous.object.metadata?.resourceVersion ?? '0')] : [];
    if (!options.more) {
      this.#deferred.delete(id);
      await this.#send(kind, object, earlier);
      return;
    }
    const entry: Deferred = { kind, object, earlier, sent: false, at: now };
    this.#deferred.set(id, entry);
    if (this.#gaps.average > this.#deferMs) {
      // The next write is not expected in time: written back now, beside it (and named again by it).
      entry.sent = true;
      this.#track(this.#send(kind, object, earlier));
      return;
    }
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      entry.sent = true;
      this.#track(this.#send(kind, object, earlier));
    }, this.#deferMs);
  }

  /**
   * Writes back what is still deferred (a later write failed, or never came) and waits for every
   * write-back under way. Call it before the sync returns, whatever happened.
   */
  async settle(): Promise<void> {
    for (const entry of this.#deferred.values()) {
      if (entry.timer) clearTimeout(entry.timer);
      if (!entry.sent) this.#track(this.#send(entry.kind, entry.object, entry.earlier));
    }
    this.#deferred.clear();
    while (this.#sending.size > 0) await Promise.all([...this.#sending]);
  }

  #track(sending: Promise<void>): void {
    this.#sending.add(sending);
    void sending.finally(() => this.#sending.delete(sending));
  }

  async #send(kind: string, object: CacheableObject, earlier: string[]): Promise<void> {
    this.sent++;
    try {
      await this.#put(kind, object, earlier);
    } catch (error) {
      this.#onError(error, kind, object);
    }
  }
}
