/**
 * The per-volume cache (api-manager's go-cache, `cache.New(1m, 5m)`), kept in the control table so that
 * it outlives one invocation: `sv#<cluster>#<volumeId>` → the shared volume as last reconciled, with the
 * published endpoint, and `expiresAtMs`. An entry is written only after the volume fully succeeded; an
 * expired entry reads as absent; nothing evicts entries (DynamoDB's TTL attribute `expiresAt` cleans up).
 *
 * Reads of a whole poll are batched (BatchGetItem, 100 keys per call) and a write-through copy is kept in
 * memory for the life of the container, so a steady-state poll within one invocation costs no DynamoDB
 * reads at all for the entries this container wrote.
 */
import { BatchGetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from '../state/client.ts';
import type { SharedVolume } from '../storage/types.ts';

/** The control-table key of a volume's entry. */
export const sharedVolumePk = (cluster: string, volumeId: string): string => `sv#${cluster}#${volumeId}`;

const BATCH_GET_LIMIT = 100;
/** Extra time the TTL attribute leaves beyond the logical expiry. */
const TTL_SLACK_S = 3600;

interface Entry {
  volume: SharedVolume;
  expiresAtMs: number;
}

export interface SharedVolumeCacheOptions {
  doc: DocumentClient;
  /** The control table. */
  table: string;
  cluster: string;
  now?: () => number;
}

/** The per-volume cache of one cluster. */
export class SharedVolumeCache {
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #cluster: string;
  readonly #now: () => number;
  readonly #memory = new Map<string, Entry>();

  constructor(options: SharedVolumeCacheOptions) {
    this.#doc = options.doc;
    this.#table = options.table;
    this.#cluster = options.cluster;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The unexpired entries of `volumeIds` (absent ids are missing or expired). Ids held fresh in memory are
   * not read from DynamoDB.
   */
  async getMany(volumeIds: readonly string[]): Promise<Map<string, SharedVolume>> {
    const now = this.#now();
    const found = new Map<string, SharedVolume>();
    const toRead: string[] = [];
    for (const id of new Set(volumeIds)) {
      const hit = this.#memory.get(id);
      if (hit && hit.expiresAtMs > now) found.set(id, hit.volume);
      else toRead.push(id);
    }
    for (let i = 0; i < toRead.length; i += BATCH_GET_LIMIT) {
      let keys: Record<string, unknown>[] | undefined = toRead.slice(i, i + BATCH_GET_LIMIT).map((id) => ({ pk: sharedVolumePk(this.#cluster, id) }));
      while (keys && keys.length > 0) {
        const out = await this.#doc.send(new BatchGetCommand({ RequestItems: { [this.#table]: { Keys: keys, ConsistentRead: true } } }));
        for (const item of out.Responses?.[this.#table] ?? []) {
          const entry = { volume: JSON.parse(item.volume as string) as SharedVolume, expiresAtMs: Number(item.expiresAtMs) };
          if (entry.expiresAtMs <= now) continue;
          this.#memory.set(entry.volume.id, entry);
          found.set(entry.volume.id, entry.volume);
        }
        keys = out.UnprocessedKeys?.[this.#table]?.Keys as Record<string, unknown>[] | undefined;
      }
    }
    return found;
  }

  /** `cache.Set(vol.ID, vol, expiry)`: stores the volume for `ttlMs` (Infinity = never expires). */
  async set(volume: SharedVolume, ttlMs: number): Promise<void> {
    const expiresAtMs = Number.isFinite(ttlMs) ? this.#now() + ttlMs : Number.MAX_SAFE_INTEGER;
    const item: Record<string, unknown> = {
      pk: sharedVolumePk(this.#cluster, volume.id),
      volume: JSON.stringify(volume),
      expiresAtMs,
    };
    if (Number.isFinite(ttlMs)) item.expiresAt = Math.ceil(expiresAtMs / 1000) + TTL_SLACK_S;
    await this.#doc.send(new PutCommand({ TableName: this.#table, Item: item }));
    this.#memory.set(volume.id, { volume, expiresAtMs });
  }

  /** Drops the in-memory copy (the next read goes to DynamoDB). */
  forgetMemory(): void {
    this.#memory.clear();
  }
}
