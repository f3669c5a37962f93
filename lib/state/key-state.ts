/**
 * One read for what the runtime and the controller both need before a reconcile: the key's backoff record
 * (control table) and its cache entry (cache table), in a single consistent `BatchGetItem` across the two
 * tables instead of two `GetItem`s.
 *
 * @example
 * const { backoff, cached } = await readKeyState({ doc, tables, backoffStore, cache }, id);
 */
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { BackoffId, BackoffRecord, BackoffStore } from './backoff.ts';
import { ObjectCache, type CachedObject } from './cache.ts';
import type { DocumentClient } from './client.ts';
import { backoffPk, type TableNames } from './schema.ts';

export interface KeyState {
  backoff: BackoffRecord | undefined;
  /** The cache entry as {@link ObjectCache.get} returns it (undefined: none). */
  cached: CachedObject | undefined;
}

export interface KeyStateSources {
  doc: DocumentClient;
  tables: TableNames;
  backoff: BackoffStore;
  cache: ObjectCache;
}

/** Reads both items in one request; what DynamoDB leaves unprocessed is read on its own. */
export async function readKeyState(sources: KeyStateSources, id: BackoffId): Promise<KeyState> {
  const { doc, tables } = sources;
  const backoffKey = { pk: backoffPk(id.controller, id.cluster, id.kind, id.key) };
  const cacheKey = ObjectCache.itemKey(id.cluster, id.kind, id.key);
  const out = await doc.send(
    new BatchGetCommand({
      RequestItems: {
        [tables.control]: { Keys: [backoffKey], ConsistentRead: true },
        [tables.cache]: { Keys: [cacheKey], ConsistentRead: true },
      },
    }),
  );
  const unprocessed = out.UnprocessedKeys ?? {};
  const backoffItem = unprocessed[tables.control]?.Keys?.length
    ? await sources.backoff.get(id)
    : (out.Responses?.[tables.control]?.[0] as BackoffRecord | undefined);
  const cached = unprocessed[tables.cache]?.Keys?.length
    ? await sources.cache.get(id.cluster, id.kind, id.key)
    : sources.cache.entryOf(out.Responses?.[tables.cache]?.[0]);
  return { backoff: backoffItem, cached };
}
