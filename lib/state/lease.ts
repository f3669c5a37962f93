/**
 * Operation leases in the control table (`lease#<name>`): at most one holder runs an operation (e.g. the
 * provisioning of one claim UID) at a time, even across Lambda containers and redeliveries.
 *
 * A lease has a holder, an expiry (`leaseUntil`, epoch ms) and a fencing token that grows by one with every
 * acquisition. Expiry is checked in the write condition, never left to TTL deletion (dynalite has none,
 * and DynamoDB's is late). The table's TTL attribute `expiresAt` (epoch seconds) is set
 * {@link LEASE_RETENTION_MS} after the lease's expiry (or its release), so finished leases are cleaned up. A holder that passes its token to the writes it protects lets the target reject
 * a stale holder (fencing).
 */
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from './client.ts';
import { leasePk } from './schema.ts';

/** How long a lease record outlives its expiry or release before DynamoDB TTL may delete it (1 day). */
export const LEASE_RETENTION_MS = 24 * 3600 * 1000;

/** The TTL attribute value (epoch seconds) for a record whose lease ends at `leaseUntilMs`. */
const ttlSeconds = (leaseUntilMs: number): number => Math.ceil((leaseUntilMs + LEASE_RETENTION_MS) / 1000);

/** Free: never taken, expired, or (a record from before `leaseUntil`) expired by its ms `expiresAt`. */
const FREE = '(attribute_not_exists(pk) OR leaseUntil <= :now OR (attribute_not_exists(leaseUntil) AND expiresAt <= :now))';

/** A held lease. */
export interface Lease {
  name: string;
  holder: string;
  /** When the lease ends, epoch ms (stored as `leaseUntil`). */
  expiresAt: number;
  /** Grows by one per acquisition. */
  token: number;
}

/** Someone else holds the lease. */
export class LeaseHeldError extends Error {
  readonly holder: string | undefined;
  readonly expiresAt: number | undefined;
  constructor(lease: string, holder?: string, expiresAt?: number) {
    super(`lease ${lease} is held by ${holder ?? 'someone else'}${expiresAt ? ` until ${new Date(expiresAt).toISOString()}` : ''}`);
    this.name = 'LeaseHeldError';
    this.holder = holder;
    this.expiresAt = expiresAt;
  }
}

/** The lease was lost (expired and taken, or released) before a renew or release. */
export class LeaseLostError extends Error {
  constructor(lease: string, token: number) {
    super(`lease ${lease} (token ${token}) is no longer held`);
    this.name = 'LeaseLostError';
  }
}

const isConditionFailure = (error: unknown): boolean =>
  (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

export interface LeaseStoreOptions {
  doc: DocumentClient;
  /** Control table. */
  table: string;
  now?: () => number;
}

/** Acquire, renew and release leases. */
export class LeaseStore {
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #now: () => number;

  constructor(options: LeaseStoreOptions) {
    this.#doc = options.doc;
    this.#table = options.table;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Takes the lease for `durationMs` if it is free, expired, or already ours (then it is renewed with a
   * new token). Throws {@link LeaseHeldError} otherwise.
   */
  async acquire(name: string, holder: string, durationMs: number): Promise<Lease> {
    const now = this.#now();
    try {
      const { Attributes } = await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk: leasePk(name) },
          UpdateExpression: 'SET holder = :holder, leaseUntil = :until, expiresAt = :ttl, acquiredAt = :now ADD #token :one',
          ConditionExpression: `${FREE} OR holder = :holder`,
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':holder': holder, ':until': now + durationMs, ':ttl': ttlSeconds(now + durationMs), ':now': now, ':one': 1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { name, holder, expiresAt: Attributes?.leaseUntil as number, token: Attributes?.token as number };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const current = await this.get(name);
      throw new LeaseHeldError(name, current?.holder, current?.expiresAt);
    }
  }

  /** Like {@link acquire}, but returns undefined instead of throwing when the lease is held. */
  async tryAcquire(name: string, holder: string, durationMs: number): Promise<Lease | undefined> {
    try {
      return await this.acquire(name, holder, durationMs);
    } catch (error) {
      if (error instanceof LeaseHeldError) return undefined;
      throw error;
    }
  }

  /** Extends a lease we still hold (same token, not expired). Throws {@link LeaseLostError} otherwise. */
  async renew(lease: Lease, durationMs: number): Promise<Lease> {
    const now = this.#now();
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk: leasePk(lease.name) },
          UpdateExpression: 'SET leaseUntil = :until, expiresAt = :ttl',
          ConditionExpression: 'holder = :holder AND #token = :token AND leaseUntil > :now',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':holder': lease.holder, ':token': lease.token, ':now': now, ':until': now + durationMs, ':ttl': ttlSeconds(now + durationMs) },
        }),
      );
      return { ...lease, expiresAt: now + durationMs };
    } catch (error) {
      if (isConditionFailure(error)) throw new LeaseLostError(lease.name, lease.token);
      throw error;
    }
  }

  /**
   * Gives the lease up. The record is kept with `leaseUntil = 0` so the fencing token keeps growing across
   * holders, until its TTL ({@link LEASE_RETENTION_MS} after the release). Releasing a lease we no longer
   * hold is a no-op (returns false).
   */
  async release(lease: Lease): Promise<boolean> {
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk: leasePk(lease.name) },
          UpdateExpression: 'SET leaseUntil = :zero, expiresAt = :ttl REMOVE holder',
          ConditionExpression: 'holder = :holder AND #token = :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':holder': lease.holder, ':token': lease.token, ':zero': 0, ':ttl': ttlSeconds(this.#now()) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /** The current record (holder undefined once released; `expiresAt` is the lease's end in ms); undefined when never taken. */
  async get(name: string): Promise<{ holder?: string; expiresAt: number; token: number } | undefined> {
    const { Item } = await this.#doc.send(
      new GetCommand({ TableName: this.#table, Key: { pk: leasePk(name) }, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    const until = (Item.leaseUntil ?? Item.expiresAt) as number;
    return { holder: Item.holder as string | undefined, expiresAt: until, token: Item.token as number };
  }

  /** Whether `lease` is still held at the current time (a read; use the token to fence writes). */
  async isHeld(lease: Lease): Promise<boolean> {
    const current = await this.get(lease.name);
    return current?.holder === lease.holder && current.token === lease.token && current.expiresAt > this.#now();
  }

  /** Removes the record entirely (tests, cleanup of finished operations). */
  async delete(name: string): Promise<void> {
    await this.#doc.send(new DeleteCommand({ TableName: this.#table, Key: { pk: leasePk(name) } }));
  }
}
