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
 * - **Names:** `<involvedObject.name>.<16 hex digits>`, in the object's namespace or `default` — client-go's
 *   shape (its digits are the unix nanos), but derived from the (source, object) item and the event key
 *   ({@link eventName}): every container names the same event alike, so a create of an Event that already
 *   exists (409) PATCHes it with `count+1` under its resourceVersion instead of being dropped.
 * - **Spam filter:** at most 25 events (creates or patches) per (source, involvedObject) in a burst, refilled
 *   at one per 300 s (client-go `EventSourceObjectSpamFilter` defaults); events over it are dropped.
 * - A create that meets its Event already there (409 AlreadyExists, which client-go drops) counts into it (see
 *   Names). Recording never throws: a failure to record an event is logged, not propagated into the reconcile.
 *
 * **State: one control-table item per (cluster, source, involvedObject)**, `event#<cluster>#<sha256(spamKey)>`
 * (every key the correlator uses starts with the spam key: the aggregate key adds type and reason, the event
 * key adds the message), holding the spam bucket (`tokens`, `updatedAt` epoch ms), `aggregates` (sha of the
 * aggregate key → the message hashes seen in the window, at most 10, and `lastTimestamp` epoch ms), `events`
 * (sha of the event key → Event `name`, `count`, `firstTimestamp`, `validUntil` epoch ms: the API server's
 * 1 h event TTL), `version` (the optimistic lock) and `expiresAt` (TTL, epoch s: when every part of it has
 * lapsed, i.e. a missing item means the same as this one).
 *
 * **Two DynamoDB requests per event at most, but for a merge (below):** a consistent GetItem, then the
 * decision client-go's correlator makes (aggregate, spam filter, dedup) computed in memory, then one
 * PutItem conditional on `version`
 * (`attribute_not_exists` for the first). A lost race (ConditionalCheckFailed) re-reads and decides again, a
 * bounded number of times; nothing has been sent to the API server yet, so no API call is ever repeated.
 * The item this container wrote last for an object stands in for the read for 10 s (one PutItem per event
 * then: a binder's repeated waiting event); a write by anyone else since fails the version condition, and
 * the item is read. An object created in the last minute that this container has no item for is taken to
 * have none (the first event of a new claim): a Normal first event is sent without any DynamoDB request,
 * and its state held in this container. So are the object's next Normal events from it while each is a new
 * Event and the object is less than a minute old (a provisioner's `Provisioning` and
 * `ProvisioningSucceeded`: no DynamoDB request for either). The first that is not (a Warning, which is what
 * a retry repeats; a repeat: count+1; a drop by the spam filter; any event once the object is a minute old)
 * stores the state held, conditional on absence; refused if another container wrote one meanwhile, which
 * is then read. Held state is this container's until then, however long ago its last event (LRU-evicted
 * with the rest, {@link WRITTEN_MEMO_ENTRIES}): its store is conditional on absence, so it never needs the
 * 10 s limit of an item read. A repeat of an unsaved event from elsewhere (or after the state was evicted)
 * finds no state, decides a new Event, meets the one already created under the same name (409), reads it
 * and PATCHes it with its count+1 under its resourceVersion, and stores that count (a merge: one more
 * PutItem, conditional like the others, a higher stored count winning), so every container's next repeat
 * goes on from the Event's own count. What unsaved events do not leave in the stored state are their spam
 * tokens and their messages in the aggregation window: another container counts the object's burst and
 * aggregation afresh, as a restarted client-go does. A new object's events are few when all goes well (a
 * provisioned claim has two from the provisioner, one from the binder), and storing them only to forget
 * them an hour later was one PutItem per claim for nothing; a failure's Warning is stored at once, so its
 * retry counts into it with one PATCH.
 *
 * **Order: state first, then the API call** (as the dedup path always did: its count+1 and the spam token were
 * written before the PATCH). The write is what makes the decision exclusive — its winner is the only container
 * that sends that count — so it must come first; sending first would leave a lost race with an Event the
 * state does not know of. A crash (or an API failure) between the two leaves a decision the API never saw:
 * the token is spent and the count or the aggregated message is taken, as before; for a new Event, the entry
 * names an Event that does not exist, so the next repeat PATCHes it, gets 404 and creates it under that name
 * with the right count (before, a crash after the create and before the state write made the repeat a second
 * Event instead). Concurrent PATCHes from two containers may reach the API server out of order (the lower
 * count last), as before. The one exception is a new object's events held unsaved (above), sent before
 * their state is stored: two containers sending one at once create one Event (the same name) and the second
 * counts into it.
 *
 * **Size:** every write drops aggregates whose window has passed and events past `validUntil`. Live event
 * entries are bounded by the spam filter (each new one takes a token: at most 25 + 3600 s / 300 s = 37 per
 * hour); aggregates hold at most 10 hashes each, one per (type, reason) seen in the last 600 s (dropped
 * events count too). Both maps are capped ({@link MAX_CORRELATION_ENTRIES}, the stalest dropped first, as
 * client-go's LRU does) so a clock-skewed container or a runaway reason set cannot grow the item; at the cap
 * with 253-character names it stays under ~40 KB, far from DynamoDB's 400 KB.
 *
 * Records of earlier versions (`eventspam#`, `eventagg#` and per-event-key `event#` items) are never read;
 * they all carry `expiresAt` and lapse within ~2 h. A record under this item's key without `version` is
 * treated as absent and overwritten.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { DocumentClient } from '../state/client.ts';
import { isAlreadyExists, isNotFound, statusCode } from './errors.ts';
import type { KubeJsonApi } from './json-api.ts';

export type EventType = 'Normal' | 'Warning';

/** Anything with Kubernetes object metadata (a full object or a reference). */
export interface InvolvedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; creationTimestamp?: Date | string };
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
/** At most this many aggregates, and this many events, in one (source, object) item. */
const MAX_CORRELATION_ENTRIES = 64;
/** Writes tried per event before giving up (each lost race means another container's event went in). */
/** How long an item this container wrote stands in for a read (state held unsaved: until stored), and how many are kept. */
const WRITTEN_MEMO_MS = 10_000;
const WRITTEN_MEMO_ENTRIES = 500;
const MAX_ATTEMPTS = 10;

