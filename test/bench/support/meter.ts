/**
 * Meters for the benchmarks: SDK middlewares that count what a client sends (DynamoDB requests and the
 * capacity DynamoDB reports, SQS and SNS requests with their payload), and a Kubernetes request log kept
 * by the functions' own API clients ({@link MeteredKubeClients}), with the time each request left after
 * the API budget let it go.
 *
 * Counters only grow; a run takes a {@link Tally} snapshot before and after and reports the difference.
 */
import { performance } from 'node:perf_hooks';
import type { ApiConstructor, ApiType } from '@kubernetes/client-node';
import { KubeClients, type KubeClientsOptions } from '../../../lib/kube/client.ts';
import { KubeJsonApi } from '../../../lib/kube/json-api.ts';
import { chunks } from '../prices.ts';

/** Named counts that only grow. */
export class Tally {
  readonly counts = new Map<string, number>();

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }

  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  /** What was added since `before` (a snapshot), zeros left out. */
  since(before: Record<string, number>): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, v] of this.counts) if (v - (before[k] ?? 0) !== 0) out[k] = v - (before[k] ?? 0);
    return out;
  }
}

/** Sums the values of `counts` whose key passes `filter`. */
export function sum(counts: Record<string, number>, filter: (key: string) => boolean = () => true): number {
  return Object.entries(counts).reduce((n, [k, v]) => (filter(k) ? n + v : n), 0);
}

type Stack = { add(mw: (next: any, context: any) => (args: any) => Promise<any>, options: { step: 'initialize'; name: string }): void };
interface MeteredClient {
  middlewareStack: Stack;
}

const DYNAMO_READS = /^(Get|Query|Scan|BatchGet|BatchGetItem|GetItem|TransactGet)/;

/**
 * Counts DynamoDB requests by command (`request GetCommand`), the read and write request units DynamoDB
 * reports (asked for with ReturnConsumedCapacity=TOTAL) as `rru` / `wru`, and failed conditional writes
 * (`conditionalFailures`, and by use as `failedUse <command> <use>`; also added to `wru` as one unit each:
 * DynamoDB charges them), and the items
 * Queries and Scans read (`itemsScanned`: their bytes are what DynamoDB charges for) and returned
 * (`itemsReturned`, what travels and is parsed: fewer when a filter drops some).
 */
export function meterDynamo(client: MeteredClient, tally: Tally, prefix = '', options: { onBucketWrite?: (write: BucketWrite) => void } = {}): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? 'unknown');
      const input = args.input as Record<string, unknown>;
      if (input.ReturnConsumedCapacity === undefined && !/Table|TimeToLive|Tags/.test(command)) input.ReturnConsumedCapacity = 'TOTAL';
      const use = `${command.replace(/Command$/, '')} ${dynamoUse(input)}`;
      tally.add(`${prefix}request ${command}`);
      tally.add(`${prefix}use ${use}`);
      const read = DYNAMO_READS.test(command);
      try {
        const out = await next(args);
        const consumed = (out.output as { ConsumedCapacity?: { CapacityUnits?: number } | Array<{ CapacityUnits?: number }> }).ConsumedCapacity;
        const units = [consumed ?? []].flat().reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
        tally.add(`${prefix}${read ? 'rru' : 'wru'}`, units);
        const counted = out.output as { Count?: number; ScannedCount?: number };
        if (typeof counted.ScannedCount === 'number') {
          tally.add(`${prefix}itemsScanned`, counted.ScannedCount);
          tally.add(`${prefix}itemsReturned`, counted.Count ?? 0);
        }
        const key = input.Key as { pk?: unknown } | undefined;
        const values = input.ExpressionAttributeValues as { ':n'?: unknown } | undefined;
        if (options.onBucketWrite && /^Update(Item)?Command$/.test(command) && typeof key?.pk === 'string' && key.pk.startsWith('bucket#') && values?.[':n'] !== undefined) {
          options.onBucketWrite({ at: performance.now(), granted: Number(values[':n']) });
        }
        return out;
      } catch (error) {
        if ((error as { name?: string }).name === 'ConditionalCheckFailedException') {
          tally.add(`${prefix}conditionalFailures`);
          tally.add(`${prefix}failedUse ${use}`);
          tally.add(`${prefix}wru`, 1);
        } else {
          tally.add(`${prefix}errors`);
        }
        throw error;
      }
    },
    { step: 'initialize', name: 'benchDynamoMeter' },
  );
}

