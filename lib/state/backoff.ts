/**
 * Per-key retry state in the control table: the serverless counterpart of client-go's
 * `ItemExponentialFailureRateLimiter` (workqueue `DefaultTypedControllerRateLimiter`'s per-item half).
 *
 * One record per (controller, cluster, kind, key) at `backoff#<controller>#<cluster>#<Kind>#<key>`, and a
 * controller may keep second streams of a key beside it (`<pk>#<scope>`, {@link BackoffId.scope}):
 * `failures` (upstream `NumRequeues`), `nextAttemptAt` (epoch ms), `lastError`, `expiresAt` (TTL, epoch s).
 * A key given up at its controller's failure threshold keeps its record with `givenUp` set (upstream `Done`
 * without `Forget`): the count survives, so a later change of the object gets one attempt and a failure gives
 * up again; only a success (`Forget`, incl. the reconcile of the object's deletion) deletes the record.
 * While a retry is parked for the resync function to re-enqueue, the record also carries `dueShard`/`dueAt`
 * and so appears in the sparse {@link DUE_INDEX}. Writes are single-item conditional writes (no
 * transactions: dynalite has none); success deletes the record (upstream `Forget`).
 */
import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from './client.ts';
import { backoffPk, DUE_INDEX } from './schema.ts';

/** Identifies one retry stream. */
export interface BackoffId {
  controller: string;
  cluster: string;
  kind: string;
  key: string;
  /**
   * A second stream for the same key, apart from the runtime's (e.g. a deleted object's UID, when a new
   * object took its name): its own record (`<pk>#<scope>`), which the runtime's gates never read. Its
   * attributes are the key's, so a park of it comes back to the key's controller as the key's REQUEUE
   * (and the sweep rearms or unparks it like any park).
   */
  scope?: string;
}

/** What a parked retry needs to be re-enqueued as a REQUEUE message. */
export interface BackoffObjectRef {
  uid?: string;
  resourceVersion?: string;
}

export interface BackoffRecord extends BackoffId, BackoffObjectRef {
  pk: string;
  /** Consecutive failures so far (0 for a plain delayed requeue). */
  failures: number;
  /** Epoch ms before which a redelivered or requeued message should not be reconciled. */
  nextAttemptAt: number;
  lastError?: string;
  updatedAt: number;
  /** Epoch seconds: TTL attribute (best effort; readers do not rely on deletion). */
  expiresAt: number;
  /** Set while parked: the {@link DUE_INDEX} partition. */
  dueShard?: string;
  /** Set while parked: epoch ms when the resync function should re-enqueue the key. */
  dueAt?: number;
  /** Set once the failure threshold was reached: no retry until the object changes (never parked). */
  givenUp?: boolean;
  /**
   * A reminder's: how many more times the sweep parks it again, `rearmEveryMs` after each time it sends it,
   * instead of taking it off the due index ({@link BackoffStore.rearm}); reset by every park that sets it.
   */
  rearms?: number;
  rearmEveryMs?: number;
}

/** A park that the sweep renews after sending it (a reminder), see {@link BackoffRecord.rearms}. */
export interface Rearming {
  rearms: number;
  rearmEveryMs: number;
}

/** The exponential per-item limiter's parameters. */
export interface RateLimiterConfig {
  /** Delay after the first failure (client-go: 5 ms). */
  baseDelayMs: number;
  /** Cap (client-go: 1000 s). */
  maxDelayMs: number;
}

/** client-go `DefaultTypedControllerRateLimiter`: `NewTypedItemExponentialFailureRateLimiter(5*time.Millisecond, 1000*time.Second)`. */
export const WORKQUEUE_DEFAULTS: Readonly<RateLimiterConfig> = Object.freeze({ baseDelayMs: 5, maxDelayMs: 1_000_000 });

