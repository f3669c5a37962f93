/**
 * The watch forwarder: while it holds the lease, one {@link Reflector} per watched kind fills the object
 * cache and queues cluster events, and one {@link EventPublisher} sends them to the SNS FIFO topic. A
 * standby replica only campaigns for the lease. See DESIGN §6.
 *
 * @example
 * const forwarder = await startForwarder({ cluster: 'dev', kubeConfig, topicArn, sns, doc, tables,
 *   lease: { namespace: 'claimflow', name: 'forwarder', identity: 'pod-a' }, httpPort: 0 });
 * // ... later
 * await forwarder.stop(); // flushes, releases the lease
 */
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import { Logger } from '@aws-lambda-powertools/logger';
import type { KubeConfig } from '@kubernetes/client-node';
import type { SNSClient } from '@aws-sdk/client-sns';
import { ObjectCache, type CacheableObject, type CachePutOutcome } from '../state/cache.ts';
import { indexAttributes } from '../kube/cache-index.ts';
import { SOURCE_INDEXED_KIND } from '../state/indexes.ts';
import { DEFAULT_BOOKMARK_INTERVAL_MS, DEFAULT_OWN_WRITE_HOLD_MS } from './config.ts';
import { createEventReview } from './review.ts';
import type { DocumentClient } from '../state/client.ts';
import type { TableNames } from '../state/schema.ts';
import { SyncMarkers } from '../state/sync.ts';
import type { ClusterEvent, WatchedKind } from '../runtime/message.ts';
import type { AttributeValues } from './filter-policy.ts';
import { TopicSubscriptions } from './topic-subscriptions.ts';
import { watchedResources } from './kinds.ts';
import { KubeTransport } from './kube-transport.ts';
import { Heartbeat, type MetricsSink } from './heartbeat.ts';
import { LeaderElector, type LeaderElectionConfig } from './leader-election.ts';
import { ForwarderMetrics } from './metrics.ts';
import { EventPublisher, type Progress } from './publisher.ts';
import { Reflector, writeUnlessTooLarge } from './reflector.ts';
import { startHealthServer } from './server.ts';

export interface ForwarderOptions {
  /** Cluster id carried by every key and message. */
  cluster: string;
  kubeConfig: KubeConfig;
  sns: SNSClient;
  topicArn: string;
  doc: DocumentClient;
  tables: TableNames;
  /** Kinds to watch (default: all of `WATCHED_KINDS`). */
  kinds?: readonly WatchedKind[];
  /** Label selector for Services and Endpoints (default `storageos.com/volume-id`). */
  serviceSelector?: string;
  /** Leader election; `false` makes this replica lead unconditionally (single replica, tests). */
  lease: LeaderElectionConfig | false;
  /** Port of /healthz, /readyz, /metrics (0: any free port); undefined: no HTTP server. */
  httpPort?: number;
  httpHost?: string;
  /** Publish queue capacity (items). Default 1000. */
  queueCapacity?: number;
  publishRetryInitialMs?: number;
  publishRetryMaxMs?: number;
  watchSilenceMs?: number;
  watchTimeoutSeconds?: [number, number];
  watchBackoffInitialMs?: number;
  watchBackoffMaxMs?: number;
  /**
   * How long a MODIFIED PersistentVolume or PersistentVolumeClaim event whose version is cached untagged
   * waits for a controller's write-back to tag it (publisher.ts `ownWriteHoldMs`). Default
   * {@link DEFAULT_OWN_WRITE_HOLD_MS}; 0 sends it at once.
   */
  ownWriteHoldMs?: number;
  /**
   * How long a watch's bookmark waits to be saved, coalescing the later ones (publisher.ts
   * `progressIntervalMs`). Default {@link DEFAULT_BOOKMARK_INTERVAL_MS}.
   */
  bookmarkIntervalMs?: number;
  /**
   * Publish every event without reading the topic's subscriptions. Default false: the forwarder reads them
   * (topic-subscriptions.ts, every `subscriptionsRefreshMs`) and an event none of them takes is cached,
   * counted (`claimflow_forwarder_unsubscribed_total`) and not published.
   */
  publishAll?: boolean;
  /** How often the topic's subscriptions are read again, ms (default a minute). */
  subscriptionsRefreshMs?: number;
  /** How long stop() waits for the queue to drain. Default 25000. */
  shutdownFlushMs?: number;
  tombstoneTtlSeconds?: number;
  logger?: Logger;
  /** Register Node's default process metrics. */
  defaultMetrics?: boolean;
  /**
   * The leader's heartbeat (heartbeat.ts): the `sync#<cluster>#forwarder` record every `intervalMs`
   * (default 60 s) and, with `cloudwatch`, the `ForwarderHeartbeat` metric. `false`: none.
   */
  heartbeat?: false | { intervalMs?: number; cloudwatch?: { client: MetricsSink; namespace: string } };
  /** This replica's name in the heartbeat without leader election (default: the host name). */
  identity?: string;
}

