/**
 * A look at the cache before the forwarder writes a watch event to it, in one read for many events.
 *
 * A controller writes back what its API write returned (lib/state/cache.ts), and the two race: when the
 * write-back lands before the forwarder's own write of the same version, that conditional PutItem fails and
 * tells the forwarder only what a read would have (the version is cached, and by whom). On a busy machine it
 * mostly does: in the binder's burst of 300, 3.4 of each bind's 4 MODIFIED writes failed so (2.6 for a bind
 * alone); each is a request for DynamoDB and CPU on both sides.
 *
 * So for the events a controller may have written back (a volume's or a claim's MODIFIED, a volume's
 * ADDED: `covers`), the reflector asks here first. The events asked about meanwhile are read together, one
 * consistent BatchGetItem of the entries' version, writer and tombstone attributes (not the object: less to
 * send and parse, though DynamoDB charges a read by the item's size), at most one read in flight: while it
 * is out, the next events gather for the next, and those it would not read anyway go to their writes at
 * once. An entry at the event's version or a newer one answers the event as the refused write would have
 * (`unchanged`, with its writer; `stale`); anything else (no entry, an older one, an expired tombstone, an
 * entry unread) is left to the write, as before. A lone event is never read first (the write alone costs
 * the same and answers the same), nor a batch unlikely to save more writes than its read: a batch is read
 * when the share of past looks that found the version cached (a moving average, starting at one half)
 * times its size is over one, and one batch in eight that is not is read anyway, to keep the average
 * current. A failed read costs the events
 * nothing but the wait: each is then written as before.
 *
 * Nothing changes in what the cache holds or what is published: the same condition decides, on the same
 * entry, only without the write when the answer is already known.
 *
 * @example
 * const probe = new CacheProbe({ doc, table: 'claimflow-cache', onOutcome: (o, n) => metrics.probed.inc({ outcome: o }, n) });
 * const known = probe.covers('MODIFIED', 'PersistentVolume') ? await probe.look('c1', 'PersistentVolume', 'pv-1', 42) : undefined;
 * const outcome = known ?? (await cache.putDetailed('c1', 'PersistentVolume', object));
 */
import { ObjectCache, type CachePutOutcome } from '../state/cache.ts';
import { batchGetItems, type DocumentClient } from '../state/client.ts';
import { CREATED_KINDS, REVIEWED_KINDS } from './review.ts';

/**
 * How the look went for each event: `hit` (the version or a newer one was cached: no write), `miss` (read, the
 * event is written), `skipped` (not read: alone, or the batch not worth a read), `failed` (the read failed or
 * left the entry unread: the event is written).
 */
export type ProbeOutcome = 'hit' | 'miss' | 'skipped' | 'failed';

export interface CacheProbeOptions {
  doc: DocumentClient;
  /** Cache table. */
  table: string;
  /** Counts each event's outcome. */
  onOutcome?: (outcome: ProbeOutcome, events: number) => void;
  /** Clock for tombstone expiry, epoch milliseconds (the cache's own). */
  now?: () => number;
}

interface Waiter {
  pk: string;
  sk: string;
  rv: number;
  resolve: (outcome: CachePutOutcome | undefined) => void;
}

/** BatchGetItem's limit of keys per request. */
const MAX_KEYS = 100;
/** Weight of the newest look in the moving share of hits. */
const ALPHA = 0.1;
/** Of the batches not worth a read by the average, the share read anyway (one in this many). */
const EXPLORE_EVERY = 8;

/** See the module comment. */
export class CacheProbe {
  readonly #o: CacheProbeOptions;
  #pending: Waiter[] = [];
  #scheduled = false;
  #reading = false;
  #hitShare = 0.5;
  #notWorth = 0;

  constructor(options: CacheProbeOptions) {
    this.#o = options;
  }

  /** Whether an event of `type` and `kind` may find its version already written back (see the module comment). */
  covers(type: string, kind: string): boolean {
    return REVIEWED_KINDS.has(kind) && (type === 'MODIFIED' || (type === 'ADDED' && CREATED_KINDS.has(kind)));
  }

  /** The share of recent looks that found the version cached (what decides whether a batch is read). */
  get hitShare(): number {
    return this.#hitShare;
  }

  /**
   * What a conditional write of version `rv` of the object `key` would answer, when the cache already
   * holds that version or a newer one; undefined when the event is to be written.
   */
  look(cluster: string, kind: string, key: string, rv: number): Promise<CachePutOutcome | undefined> {
    if (!Number.isFinite(rv)) return Promise.resolve(undefined);
    const { pk, sk } = ObjectCache.itemKey(cluster, kind, key);
    return new Promise((resolve) => {
      this.#pending.push({ pk, sk, rv, resolve });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush().catch(() => undefined); // every waiter is answered inside; nothing is left to report
    });
  }

