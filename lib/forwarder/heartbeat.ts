/**
 * The leader's heartbeat: proof, outside the cluster, that a forwarder is leading and how far each watch
 * has come. Every `intervalMs` while this replica leads (and once at once when it starts leading):
 *
 * - **DynamoDB**: the control-table record `sync#<cluster>#forwarder` (beside the kinds' sync records, so
 *   the forwarder's `sync#*` write permission covers it): `holder` (the lease identity), `leading`,
 *   `leadingSince`, `heartbeatAt` (epoch ms), `intervalMs`, and `bookmarks` — per kind the last
 *   resourceVersion the forwarder moved its bookmark to and when (`{ rv, at }`). `claimflow status` reads it
 *   (leader, heartbeat age, bookmark age per kind). A graceful stop writes `leading: false`.
 * - **CloudWatch** (when a namespace is configured): `PutMetricData` of `ForwarderHeartbeat` = 1 with the
 *   dimension `cluster`; the stage's `ForwarderHeartbeatAlarm` fires when it is missing for 5 minutes. In
 *   EKS the forwarder's Pod Identity role may put metrics into that namespace only.
 * - **Prometheus**: `claimflow_forwarder_heartbeat_timestamp_seconds` and
 *   `claimflow_forwarder_heartbeat_errors_total`.
 *
 * A failed write is logged and counted, never fatal: the heartbeat reports on the forwarder, it is not
 * part of its work.
 *
 * @example
 * const heartbeat = new Heartbeat({ doc, table: 'claimflow-prod-control', cluster: 'prod', identity: podName,
 *   intervalMs: 60_000, cloudwatch: { client: new CloudWatchClient({}), namespace: 'claimflow' }, metrics });
 * heartbeat.start();
 * heartbeat.progress('PersistentVolume', '4711'); // the bookmark moved
 * await heartbeat.stop(); // leading: false
 */
import { PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from '../state/client.ts';
import { syncPk } from '../state/schema.ts';
import type { ForwarderMetrics } from './metrics.ts';

/** The `<Kind>` slot of the heartbeat's `sync#<cluster>#<Kind>` record (lower case: never a Kubernetes kind). */
export const HEARTBEAT_RECORD_KIND = 'forwarder';
/** The CloudWatch metric the leader puts every interval (namespace from the configuration, dimension `cluster`). */
export const HEARTBEAT_METRIC = 'ForwarderHeartbeat';
/** Default interval: one CloudWatch datapoint a minute, the alarm's period. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000;
/** How long a heartbeat record outlives its last write (TTL attribute `expiresAt`). */
const RECORD_TTL_S = 7 * 24 * 3600;
/** Longest a single write may take (a hung connection must not stall later beats or a shutdown). */
const WRITE_TIMEOUT_MS = 10_000;
/** Longest {@link Heartbeat.stop} waits for the last writes. */
const STOP_TIMEOUT_MS = 3_000;

/** The control-table key of a cluster's heartbeat record. */
export const heartbeatPk = (cluster: string): string => syncPk(cluster, HEARTBEAT_RECORD_KIND);

/** The stored heartbeat (see the module comment). */
export interface HeartbeatRecord {
  pk: string;
  cluster: string;
  holder: string;
  leading: boolean;
  /** Epoch ms. */
  leadingSince: number;
  /** Epoch ms of the last beat (or of the graceful stop). */
  heartbeatAt: number;
  intervalMs: number;
  /** Per kind: the last bookmark resourceVersion and when it was saved (epoch ms). */
  bookmarks: Record<string, { rv: string; at: number }>;
  expiresAt: number;
}

/** The one CloudWatch call the heartbeat makes (a `CloudWatchClient` fits). */
export interface MetricsSink {
  send(command: PutMetricDataCommand, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
}

export interface HeartbeatOptions {
  doc: DocumentClient;
  /** Control table. */
  table: string;
  cluster: string;
  /** The lease identity (pod name). */
  identity: string;
  intervalMs?: number;
  /** CloudWatch client and namespace; absent: no CloudWatch metric (the local stack). */
  cloudwatch?: { client: MetricsSink; namespace: string };
  metrics?: ForwarderMetrics;
  onError?: (error: unknown) => void;
  now?: () => number;
  /** Longest {@link Heartbeat.stop} waits for the last writes (default 3 s). */
  stopTimeoutMs?: number;
}

/** See the module comment. */
export class Heartbeat {
  readonly #o: HeartbeatOptions;
  readonly #now: () => number;
  readonly #intervalMs: number;
  readonly #bookmarks: Record<string, { rv: string; at: number }> = {};
  #leadingSince = 0;
  #timer: NodeJS.Timeout | undefined;
  #early: NodeJS.Timeout | undefined;
  #beating: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(options: HeartbeatOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#intervalMs = options.intervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
  }

  /** Beats now, then every interval until {@link stop}. */
  start(): void {
    if (this.#timer || this.#stopped) return;
    this.#leadingSince = this.#now();
    this.#schedule();
    this.#timer = setInterval(() => this.#schedule(), this.#intervalMs);
    this.#timer.unref();
  }

  /**
   * Notes that `kind`'s bookmark moved to `rv`, reported with the next beat; a kind's first bookmark (its
   * initial LIST) is reported within a fraction of a second, so the record names every watched kind soon
   * after a leader starts.
   */
  progress(kind: string, rv: string): void {
    const first = !(kind in this.#bookmarks);
    this.#bookmarks[kind] = { rv, at: this.#now() };
    if (first && this.#timer && !this.#early) {
      this.#early = setTimeout(() => {
        this.#early = undefined;
        this.#schedule();
      }, 200);
      this.#early.unref();
    }
  }

  /** Resolves when the beat under way (if any) is written. */
  async settled(): Promise<void> {
    await this.#beating;
  }

  /** Stops beating and records that this replica no longer leads (waiting at most a few seconds). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#early);
    this.#timer = undefined;
    this.#early = undefined;
    this.#o.metrics?.heartbeat.set(0);
    const last = this.#beating.then(async () => {
      if (!this.#leadingSince) return;
      await this.#write(false).catch((error: unknown) => {
        if ((error as { name?: string } | null)?.name !== 'ConditionalCheckFailedException') this.#failed(error);
      });
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([last, new Promise((resolve) => (timer = setTimeout(resolve, this.#o.stopTimeoutMs ?? STOP_TIMEOUT_MS)))]);
    clearTimeout(timer);
  }

  #schedule(): void {
    this.#beating = this.#beating.then(() => this.#beat());
  }

  async #beat(): Promise<void> {
    if (this.#stopped) return;
    const at = this.#now();
    const writes: Promise<unknown>[] = [this.#write(true)];
    const cloudwatch = this.#o.cloudwatch;
    if (cloudwatch) {
      writes.push(
        cloudwatch.client.send(
          new PutMetricDataCommand({
            Namespace: cloudwatch.namespace,
            MetricData: [{ MetricName: HEARTBEAT_METRIC, Dimensions: [{ Name: 'cluster', Value: this.#o.cluster }], Value: 1, Unit: 'Count', Timestamp: new Date(at) }],
          }),
          { abortSignal: AbortSignal.timeout(WRITE_TIMEOUT_MS) },
        ),
      );
    }
    const outcomes = await Promise.allSettled(writes);
    for (const outcome of outcomes) if (outcome.status === 'rejected') this.#failed(outcome.reason);
    if (outcomes.every((o) => o.status === 'fulfilled')) this.#o.metrics?.heartbeat.set(at / 1000);
  }

  async #write(leading: boolean): Promise<void> {
    const now = this.#now();
    await this.#o.doc.send(
      new UpdateCommand({
        TableName: this.#o.table,
        Key: { pk: heartbeatPk(this.#o.cluster) },
        UpdateExpression:
          'SET #cluster = :cluster, #holder = :holder, #leading = :leading, #since = :since, #at = :now, #interval = :interval, #bookmarks = :bookmarks, #exp = :exp',
        // Stepping down must not overwrite a new leader's record.
        ...(leading ? {} : { ConditionExpression: '#holder = :holder' }),
        ExpressionAttributeNames: {
          '#cluster': 'cluster',
          '#holder': 'holder',
          '#leading': 'leading',
          '#since': 'leadingSince',
          '#at': 'heartbeatAt',
          '#interval': 'intervalMs',
          '#bookmarks': 'bookmarks',
          '#exp': 'expiresAt',
        },
        ExpressionAttributeValues: {
          ':cluster': this.#o.cluster,
          ':holder': this.#o.identity,
          ':leading': leading,
          ':since': this.#leadingSince,
          ':now': now,
          ':interval': this.#intervalMs,
          ':bookmarks': { ...this.#bookmarks },
          ':exp': Math.ceil(now / 1000) + RECORD_TTL_S,
        },
      }),
      { abortSignal: AbortSignal.timeout(WRITE_TIMEOUT_MS) },
    );
  }

  #failed(error: unknown): void {
    this.#o.metrics?.heartbeatErrors.inc();
    this.#o.onError?.(error);
  }
}
