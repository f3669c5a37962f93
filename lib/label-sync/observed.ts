/**
 * The node's previous state for the trigger predicate. The message carries only the new object, and the
 * forwarder has already overwritten the cache entry, so the last state this controller handled is kept in
 * the control table: `labelsync#<cluster>#<node>` with `storageos` (BOOL) and `labels` (JSON). It is
 * written only after an event was handled (filtered, or synced without failed calls), so a failed sync
 * is judged again, and triggers again, when its message is redelivered. The controller asks the runtime
 * to read it with the message's own state (`prefetch`): only this controller writes it, in the node's own
 * message group, so it reads the same there as inside the reconcile, without a request of its own.
 */
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from '../state/client.ts';
import type { PreviousNodeState } from './predicate.ts';

export const observedPk = (cluster: string, node: string): string => `labelsync#${cluster}#${node}`;

/** Reads and writes the previous-state records. */
export class ObservedNodes {
  #doc: DocumentClient;
  #table: string;

  constructor(doc: DocumentClient, table: string) {
    this.#doc = doc;
    this.#table = table;
  }

  /** The last handled state, or undefined when none was recorded. */
  async get(cluster: string, node: string): Promise<PreviousNodeState | undefined> {
    const out = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: { pk: observedPk(cluster, node) }, ConsistentRead: true }));
    return ObservedNodes.stateOf(out.Item);
  }

  /** The state a record read elsewhere holds (the runtime's prefetch); undefined for none. */
  static stateOf(item: Record<string, unknown> | null | undefined): PreviousNodeState | undefined {
    if (!item) return undefined;
    return { storageos: item.storageos === true, labels: JSON.parse(String(item.labels ?? '{}')) as Record<string, string> };
  }

  async put(cluster: string, node: string, state: PreviousNodeState): Promise<void> {
    await this.#doc.send(
      new PutCommand({ TableName: this.#table, Item: { pk: observedPk(cluster, node), storageos: state.storageos, labels: JSON.stringify(state.labels) } }),
    );
  }

  async delete(cluster: string, node: string): Promise<void> {
    await this.#doc.send(new DeleteCommand({ TableName: this.#table, Key: { pk: observedPk(cluster, node) } }));
  }
}