export interface Forwarder {
  readonly metrics: ForwarderMetrics;
  /** Bound HTTP port (undefined without a server). */
  readonly port: number | undefined;
  isLeader(): boolean;
  /** Standby: true. Leader: true once every kind has synced. */
  isReady(): boolean;
  /**
   * Resolves when everything queued so far is published and its bookmark saved (the bookmark interval is
   * cut short).
   */
  flush(): Promise<void>;
  /** Events waiting to be published, held ones included (0 while standing by); bookmarks not counted. */
  readonly backlog: number;
  /** Stops watching, flushes the queue, releases the lease, closes the server. Idempotent. */
  stop(): Promise<void>;
}

/** How long a starting replica waits for its first read of the topic's subscriptions before it may lead, ms. */
const SUBSCRIPTIONS_FIRST_READ_WAIT_MS = 5_000;

/** Starts a forwarder replica; see the module comment. */
export async function startForwarder(options: ForwarderOptions): Promise<Forwarder> {
  const logger = options.logger ?? new Logger({ serviceName: 'claimflow-forwarder' });
  const metrics = new ForwarderMetrics({ defaultMetrics: options.defaultMetrics });
  const kube = new KubeTransport(options.kubeConfig);
  const cache = new ObjectCache(options.doc, options.tables.cache, { tombstoneTtlSeconds: options.tombstoneTtlSeconds, indexer: indexAttributes });
  const sync = new SyncMarkers(options.doc, options.tables.control);
  const kinds = new Set(options.kinds ?? watchedResources().map((r) => r.kind));
  const resources = watchedResources(options.serviceSelector).filter((r) => kinds.has(r.kind));

  let heartbeat: Heartbeat | undefined;
  const onProgress = async (progress: Progress) => {
    // This forwarder writes every attachment's source entry before its entry (and relisted when the record
    // did not vouch for them), so its bookmarks vouch for them.
    const sourced = { sourcesIndexed: progress.kind === SOURCE_INDEXED_KIND };
    if (progress.listComplete) await sync.markListComplete(options.cluster, progress.kind, progress.rv, sourced);
    else await sync.saveBookmark(options.cluster, progress.kind, progress.rv, sourced);
    heartbeat?.progress(progress.kind, progress.rv);
  };
  const newHeartbeat = (): Heartbeat | undefined =>
    options.heartbeat === false
      ? undefined
      : new Heartbeat({
          doc: options.doc,
          table: options.tables.control,
          cluster: options.cluster,
          identity: options.lease ? options.lease.identity : (options.identity ?? hostname()),
          intervalMs: options.heartbeat?.intervalMs,
          cloudwatch: options.heartbeat?.cloudwatch,
          metrics,
          onError: (err) => logger.warn('heartbeat failed', { error: (err as Error).message }),
        });
  // An event the reflector left unwritten (a controller may have written it back), written just before it
  // is sent when no write-back had; an object too large to cache is published without caching, as the
  // reflector's own writes are.
  const write = (event: ClusterEvent): Promise<CachePutOutcome> =>
    writeUnlessTooLarge(() => cache.putDetailed(event.cluster, event.kind, event.object as CacheableObject), { result: 'written' }, logger, event.kind, event.key);
  const review = createEventReview({
    doc: options.doc,
    table: options.tables.cache,
    onOutcome: (event, outcome) => metrics.reviewed.inc({ kind: event.kind, outcome }),
  });
  // Read for the replica's whole life, leading or not, so a new leader filters from its first event
  // without a read in the lease's renewal path.
  const subscriptions = options.publishAll
    ? undefined
    : new TopicSubscriptions({
        sns: options.sns,
        topicArn: options.topicArn,
        refreshMs: options.subscriptionsRefreshMs,
        onError: (err) => {
          metrics.subscriptionReadErrors.inc();
          logger.warn('reading the topic\'s subscriptions failed; publishing every event until a read succeeds', { error: (err as Error).message });
        },
        onRead: (filtering) => metrics.publishFiltered.set(filtering === 'all' ? 0 : 1),
      });
  const newPublisher = () =>
    new EventPublisher({
      sns: options.sns,
      topicArn: options.topicArn,
      metrics,
      capacity: options.queueCapacity,
      retryInitialMs: options.publishRetryInitialMs,
      retryMaxMs: options.publishRetryMaxMs,
      onProgress,
      onError: (err) => logger.warn('publish failed; retrying', { error: (err as Error).message }),
      review,
      write,
      onWriteError: (err, event) => logger.warn('cache write failed; retrying', { kind: event.kind, key: event.key, error: (err as Error).message }),
      ownWriteHoldMs: options.ownWriteHoldMs ?? DEFAULT_OWN_WRITE_HOLD_MS,
      progressIntervalMs: options.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS,
      ...(subscriptions ? { subscribed: (attributes: AttributeValues) => subscriptions.takes(attributes) } : {}),
    });

  let publisher: EventPublisher | undefined;
  let reflectors: Reflector[] = [];
  let leading = false;
  let transition = Promise.resolve();

  const startLeading = async () => {
    leading = true;
    metrics.isLeader.set(1);
    logger.info('started leading', { cluster: options.cluster, kinds: [...kinds] });
    publisher = newPublisher();
    publisher.start();
    heartbeat = newHeartbeat();
    heartbeat?.start();
    reflectors = resources.map(
      (resource) =>
        new Reflector({
          cluster: options.cluster,
          resource,
          kube,
          cache,
          sync,
          publisher: publisher!,
          metrics,
          logger,
          silenceMs: options.watchSilenceMs,
          watchTimeoutSeconds: options.watchTimeoutSeconds,
          backoffInitialMs: options.watchBackoffInitialMs,
          backoffMaxMs: options.watchBackoffMaxMs,
          deferWrites: true,
        }),
    );
    for (const reflector of reflectors) reflector.start();
  };
  /** `flush`: graceful (still the leader); otherwise the lease is lost and the queue is dropped. */
  const stopLeading = async (flush: boolean) => {
    if (!leading) return;
    leading = false;
    metrics.isLeader.set(0); // with the flag, so the gauge never reports a leader that has stopped
    const stopping = reflectors;
    reflectors = [];
    const current = publisher;
    publisher = undefined;
    const beating = heartbeat;
    heartbeat = undefined;
    if (!flush) current?.discard();
    await Promise.all(stopping.map((r) => r.stop()));
    await current?.stop({ flush, timeoutMs: options.shutdownFlushMs });
    await beating?.stop();
    logger.info('stopped leading', { cluster: options.cluster, flushed: flush });
  };

  const elector = options.lease
    ? new LeaderElector(kube, {
        ...options.lease,
        onStartedLeading: () => (transition = transition.then(startLeading)),
        onStoppedLeading: () => (transition = transition.then(() => stopLeading(false))),
        onError: (err) => logger.warn('leader election request failed', { error: (err as Error).message }),
      })
    : undefined;

  let server: Server | undefined;
  let port: number | undefined;
  let stopped = false;
  const forwarder: Forwarder = {
    metrics,
    get port() {
      return port;
    },
    get backlog() {
      return publisher?.depth ?? 0;
    },
    isLeader: () => leading,
    isReady: () => !leading || reflectors.every((r) => r.hasSynced),
    flush: async () => {
      await transition;
      await publisher?.flush();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (elector) {
        await elector.stop(async () => {
          await transition;
          await stopLeading(true);
        });
      }
      await transition;
      await stopLeading(true);
      subscriptions?.stop();
      if (server) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
      }
    },
  };

  if (options.httpPort !== undefined) {
    ({ server, port } = await startHealthServer(
      { healthy: () => !stopped, ready: () => forwarder.isReady(), registry: metrics.registry },
      options.httpPort,
      options.httpHost,
    ));
  }
  subscriptions?.start();
  // The first read ends before this replica can lead (everything is published should it hang longer).
  await subscriptions?.settled(SUBSCRIPTIONS_FIRST_READ_WAIT_MS);
  if (elector) elector.start();
  else transition = transition.then(startLeading);
  await transition;
  return forwarder;
}