/** Environment overrides: `BACKOFF_BASE_DELAY_MS`, `BACKOFF_MAX_DELAY_MS`. */
export function rateLimiterConfigFromEnv(env: NodeJS.ProcessEnv = process.env): RateLimiterConfig {
  const positive = (value: string | undefined, fallback: number): number => {
    const parsed = Number(value);
    return value !== undefined && value !== '' && Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
  };
  return {
    baseDelayMs: positive(env.BACKOFF_BASE_DELAY_MS, WORKQUEUE_DEFAULTS.baseDelayMs),
    maxDelayMs: positive(env.BACKOFF_MAX_DELAY_MS, WORKQUEUE_DEFAULTS.maxDelayMs),
  };
}

/**
 * Delay before the next attempt after the `failures`-th consecutive failure (1-based):
 * `base * 2^(failures-1)`, capped at `max` (client-go computes `base * 2^exp` with `exp` the failures
 * before this one).
 */
export function exponentialDelayMs(failures: number, config: RateLimiterConfig = WORKQUEUE_DEFAULTS): number {
  const exp = Math.max(0, failures - 1);
  if (exp > 62) return config.maxDelayMs;
  return Math.min(config.baseDelayMs * 2 ** exp, config.maxDelayMs);
}

/** The record key of `id` (a scoped id's: the key's own, then `#<scope>`). */
export function backoffIdPk(id: BackoffId): string {
  const pk = backoffPk(id.controller, id.cluster, id.kind, id.key);
  return id.scope ? `${pk}#${id.scope}` : pk;
}

/** Number of {@link DUE_INDEX} partitions parked records are spread over. */
export const DUE_SHARDS = 4;

/** The due-index partition of a record key. */
export function dueShard(pk: string): string {
  const n = createHash('sha256').update(pk).digest().readUInt32BE(0) % DUE_SHARDS;
  return `due#${n}`;
}

/** A concurrent writer changed the record between our read and write more often than we retry. */
export class BackoffContentionError extends Error {
  constructor(pk: string, options?: ErrorOptions) {
    super(`backoff record ${pk} kept changing under us`, options);
    this.name = 'BackoffContentionError';
  }
}

const RECORD_TTL_S = 24 * 3600;
/**
 * How long a given-up key's count outlives its last failure. Upstream keeps it in memory until the object's
 * deletion or a controller restart; a month stands in for the restart so that records of objects whose
 * deletion was never seen do not stay for ever.
 */
export const GIVEN_UP_TTL_S = 30 * 24 * 3600;
const MAX_ERROR_LENGTH = 2048;