/** An Event as the recorder creates it (timestamps in epoch ms). */
interface CreatedEvent {
  name: string;
  namespace: string;
  involvedObject: CoreV1Event['involvedObject'];
  type: EventType;
  reason: string;
  message: string;
  count: number;
  first: number;
  last: number;
}
/**
 * An object created less than this long ago, whose item this container has not written, is taken to have
 * no item yet (its first event: a provisioner's `Provisioning`, a binder's `ExternalProvisioning`): a Normal
 * one is sent without a read or a write, and its state held in the container while the object's next events
 * from it are new Normal Events and it is younger than this (a provisioner's `ProvisioningSucceeded`). The
 * first that is not (a Warning, a repeat, a drop, an older object) stores it, conditional on absence; if
 * another container stored one meanwhile, the write is refused and the item is read, as after any lost race.
 */
const NEW_OBJECT_MS = 60_000;

export interface KubeEventRecorderOptions {
  /** The cluster's API, as JSON (or a function that resolves it lazily): lib/kube/json-api.ts. */
  api: KubeJsonApi | (() => Promise<KubeJsonApi>);
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

/** One aggregate key's window: the message hashes seen (at most {@link AGGREGATE_MAX_EVENTS}). */
interface AggregateEntry {
  messages: string[];
  /** Epoch ms of its latest event; the window lapses {@link AGGREGATE_INTERVAL_MS} after it. */
  lastTimestamp: number;
}

/** One event key's Event in the API server. */
interface EventEntry {
  name: string;
  count: number;
  firstTimestamp: number;
  /** Epoch ms after which the API server has dropped the Event. */
  validUntil: number;
}

/** The control-table item of one (cluster, source, involvedObject). */
interface CorrelationItem {
  pk: string;
  version: number;
  /** Spam bucket: tokens left at `updatedAt` (epoch ms of the last token taken). */
  tokens: number;
  updatedAt: number;
  aggregates: Record<string, AggregateEntry>;
  events: Record<string, EventEntry>;
  /** Epoch s: TTL attribute. */
  expiresAt: number;
}

/** What the API server is sent once the decision is stored. */
type Action =
  | { kind: 'drop' }
  | { kind: 'create'; name: string; message: string; key: string }
  | { kind: 'patch'; name: string; count: number; firstTimestamp: number; message: string; key: string };

interface Keys {
  pk: string;
  aggregate: string;
  /** The event key of a message that stands alone; a combined one uses `aggregate`. */
  event: string;
  /** Hash of the raw message, as client-go's aggregator `localKey`. */
  message: string;
}

const sha = (value: string): string => createHash('sha256').update(value).digest('hex');
/** Map keys inside the item: 128 bits of the key's hash. */
const entryKey = (value: string): string => sha(value).slice(0, 32);
/** RFC 3339 at whole seconds, as the API server writes an Event's timestamps (`2026-11-28T15:00:05Z`). */
const rfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
/** An Event as the API server answers it (JSON: timestamps are RFC 3339 strings), the fields a merge reads. */
interface EventJson {
  metadata?: { resourceVersion?: string };
  count?: number;
  firstTimestamp?: string;
}
const eventPath = (namespace: string, name: string): string => `/api/v1/namespaces/${encodeURIComponent(namespace)}/events/${encodeURIComponent(name)}`;
const isConditionFailure = (error: unknown): boolean => (error as { name?: string }).name === 'ConditionalCheckFailedException';

/**
 * The recorder. One per (cluster, component) is enough; it remembers the items it wrote last (and a new
 * object's state it holds unsaved, see {@link NEW_OBJECT_MS}), at most {@link WRITTEN_MEMO_ENTRIES}.
 */
export class KubeEventRecorder implements EventRecorder {
  readonly #api: () => Promise<KubeJsonApi>;
  readonly #component: string;
  readonly #host: string | undefined;
  readonly #cluster: string;
  readonly #doc: DocumentClient;
  readonly #table: string;
  readonly #now: () => number;
  readonly #onError: (error: unknown, event: { reason: string; message: string }) => void;
  /** The items this container wrote last, by pk (oldest first), standing in for a read for a while. */
  readonly #written = new Map<string, { item: CorrelationItem; at: number; saved: boolean }>();

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
    const spamKey = JSON.stringify([this.#component, this.#host ?? '', object.kind ?? '', namespace, meta.name, meta.uid ?? '', object.apiVersion ?? '']);
    const aggregateKey = JSON.stringify([this.#component, this.#host ?? '', object.apiVersion ?? '', object.kind ?? '', namespace, meta.name, meta.uid ?? '', '', type, reason]);
    const keys: Keys = {
      pk: `event#${this.#cluster}#${sha(spamKey)}`,
      aggregate: entryKey(aggregateKey),
      event: entryKey(JSON.stringify([aggregateKey, rawMessage])),
      message: sha(rawMessage).slice(0, 16),
    };
    const created = meta.creationTimestamp instanceof Date ? meta.creationTimestamp.getTime() : Date.parse(String(meta.creationTimestamp ?? ''));
    const young = Number.isFinite(created) && now - created < NEW_OBJECT_MS;
    const action = await this.#decide(keys, rawMessage, now, (eventKey) => eventName(meta.name!, keys.pk, eventKey), young, type);
    if (action.kind === 'drop') return;
    const api = await this.#api();
    const event = { namespace, involvedObject, type, reason, message: action.message, name: action.name };
    if (action.kind === 'create') {
      const created = { ...event, count: 1, first: now, last: now };
      if (!(await this.#create(api, created))) await this.#merge(api, keys.pk, action, created, now);
      return;
    }
    try {
      await this.#patch(api, action.name, namespace, { count: action.count, lastTimestamp: rfc3339(now), message: action.message });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      // The Event expired or was deleted (or a crash came between the state and its create): create it again
      // under the same name (client-go does the same).
      const recreated = { ...event, count: action.count, first: action.firstTimestamp, last: now };
      if (!(await this.#create(api, recreated))) await this.#merge(api, keys.pk, action, recreated, now);
    }
  }

  /**
   * A create found the Event already there (its name is the event key's, in every container): another
   * container created it without state (a young object's event held unsaved, see {@link NEW_OBJECT_MS}), or the
   * state lapsed while the Event lived on. The existing Event counts this one too (`count+1`, at least the
   * count decided; a PATCH under its resourceVersion, read again on a conflict), and the state learns its
   * count, so the next repeat goes on from it. An Event gone between the create and the merge (expired,
   * deleted) is created again with the count decided.
   */
  async #merge(api: KubeJsonApi, pk: string, action: Extract<Action, { kind: 'create' | 'patch' }>, created: CreatedEvent, now: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      let existing: EventJson;
      try {
        existing = await api.get<EventJson>(eventPath(created.namespace, action.name));
      } catch (error) {
        if (!isNotFound(error) || attempt >= MAX_ATTEMPTS) throw error;
        if (await this.#create(api, created)) return;
        continue;
      }
      const count = Math.max((existing.count ?? 1) + 1, created.count);
      try {
        await this.#patch(api, action.name, created.namespace, { count, lastTimestamp: rfc3339(now), message: action.message, metadata: { resourceVersion: existing.metadata?.resourceVersion } });
      } catch (error) {
        const code = statusCode(error);
        if ((code !== 409 && code !== 404) || attempt >= MAX_ATTEMPTS) throw error;
        if (code === 404 && (await this.#create(api, created))) return;
        continue;
      }
      const first = Date.parse(String(existing.firstTimestamp ?? ''));
      await this.#learnCount(pk, action.key, { name: action.name, count, firstTimestamp: Number.isFinite(first) ? first : now }, now);
      return;
    }
  }

  /**
   * Stores what a merge learnt: the event key's Event and its count, at least `count` (a higher stored
   * count wins). Written whatever this container held unsaved, so that every container's next repeat
   * goes on from it: conditional on the version read (on absence when nothing is stored), read again on a
   * lost race.
   */
  async #learnCount(pk: string, eventKey: string, learnt: { name: string; count: number; firstTimestamp: number }, now: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const known = attempt === 1 ? this.#written.get(pk) : undefined;
      let previous: CorrelationItem | undefined;
      let stored: boolean;
      if (known && (!known.saved || now - known.at < WRITTEN_MEMO_MS)) {
        previous = known.item;
        stored = known.saved;
      } else {
        previous = await this.#read(pk);
        stored = previous !== undefined;
      }
      const current = previous?.events[eventKey];
      const entry: EventEntry = {
        name: learnt.name,
        count: Math.max(learnt.count, current?.name === learnt.name ? current.count : 0),
        firstTimestamp: current?.name === learnt.name ? current.firstTimestamp : learnt.firstTimestamp,
        // The PATCH renewed the Event's TTL.
        validUntil: now + EVENT_TTL_MS,
      };
      const base: CorrelationItem = previous ?? { pk, version: 0, tokens: SPAM_BURST, updatedAt: now, aggregates: {}, events: {}, expiresAt: 0 };
      const item: CorrelationItem = {
        ...base,
        version: stored ? base.version + 1 : Math.max(1, base.version),
        events: { ...base.events, [eventKey]: entry },
        expiresAt: Math.max(base.expiresAt, Math.ceil(entry.validUntil / 1000)),
      };
      try {
        await this.#store(item, stored ? base.version : undefined);
        this.#remember(pk, item, now, true);
        return;
      } catch (error) {
        this.#written.delete(pk);
        if (!isConditionFailure(error) || attempt >= MAX_ATTEMPTS) throw error;
        await sleep(Math.random() * 5 * attempt);
      }
    }
  }

  /**
   * Reads the (source, object) item, decides as client-go's EventCorrelator, and stores the outcome under the
   * item's version; on a lost race reads again and decides again.
   */
  async #decide(keys: Keys, rawMessage: string, now: number, newName: (eventKey: string) => string, young: boolean, type: EventType): Promise<Action> {
    let guessed = false;
    for (let attempt = 1; ; attempt++) {
      // What this container wrote last for the object stands in for the read (a binder's repeated waiting
      // event): if anyone wrote since, the version condition fails and the item is read. A young object this
      // container never wrote for is taken to have no item, and what it holds unsaved for one is its state
      // (NEW_OBJECT_MS).
      const known = attempt === 1 ? this.#written.get(keys.pk) : undefined;
      let previous: CorrelationItem | undefined;
      // Whether `previous` is stored (a version to condition on) or only held here (absence to condition on).
      let stored: boolean;
      // Whether the state is this container's alone, unread: a young object's it has held unsaved, or none.
      let unread = false;
      if (known && (!known.saved || now - known.at < WRITTEN_MEMO_MS)) {
        // An item written here (for 10 s), or state held here unsaved (stored on absence: never stale).
        previous = known.item;
        stored = known.saved;
        unread = !stored;
      } else if (attempt === 1 && !known && young) {
        // The first event of a new object: created without state (see NEW_OBJECT_MS).
        stored = false;
        unread = true;
      } else {
        previous = await this.#read(keys.pk);
        stored = previous !== undefined;
      }
      const { item, action } = correlate(previous, keys, rawMessage, now, newName);
      // A young object's state stays here, unsaved, while its events are new Normal ones (NEW_OBJECT_MS).
      if (unread && young && action.kind === 'create' && type === 'Normal') {
        this.#remember(keys.pk, item, now, false);
        return action;
      }
      try {
        await this.#store(item, stored ? previous!.version : undefined);
        this.#remember(keys.pk, item, now, true);
        return action;
      } catch (error) {
        this.#written.delete(keys.pk);
        if (!isConditionFailure(error)) throw error;
        if (attempt === 1 && !stored && previous) guessed = true;
        // A refused write of state held unsaved is not a race lost: it does not count against the attempts.
        if (attempt - (guessed ? 1 : 0) >= MAX_ATTEMPTS) throw new Error(`event state ${keys.pk} changed under ${MAX_ATTEMPTS} attempts in a row; event dropped`, { cause: error });
        await sleep(Math.random() * 5 * attempt);
      }
    }
  }

  /** The stored (source, object) item, read consistently; an item without `version` is not this layout's (or nothing at all). */
  async #read(pk: string): Promise<CorrelationItem | undefined> {
    const { Item } = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: { pk }, ConsistentRead: true }));
    return typeof Item?.version === 'number' ? (Item as CorrelationItem) : undefined;
  }

  /** Writes `item` if the stored one is still at `version` (absent: if none is stored). */
  async #store(item: CorrelationItem, version: number | undefined): Promise<void> {
    await this.#doc.send(
      new PutCommand({
        TableName: this.#table,
        Item: item,
        ConditionExpression: version !== undefined ? '#version = :version' : 'attribute_not_exists(#version)',
        ExpressionAttributeNames: { '#version': 'version' },
        ExpressionAttributeValues: version !== undefined ? { ':version': version } : undefined,
      }),
    );
  }

