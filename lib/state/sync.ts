/**
 * Bookmarks and sync markers: one control-table record per cluster and kind, `sync#<cluster>#<Kind>`.
 *
 * - `rv` (S): the forwarder's bookmark. Every watch event of that kind up to this resourceVersion has been
 *   written to the cache and, where it changed the cache, published. A restarted forwarder resumes its watch
 *   from here. `rvN` (N) holds the same value for the forward-only condition.
 * - `listComplete` (BOOL): the forwarder's first full LIST of the kind is in the cache. Controllers must not
 *   act on absence ("no matching volume", "object vanished") while it is false: the cache may be half filled.
 * - `listCompletedAt` (S): ISO-8601 time of the last completed LIST.
 * - `sourcesRvN` (N), VolumeAttachments only: equal to `rvN` (`sourcesIndexed`) while the record vouches that
 *   every cached attachment has its source entry (schema.ts), so a PV's attachments can be read from them.
 *   Only a LIST by a forwarder that keeps them starts vouching (`markListComplete` with `sourcesIndexed`);
 *   its later bookmarks keep vouching only while the record still does (`saveBookmark` moves `sourcesRvN`
 *   only under `sourcesRvN = rvN`). A forwarder from before source entries moves `rvN` alone: from then on
 *   they are not trusted, until such a LIST writes them all again.
 *
 * @example
 * const sync = new SyncMarkers(doc, 'claimflow-control');
 * await sync.markListComplete('c1', 'PersistentVolume', '4711');
 * await sync.saveBookmark('c1', 'PersistentVolume', '4800'); // true: moved forward
 * (await sync.getSync('c1', 'PersistentVolume'))?.listComplete; // true
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { parseResourceVersion } from './cache.ts';
import { itemId, type BatchGetReader } from './batch-get.ts';
import { batchGetItems, type DocumentClient } from './client.ts';
import { syncPk } from './schema.ts';

export interface SyncState {
  /** Bookmark: decimal resourceVersion ('' when only a list marker was ever written). */
  rv: string;
  listComplete: boolean;
  /** ISO-8601, set when a LIST completed. */
  listCompletedAt?: string;
  /** `sourcesRvN` equals the bookmark: every cached entry of the kind has its source entry (see above). */
  sourcesIndexed: boolean;
}

/** Writes of the record by a forwarder that keeps the kind's source entries (schema.ts). */
export interface SyncWriteOptions {
  sourcesIndexed?: boolean;
}

/** Reads and writes `sync#<cluster>#<Kind>` records in the control table. */
export class SyncMarkers {
  readonly table: string;
  #doc: DocumentClient;
  #now: () => number;
  #reader: BatchGetReader | undefined;

  /** With `reader`, {@link getSync} shares its request with the reads asked for at the same moment. */
  constructor(doc: DocumentClient, table: string, options: { now?: () => number; reader?: BatchGetReader } = {}) {
    this.table = table;
    this.#doc = doc;
    this.#now = options.now ?? Date.now;
    this.#reader = options.reader;
  }

  /** The record, or undefined before the forwarder wrote one. Strongly consistent. */
  async getSync(cluster: string, kind: string): Promise<SyncState | undefined> {
    const key = { pk: syncPk(cluster, kind) };
    const shared = this.#reader ? await this.#reader.read([{ table: this.table, key }]) : undefined;
    // Left unprocessed in the shared request (throttling): asked for on its own.
    const item = shared && shared.unprocessed.length === 0
      ? shared.items.get(itemId(this.table, key))
      : (await this.#doc.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }))).Item;
    if (!item) return undefined;
    return {
      rv: typeof item.rv === 'string' ? item.rv : '',
      listComplete: item.listComplete === true,
      ...(typeof item.listCompletedAt === 'string' ? { listCompletedAt: item.listCompletedAt } : {}),
      sourcesIndexed: SyncMarkers.sourcesIndexed(item),
    };
  }

  /** Whether a record read elsewhere says every cached entry has its source entry (see {@link SyncState}). */
  static sourcesIndexed(item: Record<string, unknown> | undefined): boolean {
    return typeof item?.sourcesRvN === 'number' && item.sourcesRvN === item.rvN;
  }

  /**
   * True when every listed kind's initial LIST is complete for the cluster: one strongly consistent
   * BatchGetItem for all the kinds (a cold container's first record waits for one read, not one per kind).
   * Keys DynamoDB leaves unprocessed are asked again, twice at most; any still unread count as incomplete.
   */
  async isListComplete(cluster: string, kinds: readonly string[]): Promise<boolean> {
    if (kinds.length === 0) return true;
    const keys = [...new Set(kinds)].map((kind) => ({ pk: syncPk(cluster, kind) }));
    const { items } = await batchGetItems(this.#doc, this.table, keys, { consistentRead: true, projection: 'pk, listComplete' });
    const complete = new Set(items.filter((item) => item.listComplete === true).map((item) => String(item.pk)));
    return kinds.every((kind) => complete.has(syncPk(cluster, kind)));
  }

  /**
   * Moves the bookmark forward to `rv`; returns false (and writes nothing) when the stored bookmark is
   * already at or past it.
   */
  async saveBookmark(cluster: string, kind: string, rv: string, options: SyncWriteOptions = {}): Promise<boolean> {
    const value = parseResourceVersion(rv);
    // Keeps vouching for source entries only where the record vouches already (see the module comment):
    // tried first; refused, the plain save decides.
    if (options.sourcesIndexed && (await this.#save(cluster, kind, value, true))) return true;
    return this.#save(cluster, kind, value, false);
  }

  async #save(cluster: string, kind: string, value: number, sourced: boolean): Promise<boolean> {
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: syncPk(cluster, kind) },
          UpdateExpression: `SET rv = :rv, rvN = :n, listComplete = if_not_exists(listComplete, :false)${sourced ? ', sourcesRvN = :n' : ''}`,
          ConditionExpression: sourced ? 'rvN < :n AND sourcesRvN = rvN' : 'attribute_not_exists(rvN) OR rvN < :n',
          ExpressionAttributeValues: { ':rv': String(value), ':n': value, ':false': false },
        }),
      );
      return true;
    } catch (err) {
      if ((err as { name?: string })?.name === 'ConditionalCheckFailedException') return false;
      throw err;
    }
  }

  /**
   * Records a completed LIST at `listRv`: sets `listComplete` and `listCompletedAt`, and sets the bookmark
   * to the list's resourceVersion unconditionally (a LIST is authoritative, even if the API server's
   * revisions restarted below an older bookmark).
   */
  async markListComplete(cluster: string, kind: string, listRv: string, options: SyncWriteOptions = {}): Promise<void> {
    const value = parseResourceVersion(listRv);
    await this.#doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: syncPk(cluster, kind) },
        UpdateExpression: `SET rv = :rv, rvN = :n, listComplete = :true, listCompletedAt = :at${options.sourcesIndexed ? ', sourcesRvN = :n' : ''}`,
        ExpressionAttributeValues: { ':rv': String(value), ':n': value, ':true': true, ':at': new Date(this.#now()).toISOString() },
      }),
    );
  }
}
