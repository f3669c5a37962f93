/**
 * The last look before publishing: one consistent BatchGetItem over the cache entries of a batch's
 * untagged PersistentVolume and PersistentVolumeClaim events (MODIFIED, and a relist's SYNC).
 *
 * A controller writes back what its API write returned, tagged with its name (lib/state/cache.ts), and the
 * forwarder tags the watch event of that version with the writer so the writer's own subscription leaves
 * it out. The watch event and the controller's API response leave the server together, so the forwarder
 * does not write these events to the cache when it sees them (reflector.ts): it asks here first, at the
 * time it would publish them, and writes only what no write-back brought (publisher.ts `write`). An event
 * given as `unwritten` (not in the cache yet) is answered:
 * - the entry is this version, or a newer one naming it among its writer's (`writerRvs`: a controller that
 *   wrote an object twice in one sync writes back only the second), tagged by a writer → the event goes out
 *   tagged (`own-write`), and the forwarder writes nothing: the write-back wrote it;
 * - a newer version is cached that does not name it → dropped, as the forwarder's own refused write would
 *   have dropped it: the newer version's event is (or was) published. Its writer, when it is a controller's
 *   write-back, saw this one: every controller write is conditional on the resourceVersion it replaces (a
 *   write-back of an unconditional write would break this). But when the object is gone (a newer
 *   tombstone, or a newer object of the same name: another uid) → sent as it is, unwritten (a write would
 *   change nothing, and its subscribers still see the object's last versions before its DELETED);
 * - this very version is cached untagged (a previous leader wrote it, and the watch replays it) → written
 *   already; held like the next;
 * - anything else (no entry, an older one, an expired tombstone) → still `unwritten`, and a MODIFIED event
 *   `untagged`: a user's write, or a controller's whose write-back has not landed yet. The publisher holds
 *   it (its group waits, others do not) and looks again until the tag appears or its `ownWriteHoldMs` is
 *   over, and then writes it (publisher.ts). Measured in the benches, a write-back lands a median 52 ms
 *   after the first look, p90 98 ms (two cores, all on one machine).
 * An event already in the cache (a relist's SYNC; one the forwarder wrote when it saw it) is answered as
 * before the write moved here: tagged when the entry names it; held when the cache holds it or a newer
 * version untagged (a newer version's write-back may still name it); else unchanged.
 * ADDED events are never looked at: controllers leave what they create to the watch (the provisioner its new
 * volumes, as upstream does since v11: lib/provisioner/kube-writer.ts), so the reflector writes them when it
 * sees them. (A parked PV, saved late without its lease, is the one creation written back: the reflector's
 * write then finds it there, tagged, or lands first and the write-back tags the same version; either way it
 * is written once. When that create meets AlreadyExists, the provisioner caches the PV as the API holds it,
 * untagged, a MODIFIED version perhaps, which is reviewed as any.) Versions of an object being deleted (`deletionTimestamp`) are never held:
 * they come from the deletion, the API server's own finalizers and at most one controller write (the
 * provisioner's finalizer patch after its DELETE, written back), and holding them would slow every deletion
 * down to save that one message.
 * A failed read changes nothing: the events go out as they are (at worst a controller sees its own write),
 * and the unwritten ones are written first.
 */
import type { ClusterEvent } from '../runtime/message.ts';
import { batchGetItems, type DocumentClient } from '../state/client.ts';
import { ObjectCache, writerOfVersion } from '../state/cache.ts';

/** Kinds controllers write back to the cache (their updates; never what they create). */
export const REVIEWED_KINDS: ReadonlySet<string> = new Set(['PersistentVolume', 'PersistentVolumeClaim']);

/**
 * Whether a watch event of `type` and `kind` may be a controller's own write, written back by it: the
 * events the reflector leaves unwritten for the publisher (see the module comment).
 */
export function mayBeWrittenBack(type: string, kind: string): boolean {
  return type === 'MODIFIED' && REVIEWED_KINDS.has(kind);
}

export type ReviewOutcome = 'own-write' | 'superseded';