const isConditionFailure = (error: unknown): boolean =>
  (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

export interface BackoffStoreOptions {
  doc: DocumentClient;
  /** Control table name. */
  table: string;
  limiter?: RateLimiterConfig;
  /** Clock (epoch ms). */
  now?: () => number;
}

/** Reads and writes backoff records. */
export class BackoffStore {
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #now: () => number;
  readonly limiter: RateLimiterConfig;

  constructor(options: BackoffStoreOptions) {
    this.#doc = options.doc;
    this.#table = options.table;
    this.#now = options.now ?? Date.now;
    this.limiter = options.limiter ?? WORKQUEUE_DEFAULTS;
  }

  /** The record, if any. */
  async get(id: BackoffId): Promise<BackoffRecord | undefined> {
    const { Item } = await this.#doc.send(
      new GetCommand({ TableName: this.#table, Key: { pk: this.#pk(id) }, ConsistentRead: true }),
    );
    return Item as BackoffRecord | undefined;
  }

  /**
   * Counts one more failure (upstream `AddRateLimited`): `failures+1`, `nextAttemptAt = now + delay`,
   * `lastError`. Optimistic: the write is conditional on the failure count it read, and re-read on conflict.
   * A parked retry is un-parked (the caller decides again how to wait). `known` is the record as the caller
   * last read it (`null`: absent), which saves the first read; a stale one only costs a retry. With a
   * `threshold` (> 0) that the count reaches, the record is marked `givenUp` with no delay and a long TTL: it
   * is kept, not deleted, so the count survives the give-up (upstream's `Done` without `Forget`).
   */
  async recordFailure(
    id: BackoffId,
    error: string,
    ref: BackoffObjectRef = {},
    known?: BackoffRecord | null,
    threshold = 0,
  ): Promise<{ record: BackoffRecord; delayMs: number }> {
    const pk = this.#pk(id);
    for (let attempt = 0; attempt < 5; attempt++) {
      const previous = attempt === 0 && known !== undefined ? (known ?? undefined) : await this.get(id);
      const failures = (previous?.failures ?? 0) + 1;
      const givenUp = threshold > 0 && failures >= threshold;
      // Given up: no retry is scheduled, so the next change of the object is not held back by the gate.
      const delayMs = givenUp ? 0 : exponentialDelayMs(failures, this.limiter);
      const now = this.#now();
      const record: BackoffRecord = {
        pk,
        ...this.#idOf(id),
        failures,
        nextAttemptAt: now + delayMs,
        lastError: error.slice(0, MAX_ERROR_LENGTH),
        updatedAt: now,
        expiresAt: Math.ceil((now + delayMs) / 1000) + (givenUp ? GIVEN_UP_TTL_S : RECORD_TTL_S),
        ...this.#refOf(ref, previous),
        ...(givenUp ? { givenUp: true } : {}),
      };
      try {
        await this.#doc.send(
          new PutCommand({
            TableName: this.#table,
            Item: record,
            ConditionExpression: previous ? 'failures = :prev' : 'attribute_not_exists(pk)',
            ExpressionAttributeValues: previous ? { ':prev': previous.failures } : undefined,
          }),
        );
        return { record, delayMs };
      } catch (caught) {
        if (!isConditionFailure(caught)) throw caught;
      }
    }
    throw new BackoffContentionError(pk);
  }

  /**
   * A wait that is not a failure (a `{ requeueAfterMs }` result, a cache not yet synced): keeps the failure
   * count and sets `nextAttemptAt`. Used with {@link park} when the wait does not fit in the message's
   * visibility.
   */
  async delay(id: BackoffId, untilMs: number, ref: BackoffObjectRef = {}): Promise<BackoffRecord> {
    return this.#upsertWait(id, untilMs, ref, false);
  }

  /**
   * Parks the key: the queue message is deleted and the resync function re-enqueues the key when
   * `dueAt` has passed ({@link listDue}). Keeps the failure count.
   */
  async park(id: BackoffId, dueAt: number, ref: BackoffObjectRef = {}, rearming?: Rearming): Promise<BackoffRecord> {
    return this.#upsertWait(id, dueAt, ref, true, rearming);
  }

  /**
   * The sweep's alternative to {@link unpark} for a reminder with rearms left: parks it again at `dueAt`,
   * one rearm fewer, if it is still parked at the `dueAt` it was read with. Returns false when someone
   * else took it or changed it, or no rearm is left (then it is for {@link unpark}).
   */
  async rearm(record: Pick<BackoffRecord, 'pk' | 'dueAt'>, dueAt: number): Promise<boolean> {
    return this.#changeParked(record.pk, 'SET dueAt = :next, rearms = rearms - :one', 'dueAt = :dueAt AND rearms > :zero', { ':next': dueAt, ':one': 1, ':zero': 0, ':dueAt': record.dueAt });
  }

  /** Success (upstream `Forget`): deletes the record. */
  async clear(id: BackoffId): Promise<void> {
    await this.#doc.send(new DeleteCommand({ TableName: this.#table, Key: { pk: this.#pk(id) } }));
  }

  /** Parked records whose `dueAt` ≤ `now`, oldest first per shard, at most `limit` in all. */
  async listDue(now: number = this.#now(), limit = 500): Promise<BackoffRecord[]> {
    const due: BackoffRecord[] = [];
    for (let shard = 0; shard < DUE_SHARDS && due.length < limit; shard++) {
      let start: Record<string, unknown> | undefined;
      do {
        const page = await this.#doc.send(
          new QueryCommand({
            TableName: this.#table,
            IndexName: DUE_INDEX,
            KeyConditionExpression: 'dueShard = :shard AND dueAt <= :now',
            ExpressionAttributeValues: { ':shard': `due#${shard}`, ':now': now },
            Limit: limit - due.length,
            ExclusiveStartKey: start,
          }),
        );
        due.push(...((page.Items ?? []) as BackoffRecord[]));
        start = page.LastEvaluatedKey;
      } while (start && due.length < limit);
    }
    return due;
  }

  /**
   * Takes a parked record off the due index if it is still parked at the same `dueAt` (so two resync runs
   * do not both re-enqueue it). Returns false when someone else took it or it changed.
   */
  async unpark(record: Pick<BackoffRecord, 'pk' | 'dueAt'>): Promise<boolean> {
    return this.#changeParked(record.pk, 'REMOVE dueShard, dueAt', 'dueAt = :dueAt', { ':dueAt': record.dueAt });
  }

  /** A conditional change of a parked record: false when the condition no longer holds. */
  async #changeParked(pk: string, update: string, condition: string, values: Record<string, unknown>): Promise<boolean> {
    try {
      await this.#doc.send(new UpdateCommand({ TableName: this.#table, Key: { pk }, UpdateExpression: update, ConditionExpression: condition, ExpressionAttributeValues: values }));
      return true;
    } catch (caught) {
      if (isConditionFailure(caught)) return false;
      throw caught;
    }
  }

  async #upsertWait(id: BackoffId, untilMs: number, ref: BackoffObjectRef, parked: boolean, rearming?: Rearming): Promise<BackoffRecord> {
    const pk = this.#pk(id);
    const now = this.#now();
    const values: Record<string, unknown> = {
      ':zero': 0,
      ':until': untilMs,
      ':now': now,
      ':exp': Math.ceil(untilMs / 1000) + RECORD_TTL_S,
      ':controller': id.controller,
      ':cluster': id.cluster,
      ':kind': id.kind,
      ':key': id.key,
    };
    const sets = [
      'failures = if_not_exists(failures, :zero)',
      'nextAttemptAt = :until',
      'updatedAt = :now',
      'expiresAt = :exp',
      '#controller = :controller',
      '#cluster = :cluster',
      '#kind = :kind',
      '#key = :key',
    ];
    if (ref.uid !== undefined) {
      sets.push('#uid = :uid');
      values[':uid'] = ref.uid;
    }
    if (ref.resourceVersion !== undefined) {
      sets.push('#rv = :rv');
      values[':rv'] = ref.resourceVersion;
    }
    if (parked && rearming) {
      sets.push('rearms = :rearms', 'rearmEveryMs = :rearmEveryMs');
      values[':rearms'] = rearming.rearms;
      values[':rearmEveryMs'] = rearming.rearmEveryMs;
    }
    const names: Record<string, string> = { '#controller': 'controller', '#cluster': 'cluster', '#kind': 'kind', '#key': 'key' };
    if (ref.uid !== undefined) names['#uid'] = 'uid';
    if (ref.resourceVersion !== undefined) names['#rv'] = 'resourceVersion';
    let update = `SET ${sets.join(', ')}`;
    if (parked) {
      update += ', dueShard = :shard, dueAt = :until';
      values[':shard'] = dueShard(pk);
      if (!rearming) update += ' REMOVE rearms, rearmEveryMs';
    } else {
      update += ' REMOVE dueShard, dueAt, rearms, rearmEveryMs';
    }
    const { Attributes } = await this.#doc.send(
      new UpdateCommand({
        TableName: this.#table,
        Key: { pk },
        UpdateExpression: update,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes as BackoffRecord;
  }

  #pk(id: BackoffId): string {
    return backoffIdPk(id);
  }

  #idOf(id: BackoffId): BackoffId {
    return { controller: id.controller, cluster: id.cluster, kind: id.kind, key: id.key };
  }

  #refOf(ref: BackoffObjectRef, previous: BackoffRecord | undefined): BackoffObjectRef {
    const uid = ref.uid ?? previous?.uid;
    const resourceVersion = ref.resourceVersion ?? previous?.resourceVersion;
    return { ...(uid !== undefined ? { uid } : {}), ...(resourceVersion !== undefined ? { resourceVersion } : {}) };
  }
}
