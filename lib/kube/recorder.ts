/**
 * An EventRecorder that behaves like client-go's (`tools/record`, `events_cache.go`) across Lambda
 * containers: its correlation state lives in the control table instead of an in-process LRU.
 *
 * - **Dedup:** an event identical to one already recorded (source, involvedObject incl. uid and fieldPath,
 *   type, reason, message) PATCHes the existing Event with `count+1` and a new `lastTimestamp` (strategic
 *   merge); a 404 on the patch creates it again under the same name.
 * - **Aggregation:** the 10th distinct message for the same (source, involvedObject, type, reason) within
 *   600 s, and every one after it, is recorded as one Event with the message
 *   `"(combined from similar events): " + message`.
 * - **Names:** `<involvedObject.name>.<hex unix nanos>`, in the object's namespace or `default`.
 * - **Spam filter:** at most 25 events (creates or patches) per (source, involvedObject) in a burst, refilled
 *   at one per 300 s (client-go `EventSourceObjectSpamFilter` defaults); events over it are dropped.
 * - 409 AlreadyExists on create is dropped, as upstream does. Recording never throws: a failure to record an
 *   event is logged, not propagated into the reconcile.
 *
 * Control-table records: `event#<cluster>#<sha256(key)>` (name, count, validUntil epoch ms: the API
 * server's 1 h event TTL) and `eventagg#<cluster>#<sha256(aggregateKey)>` (the set of message hashes seen,
 * lastTimestamp epoch ms) and `eventspam#<cluster>#<sha256(spamKey)>` (tokens, updatedAt epoch ms).
 */
import { createHash } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import type { DocumentClient } from '../state/client.ts';
import { isAlreadyExists, isNotFound, statusCode } from './errors.ts';

export type EventType = 'Normal' | 'Warning';

/** Anything with Kubernetes object metadata (a full object or a reference). */
export interface InvolvedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** What controllers call. */
export interface EventRecorder {
  /** Records an event about `object`. Never throws. */
  event(object: InvolvedObject, type: EventType, reason: string, message: string): Promise<void>;
  /** {@link event} with a Go-style format (`%s`, `%v`, `%d`, `%q`, `%t`, `%%`), as client-go's `Eventf`. */
  eventf(object: InvolvedObject, type: EventType, reason: string, messageFormat: string, ...args: unknown[]): Promise<void>;
}

/** client-go `defaultAggregateMaxEvents` / `defaultAggregateIntervalInSeconds`. */
export const AGGREGATE_MAX_EVENTS = 10;
export const AGGREGATE_INTERVAL_MS = 600_000;
/** The API server's default `--event-ttl`: after it the Event is gone and a repeat creates a new one. */
export const EVENT_TTL_MS = 3_600_000;
export const COMBINED_PREFIX = '(combined from similar events): ';
/** client-go `defaultSpamBurst` / `defaultSpamQPS`. */
export const SPAM_BURST = 25;
export const SPAM_QPS = 1 / 300;

export interface KubeEventRecorderOptions {
  /** The cluster's core/v1 API (or a function that resolves it lazily). */
  api: CoreV1Api | (() => Promise<CoreV1Api>);
  /** `source.component`, e.g. `persistentvolume-controller`. */
  component: string;
  /** `source.host` (optional). */
  host?: string;
  /** Cluster id: scopes the correlation records. */
  cluster: string;
  doc: DocumentClient;
  /** Control table. */
  table: string;
  now?: () => number;
  /** Where recording failures go (default: console.warn). */
  onError?: (error: unknown, event: { reason: string; message: string }) => void;
}

interface EventState {
  pk: string;
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: number;
  /** Epoch ms after which the API server has dropped the Event. */
  validUntil: number;
  /** Epoch s: TTL attribute. */
  expiresAt: number;
}

const sha = (value: string): string => createHash('sha256').update(value).digest('hex');
const rfc3339 = (ms: number): Date => new Date(Math.floor(ms / 1000) * 1000);

/** The recorder. One per (cluster, component) is enough; it holds no per-event memory. */
export class KubeEventRecorder implements EventRecorder {
  readonly #api: () => Promise<CoreV1Api>;
  readonly #component: string;
  readonly #host: string | undefined;
  readonly #cluster: string;
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #now: () => number;
  readonly #onError: (error: unknown, event: { reason: string; message: string }) => void;

  constructor(options: KubeEventRecorderOptions) {
    const api = options.api;
    this.#api = typeof api === 'function' ? api : async () => api;
    this.#component = options.component;
    this.#host = options.host;
    this.#cluster = options.cluster;
    this.#doc = options.doc;
    this.#table = options.table;
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError ?? ((error, event) => console.warn(`event ${event.reason} not recorded:`, error));
  }

