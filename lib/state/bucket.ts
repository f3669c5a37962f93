/**
 * The per-cluster API request budget: one token bucket in the control table (`bucket#<cluster>`) shared by
 * every concurrent invocation, so serverless fan-out stays within what one kube-controller-manager would
 * send (client-go's flowcontrol token bucket with KCM's `--kube-api-qps=20 --kube-api-burst=30`).
 *
 * Each container takes a small slice of tokens at a time (one conditional write per slice, not per
 * request) and spends it locally; a slice is only good for {@link ApiBudgetOptions.sliceTtlMs}, so a
 * container that goes idle cannot hoard budget. A 429 pauses the whole cluster's bucket until the
 * server's Retry-After has passed.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from './client.ts';
import { bucketPk } from './schema.ts';

/** kube-controller-manager's client defaults (`--kube-api-qps`, `--kube-api-burst`). */
export const KCM_CLIENT_DEFAULTS = Object.freeze({ qps: 20, burst: 30 });

/** `KUBE_API_QPS` / `KUBE_API_BURST` overrides. */
export function budgetFromEnv(env: NodeJS.ProcessEnv = process.env): { qps: number; burst: number } {
  const positive = (value: string | undefined, fallback: number): number => {
    const parsed = Number(value);
    return value !== undefined && value !== '' && Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
  };
  return { qps: positive(env.KUBE_API_QPS, KCM_CLIENT_DEFAULTS.qps), burst: positive(env.KUBE_API_BURST, KCM_CLIENT_DEFAULTS.burst) };
}

const deadlines = new AsyncLocalStorage<number>();

/**
 * Runs `fn` with a budget deadline (epoch ms, on the budget's clock): any {@link ApiBudget.take} inside it
 * gives up with a {@link BudgetTimeoutError} rather than wait past the deadline (e.g. the Lambda's remaining
 * time minus a safety margin), whatever its own `maxWaitMs`.
 */
export function withBudgetDeadline<T>(deadline: number, fn: () => T): T {
  return deadlines.run(deadline, fn);
}

/** The stored bucket. */
export interface BucketRecord {
  pk: string;
  /** Tokens left at `updatedAt` (fractional). */
  tokens: number;
  /** Epoch ms of the last refill. */
  updatedAt: number;
  /** Epoch ms until which nobody may send (a 429's Retry-After). */
  pausedUntil?: number;
}

/** Waiting for budget took longer than the caller allowed. */
export class BudgetTimeoutError extends Error {
  constructor(cluster: string, waitedMs: number) {
    super(`no API budget for cluster ${cluster} within ${waitedMs} ms`);
    this.name = 'BudgetTimeoutError';
  }
}

