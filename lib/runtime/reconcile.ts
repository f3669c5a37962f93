/**
 * The reconcile contract: the whole interface between a controller and the runtime.
 *
 * Reconciliation is level-based. A request names an object (`cluster`, `kind`, `key`), never what
 * happened to it: the controller reads current state (the DynamoDB cache, the API), compares it with what
 * it wants, and makes writes to converge. A request may arrive twice, late or out of order; the result is
 * the same. The runtime owns everything else: parsing and validating the SQS batch, one worker per key
 * (FIFO groups), retries with backoff per (controller, key), failure thresholds, poison messages, logs,
 * metrics and the Kubernetes client for the request's cluster.
 *
 * @example
 * const controller: Controller = {
 *   name: 'binder',
 *   kinds: ['PersistentVolumeClaim', 'PersistentVolume'],
 *   async reconcile(request, ctx) {
 *     // ...read, decide, write...
 *     return { requeueAfterMs: 15_000 }; // or nothing when done
 *   },
 * };
 */
import type { CachedObject } from '../state/cache.ts';
import type { KeyStateExtra, PrefetchedItems } from '../state/key-state.ts';
import type { ClusterEvent, WatchedKind } from './message.ts';

export interface ReconcileRequest {
  cluster: string;
  kind: WatchedKind;
  /** `namespace/name` or `name`. */
  key: string;
  /** The message that caused this request (its embedded object is a hint, not the truth). */
  event: ClusterEvent;
  /**
   * The key's cache entry, read by the runtime (with the backoff record, in one request) just before the
   * reconcile: `null` when the cache has none. Undefined when not read (a controller then reads it itself).
   */
  cached?: CachedObject | null;
  /**
   * An attempt after a failure (set by the runtime): the key has a failure on record, or the message is a
   * redelivery (an invocation that died). Undefined when the runtime did not read the key's state.
   */
  retry?: boolean;
  /**
   * What the controller's {@link Controller.prefetch} asked for, read in the same request as `cached`:
   * cache entries by `<Kind>/<key>`, control items by `pk` (null: absent). Undefined when not read.
   */
  prefetched?: PrefetchedItems;
}

/** Done (nothing more to do until the object changes), or look again after a delay. */
export type ReconcileResult = void | { done: true } | { requeueAfterMs: number };

/**
 * Do not retry: the input can never succeed as it is (an invalid object, a configuration error). The
 * runtime records it (event/log/metric) and drops the request instead of backing off.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

/** A controller: a name, the kinds it reconciles, and the reconcile function. */
export interface Controller<Ctx = unknown> {
  /** `binder`, `provisioner`, `shared-volume`, `label-sync`: also the backoff and metrics dimension. */
  name: string;
  kinds: readonly WatchedKind[];
  reconcile(request: ReconcileRequest, ctx: Ctx): Promise<ReconcileResult>;
  /**
   * Items the reconcile of this request will read anyway, named from the message alone (its key, uid,
   * embedded object): the runtime reads them with the key's own cache entry and backoff record, in one
   * `BatchGetItem`, into `request.prefetched`. Only what may be read before the reconcile starts: anything
   * that must be read after a lease is taken is read then.
   */
  prefetch?(request: Pick<ReconcileRequest, 'cluster' | 'kind' | 'key' | 'event'>): KeyStateExtra;
}

/**
 * Environment variables every function and the local stack agree on (serverless.yml sets them in AWS,
 * infra/local sets them locally). AWS endpoints come from the SDK's own `AWS_ENDPOINT_URL_<SERVICE>`.
 */
export const ENV = {
  /** Default cluster id for messages and keys (`local` in the local stack). */
  clusterId: 'CLUSTER_ID',
  cacheTable: 'CACHE_TABLE',
  controlTable: 'CONTROL_TABLE',
  topicArn: 'EVENTS_TOPIC_ARN',
  /** Queue URL per controller, for requeues and the resync function. */
  queueUrl: {
    binder: 'BINDER_QUEUE_URL',
    provisioner: 'PROVISIONER_QUEUE_URL',
    'shared-volume': 'SHARED_VOLUME_QUEUE_URL',
    'label-sync': 'LABEL_SYNC_QUEUE_URL',
  },
  /** Local: a kubeconfig file. AWS: `CLUSTERS` JSON (EKS name or Secrets Manager kubeconfig per cluster id). */
  kubeconfig: 'KUBECONFIG',
  clusters: 'CLUSTERS',
  storageApiUrl: 'STORAGE_API_URL',
  storageApiUsername: 'STORAGE_API_USERNAME',
  storageApiPassword: 'STORAGE_API_PASSWORD',
  /** This function's dead-letter queue: poison messages are sent here explicitly. */
  dlqUrl: 'DLQ_URL',
  /** The `maxReceiveCount` of this function's queue redrive policy (the runtime stays below it). */
  maxReceiveCount: 'MAX_RECEIVE_COUNT',
  /** Failure threshold per key (0 or unset: retry forever). */
  maxFailures: 'MAX_FAILURES',
  /** Per-key exponential backoff (client-go workqueue defaults: 5 ms and 1000 s). */
  backoffBaseDelayMs: 'BACKOFF_BASE_DELAY_MS',
  backoffMaxDelayMs: 'BACKOFF_MAX_DELAY_MS',
  /** Per-cluster API request budget (kube-controller-manager defaults: 20 QPS, burst 30). */
  kubeApiQps: 'KUBE_API_QPS',
  kubeApiBurst: 'KUBE_API_BURST',
} as const;