export interface EventReviewOptions {
  doc: DocumentClient;
  /** Cache table. */
  table: string;
  /** Called once per event the review changed (tagged, or dropped as superseded). */
  onOutcome?: (event: ClusterEvent, outcome: ReviewOutcome) => void;
  /** Clock for tombstone expiry, epoch milliseconds (the cache's own). */
  now?: () => number;
  /**
   * A read not answered in this long fails, and with it every look it carried (default 5,000 ms): the looks
   * share one read at a time, so a read that hangs would hold every look behind it.
   */
  readTimeoutMs?: number;
}

/** An event as the review leaves it. */
export interface ReviewedEvent {
  event: ClusterEvent;
  /**
   * A MODIFIED event whose writer may still tag it: a user's write, or a controller's whose write-back has
   * not landed yet (the publisher may look again before it sends it, see
   * {@link PublisherOptions.ownWriteHoldMs}).
   */
  untagged?: true;
  /** Not in the cache yet: the publisher writes it before sending it. */
  unwritten?: true;
}

/**
 * Reviews a batch: returns each event as it should be published (undefined drops it). `unwritten`: the
 * indexes of the events not yet written to the cache.
 */
export type EventReview = (events: readonly ClusterEvent[], unwritten?: ReadonlySet<number>) => Promise<Array<ReviewedEvent | undefined>>;

const reviewable = (event: ClusterEvent): boolean => !event.writer && REVIEWED_KINDS.has(event.kind) && (event.type === 'SYNC' || mayBeWrittenBack(event.type, event.kind));

/** The object is being deleted: its versions are the deletion's and its finalizers' (never held). */
const terminating = (event: ClusterEvent): boolean => Boolean((event.object as { metadata?: { deletionTimestamp?: unknown } } | undefined)?.metadata?.deletionTimestamp);

/**
 * Whether the review may hold this event for its writer's tag: an untagged MODIFIED of a kind controllers
 * write back, its object not being deleted (the publisher looks at such an event first on the holds' tick).
 */
export function mayBeHeld(event: ClusterEvent): boolean {
  return !event.writer && mayBeWrittenBack(event.type, event.kind) && !terminating(event);
}

/** See the module comment. */
export function createEventReview(options: EventReviewOptions): EventReview {
  const reader = new SharedReads(options.doc, options.table, options.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS);
  return async (events, unwritten = new Set()) => {
    const candidates = events.filter(reviewable);
    if (candidates.length === 0) return events.map((event, index) => (unwritten.has(index) ? { event, unwritten: true } : { event }));
    const keys = new Map<string, { pk: string; sk: string }>();
    for (const event of candidates) {
      const key = ObjectCache.itemKey(event.cluster, event.kind, event.key);
      keys.set(`${key.pk}\u0000${key.sk}`, key);
    }
    const entries = await reader.read(keys);
    const nowSeconds = Math.floor((options.now?.() ?? Date.now()) / 1000);
    return events.map((event, index): ReviewedEvent | undefined => {
      const toWrite = unwritten.has(index);
      if (!reviewable(event)) return toWrite ? { event, unwritten: true } : { event };
      const key = ObjectCache.itemKey(event.cluster, event.kind, event.key);
      const entry = entries.get(`${key.pk}\u0000${key.sk}`);
      const holdable = mayBeHeld(event);
      const rv = Number(event.resourceVersion);
      const writer = entry ? writerOfVersion(entry, rv) : undefined;
      if (writer) {
        options.onOutcome?.(event, 'own-write');
        return { event: { ...event, writer } };
      }
      if (toWrite) {
        const expired = entry?.deleted === true && typeof entry.expiresAt === 'number' && entry.expiresAt < nowSeconds;
        const cached = entry && !expired ? Number(entry.rv) : NaN;
        const gone = entry?.deleted === true || (typeof entry?.uid === 'string' && entry.uid !== '' && event.uid !== '' && entry.uid !== event.uid);
        if (cached >= rv && gone) return { event };
        if (cached > rv) {
          options.onOutcome?.(event, 'superseded');
          return undefined;
        }
        // This very version cached untagged (a previous leader wrote it): written; its writer's tag may still come.
        if (cached === rv) return holdable ? { event, untagged: true } : { event };
        return holdable ? { event, untagged: true, unwritten: true } : { event, unwritten: true };
      }
      if (!entry) return { event };
      // Untagged at this version or a newer one: a write-back may still tag it (or name it, with the newer one).
      const pending = !entry.writer && entry.deleted !== true && Number(entry.rv) >= rv;
      return pending && holdable ? { event, untagged: true } : { event };
    });
  };
}