export interface ApiBudgetOptions {
  doc: DocumentClient;
  /** Control table. */
  table: string;
  cluster: string;
  qps?: number;
  burst?: number;
  /** Tokens taken from the shared bucket at once (default 5, at most `burst`). */
  slice?: number;
  /** How long a local slice may be spent (default 1000 ms). */
  sliceTtlMs?: number;
  /** Give up waiting after this long (default 60 s). */
  maxWaitMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const isConditionFailure = (error: unknown): boolean =>
  (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

/** One container's handle on one cluster's shared bucket. */
export class ApiBudget {
  readonly cluster: string;
  readonly qps: number;
  readonly burst: number;
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #slice: number;
  readonly #sliceTtlMs: number;
  readonly #maxWaitMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  #local = 0;
  #localExpiresAt = 0;
  #pausedUntil = 0;
  /** Serialises refills within the container. */
  #refill: Promise<void> | undefined;

  constructor(options: ApiBudgetOptions) {
    this.cluster = options.cluster;
    this.qps = options.qps ?? KCM_CLIENT_DEFAULTS.qps;
    this.burst = options.burst ?? KCM_CLIENT_DEFAULTS.burst;
    this.#doc = options.doc;
    this.#table = options.table;
    this.#slice = Math.max(1, Math.min(options.slice ?? 5, Math.floor(this.burst)));
    this.#sliceTtlMs = options.sliceTtlMs ?? 1000;
    this.#maxWaitMs = options.maxWaitMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** Waits until one request may be sent. */
  async take(): Promise<void> {
    const started = this.#now();
    for (;;) {
      const now = this.#now();
      if (now < this.#pausedUntil) {
        await this.#waitOrFail(started, this.#pausedUntil - now);
        continue;
      }
      if (this.#local >= 1 && now < this.#localExpiresAt) {
        this.#local -= 1;
        return;
      }
      if (!this.#refill) this.#refill = this.#takeSlice().finally(() => (this.#refill = undefined));
      const waitMs = await this.#refill.then(() => 0, (error: unknown) => {
        if (error instanceof WaitSignal) return error.ms;
        throw error;
      });
      if (waitMs > 0) await this.#waitOrFail(started, waitMs);
    }
  }

  /** Records a 429: nobody in any container sends to this cluster for `ms`. */
  async pause(ms: number): Promise<void> {
    const until = this.#now() + ms;
    this.#pausedUntil = Math.max(this.#pausedUntil, until);
    this.#local = 0;
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.read();
      if (current?.pausedUntil !== undefined && current.pausedUntil >= until) return;
      const next: BucketRecord = { ...(current ?? this.#full()), pausedUntil: until };
      if (await this.#write(next, current)) return;
    }
  }

  /** The stored record (consistent read). */
  async read(): Promise<BucketRecord | undefined> {
    const { Item } = await this.#doc.send(
      new GetCommand({ TableName: this.#table, Key: { pk: bucketPk(this.cluster) }, ConsistentRead: true }),
    );
    return Item as BucketRecord | undefined;
  }

  async #waitOrFail(started: number, ms: number): Promise<void> {
    const now = this.#now();
    const waited = now - started;
    const deadline = deadlines.getStore();
    if (waited + ms > this.#maxWaitMs || (deadline !== undefined && now + ms > deadline)) throw new BudgetTimeoutError(this.cluster, waited + ms);
    await this.#sleep(ms);
  }

  #full(): BucketRecord {
    return { pk: bucketPk(this.cluster), tokens: this.burst, updatedAt: this.#now() };
  }

  /** Takes up to one slice from the shared bucket into the local one, or throws a {@link WaitSignal}. */
  async #takeSlice(): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.read();
      const now = this.#now();
      if (current?.pausedUntil !== undefined && current.pausedUntil > now) {
        this.#pausedUntil = current.pausedUntil;
        throw new WaitSignal(current.pausedUntil - now);
      }
      const base = current ?? this.#full();
      const elapsed = Math.max(0, now - base.updatedAt);
      const available = Math.min(this.burst, base.tokens + (elapsed * this.qps) / 1000);
      if (available < 1) throw new WaitSignal(Math.ceil(((1 - available) * 1000) / this.qps));
      const granted = Math.min(this.#slice, Math.floor(available));
      const next: BucketRecord = { pk: base.pk, tokens: available - granted, updatedAt: now };
      if (await this.#write(next, current)) {
        this.#local = granted;
        this.#localExpiresAt = now + this.#sliceTtlMs;
        return;
      }
    }
    throw new WaitSignal(Math.ceil(1000 / this.qps));
  }

  /** Conditional on the version we read (`updatedAt`, `pausedUntil`); false when someone else wrote first. */
  async #write(next: BucketRecord, previous: BucketRecord | undefined): Promise<boolean> {
    try {
      await this.#doc.send(
        new PutCommand({
          TableName: this.#table,
          Item: next,
          ConditionExpression: previous
            ? 'updatedAt = :u AND tokens = :t'
            : 'attribute_not_exists(pk)',
          ExpressionAttributeValues: previous ? { ':u': previous.updatedAt, ':t': previous.tokens } : undefined,
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}

/** Internal: "no token now, try again in `ms`". */
class WaitSignal extends Error {
  readonly ms: number;
  constructor(ms: number) {
    super(`wait ${ms} ms`);
    this.name = 'WaitSignal';
    this.ms = Math.max(1, ms);
  }
}
