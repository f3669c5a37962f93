/**
 * The forwarder's configuration from flags and environment (flags win). Durations accept `15s`, `500ms`,
 * `2m` or plain milliseconds.
 *
 * | flag | env | default |
 * |---|---|---|
 * | `--cluster-id` | `CLUSTER_ID` | required |
 * | `--topic-arn` | `EVENTS_TOPIC_ARN` | required |
 * | `--cache-table` | `CACHE_TABLE` | required |
 * | `--control-table` | `CONTROL_TABLE` | required |
 * | `--kubeconfig` | `KUBECONFIG` | in-cluster service account when `KUBERNETES_SERVICE_HOST` is set, else `~/.kube/config` |
 * | `--kinds` | `WATCH_KINDS` | every watched kind (comma-separated kinds) |
 * | `--service-selector` | `SERVICE_LABEL_SELECTOR` | `storageos.com/volume-id` |
 * | `--leader-elect` | `LEADER_ELECT` | `true` |
 * | `--lease-namespace` | `LEASE_NAMESPACE`, `POD_NAMESPACE` | `claimflow` |
 * | `--lease-name` | `LEASE_NAME` | `claimflow-forwarder` |
 * | `--identity` | `POD_NAME`, `HOSTNAME` | the host name |
 * | `--lease-duration` / `--renew-deadline` / `--retry-period` | `LEASE_DURATION`, `RENEW_DEADLINE`, `RETRY_PERIOD` | `15s` / `10s` / `2s` |
 * | `--http-port` | `HTTP_PORT` | `8080` |
 * | `--queue-capacity` | `QUEUE_CAPACITY` | `1000` |
 * | `--watch-silence` | `WATCH_SILENCE` | `5m` |
 * | `--own-write-hold` | `OWN_WRITE_HOLD` | `100ms`: how long an untagged MODIFIED volume or claim waits for its writer's tag (`0` = none) |
 * | `--bookmark-interval` | `BOOKMARK_INTERVAL` | `10s`: how long a watch's bookmark waits to be saved, coalescing later ones (a crash replays at most that much) |
 * | `--heartbeat-interval` | `HEARTBEAT_INTERVAL` | `1m` (the leader's heartbeat, heartbeat.ts; `0` = none) |
 * | `--cloudwatch-namespace` | `CLOUDWATCH_NAMESPACE` | none: no CloudWatch heartbeat metric (`claimflow` in EKS) |
 * | `--publish-all` | `PUBLISH_ALL` | `false`: events no subscription of the topic takes (as SNS reports them) are cached, not published; `true` publishes every event and reads no subscriptions |
 * | `--subscriptions-refresh` | `SUBSCRIPTIONS_REFRESH` | `1m`: how often the topic's subscriptions and filter policies are read again |
 *
 * AWS endpoints and credentials come from the SDK's standard chain (IRSA / Pod Identity in EKS,
 * `AWS_ENDPOINT_URL_SNS` / `AWS_ENDPOINT_URL_DYNAMODB` locally).
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { WATCHED_KINDS, type WatchedKind } from '../runtime/message.ts';
import { ForwarderConfigError } from './errors.ts';

export interface ForwarderConfig {
  cluster: string;
  topicArn: string;
  tables: { cache: string; control: string };
  kubeconfig?: string;
  kinds: WatchedKind[];
  serviceSelector?: string;
  lease: false | { namespace: string; name: string; identity: string; leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  httpPort: number;
  queueCapacity: number;
  watchSilenceMs: number;
  /** How long an untagged MODIFIED volume or claim event waits for a controller's write-back tag. */
  ownWriteHoldMs: number;
  /** How long a watch's bookmark waits to be saved ({@link DEFAULT_BOOKMARK_INTERVAL_MS}). */
  bookmarkIntervalMs: number;
  /** 0: no heartbeat. */
  heartbeatIntervalMs: number;
  /** CloudWatch namespace of the heartbeat metric; undefined: none. */
  cloudwatchNamespace?: string;
  /** Publish also the events no subscription of the topic takes (forwarder.ts `publishAll`). */
  publishAll: boolean;
  /** How often the topic's subscriptions are read again, ms. */
  subscriptionsRefreshMs: number;
}

/**
 * The default wait for a controller's write-back tag, ms. A controller writes back what its API write
 * returned right after the response; the watch event of that version leaves the server at the same moment
 * and usually reaches the review first. Measured in the benches (two cores, everything on one machine):
 * the write-back lands a median 52 ms, p90 98 ms after the first look. The publisher stretches it by twice
 * its reads' recent round trip (at most threefold: publisher.ts `holdMs`), as a loaded table slows the
 * write-back too. Held events go out the moment the tag appears; only a user's edit waits the whole time.
 */
export const DEFAULT_OWN_WRITE_HOLD_MS = 100;

/**
 * How long a bookmark waits to be saved, ms, coalescing every later one of its kind meanwhile. Only a crash
 * or a lost lease needs the saved bookmark (a graceful stop saves at once): the successor then replays at
 * most this much of each watch, a refused conditional cache write and a publish per replayed event, and no
 * delivery (SNS FIFO deduplication drops a version published within the last 5 minutes). At one second a
 * bind or a provisioned claim in a quiet cluster saved 3 bookmarks, a quarter of the forwarder's DynamoDB
 * requests for it (`npm run bench:binder`, one alone); at ten seconds a quiet cluster saves at most one per
 * kind per ten seconds, well inside the API server's watch history (a bookmark older than that relists).
 */
export const DEFAULT_BOOKMARK_INTERVAL_MS = 10_000;