  async #flush(): Promise<void> {
    if (this.#pending.length === 0) return;
    if (this.#reading) {
      // While a read is out, looks it would not read anyway go to their writes now; the rest wait for it.
      if (!this.#worth(this.#pending.length)) this.#settle(this.#pending.splice(0), 'skipped');
      return;
    }
    const batch = this.#pending.splice(0, MAX_KEYS);
    if (!this.#worthReading(batch.length)) {
      this.#settle(batch, 'skipped');
      if (this.#pending.length) this.#schedule();
      return;
    }
    this.#reading = true;
    try {
      await this.#read(batch);
    } catch {
      // Not the read's failure (that is answered in #read): anything else still answers every look.
      for (const w of batch) w.resolve(undefined);
    } finally {
      this.#reading = false;
      if (this.#pending.length) this.#schedule();
    }
  }

  async #read(batch: readonly Waiter[]): Promise<void> {
    const keys = new Map<string, { pk: string; sk: string }>();
    for (const w of batch) keys.set(`${w.pk}\u0000${w.sk}`, { pk: w.pk, sk: w.sk });
    let read: Awaited<ReturnType<typeof batchGetItems>>;
    try {
      read = await batchGetItems(this.#o.doc, this.#o.table, [...keys.values()], {
        consistentRead: true,
        projection: 'pk, sk, #rv, #writer, #deleted, #expiresAt',
        names: { '#rv': 'rv', '#writer': 'writer', '#deleted': 'deleted', '#expiresAt': 'expiresAt' },
        rounds: 1,
      });
    } catch {
      this.#settle(batch, 'failed');
      return;
    }
    const entries = new Map(read.items.map((item) => [`${String(item.pk)}\u0000${String(item.sk)}`, item]));
    const unread = new Set(read.unprocessed.map((k) => `${String(k.pk)}\u0000${String(k.sk)}`));
    const nowSeconds = Math.floor((this.#o.now?.() ?? Date.now()) / 1000);
    let hits = 0;
    let misses = 0;
    let failed = 0;
    for (const w of batch) {
      const id = `${w.pk}\u0000${w.sk}`;
      if (unread.has(id)) {
        failed++;
        w.resolve(undefined);
        continue;
      }
      const known = answer(entries.get(id), w.rv, nowSeconds);
      if (known) hits++;
      else misses++;
      w.resolve(known);
    }
    for (let i = 0; i < hits + misses; i++) this.#hitShare += ALPHA * ((i < hits ? 1 : 0) - this.#hitShare);
    this.#count('hit', hits);
    this.#count('miss', misses);
    this.#count('failed', failed);
  }

  /** Whether a batch of `size` is worth a read by the share of hits alone. */
  #worth(size: number): boolean {
    return size >= 2 && size * this.#hitShare > 1;
  }

  /** {@link #worth}, or one batch in eight of those that are not (to keep the share current). */
  #worthReading(size: number): boolean {
    if (size < 2) return false;
    if (this.#worth(size)) return true;
    this.#notWorth = (this.#notWorth + 1) % EXPLORE_EVERY;
    return this.#notWorth === 0;
  }

  #settle(batch: readonly Waiter[], outcome: ProbeOutcome): void {
    for (const w of batch) w.resolve(undefined);
    this.#count(outcome, batch.length);
  }

  #count(outcome: ProbeOutcome, events: number): void {
    if (events === 0) return;
    try {
      this.#o.onOutcome?.(outcome, events);
    } catch {
      // a counter must never keep a look from its answer
    }
  }
}

/**
 * The answer of a write of version `rv` refused by `entry` (cache.ts, `FORWARD_ONLY` and `classified`):
 * undefined when the write would go through (no entry, an older one, an expired tombstone).
 */
function answer(entry: Record<string, unknown> | undefined, rv: number, nowSeconds: number): CachePutOutcome | undefined {
  if (!entry) return undefined;
  const cached = Number(entry.rv);
  if (!Number.isFinite(cached) || cached < rv) return undefined;
  if (entry.deleted === true && typeof entry.expiresAt === 'number' && entry.expiresAt < nowSeconds) return undefined;
  if (cached > rv) return { result: 'stale' };
  return typeof entry.writer === 'string' && entry.writer ? { result: 'unchanged', writer: entry.writer } : { result: 'unchanged' };
}
