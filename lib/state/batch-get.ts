/**
 * Consistent point reads asked for at the same moment, sent as one `BatchGetItem`.
 *
 * Before its reconcile every record of an SQS batch reads its key's backoff record, cache entry and
 * prefetch (key-state.ts), and the batch's message groups run side by side (lib/runtime/fifo-groups.ts),
 * so those reads are asked for together, one request each. A {@link BatchGetReader} gathers the keys asked
 * for until the current run of promise jobs ends (DataLoader's scheduling: no timer, no added latency) and
 * reads them in one request per 100 keys. Each caller gets back its own keys only: the items found, and the
 * keys DynamoDB left unprocessed (throttling), which it may ask for again; a key asked for by two callers
 * is read once.
 *
 * Failures stay each caller's own where DynamoDB says whose they are. A key that cannot exist (an empty key
 * attribute, a partition key over 2,048 bytes, a sort key over 1,024: DynamoDB refuses the whole request
 * for it) is not asked for and reads as absent, so one record's odd key (a class name from an annotation
 * of any length) cannot fail the others. Should DynamoDB still refuse a request of several keys as invalid,
 * each key is asked for alone, and only the callers of the keys it refuses get the error. Any other failure
 * (throttling past the SDK's retries, an outage, a missing table) is every caller's, as each caller's own
 * request would have met it at that moment.
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
/** DynamoDB's limits on a key's attributes, in UTF-8 bytes. */
const MAX_PARTITION_KEY_BYTES = 2048;
const MAX_SORT_KEY_BYTES = 1024;

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

/** Whether DynamoDB can hold an item of this key (claimflow's tables key on `pk`, and `sk` in the cache). */
export function possibleKey(key: Record<string, string>): boolean {
  return Object.entries(key).every(([name, value]) => {
    const bytes = Buffer.byteLength(value, 'utf8');
    return bytes > 0 && bytes <= (name === 'pk' ? MAX_PARTITION_KEY_BYTES : MAX_SORT_KEY_BYTES);
  });
}

/** See the module comment. */
export class BatchGetReader {
  readonly #doc: DocumentClient;
  readonly #loader: DataLoader<ItemKey, KeyRead, string>;

  constructor(doc: DocumentClient) {
    this.#doc = doc;
    // No cache: every read() is a fresh consistent read; only the keys of one moment are shared.
    // (Without a cache DataLoader hands a key asked for twice over twice: #fetch asks for it once.)
    this.#loader = new DataLoader((keys) => this.#fetch(keys), { cache: false, maxBatchSize: MAX_BATCH_GET_KEYS });
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
  async #fetch(keys: readonly ItemKey[]): Promise<Array<KeyRead | Error>> {
    const asked = keys.filter((k) => possibleKey(k.key));
    if (asked.length === 0) return keys.map(() => null);
    let answers: Map<string, KeyRead | Error>;
    try {
      answers = await this.#send(asked);
    } catch (error) {
      if ((error as Error).name !== 'ValidationException' || new Set(asked.map(keyId)).size < 2) throw error;
      // Refused as invalid: whose key was it? Each alone, so the others' callers still get their reads.
      answers = new Map();
      await Promise.all(
        [...new Map(asked.map((k) => [keyId(k), k])).values()].map(async (k) => {
          try {
            answers.set(keyId(k), (await this.#send([k])).get(keyId(k))!);
          } catch (alone) {
            answers.set(keyId(k), alone instanceof Error ? alone : new Error(String(alone)));
          }
        }),
      );
    }
    return keys.map((k) => answers.get(keyId(k)) ?? null);
  }

  /** Reads `keys` in one request: each key's item, null (absent) or UNPROCESSED, by {@link keyId}. */
  async #send(keys: readonly ItemKey[]): Promise<Map<string, KeyRead>> {
    const byTable = new Map<string, Map<string, Record<string, string>>>();
    for (const k of keys) {
      let table = byTable.get(k.table);
      if (!table) byTable.set(k.table, (table = new Map()));
      table.set(keyId(k), k.key);
    }
    const RequestItems = Object.fromEntries([...byTable].map(([table, ks]) => [table, { Keys: [...ks.values()], ConsistentRead: true }]));
    const out = await this.#doc.send(new BatchGetCommand({ RequestItems }));
    const answers = new Map<string, KeyRead>();
    for (const k of keys) answers.set(keyId(k), null);
    for (const [table, items] of Object.entries(out.Responses ?? {})) for (const item of items) answers.set(itemId(table, item), item);
    for (const [table, left] of Object.entries(out.UnprocessedKeys ?? {})) for (const key of left.Keys ?? []) answers.set(itemId(table, key), UNPROCESSED);
    return answers;
  }
}