  #remember(pk: string, item: CorrelationItem, now: number, saved: boolean): void {
    this.#written.delete(pk);
    this.#written.set(pk, { item, at: now, saved });
    if (this.#written.size > WRITTEN_MEMO_ENTRIES) this.#written.delete(this.#written.keys().next().value!);
  }

  async #patch(api: KubeJsonApi, name: string, namespace: string, body: { count: number; lastTimestamp: string; message: string; metadata?: { resourceVersion?: string } }): Promise<void> {
    try {
      await api.patch(eventPath(namespace, name), body, 'application/strategic-merge-patch+json');
    } catch (error) {
      // A server without strategic merge for events: a JSON merge patch means the same for these fields.
      if (statusCode(error) !== 415) throw error;
      await api.patch(eventPath(namespace, name), body, 'application/merge-patch+json');
    }
  }

  async #create(api: KubeJsonApi, e: CreatedEvent): Promise<boolean> {
    const body = {
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
      await api.post(`/api/v1/namespaces/${encodeURIComponent(e.namespace)}/events`, body);
      return true;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      return false;
    }
  }
}

/**
 * client-go's EventCorrelator on one (source, object) item: aggregate (every event, dropped or not), then the
 * spam filter, then dedup. Returns the item to store (lapsed entries pruned) and what to send.
 */