/**
 * What a DynamoDB request is for: the table (`cache`/`control`) and, for the control table, the record
 * type (the key's prefix: `bucket`, `sync`, `lease`, `event`, …); for the cache, the kind; for a query,
 * the index.
 */
export function dynamoUse(input: Record<string, any>): string {
  const tableKind = (name: unknown): string => (/cache/i.test(String(name)) ? 'cache' : /control/i.test(String(name)) ? 'control' : String(name));
  const keyUse = (table: unknown, key: Record<string, unknown> | undefined): string => {
    const pk = String(key?.pk ?? '');
    const kind = tableKind(table);
    if (kind === 'cache') return `cache:${pk.split('#')[1] ?? '?'}`;
    return `${kind}:${pk.includes('#') ? pk.split('#')[0] : '?'}`;
  };
  if (input.RequestItems) {
    return Object.entries(input.RequestItems as Record<string, { Keys?: Array<Record<string, unknown>> }>)
      .map(([table, r]) => [...new Set((r.Keys ?? []).map((k) => keyUse(table, k)))].join('+'))
      .join('+');
  }
  if (input.IndexName || input.KeyConditionExpression) return `${tableKind(input.TableName)}:${input.IndexName ?? 'table'}`;
  return keyUse(input.TableName, (input.Key ?? input.Item) as Record<string, unknown> | undefined);
}

/** A successful write of the API budget's shared bucket (lib/state/bucket.ts). */
export interface BucketWrite {
  /** `performance.now()` when it succeeded. */
  at: number;
  /** Tokens the reservation granted (its `:n`). */
  granted: number;
}

/** The queue's name from its URL (`…/claimflow-local-binder.fifo` → `claimflow-local-binder.fifo`). */
export const queueName = (url: unknown): string => String(url ?? '').split('/').pop() ?? '';

/**
 * Counts SQS requests by `<command> <queue>`, the billable requests (64 KiB chunks) of each as
 * `billable <queue>`, messages sent as `sent <queue>`, receives that returned nothing as `emptyReceive <queue>`, and received messages and
 * their bytes as `received <queue>` / `receivedBytes <queue>`. Empty receives are not billable here (idle
 * polling, see prices.ts).
 */
export function meterSqs(client: MeteredClient, tally: Tally): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? 'unknown').replace(/Command$/, '');
      const input = args.input as { QueueUrl?: string; MessageBody?: string; Entries?: Array<{ MessageBody?: string }> };
      const queue = queueName(input.QueueUrl);
      const out = await next(args);
      tally.add(`${command} ${queue}`);
      if (command === 'ReceiveMessage') {
        const messages = (out.output as { Messages?: Array<{ Body?: string; MessageAttributes?: unknown }> }).Messages ?? [];
        if (messages.length === 0) {
          tally.add(`emptyReceive ${queue}`);
        } else {
          const bytes = messages.reduce((n, m) => n + Buffer.byteLength(m.Body ?? '') + Buffer.byteLength(JSON.stringify(m.MessageAttributes ?? {})), 0);
          tally.add(`received ${queue}`, messages.length);
          tally.add(`receivedBytes ${queue}`, bytes);
          tally.add(`billable ${queue}`, chunks(bytes));
        }
      } else if (/^(SendMessage|SendMessageBatch)$/.test(command)) {
        const entries = input.Entries ?? [input];
        const bytes = entries.reduce((n, e) => n + Buffer.byteLength(e.MessageBody ?? ''), 0);
        tally.add(`billable ${queue}`, chunks(bytes));
        tally.add(`sent ${queue}`, entries.length);
      } else if (/^(DeleteMessage|DeleteMessageBatch|ChangeMessageVisibility|ChangeMessageVisibilityBatch)$/.test(command)) {
        tally.add(`billable ${queue}`);
      }
      return out;
    },
    { step: 'initialize', name: 'benchSqsMeter' },
  );
}

/**
 * Counts SNS publishes: `publishRequests` (API calls), `billablePublish` (64 KiB chunks), `published`
 * (messages) and `publishedBytes` (bodies and attributes).
 */
