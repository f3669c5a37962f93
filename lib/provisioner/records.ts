/**
 * Per-claim provisioning state in the control table, keyed by claim UID (`provision#<cluster>#<uid>`):
 * what upstream keeps in memory and loses on restart.
 *
 * - `inProgress`: the claim while its volume is provisioned in the background (`claimsInProgress`), so a
 *   claim deleted meanwhile is still provisioned (and its volume not leaked).
 * - `slowRetry`: the slow-retry window after an infeasible error (`slowSet`).
 * - `pendingVolume`: a provisioned PV the queue store could not save yet (`unsavedpvs`).
 *
 * @example
 * const records = new ClaimRecords(doc, tables.control);
 * await records.apply('local', uid, { inProgress: claim });
 * const { inProgress } = await records.get('local', uid);
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from '../state/client.ts';
import type { SlowRetry } from './claim.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../kube/objects.ts';
import type { PendingVolumes } from './store.ts';

export interface ClaimRecord {
  inProgress?: PersistentVolumeClaim;
  slowRetry?: SlowRetry;
  pendingVolume?: PersistentVolume;
}

/** A change: a value sets the field, `null` removes it, `undefined` leaves it. */
export type ClaimRecordChange = { [K in keyof ClaimRecord]?: ClaimRecord[K] | null };

/** How long a record outlives its last change (TTL cleanup; readers never rely on it). */
const RECORD_TTL_SECONDS = 7 * 24 * 3600;

export const claimRecordPk = (cluster: string, uid: string): string => `provision#${cluster}#${uid}`;

export class ClaimRecords {
  #doc: DocumentClient;
  #table: string;
  #now: () => number;

  constructor(doc: DocumentClient, table: string, now: () => number = Date.now) {
    this.#doc = doc;
    this.#table = table;
    this.#now = now;
  }

  async get(cluster: string, uid: string): Promise<ClaimRecord> {
    const { Item } = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: { pk: claimRecordPk(cluster, uid) }, ConsistentRead: true }));
    return ClaimRecords.fromItem(Item);
  }

  /** The record an item read elsewhere holds (the runtime's prefetch); absent ⇒ empty. */
  static fromItem(Item: Record<string, unknown> | null | undefined): ClaimRecord {
    if (!Item) return {};
    return {
      ...(Item.inProgress ? { inProgress: JSON.parse(Item.inProgress as string) } : {}),
      ...(Item.slowRetry ? { slowRetry: JSON.parse(Item.slowRetry as string) } : {}),
      ...(Item.pendingVolume ? { pendingVolume: JSON.parse(Item.pendingVolume as string) } : {}),
    };
  }

  /** Applies the change in one write; a change that touches nothing writes nothing. */
  async apply(cluster: string, uid: string, change: ClaimRecordChange): Promise<void> {
    const set: string[] = [];
    const remove: string[] = [];
    const values: Record<string, unknown> = {};
    for (const field of ['inProgress', 'slowRetry', 'pendingVolume'] as const) {
      const value = change[field];
      if (value === undefined) continue;
      if (value === null) remove.push(field);
      else {
        set.push(`${field} = :${field}`);
        values[`:${field}`] = JSON.stringify(value);
      }
    }
    if (set.length === 0 && remove.length === 0) return;
    set.push('expiresAt = :exp');
    values[':exp'] = Math.floor(this.#now() / 1000) + RECORD_TTL_SECONDS;
    await this.#doc.send(new UpdateCommand({
      TableName: this.#table,
      Key: { pk: claimRecordPk(cluster, uid) },
      UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`,
      ExpressionAttributeValues: values,
    }));
  }

  /** The {@link PendingVolumes} of one claim, for the queue store. */
  pendingVolumesOf(cluster: string, uid: string): PendingVolumes & { parked: boolean } {
    const pending = {
      parked: false,
      put: async (pv: PersistentVolume): Promise<void> => {
        await this.apply(cluster, uid, { pendingVolume: pv });
        pending.parked = true;
      },
      get: async (name: string): Promise<PersistentVolume | undefined> => {
        const { pendingVolume } = await this.get(cluster, uid);
        return pendingVolume?.metadata.name === name ? pendingVolume : undefined;
      },
      delete: async (): Promise<void> => {
        await this.apply(cluster, uid, { pendingVolume: null });
      },
    };
    return pending;
  }
}