function correlate(previous: CorrelationItem | undefined, keys: Keys, rawMessage: string, now: number, newName: (eventKey: string) => string): { item: CorrelationItem; action: Action } {
  // Aggregation: a window lives while its last event is at most AGGREGATE_INTERVAL_MS old.
  const aggregates = live(previous?.aggregates, (a) => a.lastTimestamp >= now - AGGREGATE_INTERVAL_MS);
  const window = aggregates[keys.aggregate];
  let messages = [keys.message];
  if (window) {
    // Once full it stays full (every later message is combined) until the window lapses: the set needs no more.
    messages = window.messages.includes(keys.message) || window.messages.length >= AGGREGATE_MAX_EVENTS ? window.messages : [...window.messages, keys.message];
  }
  aggregates[keys.aggregate] = { messages, lastTimestamp: now };
  const combined = messages.length >= AGGREGATE_MAX_EVENTS;
  const message = combined ? COMBINED_PREFIX + rawMessage : rawMessage;
  const eventKey = combined ? keys.aggregate : keys.event;

  const events = live(previous?.events, (e) => e.validUntil > now);
  const bucket = previous ? { tokens: previous.tokens, updatedAt: previous.updatedAt } : { tokens: SPAM_BURST, updatedAt: now };
  const tokens = Math.min(SPAM_BURST, bucket.tokens + (Math.max(0, now - bucket.updatedAt) / 1000) * SPAM_QPS);
  let action: Action;
  if (tokens < 1) {
    action = { kind: 'drop' };
  } else {
    bucket.tokens = tokens - 1;
    bucket.updatedAt = now;
    const known = events[eventKey];
    if (known) {
      events[eventKey] = { ...known, count: known.count + 1 };
      action = { kind: 'patch', name: known.name, count: known.count + 1, firstTimestamp: known.firstTimestamp, message, key: eventKey };
    } else {
      const name = newName(eventKey);
      events[eventKey] = { name, count: 1, firstTimestamp: now, validUntil: now + EVENT_TTL_MS };
      action = { kind: 'create', name, message, key: eventKey };
    }
  }
  capEntries(aggregates, keys.aggregate, (a) => a.lastTimestamp);
  capEntries(events, eventKey, (e) => e.validUntil);
  const lapses = Math.max(
    bucket.updatedAt + (SPAM_BURST / SPAM_QPS) * 1000,
    ...Object.values(aggregates).map((a) => a.lastTimestamp + AGGREGATE_INTERVAL_MS),
    ...Object.values(events).map((e) => e.validUntil),
  );
  const item: CorrelationItem = {
    pk: keys.pk,
    version: (previous?.version ?? 0) + 1,
    tokens: bucket.tokens,
    updatedAt: bucket.updatedAt,
    aggregates,
    events,
    expiresAt: Math.ceil(lapses / 1000),
  };
  return { item, action };
}