/** A duration that must be more than zero. */
function positiveDuration(text: string, flag: string): number {
  const ms = parseDuration(text);
  if (ms <= 0) throw new ForwarderConfigError(`${flag} must be longer than 0`);
  return ms;
}

/** Parses `15s`, `500ms`, `2m`, `1h` or a number of milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new ForwarderConfigError(`invalid duration ${JSON.stringify(text)}`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 'ms']!;
  return Math.round(Number(match[1]) * factor);
}

/** Reads the configuration; throws {@link ForwarderConfigError} naming what is missing or wrong. */
export function loadConfig(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): ForwarderConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      'cluster-id': { type: 'string' },
      'topic-arn': { type: 'string' },
      'cache-table': { type: 'string' },
      'control-table': { type: 'string' },
      kubeconfig: { type: 'string' },
      kinds: { type: 'string' },
      'service-selector': { type: 'string' },
      'leader-elect': { type: 'string' },
      'lease-namespace': { type: 'string' },
      'lease-name': { type: 'string' },
      identity: { type: 'string' },
      'lease-duration': { type: 'string' },
      'renew-deadline': { type: 'string' },
      'retry-period': { type: 'string' },
      'http-port': { type: 'string' },
      'queue-capacity': { type: 'string' },
      'watch-silence': { type: 'string' },
      'own-write-hold': { type: 'string' },
      'bookmark-interval': { type: 'string' },
      'heartbeat-interval': { type: 'string' },
      'cloudwatch-namespace': { type: 'string' },
      'publish-all': { type: 'string' },
      'subscriptions-refresh': { type: 'string' },
    },
    strict: true,
  });
  const pick = (flag: keyof typeof values, ...names: string[]): string | undefined => {
    const fromFlag = values[flag];
    if (typeof fromFlag === 'string' && fromFlag !== '') return fromFlag;
    for (const name of names) if (env[name]) return env[name];
    return undefined;
  };
  const required = (flag: keyof typeof values, name: string): string => {
    const value = pick(flag, name);
    if (!value) throw new ForwarderConfigError(`--${flag} or ${name} must be set`);
    return value;
  };
  const kindsText = pick('kinds', 'WATCH_KINDS');
  const kinds = kindsText ? kindsText.split(',').map((k) => k.trim()).filter(Boolean) : [...WATCHED_KINDS];
  for (const kind of kinds) {
    if (!(WATCHED_KINDS as readonly string[]).includes(kind)) throw new ForwarderConfigError(`unknown kind ${kind}; known: ${WATCHED_KINDS.join(', ')}`);
  }
  const integer = (text: string, what: string) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) throw new ForwarderConfigError(`${what} must be a non-negative integer`);
    return n;
  };
  const leaderElect = (pick('leader-elect', 'LEADER_ELECT') ?? 'true').toLowerCase() !== 'false';
  const publishAllText = (pick('publish-all', 'PUBLISH_ALL') ?? 'false').toLowerCase();
  if (publishAllText !== 'true' && publishAllText !== 'false') throw new ForwarderConfigError(`publish-all must be true or false, got ${JSON.stringify(publishAllText)}`);
  return {
    cluster: required('cluster-id', 'CLUSTER_ID'),
    topicArn: required('topic-arn', 'EVENTS_TOPIC_ARN'),
    tables: { cache: required('cache-table', 'CACHE_TABLE'), control: required('control-table', 'CONTROL_TABLE') },
    kubeconfig: pick('kubeconfig', 'KUBECONFIG'),
    kinds: kinds as WatchedKind[],
    serviceSelector: pick('service-selector', 'SERVICE_LABEL_SELECTOR'),
    lease: leaderElect
      ? {
          namespace: pick('lease-namespace', 'LEASE_NAMESPACE', 'POD_NAMESPACE') ?? 'claimflow',
          name: pick('lease-name', 'LEASE_NAME') ?? 'claimflow-forwarder',
          identity: pick('identity', 'POD_NAME', 'HOSTNAME') ?? hostname(),
          leaseDurationMs: parseDuration(pick('lease-duration', 'LEASE_DURATION') ?? '15s'),
          renewDeadlineMs: parseDuration(pick('renew-deadline', 'RENEW_DEADLINE') ?? '10s'),
          retryPeriodMs: parseDuration(pick('retry-period', 'RETRY_PERIOD') ?? '2s'),
        }
      : false,
    httpPort: integer(pick('http-port', 'HTTP_PORT') ?? '8080', 'http port'),
    queueCapacity: integer(pick('queue-capacity', 'QUEUE_CAPACITY') ?? '1000', 'queue capacity'),
    watchSilenceMs: parseDuration(pick('watch-silence', 'WATCH_SILENCE') ?? '5m'),
    ownWriteHoldMs: parseDuration(pick('own-write-hold', 'OWN_WRITE_HOLD') ?? String(DEFAULT_OWN_WRITE_HOLD_MS)),
    bookmarkIntervalMs: parseDuration(pick('bookmark-interval', 'BOOKMARK_INTERVAL') ?? String(DEFAULT_BOOKMARK_INTERVAL_MS)),
    heartbeatIntervalMs: parseDuration(pick('heartbeat-interval', 'HEARTBEAT_INTERVAL') ?? '1m'),
    cloudwatchNamespace: pick('cloudwatch-namespace', 'CLOUDWATCH_NAMESPACE'),
    publishAll: publishAllText === 'true',
    subscriptionsRefreshMs: positiveDuration(pick('subscriptions-refresh', 'SUBSCRIPTIONS_REFRESH') ?? '1m', 'subscriptions-refresh'),
  };
}