  async eventf(object: InvolvedObject, type: EventType, reason: string, messageFormat: string, ...args: unknown[]): Promise<void> {
    return this.event(object, type, reason, goSprintf(messageFormat, ...args));
  }

  async event(object: InvolvedObject, type: EventType, reason: string, message: string): Promise<void> {
    try {
      await this.#record(object, type, reason, message);
    } catch (error) {
      this.#onError(error, { reason, message });
    }
  }

  async #record(object: InvolvedObject, type: EventType, reason: string, rawMessage: string): Promise<void> {
    const meta = object.metadata ?? {};
    if (!meta.name) throw new TypeError('the involved object has no name');
    const involvedObject = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
    };
    const namespace = meta.namespace || 'default';
    const now = this.#now();
    // client-go getSpamKey/aggregate key: everything but the message (resourceVersion excluded, as upstream).
    const aggregateKey = JSON.stringify([this.#component, this.#host ?? '', object.apiVersion ?? '', object.kind ?? '', namespace, meta.name, meta.uid ?? '', '', type, reason]);
    const combined = await this.#aggregate(aggregateKey, rawMessage, now);
    const message = combined ? COMBINED_PREFIX + rawMessage : rawMessage;
    const spamKey = JSON.stringify([this.#component, this.#host ?? '', object.kind ?? '', namespace, meta.name, meta.uid ?? '', object.apiVersion ?? '']);
    if (!(await this.#allow(spamKey, now))) return;
    const eventKey = combined ? aggregateKey : JSON.stringify([aggregateKey, rawMessage]);
    const statePk = `event#${this.#cluster}#${sha(eventKey)}`;
    const api = await this.#api();
    const state = await this.#get(statePk);
    if (state && state.validUntil > now) {
      const count = await this.#increment(statePk, now);
      if (count !== undefined) {
        try {
          await this.#patch(api, state, { count, lastTimestamp: rfc3339(now), message });
          return;
        } catch (error) {
          if (!isNotFound(error)) throw error;
          // The Event expired or was deleted: create it again under the same name (client-go does the same).
          await this.#create(api, {
            name: state.name,
            namespace: state.namespace,
            involvedObject,
            type,
            reason,
            message,
            count,
            first: state.firstTimestamp,
            last: now,
          });
          return;
        }
      }
    }
    const name = `${meta.name}.${eventNameSuffix(now)}`;
    await this.#create(api, { name, namespace, involvedObject, type, reason, message, count: 1, first: now, last: now });
    const fresh: EventState = {
      pk: statePk,
      name,
      namespace,
      count: 1,
      firstTimestamp: now,
      validUntil: now + EVENT_TTL_MS,
      expiresAt: Math.ceil((now + EVENT_TTL_MS) / 1000),
    };
    await this.#doc.send(new PutCommand({ TableName: this.#table, Item: fresh }));
  }

  /** Records `message` under the aggregate key; true when the event must be combined. */
  async #aggregate(aggregateKey: string, message: string, now: number): Promise<boolean> {
    const pk = `eventagg#${this.#cluster}#${sha(aggregateKey)}`;
    const local = sha(message).slice(0, 16);
    try {
      const { Attributes } = await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk },
          UpdateExpression: 'ADD localKeys :k SET lastTimestamp = :now, expiresAt = :exp',
          ConditionExpression: 'attribute_exists(pk) AND lastTimestamp >= :cutoff',
          ExpressionAttributeValues: { ':k': new Set([local]), ':now': now, ':cutoff': now - AGGREGATE_INTERVAL_MS, ':exp': Math.ceil((now + AGGREGATE_INTERVAL_MS) / 1000) },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const keys = Attributes?.localKeys as Set<string> | undefined;
      return (keys?.size ?? 0) >= AGGREGATE_MAX_EVENTS;
    } catch (error) {
      if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
      // No record, or the window passed: start a new one.
      await this.#doc.send(
        new PutCommand({
          TableName: this.#table,
          Item: { pk, localKeys: new Set([local]), lastTimestamp: now, expiresAt: Math.ceil((now + AGGREGATE_INTERVAL_MS) / 1000) },
        }),
      );
      return AGGREGATE_MAX_EVENTS <= 1;
    }
  }

  /** Takes one token from the (source, object) spam bucket; false when it is empty. */
  async #allow(spamKey: string, now: number): Promise<boolean> {
    const pk = `eventspam#${this.#cluster}#${sha(spamKey)}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const { Item } = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: { pk }, ConsistentRead: true }));
      const previous = Item as { tokens: number; updatedAt: number } | undefined;
      const tokens = previous
        ? Math.min(SPAM_BURST, previous.tokens + (Math.max(0, now - previous.updatedAt) / 1000) * SPAM_QPS)
        : SPAM_BURST;
      if (tokens < 1) return false;
      try {
        await this.#doc.send(
          new PutCommand({
            TableName: this.#table,
            Item: { pk, tokens: tokens - 1, updatedAt: now, expiresAt: Math.ceil(now / 1000 + SPAM_BURST / SPAM_QPS) },
            ConditionExpression: previous ? 'updatedAt = :u AND tokens = :t' : 'attribute_not_exists(pk)',
            ExpressionAttributeValues: previous ? { ':u': previous.updatedAt, ':t': previous.tokens } : undefined,
          }),
        );
        return true;
      } catch (error) {
        if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
      }
    }
    return true;
  }

  async #get(pk: string): Promise<EventState | undefined> {
    const { Item } = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: { pk }, ConsistentRead: true }));
    return Item as EventState | undefined;
  }

  /** count+1 in the shared state; undefined when the state vanished meanwhile. */
  async #increment(pk: string, now: number): Promise<number | undefined> {
    try {
      const { Attributes } = await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk },
          UpdateExpression: 'ADD #count :one SET lastTimestamp = :now',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#count': 'count' },
          ExpressionAttributeValues: { ':one': 1, ':now': now },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes?.count as number;
    } catch (error) {
      if ((error as { name?: string }).name === 'ConditionalCheckFailedException') return undefined;
      throw error;
    }
  }

  async #patch(api: CoreV1Api, state: EventState, body: { count: number; lastTimestamp: Date; message: string }): Promise<void> {
    const request = { name: state.name, namespace: state.namespace, body };
    try {
      await api.patchNamespacedEvent(request, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));
    } catch (error) {
      // A server without strategic merge for events: a JSON merge patch means the same for these fields.
      if (statusCode(error) !== 415) throw error;
      await api.patchNamespacedEvent(request, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    }
  }

  async #create(
    api: CoreV1Api,
    e: {
      name: string;
      namespace: string;
      involvedObject: CoreV1Event['involvedObject'];
      type: EventType;
      reason: string;
      message: string;
      count: number;
      first: number;
      last: number;
    },
  ): Promise<void> {
    const body: CoreV1Event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: e.name, namespace: e.namespace },
      involvedObject: e.involvedObject,
      type: e.type,
      reason: e.reason,
      message: e.message,
      count: e.count,
      firstTimestamp: rfc3339(e.first),
      lastTimestamp: rfc3339(e.last),
      source: { component: this.#component, ...(this.#host ? { host: this.#host } : {}) },
      reportingComponent: this.#component,
      reportingInstance: this.#host ?? '',
    };
    try {
      await api.createNamespacedEvent({ namespace: e.namespace, body });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  }
}

let lastNanos = 0n;
/** Hex unix nanoseconds, strictly increasing within the process (client-go: `%x` of `UnixNano()`). */
export function eventNameSuffix(nowMs: number): string {
  let nanos = BigInt(nowMs) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
  if (nanos <= lastNanos) nanos = lastNanos + 1n;
  lastNanos = nanos;
  return nanos.toString(16);
}

/**
 * A recorder that keeps events in memory instead of sending them (for runs with no cluster to write to,
 * e.g. a function started without KUBECONFIG/CLUSTERS); `events` lists what would have been recorded.
 */
export class MemoryEventRecorder implements EventRecorder {
  readonly events: Array<{ object: InvolvedObject; type: EventType; reason: string; message: string }> = [];
  async event(object: InvolvedObject, type: EventType, reason: string, message: string): Promise<void> {
    this.events.push({ object, type, reason, message });
  }
  async eventf(object: InvolvedObject, type: EventType, reason: string, messageFormat: string, ...args: unknown[]): Promise<void> {
    return this.event(object, type, reason, goSprintf(messageFormat, ...args));
  }
}

/**
 * The subset of Go's `fmt.Sprintf` event messages use: `%v`/`%s` (value), `%d`, `%q` (double-quoted,
 * escaped), `%t`, `%%`. Missing arguments print as Go does (`%!v(MISSING)`).
 */
export function goSprintf(format: string, ...args: unknown[]): string {
  let next = 0;
  return format.replace(/%([-+# 0]*\d*(?:\.\d+)?)([vsdqtfx%])/g, (_match, _flags: string, verb: string) => {
    if (verb === '%') return '%';
    if (next >= args.length) return `%!${verb}(MISSING)`;
    const arg = args[next++];
    const text = arg instanceof Error ? arg.message : typeof arg === 'object' && arg !== null ? JSON.stringify(arg) : String(arg);
    return verb === 'q' ? JSON.stringify(text) : text;
  });
}
