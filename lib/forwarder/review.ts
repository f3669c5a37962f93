/**
 * The last look before publishing: one consistent BatchGetItem over the cache entries of a batch's
 * untagged PersistentVolume and PersistentVolumeClaim events.
 *
 * A controller writes back what its API write returned, tagged with its name (lib/state/cache.ts), and the
 * forwarder tags the watch event of that version with the writer so the writer's own subscription leaves
 * it out. The forwarder often caches the version first (its watch event and the controller's API response
 * leave the server together); the write-back then still tags the entry, and this review, a few
 * milliseconds later, finds the tag:
 * - same resourceVersion, tagged by a writer → the event goes out tagged (`own-write`);
 * - anything else → unchanged. Every version still reaches every subscriber that did not write it (no
 *   coalescing: a newer cached version does not drop an older event).
 * A failed read changes nothing: the events go out as they are (at worst a controller sees its own write).
 */
import { BatchGetCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { ClusterEvent } from '../runtime/message.ts';
import type { DocumentClient } from '../state/client.ts';
import { ObjectCache } from '../state/cache.ts';

/** Kinds controllers write back to the cache. */
export const REVIEWED_KINDS: ReadonlySet<string> = new Set(['PersistentVolume', 'PersistentVolumeClaim']);

export type ReviewOutcome = 'own-write';

export interface EventReviewOptions {
  doc: DocumentClient;
  /** Cache table. */
  table: string;
  /** Called once per event the review changed. */
  onOutcome?: (event: ClusterEvent, outcome: ReviewOutcome) => void;
}

/** Reviews a batch: returns each event as it should be published (undefined would drop it). */
export type EventReview = (events: readonly ClusterEvent[]) => Promise<Array<ClusterEvent | undefined>>;

const reviewable = (event: ClusterEvent): boolean =>
  !event.writer && (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'SYNC') && REVIEWED_KINDS.has(event.kind);

/** See the module comment. */
export function createEventReview(options: EventReviewOptions): EventReview {
  return async (events) => {
    const candidates = events.filter(reviewable);
    if (candidates.length === 0) return [...events];
    const keys = new Map<string, { pk: string; sk: string }>();
    for (const event of candidates) {
      const key = ObjectCache.itemKey(event.cluster, event.kind, event.key);
      keys.set(`${key.pk}\u0000${key.sk}`, key);
    }
    const entries = new Map<string, Record<string, unknown>>();
    const projection = {
      ConsistentRead: true,
      ProjectionExpression: 'pk, sk, #rv, #writer',
      ExpressionAttributeNames: { '#rv': 'rv', '#writer': 'writer' },
    };
    let pendingKeys: Array<Record<string, unknown>> = [...keys.values()];
    for (let round = 0; pendingKeys.length > 0 && round < 3; round++) {
      const out: BatchGetCommandOutput = await options.doc.send(new BatchGetCommand({ RequestItems: { [options.table]: { Keys: pendingKeys, ...projection } } }));
      for (const item of out.Responses?.[options.table] ?? []) entries.set(`${item.pk}\u0000${item.sk}`, item);
      pendingKeys = out.UnprocessedKeys?.[options.table]?.Keys ?? [];
    }
    return events.map((event) => {
      if (!reviewable(event)) return event;
      const key = ObjectCache.itemKey(event.cluster, event.kind, event.key);
      const entry = entries.get(`${key.pk}\u0000${key.sk}`);
      if (!entry) return event;
      const cachedRv = Number(entry.rv);
      const rv = Number(event.resourceVersion);
      if (!Number.isFinite(cachedRv) || !Number.isFinite(rv)) return event;
      const writer = typeof entry.writer === 'string' && entry.writer ? entry.writer : undefined;
      if (cachedRv === rv && writer) {
        options.onOutcome?.(event, 'own-write');
        return { ...event, writer };
      }
      return event;
    });
  };
}
