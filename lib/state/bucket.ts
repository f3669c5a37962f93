/**
 * The per-cluster API request budget: one token bucket in the control table (`bucket#<cluster>`) shared by
 * every concurrent invocation, so serverless fan-out stays within what one kube-controller-manager would
 * send (client-go's flowcontrol token bucket with KCM's `--kube-api-qps=20 --kube-api-burst=30`).
 *
 * The bucket is kept as a *theoretical arrival time* (`tat`, the generic cell rate algorithm): every token
 * is a slot `1000 / qps` ms long, `tat` is where the last reserved slot ends, and a slot may be used from
 * its end minus the burst (`burst` slots ahead of time). A container reserves a few slots with one
 * unconditional-in-effect `UpdateItem` (`SET tat = tat + n·slot`, no read first), learns from the value it
 * wrote exactly when each of its slots may be used, and sleeps until then. So:
 * - one DynamoDB write per slice, no polling while the bucket is empty and no lost races between
 *   containers (the write is an arithmetic update, not a compare-and-swap on a value read before);
 * - waiting is exact: a container knows its turn when it reserves; one that would have to wait past its
 *   deadline (the Lambda's time left, or `maxWaitMs`) is refused before it reserves anything;
 * - a reserved slot must be used within `sliceTtlMs` of its time (or of its reservation, for a slot of the
 *   burst), else it lapses (a container that goes
 *   idle cannot hoard budget). The burst is shrunk by `qps × (sliceTtlMs + marginMs)` so that lapse-free
 *   late use and request latency can never push more than `qps + burst` requests into any one second at
 *   the server;
 * - the write has two forms, one for a bucket booked ahead (`tat + n·slot`) and one for an idle bucket
 *   (`now + n·slot`), and a container guesses which applies: a wrong guess costs a refused write. A bucket
 *   idle for at most `idleGraceMs` (100 ms) may still take the first form, as under load it mostly has
 *   been idle that briefly, so a busy container tries that one first; the burst is shrunk by
 *   `qps × idleGraceMs` more to pay for the past's slots this hands out.
 * - Slices are whole (`slice`, ~100 ms of the budget: 2 tokens at KCM's 20 QPS) while the bucket is more
 *   than half full; nearer empty they grow when a container uses all it reserved and halve when slots
 *   lapse (AIMD). A reservation also covers every request of the container waiting in `take()`, up to a
 *   third of the burst left after latency (`waitingSlice`: 5 at 20/30): under load each of them comes back for
 *   another slot after the one it holds, so a saturated bucket costs one write per several requests
 *   rather than one per two.
 * A 429 pauses the whole cluster until the server's Retry-After has passed and restarts it at the steady
 * rate without a burst.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
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
  /** Epoch ms where the last reserved slot ends (absent: never used, full). */
  tat?: number;
  /** Epoch ms until which nobody may send (a 429's Retry-After). */
  pausedUntil?: number;
  /** Tokens granted since the record was created (a counter, for operators and benches). */
  granted?: number;
}

/** The stored bucket as {@link ApiBudget.read} returns it: with the tokens available at the time of reading. */
export interface BucketState extends BucketRecord {
  /** Tokens a request could take now (0 while reservations reach into the future). */
  tokens: number;
}

/** Tokens available at `now` in a stored bucket of `qps`/`burst`. */
export function bucketTokens(record: Pick<BucketRecord, 'tat'> | undefined, budget: { qps: number; burst: number }, now: number): number {
  const tat = Number(record?.tat);
  if (!Number.isFinite(tat)) return budget.burst;
  return Math.max(0, Math.min(budget.burst, budget.burst - ((tat - now) * budget.qps) / 1000));
}

