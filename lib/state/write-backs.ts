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
 * `deferMs` follows the write-backs' recent round trip as the forwarder's hold follows its reads'
 * ({@link writeBackDeferMs}: longer with a slower table, until it must shrink to land inside the hold's
 * limit): a busy table slows both, and a fixed wait would then give up on second writes that still come
 * in time for the hold.
 *
 * A write-back never fails the sync: a failure costs the writer a message of its own write (its event then
 * goes out untagged), and is reported to `onError`.
 *
 * @example
 * const backs = new WriteBacks((kind, object, earlier) => cache.put(cluster, kind, object, { writer, earlier }));
 * backs.wrote('PersistentVolumeClaim', updated, { more: true });   // deferred
 * backs.wrote('PersistentVolumeClaim', withStatus, { more: false }); // one PutItem, naming `updated`, under way
 * await backs.settle();                                                  // before the sync returns
 */
import { cacheKey, type CacheableObject } from './cache.ts';

/**
 * How long a version waits for a later write of the same object before it is written back alone, ms, while
 * the table answers at once. Well inside the forwarder's 100 ms hold. Measured in the provisioner bench's
 * burst (two cores, all on one machine): at 25 ms 64–95 % of the binder's first claim versions were
 * written back alone (the second write came later), at 60 ms 18 %, with no more own writes delivered
 * untagged.
 */
export const DEFAULT_WRITE_BACK_DEFER_MS = 60;

/**
 * The longest the forwarder holds an untagged version for its writer's tag, ms, at its default hold
 * (lib/forwarder/publisher.ts: `ownWriteHoldMs` 100 ms stretched by twice the table's round trip, at most
 * `HOLD_STRETCH_LIMIT` = 3 times). A first version is worth writing back alone only if that lands before
 * the forwarder's hold ends.
 */
export const FORWARDER_HOLD_LIMIT_MS = 300;

/**
 * How long a first version waits for the later write, given the table's recent round trip `r`:
 * `60 + 2r`, at most `300 − r`, never under 60 ms. From the first write's answer (when the watch event
 * leaves the API server), the forwarder sees the event after the watch's latency `w`, reads it (one round
 * trip `r`) and holds it `100 + 2r`: the hold ends at `w + 100 + 3r`, at `w + r + 300` at most. A first
 * version written back alone after the wait lands one round trip later, at `60 + 3r` (at most 300): inside
 * the hold with 40 ms plus the watch's latency to spare, while the forwarder's reads take about as long as
 * the binder's writes (the same table under the same load). The binder measures its own write-backs'; the
 * forwarder its reads'. Under load (a busy table, a slow API server) the versions of one bind then still
 * cost one write-back instead of two: in the binder bench's warm burst, 3.92 → 3.02 write-backs per bind
 * with 1.00 → 1.01 messages per bind (README, session 26).
 */
export function writeBackDeferMs(rttMs: number, baseMs = DEFAULT_WRITE_BACK_DEFER_MS): number {
  return Math.max(baseMs, Math.min(baseMs + 2 * rttMs, FORWARDER_HOLD_LIMIT_MS - rttMs));
}

/**
 * A write-back's time counts at most this much in the round-trip average, ms: one slow put (a container's
 * first, or one the SDK retried after throttling) must not stretch the wait past the forwarder's hold.
 */
export const WRITE_BACK_RTT_SAMPLE_LIMIT_MS = FORWARDER_HOLD_LIMIT_MS / 2;

export type WriteBack = (kind: string, object: CacheableObject, earlier: string[]) => Promise<unknown>;

/**
 * How long a sync's next write of an object came after the previous one's answer, and how long a
 * write-back took, ms: exponentially weighted averages over the container's syncs (weight 0.2 for the
 * newest).
 */
export class WriteGaps {
  average = 0;
  /** The write-backs' round trip. */
  rtt = 0;
  observe(gapMs: number): void {
    this.average += 0.2 * (gapMs - this.average);
  }
  observeRtt(ms: number): void {
    this.rtt += 0.2 * (Math.min(ms, WRITE_BACK_RTT_SAMPLE_LIMIT_MS) - this.rtt);
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
  /** Fixed by the caller; else {@link writeBackDeferMs} of the container's recent round trip. */
  readonly #fixedDeferMs: number | undefined;
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
    this.#fixedDeferMs = options.deferMs;
    this.#onError = options.onError ?? (() => {});
    this.#gaps = options.gaps ?? containerGaps;
    this.#now = options.now ?? Date.now;
  }

  /** How long a first version waits for its later write now, ms. */
  get deferMs(): number {
    return this.#fixedDeferMs ?? writeBackDeferMs(this.#gaps.rtt);
  }

  /**
   * `object` is what a write of `kind` returned. `more`: this sync writes the same object again later (its
   * write-back then waits for that one, at most {@link deferMs}). Returns without waiting for any put: the
   * sync's next API write goes out beside it ({@link settle} waits for them all).
   */
  wrote(kind: string, object: CacheableObject, options: { more: boolean }): void {
    const id = `${kind}/${cacheKey(object)}`;
    const now = this.#now();
    const deferMs = this.deferMs;
    const previous = this.#deferred.get(id);
    if (previous?.timer) clearTimeout(previous.timer);
    // Clamped: one outlier (a throttled call) must not stop the waiting for long.
    if (previous) this.#gaps.observe(Math.min(now - previous.at, 4 * deferMs));
    const earlier = previous ? [...previous.earlier, String(previous.object.metadata?.resourceVersion ?? '0')] : [];
    if (!options.more) {
      // Not awaited: a bind's claim writes need not wait for its volume's write-back, which lands as soon
      // either way (the cache and the forwarder see it no later for it).
      this.#deferred.delete(id);
      this.#track(this.#send(kind, object, earlier));
      return;
    }
    const entry: Deferred = { kind, object, earlier, sent: false, at: now };
    this.#deferred.set(id, entry);
    if (this.#gaps.average > deferMs) {
      // The next write is not expected in time: written back now, beside it (and named again by it).
      entry.sent = true;
      this.#track(this.#send(kind, object, earlier));
      return;
    }
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      entry.sent = true;
      this.#track(this.#send(kind, object, earlier));
    }, deferMs);
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
    const started = this.#now();
    try {
      await this.#put(kind, object, earlier);
    } catch (error) {
      try {
        this.#onError(error, kind, object);
      } catch {
        // a report that fails must not fail the sync (nor leave a rejection nobody handles)
      }
    } finally {
      // A failed put counts too: a table that throttles until calls fail is a slow table.
      this.#gaps.observeRtt(this.#now() - started);
    }
  }
}