export function meterSns(client: MeteredClient, tally: Tally): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Message?: string; MessageAttributes?: unknown; PublishBatchRequestEntries?: Array<{ Message?: string; MessageAttributes?: unknown }> };
      const out = await next(args);
      if (context.commandName === 'PublishBatchCommand' || context.commandName === 'PublishCommand') {
        const entries = input.PublishBatchRequestEntries ?? [input];
        const bytes = entries.reduce((n, e) => n + Buffer.byteLength(e.Message ?? '') + Buffer.byteLength(JSON.stringify(e.MessageAttributes ?? {})), 0);
        tally.add('publishRequests');
        tally.add('billablePublish', chunks(bytes));
        tally.add('published', entries.length);
        tally.add('publishedBytes', bytes);
      }
      return out;
    },
    { step: 'initialize', name: 'benchSnsMeter' },
  );
}

/** One Kubernetes API request a function sent. */
export interface KubeRequest {
  /** `performance.now()` when the request left (after the API budget let it go). */
  at: number;
  fn: string;
  verb: 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'other';
  /** Plural, with `/status` (or another subresource) where the path has one. */
  resource: string;
}

export const READ_VERBS = new Set(['get', 'list', 'watch']);

/** The verb and resource of a request, as the API server classifies it (client-go's RequestInfo). */
export function classify(method: string, url: string): { verb: KubeRequest['verb']; resource: string } {
  const u = new URL(url);
  const parts = u.pathname.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length >= 3) rest.splice(0, 2);
  const [plural = '', name, sub] = rest;
  const resource = sub ? `${plural}/${sub}` : plural;
  const m = method.toUpperCase();
  let verb: KubeRequest['verb'] = 'other';
  if (m === 'GET') verb = u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1' ? 'watch' : name ? 'get' : 'list';
  else if (m === 'POST') verb = 'create';
  else if (m === 'PUT') verb = 'update';
  else if (m === 'PATCH') verb = 'patch';
  else if (m === 'DELETE') verb = 'delete';
  return { verb, resource };
}

/** Every Kubernetes request the metered functions sent, in order. */
export class KubeRequestLog {
  readonly requests: KubeRequest[] = [];

  record(fn: string, method: string, url: string): void {
    this.requests.push({ at: performance.now(), fn, ...classify(method, url) });
  }

  /** Requests sent in [from, to). */
  between(from: number, to = Infinity): KubeRequest[] {
    return this.requests.filter((r) => r.at >= from && r.at < to);
  }
}

/** `{ "update persistentvolumes/status": 3, … }` of some requests. */
export function byVerbAndResource(requests: readonly KubeRequest[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of requests) out[`${r.verb} ${r.resource}`] = (out[`${r.verb} ${r.resource}`] ?? 0) + 1;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** The most requests in any window of `windowMs` (a sliding window over the send times). */
export function maxInWindow(times: readonly number[], windowMs = 1000): { max: number; at: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let at = 0;
  for (let lo = 0, hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi] - sorted[lo] >= windowMs) lo++;
    if (hi - lo + 1 > best) {
      best = hi - lo + 1;
      at = sorted[lo];
    }
  }
  return { max: best, at };
}

const instrumented = new WeakSet<object>();

/**
 * {@link KubeClients} whose API clients log every request into a {@link KubeRequestLog} as it is sent: the
 * budget middleware runs before the HTTP library, so the logged time is when the budget let it go.
 */
export class MeteredKubeClients extends KubeClients {
  readonly #log: KubeRequestLog;
  readonly #fn: string;

  constructor(options: KubeClientsOptions, log: KubeRequestLog, fn: string) {
    super(options);
    this.#log = log;
    this.#fn = fn;
  }

  override async api<T extends ApiType>(cluster: string, apiClass: ApiConstructor<T>): Promise<T> {
    const api = await super.api(cluster, apiClass);
    // A generated client keeps its configuration in the observable API it wraps; KubeJsonApi holds its own.
    type Metered = { configuration?: { httpApi: { send(ctx: any): unknown } } };
    const configuration = (api as unknown as { api?: Metered }).api?.configuration ?? (api instanceof KubeJsonApi ? (api as unknown as Metered).configuration : undefined);
    if (!configuration) throw new Error(`cannot meter ${apiClass.name}: @kubernetes/client-node changed shape`);
    if (!instrumented.has(configuration)) {
      instrumented.add(configuration);
      const http = configuration.httpApi;
      const log = this.#log;
      const fn = this.#fn;
      configuration.httpApi = {
        send(ctx: { getHttpMethod(): string; getUrl(): string }) {
          log.record(fn, String(ctx.getHttpMethod()), ctx.getUrl());
          return http.send(ctx);
        },
      };
    }
    return api;
  }
}