/** A copy of `entries` without those that lapsed. */
function live<T>(entries: Record<string, T> | undefined, keep: (entry: T) => boolean): Record<string, T> {
  return Object.fromEntries(Object.entries(entries ?? {}).filter(([, entry]) => keep(entry)));
}

/** Drops the entries with the lowest `rank` beyond {@link MAX_CORRELATION_ENTRIES}, never `current`. */
function capEntries<T>(entries: Record<string, T>, current: string, rank: (entry: T) => number): void {
  const others = Object.keys(entries).filter((key) => key !== current);
  const excess = others.length + (current in entries ? 1 : 0) - MAX_CORRELATION_ENTRIES;
  if (excess <= 0) return;
  others.sort((a, b) => rank(entries[a]) - rank(entries[b]));
  for (const key of others.slice(0, excess)) delete entries[key];
}

/**
 * An Event's name: `<involvedObject.name>.<16 hex digits>`, the shape of client-go's (`%x` of `UnixNano()`),
 * but the digits are the hash of the (source, object) item and the event key, so every container names the
 * same event alike and a second create of it meets the first (409) instead of making a twin.
 */
export function eventName(objectName: string, pk: string, eventKey: string): string {
  return `${objectName}.${sha(`${pk}\u0000${eventKey}`).slice(0, 16)}`;
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