/** Waiting for budget took longer than the caller allowed. */
export class BudgetTimeoutError extends Error {
  constructor(cluster: string, waitedMs: number) {
    super(`no API budget for cluster ${cluster} within ${Math.round(waitedMs)} ms`);
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
  /** Most tokens reserved at once (default qps ÷ 10, between 1 and 20, at most the effective burst). */
  slice?: number;
  /** Most tokens reserved at once for the container's waiting requests (default a third of the effective burst before the idle grace, at most 50, at least `slice`). */
  waitingSlice?: number;
  /** How long after its time a reserved slot may still be used (default: what half the burst pays for, `burst ÷ 2 ÷ qps − marginMs`, between 250 ms and 1 s; 650 ms at 20/30 and at 400/600). */
  sliceTtlMs?: number;
  /** Request latency allowed for when shrinking the burst (default 100 ms). */
  marginMs?: number;
  /**
   * How long the bucket may have stood idle for a reservation still to go after its last one instead of
   * starting at now (default 100 ms; at most what the burst left after slot life and margin holds above one
   * token, and the effective burst is shrunk by as much). See {@link ApiBudget}'s `#reserve`.
   */
  idleGraceMs?: number;
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
  /** The burst used for reservations: `burst − qps × (sliceTtlMs + marginMs + idleGraceMs)`, at least 1. */
  readonly effectiveBurst: number;
  /** How long the bucket may have been idle for the `queued` form still to apply (see `#reserve`). */
  readonly idleGraceMs: number;
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #maxSlice: number;
  readonly #maxWaitingSlice: number;
  readonly #sliceTtlMs: number;
  readonly #maxWaitMs: number;
  readonly #slotMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  /** Reserved slots not yet used, ascending: from when each may be used, and until when. */
  #slots: Array<{ at: number; until: number }> = [];
  /** Slice size for the next reservation (AIMD); a new container starts whole, as for a full bucket. */
  #sliceSize = 1;
  /** Calls of take() waiting: for a slot, or until the slot they hold is due. */
  #waiting = 0;
  /** `tat` as of our last write (chooses which update to try first). */
  #lastTat: number | undefined;
  #pausedUntil = 0;
  /** Serialises reservations within the container. */
  #reserving: Promise<void> | undefined;

  constructor(options: ApiBudgetOptions) {
    this.cluster = options.cluster;
    this.qps = options.qps ?? KCM_CLIENT_DEFAULTS.qps;
    this.burst = options.burst ?? KCM_CLIENT_DEFAULTS.burst;
    this.#doc = options.doc;
    this.#table = options.table;
    const marginMs = options.marginMs ?? 100;
    // Reserved slots live as long as half the burst can pay for (250 ms to 1 s): under load a container's
    // requests come slower than its slots, and a slot that lapses is budget nobody used.
    this.#sliceTtlMs = options.sliceTtlMs ?? Math.min(1000, Math.max(250, (this.burst / 2 / this.qps) * 1000 - marginMs));
    const burstBeforeGrace = Math.max(1, this.burst - (this.qps * (this.#sliceTtlMs + marginMs)) / 1000);
    // A reservation that goes after a bucket idle for up to `idleGraceMs` may use that much of the past's
    // budget (its slots lie up to that far back): the burst pays for it, so no one second ever holds more.
    this.idleGraceMs = Math.max(0, Math.min(options.idleGraceMs ?? 100, ((burstBeforeGrace - 1) * 1000) / this.qps));
    this.effectiveBurst = Math.max(1, burstBeforeGrace - (this.qps * this.idleGraceMs) / 1000);
    // A slice holds at most ~100 ms of the budget (2 tokens at 20 QPS, 20 at 200 QPS and above): slots a
    // container reserved and then did not need are lost to everyone, which a small budget cannot afford.
    this.#maxSlice = Math.max(1, Math.min(options.slice ?? Math.min(20, Math.floor(this.qps / 10)), Math.floor(this.effectiveBurst)));
    this.#sliceSize = this.#maxSlice;
    // A third of the burst before the grace (5 at 20/30): the grace pays for the past's slots, and should
    // not make a saturated bucket cost more writes.
    this.#maxWaitingSlice = Math.max(this.#maxSlice, Math.min(options.waitingSlice ?? 50, Math.floor(burstBeforeGrace / 3)));
    this.#maxWaitMs = options.maxWaitMs ?? 60_000;
    this.#slotMs = 1000 / this.qps;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** Waits until one request may be sent. */
  async take(): Promise<void> {
    const started = this.#now();
    this.#waiting++;
    try {
      for (;;) {
        const now = this.#now();
        if (now < this.#pausedUntil) {
          await this.#waitOrFail(started, this.#pausedUntil - now);
          continue;
        }
        this.#dropLapsed(now);
        const slot = this.#slots.shift();
        if (slot !== undefined) {
          const { at } = slot;
          if (this.#slots.length === 0) this.#grow(); // the whole slice was used: take more next time
          if (at > now) {
            try {
              await this.#waitOrFail(started, at - now);
            } catch (error) {
              this.#slots.unshift(slot); // still good for someone with more time
              throw error;
            }
          }
          return;
        }
        if (this.#reserving) {
          // Someone else's reservation (and its deadline): whatever it yields, look again.
          await this.#reserving;
          continue;
        }
        const mine = this.#reserve(started);
        this.#reserving = mine.then(
          () => undefined,
          () => undefined,
        ).finally(() => (this.#reserving = undefined));
        await mine;
      }
    } finally {
      this.#waiting--;
    }
  }

  /** Records a 429: nobody in any container sends to this cluster for `ms`, then at the steady rate. */
  async pause(ms: number): Promise<void> {
    const until = this.#now() + ms;
    this.#pausedUntil = Math.max(this.#pausedUntil, until);
    this.#slots = [];
    // The first slot after the pause may be used at `until`, and the bucket refills from empty.
    const tat = until + (this.effectiveBurst - 1) * this.#slotMs;
    const key = { pk: bucketPk(this.cluster) };
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: key,
          UpdateExpression: 'SET pausedUntil = :until, tat = :tat',
          ConditionExpression: '(attribute_not_exists(pausedUntil) OR pausedUntil < :until) AND (attribute_not_exists(tat) OR tat < :tat)',
          ExpressionAttributeValues: { ':until': until, ':tat': tat },
        }),
      );
      return;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: key,
          UpdateExpression: 'SET pausedUntil = :until',
          ConditionExpression: 'attribute_not_exists(pausedUntil) OR pausedUntil < :until',
          ExpressionAttributeValues: { ':until': until },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error; // a longer pause is already recorded
    }
  }

  /** The stored record (consistent read), with the tokens available now. */
  async read(): Promise<BucketState | undefined> {
    const { Item } = await this.#doc.send(
      new GetCommand({ TableName: this.#table, Key: { pk: bucketPk(this.cluster) }, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return { ...(Item as BucketRecord), tokens: bucketTokens(Item as BucketRecord, this, this.#now()) };
  }

  async #waitOrFail(started: number, ms: number): Promise<void> {
    const now = this.#now();
    if (ms > this.#allowedWait(started, now)) throw new BudgetTimeoutError(this.cluster, now - started + ms);
    await this.#sleep(ms);
  }

  /** How much longer a take() that started at `started` may wait. */
  #allowedWait(started: number, now: number): number {
    const deadline = deadlines.getStore();
    const byMax = this.#maxWaitMs - (now - started);
    return deadline === undefined ? byMax : Math.min(byMax, deadline - now);
  }

  /** Slots whose use-by time passed lapse; lapsing halves the next slice. */
  #dropLapsed(now: number): void {
    let lapsed = 0;
    while (this.#slots.length > 0 && this.#slots[0].until < now) {
      this.#slots.shift();
      lapsed++;
    }
    if (lapsed > 0) this.#sliceSize = Math.max(1, Math.floor(this.#sliceSize / 2));
  }

  #grow(): void {
    this.#sliceSize = Math.min(this.#maxSlice, this.#sliceSize * 2);
  }

  /**
   * Reserves a slice: `n` slots after the bucket's `tat` (or after now, when the bucket has refilled), with
   * one conditional UpdateItem; tries the other form when the bucket was not in the state guessed. Throws
   * {@link BudgetTimeoutError} when the slots would come later than the caller may wait.
   */
  async #reserve(started: number): Promise<void> {
    // Requests made in the same turn (a batch's reconciles starting together) count among the waiting.
    await Promise.resolve();
    const n = Math.max(1, Math.min(this.#maxSlice, this.#sliceSize), Math.min(this.#maxWaitingSlice, this.#waiting));
    const slot = this.#slotMs;
    const burstAhead = this.effectiveBurst * slot;
    for (let attempt = 0; attempt < 4; attempt++) {
      const now = this.#now();
      const wait = this.#allowedWait(started, now);
      if (wait < 0) throw new BudgetTimeoutError(this.cluster, now - started);
      // Which form to try first. A wrong guess costs a refused write, so it matters: `queued` when our own
      // last reservation already proves it (`tat` only grows), or when this container has requests
      // waiting beside this one — then the cluster is busy, and its other containers keep the bucket
      // booked, or idle for less than the grace (the binder bench at 400 QPS: 101 of 193 reservations
      // guessed wrong from our own `tat` alone); else `refilled`, right for a request on its own after a
      // quiet spell and wrong only when others booked the bucket ahead of now.
      const queued = (this.#lastTat !== undefined && this.#lastTat >= now - this.idleGraceMs) || this.#waiting > 1;
      for (const form of queued ? (['queued', 'refilled'] as const) : (['refilled', 'queued'] as const)) {
        const written = await this.#update(form, n, now, now + wait + burstAhead - slot);
        if (written === undefined) continue;
        this.#lastTat = written.tat;
        // Plenty left (under half the burst booked): a slot that goes unused costs nobody anything, so
        // take whole slices; near empty, AIMD keeps them small.
        if (written.tat - now < burstAhead / 2) this.#sliceSize = this.#maxSlice;
        const base = written.tat - n * slot;
        for (let k = 1; k <= n; k++) {
          // A slot is taken from the bucket at its time, or now when that has passed (burst tokens).
          const at = Math.max(now, base + k * slot - burstAhead);
          this.#slots.push({ at, until: at + this.#sliceTtlMs });
        }
        if (written.pausedUntil !== undefined && written.pausedUntil > now) this.#pausedUntil = Math.max(this.#pausedUntil, written.pausedUntil);
        return;
      }
      // Neither form applied: the bucket is booked beyond what we may wait for, or it changed between
      // the two updates. A read tells which.
      const current = await this.read();
      const tat = Number(current?.tat);
      const firstAt = Number.isFinite(tat) ? tat + slot - burstAhead : now;
      if (firstAt - now > this.#allowedWait(started, this.#now())) {
        this.#lastTat = tat;
        throw new BudgetTimeoutError(this.cluster, firstAt - started);
      }
    }
    throw new BudgetTimeoutError(this.cluster, this.#now() - started);
  }

  /**
   * `refilled`: the bucket is idle (`tat` before now or absent), so the slice starts now.
   * `queued`: reservations reach past now, or ended at most `idleGraceMs` ago; the slice goes right after
   * them, if its first slot is due by `horizon`. Going after a `tat` up to the grace in the past lets the
   * slice use that much of the past's budget, which the effective burst was shrunk by; it also spares the
   * refused write of a wrong guess whenever the bucket was only briefly idle, as it mostly is under load.
   * Within the grace, and on a bucket never used, both forms apply, so either guess is right there.
   * Returns the record as written, or undefined when the bucket was not in that state.
   */
  async #update(form: 'refilled' | 'queued', n: number, now: number, horizon: number): Promise<{ tat: number; pausedUntil?: number } | undefined> {
    const common = { TableName: this.#table, Key: { pk: bucketPk(this.cluster) }, ReturnValues: 'ALL_NEW' as const };
    try {
      const out = await this.#doc.send(
        form === 'refilled'
          ? new UpdateCommand({
              ...common,
              UpdateExpression: 'SET tat = :tat ADD granted :n',
              ConditionExpression: 'attribute_not_exists(tat) OR tat < :now',
              ExpressionAttributeValues: { ':tat': now + n * this.#slotMs, ':now': now, ':n': n },
            })
          : new UpdateCommand({
              ...common,
              UpdateExpression: 'SET tat = if_not_exists(tat, :now) + :d ADD granted :n',
              ConditionExpression: 'attribute_not_exists(tat) OR (tat >= :idle AND tat <= :horizon)',
              ExpressionAttributeValues: { ':d': n * this.#slotMs, ':now': now, ':idle': now - this.idleGraceMs, ':horizon': horizon, ':n': n },
            }),
      );
      const written = out.Attributes as BucketRecord;
      return { tat: Number(written.tat), ...(written.pausedUntil !== undefined ? { pausedUntil: Number(written.pausedUntil) } : {}) };
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }
}
