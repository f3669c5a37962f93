/**
 * Consistent point reads asked for at the same moment, sent as one `BatchGetItem`.
 *
 * Before its reconcile every record of an SQS batch reads its key's backoff record, cache entry and
 * prefetch (key-state.ts), and the batch's message groups run side by side (lib/runtime/fifo-groups.ts),
 * so those reads are asked for together, one request each. A {@link BatchGetReader} gathers the keys asked
 * for until the current run of promise jobs ends (DataLoader's scheduling: no timer, no added latency) and
 * reads them in one request per 100 keys. Each caller gets back its own keys only: the items found, and the
 * keys DynamoDB left unprocessed (throttling), which it may ask for again; a key asked for by two callers
 * is read once. A failed request fails every caller whose keys were in it, as their own requests would
 * have failed.
 *
 * Every read is strongly consistent and sent after every caller asked, so each caller reads state at least
 * as fresh as a request of its own would have.
 *
 * @example
 * const reader = new BatchGetReader(doc);
 * const [a, b] = await Promise.all([reader.read([{ table, key: { pk: 'x' } }]), reader.read([{ table, key: { pk: 'y' } }])]);
 * // one BatchGetItem; a.items holds x (if it exists), b.items holds y
 */
import DataLoader from 'dataloader';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from './client.ts';

/** DynamoDB's limit of keys per BatchGetItem. */
export const MAX_BATCH_GET_KEYS = 100;

/** An item's primary key in a table. */
export interface ItemKey {
  table: string;
  key: Record<string, string>;
}

export interface BatchRead {
  /** The items found, by {@link itemId}. A key asked for and not in it does not exist. */
  items: Map<string, Record<string, any>>;
  /** Keys DynamoDB left unprocessed: not known either way. */
  unprocessed: ItemKey[];
}

/** What one key's read came to. */
const UNPROCESSED = Symbol('unprocessed');
type KeyRead = Record<string, any> | null | typeof UNPROCESSED;

/** The identity of an item by table and key (`pk`, and `sk` where the table has one). */
export function itemId(table: string, item: Record<string, unknown>): string {
  return `${table}\u0000${String(item.pk)}\u0000${String(item.sk ?? '')}`;
}

const keyId = (k: ItemKey): string => itemId(k.table, k.key);

/** See the module comment. */
export class BatchGetReader {
  readonly #doc: DocumentClient;
  readonly #loader: DataLoader<ItemKey, KeyRead, string>;

  constructor(doc: DocumentClient) {
    this.#doc = doc;
    // No cache: every read() is a fresh consistent read; only the keys of one moment are shared.
    this.#loader = new DataLoader((keys) => this.#fetch(keys), { cache: false, maxBatchSize: MAX_BATCH_GET_KEYS, cacheKeyFn: keyId });
  }

  /** Reads `keys` (strongly consistent), in one request with whatever else is asked for at this moment. */
  async read(keys: readonly ItemKey[]): Promise<BatchRead> {
    const unique = [...new Map(keys.map((k) => [keyId(k), k])).values()];
    const reads = await Promise.all(unique.map((k) => this.#loader.load(k)));
    const out: BatchRead = { items: new Map(), unprocessed: [] };
    unique.forEach((k, i) => {
      const read = reads[i];
      if (read === UNPROCESSED) out.unprocessed.push(k);
      else if (read) out.items.set(keyId(k), read);
    });
    return out;
  }

  /** One BatchGetItem for the keys of one moment (≤ 100, maybe repeated: a key asked for twice). */
  async #fetch(keys: readonly ItemKey[]): Promise<KeyRead[]> {
    const byTable = new Map<string, Map<string, Record<string, string>>>();
    for (const k of keys) {
      let table = byTable.get(k.table);
      if (!table) byTable.set(k.table, (table = new Map()));
      table.set(keyId(k), k.key);
    }
    const RequestItems = Object.fromEntries([...byTable].map(([table, ks]) => [table, { Keys: [...ks.values()], ConsistentRead: true }]));
    const out = await this.#doc.send(new BatchGetCommand({ RequestItems }));
    const found = new Map<string, Record<string, any>>();
    for (const [table, items] of Object.entries(out.Responses ?? {})) for (const item of items) found.set(itemId(table, item), item);
    const unprocessed = new Set<string>();
    for (const [table, left] of Object.entries(out.UnprocessedKeys ?? {})) for (const key of left.Keys ?? []) unprocessed.add(itemId(table, key));
    return keys.map((k) => {
      const id = keyId(k);
      return unprocessed.has(id) ? UNPROCESSED : (found.get(id) ?? null);
    });
  }
}