type Entries = ReadonlyMap<string, Record<string, unknown>>;

/** Most keys one BatchGetItem may ask for. */
const BATCH_GET_MAX = 100;
/** See {@link EventReviewOptions.readTimeoutMs}. */
export const DEFAULT_READ_TIMEOUT_MS = 5_000;

/**
 * The looks' reads, shared: the looks asked for while a read is out, or in the same turn of the event loop
 * (the publisher's holds wake on a shared tick), are read together in the next one, one read out at a time
 * (its parts of 100 keys sent at once), each bounded by `timeoutMs`.
 * The publisher looks at each batch it takes and at every held event each `ownWriteLookMs`, from many
 * batches at once; read one by one, a provisioned claim's five reviewed versions cost about three
 * BatchGetItems. A look answered by a later read than its own would have been sees the same entries or
 * newer ones, as a later look would. A failed read fails every look it carried (each then goes out as it is).
 */
class SharedReads {
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #timeoutMs: number;
  /** Looks waiting for the next read: their keys, and how to answer them. */
  #waiting: Array<{ keys: ReadonlyMap<string, { pk: string; sk: string }>; resolve: (entries: Entries) => void; reject: (error: unknown) => void }> = [];
  /** A read is out, or one is due this turn. */
  #busy = false;

  constructor(doc: DocumentClient, table: string, timeoutMs: number) {
    this.#doc = doc;
    this.#table = table;
    this.#timeoutMs = timeoutMs;
  }

  /** The entries of `keys` (by `pk\0sk`) that exist, as one of the next shared reads found them. */
  read(keys: ReadonlyMap<string, { pk: string; sk: string }>): Promise<Entries> {
    return new Promise<Entries>((resolve, reject) => {
      this.#waiting.push({ keys, resolve, reject });
      if (this.#busy) return;
      this.#busy = true;
      setImmediate(() => void this.#drain());
    });
  }

  /** Reads until no look waits; the looks asked for while a read is out go together in the next. */
  async #drain(): Promise<void> {
    while (this.#waiting.length > 0) {
      const looks = this.#waiting;
      this.#waiting = [];
      const keys = new Map<string, { pk: string; sk: string }>();
      for (const look of looks) for (const [id, key] of look.keys) keys.set(id, key);
      try {
        const entries = await this.#read([...keys.values()]);
        for (const look of looks) look.resolve(entries);
      } catch (error) {
        for (const look of looks) look.reject(error);
      }
    }
    this.#busy = false;
  }

  async #read(keys: Array<{ pk: string; sk: string }>): Promise<Entries> {
    const chunks = Array.from({ length: Math.ceil(keys.length / BATCH_GET_MAX) }, (_, i) => keys.slice(i * BATCH_GET_MAX, (i + 1) * BATCH_GET_MAX));
    const abortSignal = AbortSignal.timeout(this.#timeoutMs);
    const answers = await Promise.all(
      chunks.map((chunk) =>
        batchGetItems(this.#doc, this.#table, chunk, {
          consistentRead: true,
          projection: 'pk, sk, #rv, #uid, #writer, #writerRvs, #deleted, #expiresAt',
          names: { '#rv': 'rv', '#uid': 'uid', '#writer': 'writer', '#writerRvs': 'writerRvs', '#deleted': 'deleted', '#expiresAt': 'expiresAt' },
          abortSignal,
        }),
      ),
    );
    return new Map(answers.flatMap(({ items }) => items.map((item) => [`${String(item.pk)}\u0000${String(item.sk)}`, item] as const)));
  }
}
