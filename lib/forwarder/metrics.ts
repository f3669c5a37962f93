/**
 * The forwarder's Prometheus metrics, in a registry of their own (two forwarders in one process — tests,
 * the local stack — do not collide).
 *
 * @example
 * const metrics = new ForwarderMetrics({ defaultMetrics: true });
 * metrics.eventsSeen.inc({ kind: 'Node', type: 'ADDED' });
 * const text = await metrics.registry.metrics(); // Prometheus exposition format for /metrics
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** See the module comment. */
export class ForwarderMetrics {
  readonly registry = new Registry();
  /** Watch and relist events seen, by kind and type (ADDED/MODIFIED/DELETED/BOOKMARK/SYNC). */
  readonly eventsSeen = new Counter({ name: 'claimflow_forwarder_events_seen_total', help: 'Watch and relist events seen', labelNames: ['kind', 'type'], registers: [this.registry] });
  /** Messages the topic accepted, by kind and type. */
  readonly published = new Counter({ name: 'claimflow_forwarder_published_total', help: 'Cluster events published to the topic', labelNames: ['kind', 'type'], registers: [this.registry] });
  /**
   * Events no subscription of the topic takes (topic-subscriptions.ts), by kind and type: cached as any
   * other, not published. Mostly a controller's own writes coming back.
   */
  readonly unsubscribed = new Counter({ name: 'claimflow_forwarder_unsubscribed_total', help: 'Cluster events left unpublished because no subscription of the topic takes them', labelNames: ['kind', 'type'], registers: [this.registry] });
  /**
   * 1 while this replica's last read of the topic's subscriptions lets it publish only what they take; 0
   * while it would publish everything (not yet read, a failed read, a subscription that takes everything).
   */
  readonly publishFiltered = new Gauge({ name: 'claimflow_forwarder_publish_filtered', help: '1 while only events some subscription of the topic takes are published', registers: [this.registry] });
  /** Failed reads of the topic's subscriptions (everything is published until one succeeds). */
  readonly subscriptionReadErrors = new Counter({ name: 'claimflow_forwarder_subscription_read_errors_total', help: 'Failed reads of the topic subscriptions and their filter policies', registers: [this.registry] });
  /** Failed publish attempts (whole requests or single batch entries). */
  readonly publishErrors = new Counter({ name: 'claimflow_forwarder_publish_errors_total', help: 'Failed publish attempts', registers: [this.registry] });
  /** Seconds from seeing an event to the topic accepting it. */
  readonly publishLag = new Histogram({
    name: 'claimflow_forwarder_publish_lag_seconds',
    help: 'Seconds from seeing an event to the topic accepting it',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  /**
   * Events the last look before publishing changed, by kind and outcome: `own-write` (tagged with its
   * writer), `superseded` (not yet cached, and a newer version is: dropped). See review.ts.
   */
  readonly reviewed = new Counter({ name: 'claimflow_forwarder_reviewed_total', help: 'Events the review before publishing tagged with their writer or dropped as superseded', labelNames: ['kind', 'outcome'], registers: [this.registry] });
  /**
   * Events held for their writer's tag (publisher.ts `ownWriteHoldMs`; every version a controller may have
   * written back, at least until its first look on the holds' next tick), by kind and how the hold ended:
   * `tagged` (a controller's own write: its queue leaves it out), `superseded` (a newer version was cached
   * meanwhile), `untagged` (the hold ran out: a user's write, or a write-back slower than the hold), `full`
   * (not held: as many events were held already as the publisher allows, `maxHeld`).
   */
  readonly held = new Counter({ name: 'claimflow_forwarder_held_total', help: 'Events held for their writer tag before publishing, by how the hold ended', labelNames: ['kind', 'outcome'], registers: [this.registry] });
  /**
   * Volume and claim events the forwarder wrote to the cache just before publishing them, because no
   * controller's write-back had (publisher.ts `write`), by kind and outcome: `written`, `unchanged` (the
   * version was there: a write-back that landed meanwhile, or a relist), `stale` (a newer version was:
   * the event is dropped), `deleted` (the object's newer tombstone was: sent unwritten), `failed` (an
   * attempt failed; it is retried).
   */
  readonly cacheWrites = new Counter({ name: 'claimflow_forwarder_cache_writes_total', help: 'Volume and claim events written to the cache before publishing, by outcome', labelNames: ['kind', 'outcome'], registers: [this.registry] });
  /** Watch restarts, by kind and reason (closed, silence, error, expired). */
  readonly watchRestarts = new Counter({ name: 'claimflow_forwarder_watch_restarts_total', help: 'Watch restarts', labelNames: ['kind', 'reason'], registers: [this.registry] });
  /** Full LISTs, by kind. */
  readonly relists = new Counter({ name: 'claimflow_forwarder_relists_total', help: 'Full LISTs compared with the cache', labelNames: ['kind'], registers: [this.registry] });
  /** Messages waiting in memory for the publisher. */
  readonly queueDepth = new Gauge({ name: 'claimflow_forwarder_queue_depth', help: 'Messages waiting to be published', registers: [this.registry] });
  /** 1 while this replica holds the lease. */
  readonly isLeader = new Gauge({ name: 'claimflow_forwarder_is_leader', help: '1 while this replica holds the lease', registers: [this.registry] });
  /** Unix time (s) of the leader's last successful heartbeat (0 when not leading). See heartbeat.ts. */
  readonly heartbeat = new Gauge({ name: 'claimflow_forwarder_heartbeat_timestamp_seconds', help: 'Unix time of the last heartbeat written while leading', registers: [this.registry] });
  /** Heartbeat writes (DynamoDB record or CloudWatch metric) that failed. */
  readonly heartbeatErrors = new Counter({ name: 'claimflow_forwarder_heartbeat_errors_total', help: 'Failed heartbeat writes', registers: [this.registry] });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }
}
