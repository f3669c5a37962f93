/**
 * The last look before publishing: one consistent BatchGetItem over the cache entries of a batch's
 * untagged PersistentVolume and PersistentVolumeClaim events.
 *
 * A controller writes back what its API write returned, tagged with its name (lib/state/cache.ts), and the
 * forwarder tags the watch event of that version with the writer so the writer's own subscription leaves
 * it out. The forwarder often caches the version first (its watch event and the controller's API response
 * leave the server together); the write-back then still tags the entry, and this review, a few
 * milliseconds later, finds the tag:
 * - same resourceVersion, tagged by a writer → the event goes out tagged (`own-write`); so does an older
 *   version the entry lists among the writer's (`writerRvs`: a controller that wrote an object twice in one
 *   sync writes back only the second, naming the first);
 * - same resourceVersion (or a newer one), untagged, a MODIFIED event → marked `untagged`: a user's write,
 *   or a controller's whose write-back has not landed yet (a newer version's write-back may still name
 *   this one). The publisher holds it (its group waits, others do not) and looks again until the tag
 *   appears or its `ownWriteHoldMs` is over (publisher.ts). Measured in the benches,
 *   a write-back lands a median 52 ms after the first look, p90 98 ms (two cores, all on one machine).
 *   ADDED events are not held: a controller's own creation (a provisioned volume) reaches no subscription of
 *   its own, so its tag saves nothing; nor are versions of an object being deleted (`deletionTimestamp`):
 *   they come from the deletion, the API server's own finalizers and at most one controller write (the
 *   provisioner's finalizer patch after its DELETE, written back), and holding them would slow every
 *   deletion down to save that one message;
 * - a claim's ADDED event is not looked at: no controller creates claims;
 * - anything else → unchanged. The review drops nothing: every version it is given reaches every
 *   subscriber that did not write it (the reflector has already left out a version older than the entry
 *   its look or its own cache write found, reflector.ts and cache-probe.ts).
 * A failed read changes nothing: the events go out as they are (at worst a controller sees its own write).
 */
import type { ClusterEvent } from '../runtime/message.ts';
import { batchGetItems, type DocumentClient } from '../state/client.ts';
import { ObjectCache, writerOfVersion } from '../state/cache.ts';

/** Kinds controllers write back to the cache. */
export const REVIEWED_KINDS: ReadonlySet<string> = new Set(['PersistentVolume', 'PersistentVolumeClaim']);
/**
 * Of those, the kinds a controller creates (the provisioner's volumes): only their ADDED events can be a
 * controller's own. No controller creates a claim, so a claim's ADDED is a user's and costs no read.
 */
export const CREATED_KINDS: ReadonlySet<string> = new Set(['PersistentVolume']);

export type ReviewOutcome = 'own-write';

export interface EventReviewOptions {
  doc: DocumentClient;
  /** Cache table. */
  table: string;
  /** Called once per event the review changed. */
  onOutcome?: (event: ClusterEvent, outcome: ReviewOutcome) => void;
}

/** An event as the review leaves it. */
export interface ReviewedEvent {
  event: ClusterEvent;
  /**
   * A MODIFIED event whose version (or a newer one) the cache holds untagged: a user's write, or a
   * controller's whose write-back has not landed yet (the publisher may look again before it sends it,
   * see {@link PublisherOptions.ownWriteHoldMs}).
   */
  untagged?: true;
}

/** Reviews a batch: returns each event as it should be published (undefined would drop it). */
export type EventReview = (events: readonly ClusterEvent[]) => Promise<Array<ReviewedEvent | undefined>>;

const reviewable = (event: ClusterEvent): boolean =>
  !event.writer &&
  REVIEWED_KINDS.has(event.kind) &&
  (event.type === 'MODIFIED' || event.type === 'SYNC' || (event.type === 'ADDED' && CREATED_KINDS.has(event.kind)));

/** The object is being deleted: its versions are the deletion's and its finalizers' (never held). */
const terminating = (event: ClusterEvent): boolean => Boolean((event.object as { metadata?: { deletionTimestamp?: unknown } } | undefined)?.metadata?.deletionTimestamp);

/** See the module comment. */
export function createEventReview(options: EventReviewOptions): EventReview {
  return async (events) => {
    const candidates = events.filter(reviewable);
    if (candidates.length === 0) return events.map((event) => ({ event }));
    const keys = new Map<string, { pk: string; sk: string }>();
    for (const event of candidates) {
      const key = ObjectCache.itemKey(event.cluster, event.kind, event.key);
      keys.set(`${key.pk}\u0000${key.sk}`, key);
    }
    const { items } = await batchGetItems(options.doc, options.table, [...keys.values()], {
      consistentRead: true,
      projection: 'pk, sk, #rv, #writer, #writerRvs, #deleted',
      names: { '#rv': 'rv', '#writer': 'writer', '#writerRvs': 'writerRvs', '#deleted': 'deleted' },
    });
    const entries = new Map(items.map((item) => [`${item.pk}\u0000${item.sk}`, item]));
    return events.map((event): ReviewedEvent => {
      if (!reviewable(event)) return { event };
      const key = ObjectCache.itemKey(event.cluster, event.kind, event.key);
      const entry = entries.get(`${key.pk}\u0000${key.sk}`);
      if (!entry) return { event };
      const rv = Number(event.resourceVersion);
      const writer = writerOfVersion(entry, rv);
      if (writer) {
        options.onOutcome?.(event, 'own-write');
        return { event: { ...event, writer } };
      }
      // Untagged at this version or a newer one: a write-back may still tag it (or name it, with the newer one).
      const pending = !entry.writer && entry.deleted !== true && Number(entry.rv) >= rv;
      return pending && event.type === 'MODIFIED' && !terminating(event) ? { event, untagged: true } : { event };
    });
  };
}
