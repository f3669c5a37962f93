/**
 * `claimflow status`: one snapshot of a stage, and the rules that say whether it needs attention.
 *
 * Per controller: its queue (visible, in flight, delayed), its DLQ, the age of the queue's oldest message
 * (CloudWatch `ApproximateAgeOfOldestMessage` on AWS, the fauxqs inspection API locally; unknown
 * elsewhere — it is never measured by receiving, which would count toward `maxReceiveCount`), keys parked /
 * backing off / given up (backoff records), failures in the last hour (CloudWatch `ReconcileError` on AWS;
 * locally, with no CloudWatch, the keys whose last failure is less than an hour old) and, on AWS, budget
 * waits in the last hour (`BudgetWait`). Per cluster: the forwarder's heartbeat (leader, age), each kind's
 * initial-list mark and bookmark (with its age, from the heartbeat), and the API token bucket.
 *
 * **Needs attention** (exit code 1) when any of these holds — {@link assess}:
 *
 * | check | when |
 * |---|---|
 * | `dlq` | a DLQ holds a message (visible or in flight) |
 * | `queue-age` | a queue's oldest message is older than `maxMessageAgeMs` (default 15 min) |
 * | `given-up` | a key reached its controller's failure threshold |
 * | `parked` | more than `maxParked` keys (default 100) are parked, all controllers together |
 * | `parked-overdue` | a parked key is due for more than `overdueMs` (default 5 min): the resync function is not running |
 * | `forwarder` | a cluster whose forwarder ever wrote sync records has no leading heartbeat younger than `maxHeartbeatAgeMs` (default 5 min) |
 * | `initial-list` | a watched kind's initial LIST is not complete: the controllers wait for it |
 *
 * @example
 * const report = await collectStatus(target);
 * report.attention; // [{ check: 'dlq', subject: 'binder', message: 'DLQ holds 1 message(s)', hint: 'claimflow dlq list binder' }]
 */
import { GetMetricDataCommand, type MetricDataQuery } from '@aws-sdk/client-cloudwatch';
import type { HeartbeatRecord } from '../forwarder/heartbeat.ts';
import { METRIC, METRICS_NAMESPACE } from '../runtime/observability.ts';
import { keyState } from './backoff.ts';
import { bucketTokens } from '../state/bucket.ts';
import { readControlTable, type ControlSnapshot } from './control.ts';
import { queueCounts } from './dlq.ts';
import type { Target } from './target.ts';

export interface Thresholds {
  maxMessageAgeMs: number;
  maxParked: number;
  maxHeartbeatAgeMs: number;
  overdueMs: number;
}

export const DEFAULT_THRESHOLDS: Readonly<Thresholds> = Object.freeze({
  maxMessageAgeMs: 15 * 60_000,
  maxParked: 100,
  maxHeartbeatAgeMs: 5 * 60_000,
  overdueMs: 5 * 60_000,
});

export interface ControllerStatus {
  controller: string;
  queue: { name: string; visible: number; inFlight: number; delayed: number };
  dlq: { name: string; visible: number; inFlight: number };
  /** Seconds; null when the endpoint cannot tell without receiving. */
  oldestMessageAgeSeconds: number | null;
  parked: number;
  /** Parked keys whose `dueAt` passed more than the overdue threshold ago. */
  parkedOverdue: number;
  backingOff: number;
  givenUp: number;
  /** See {@link StatusReport.failuresSource}. */
  failuresLastHour: number | null;
  /** `BudgetWait` in the last hour (CloudWatch only). */
  budgetWaitsLastHour: number | null;
}

export interface KindStatus {
  kind: string;
  listComplete: boolean;
  listCompletedAt: string | null;
  bookmark: string;
  /** Seconds since the forwarder last moved this kind's bookmark (from its heartbeat); null when unknown. */
  bookmarkAgeSeconds: number | null;
}

export interface ClusterStatus {
  cluster: string;
  forwarder: { holder: string; leading: boolean; heartbeatAgeSeconds: number; leadingSinceSeconds: number | null } | null;
  kinds: KindStatus[];
  budget: { qps: number; burst: number; tokens: number; used: number; pausedForSeconds: number | null } | null;
}

export interface Finding {
  check: 'dlq' | 'queue-age' | 'given-up' | 'parked' | 'parked-overdue' | 'forwarder' | 'initial-list';
  subject: string;
  message: string;
  hint?: string;
}

export interface StatusReport {
  target: string;
  mode: 'local' | 'aws';
  generatedAt: string;
  /** `cloudwatch`: ReconcileError sums; `backoff-records`: keys whose last failure is within the hour. */
  failuresSource: 'cloudwatch' | 'backoff-records';
  /** `cloudwatch`, `fauxqs`, or null when unknown. */
  queueAgeSource: 'cloudwatch' | 'fauxqs' | null;
  controllers: ControllerStatus[];
  clusters: ClusterStatus[];
  attention: Finding[];
  healthy: boolean;
}

const HOUR_MS = 3_600_000;

/** Reads everything and applies {@link assess}. */
export async function collectStatus(target: Target, options: { thresholds?: Partial<Thresholds>; now?: () => number } = {}): Promise<StatusReport> {
  const thresholds = { ...DEFAULT_THRESHOLDS, ...options.thresholds };
  const now = (options.now ?? Date.now)();
  const [control, counts, ages, cloud] = await Promise.all([
    readControlTable(target.doc, target.tables.control),
    Promise.all(target.queues.map(async (q) => ({ queue: await queueCounts(target.sqs, q.queue.url), dlq: await queueCounts(target.sqs, q.dlq.url) }))),
    oldestAges(target),
    target.cloudwatch ? cloudWatchFigures(target, now) : Promise.resolve(undefined),
  ]);
  const controllers = target.queues.map((q, i): ControllerStatus => {
    const records = control.backoff.filter((r) => r.controller === q.controller);
    const states = records.map((r) => keyState(r, now));
    const parkedRecords = records.filter((r) => r.dueAt !== undefined && !r.givenUp);
    return {
      controller: q.controller,
      queue: { name: q.queue.name, ...counts[i].queue },
      dlq: { name: q.dlq.name, visible: counts[i].dlq.visible, inFlight: counts[i].dlq.inFlight },
      oldestMessageAgeSeconds: ages.values[q.queue.name] ?? cloud?.ages[q.queue.name] ?? null,
      parked: parkedRecords.length,
      parkedOverdue: parkedRecords.filter((r) => Number(r.dueAt) < now - thresholds.overdueMs).length,
      backingOff: states.filter((s) => s === 'backing-off').length,
      givenUp: states.filter((s) => s === 'given-up').length,
      failuresLastHour: cloud ? (cloud.failures[q.controller] ?? 0) : records.filter((r) => r.failures > 0 && r.lastError !== undefined && Number(r.updatedAt) >= now - HOUR_MS).length,
      budgetWaitsLastHour: cloud ? (cloud.budgetWaits[q.controller] ?? 0) : null,
    };
  });
  const report: StatusReport = {
    target: target.description,
    mode: target.mode,
    generatedAt: new Date(now).toISOString(),
    failuresSource: cloud ? 'cloudwatch' : 'backoff-records',
    queueAgeSource: ages.source ?? (cloud ? 'cloudwatch' : null),
    controllers,
    clusters: clusterStatuses(control, target, now),
    attention: [],
    healthy: true,
  };
  report.attention = assess(report, control, thresholds, now);
  report.healthy = report.attention.length === 0;
  return report;
}

function clusterStatuses(control: ControlSnapshot, target: Target, now: number): ClusterStatus[] {
  return control.clusters.map((cluster): ClusterStatus => {
    const heartbeat: HeartbeatRecord | undefined = control.heartbeats.get(cluster);
    const bucket = control.buckets.get(cluster);
    const { qps, burst } = target.budget;
    let budget: ClusterStatus['budget'] = null;
    if (bucket) {
      const available = bucketTokens(bucket, { qps, burst }, now);
      const paused = bucket.pausedUntil !== undefined && Number(bucket.pausedUntil) > now ? (Number(bucket.pausedUntil) - now) / 1000 : null;
      budget = { qps, burst, tokens: round(available), used: round(Math.max(0, 1 - available / burst)), pausedForSeconds: paused === null ? null : round(paused) };
    }
    return {
      cluster,
      forwarder: heartbeat
        ? {
            holder: String(heartbeat.holder ?? ''),
            leading: heartbeat.leading === true,
            heartbeatAgeSeconds: round((now - Number(heartbeat.heartbeatAt)) / 1000),
            leadingSinceSeconds: heartbeat.leadingSince ? round((now - Number(heartbeat.leadingSince)) / 1000) : null,
          }
        : null,
      kinds: control.sync
        .filter((s) => s.cluster === cluster)
        .map((s) => {
          const mark = heartbeat?.bookmarks?.[s.kind];
          return {
            kind: s.kind,
            listComplete: s.listComplete,
            listCompletedAt: s.listCompletedAt ?? null,
            bookmark: s.rv,
            bookmarkAgeSeconds: mark ? round((now - Number(mark.at)) / 1000) : null,
          };
        }),
      budget,
    };
  });
}

const round = (n: number): number => Math.round(n * 100) / 100;

/** The findings that make `status` exit 1 (see the module comment). */
export function assess(report: Pick<StatusReport, 'controllers' | 'clusters'>, control: Pick<ControlSnapshot, 'forwardedClusters'>, thresholds: Thresholds, _now: number): Finding[] {
  const findings: Finding[] = [];
  let parked = 0;
  for (const c of report.controllers) {
    const inDlq = c.dlq.visible + c.dlq.inFlight;
    if (inDlq > 0) findings.push({ check: 'dlq', subject: c.controller, message: `DLQ ${c.dlq.name} holds ${inDlq} message(s)`, hint: `claimflow dlq list ${c.controller}` });
    if (c.oldestMessageAgeSeconds !== null && c.oldestMessageAgeSeconds * 1000 > thresholds.maxMessageAgeMs) {
      findings.push({
        check: 'queue-age',
        subject: c.controller,
        message: `oldest message in ${c.queue.name} is ${Math.round(c.oldestMessageAgeSeconds)} s old`,
        hint: `is the ${c.controller} function running? check its errors and throttles`,
      });
    }
    if (c.givenUp > 0) findings.push({ check: 'given-up', subject: c.controller, message: `${c.givenUp} key(s) given up after the failure threshold`, hint: `claimflow backoff --controller ${c.controller} --state given-up` });
    if (c.parkedOverdue > 0) {
      findings.push({ check: 'parked-overdue', subject: c.controller, message: `${c.parkedOverdue} parked key(s) overdue: the resync function is not re-enqueuing them`, hint: 'check the resync function and its schedule' });
    }
    parked += c.parked;
  }
  if (parked > thresholds.maxParked) {
    findings.push({ check: 'parked', subject: 'all controllers', message: `${parked} keys parked (threshold ${thresholds.maxParked})`, hint: 'claimflow backoff --state parked' });
  }
  for (const cluster of control.forwardedClusters) {
    const status = report.clusters.find((c) => c.cluster === cluster);
    const forwarder = status?.forwarder;
    if (!forwarder) {
      findings.push({ check: 'forwarder', subject: cluster, message: 'no forwarder heartbeat recorded', hint: 'is the forwarder running (and at a version that writes heartbeats)?' });
    } else if (!forwarder.leading) {
      findings.push({ check: 'forwarder', subject: cluster, message: `no forwarder leads (${forwarder.holder || 'the last leader'} stepped down ${Math.round(forwarder.heartbeatAgeSeconds)} s ago)`, hint: 'kubectl -n claimflow get pods,lease' });
    } else if (forwarder.heartbeatAgeSeconds * 1000 > thresholds.maxHeartbeatAgeMs) {
      findings.push({ check: 'forwarder', subject: cluster, message: `forwarder heartbeat is ${Math.round(forwarder.heartbeatAgeSeconds)} s old (leader ${forwarder.holder})`, hint: 'kubectl -n claimflow logs deploy/claimflow-forwarder' });
    }
    for (const kind of status?.kinds ?? []) {
      if (!kind.listComplete) findings.push({ check: 'initial-list', subject: `${cluster}/${kind.kind}`, message: `initial LIST of ${kind.kind} not complete: controllers wait for it`, hint: 'check the forwarder' });
    }
  }
  return findings;
}

/** Oldest-message ages without receiving: the fauxqs inspection API (local stack). */
async function oldestAges(target: Target): Promise<{ source: 'fauxqs' | null; values: Record<string, number | null> }> {
  if (!target.fauxqsEndpoint) return { source: null, values: {} };
  const values: Record<string, number | null> = {};
  let answered = false;
  const now = Date.now();
  await Promise.all(
    target.queues.map(async (q) => {
      try {
        const response = await fetch(`${target.fauxqsEndpoint}/_fauxqs/queues/${encodeURIComponent(q.queue.name)}`, { signal: AbortSignal.timeout(5000) });
        if (!response.ok) return;
        const body = (await response.json()) as { messages?: { ready?: { sentTimestamp?: number }[]; delayed?: { sentTimestamp?: number }[]; inflight?: { message?: { sentTimestamp?: number } }[] } };
        const m = body.messages ?? {};
        const sent = [...(m.ready ?? []), ...(m.delayed ?? []), ...(m.inflight ?? []).map((e) => e.message ?? {})].map((x) => Number(x.sentTimestamp)).filter(Number.isFinite);
        values[q.queue.name] = sent.length ? Math.max(0, (now - Math.min(...sent)) / 1000) : 0;
        answered = true;
      } catch {
        // not a fauxqs: unknown
      }
    }),
  );
  return { source: answered ? 'fauxqs' : null, values };
}

/** On AWS: failures and budget waits per controller over the last hour, and each queue's oldest message age. */
async function cloudWatchFigures(
  target: Target,
  now: number,
): Promise<{ failures: Record<string, number>; budgetWaits: Record<string, number>; ages: Record<string, number | null> }> {
  const queries: MetricDataQuery[] = [];
  const ids = new Map<string, { what: 'failures' | 'budgetWaits' | 'ages'; name: string }>();
  target.queues.forEach((q, i) => {
    const dimensions = [
      { Name: 'service', Value: target.metricsService },
      { Name: 'controller', Value: q.controller },
    ];
    for (const [what, metric] of [['failures', METRIC.reconcileError], ['budgetWaits', METRIC.budgetWait]] as const) {
      const id = `${what.toLowerCase()}${i}`;
      ids.set(id, { what, name: q.controller });
      queries.push({ Id: id, MetricStat: { Metric: { Namespace: METRICS_NAMESPACE, MetricName: metric, Dimensions: dimensions }, Period: 300, Stat: 'Sum' } });
    }
    const id = `age${i}`;
    ids.set(id, { what: 'ages', name: q.queue.name });
    queries.push({
      Id: id,
      MetricStat: { Metric: { Namespace: 'AWS/SQS', MetricName: 'ApproximateAgeOfOldestMessage', Dimensions: [{ Name: 'QueueName', Value: q.queue.name }] }, Period: 60, Stat: 'Maximum' },
    });
  });
  const figures = { failures: {} as Record<string, number>, budgetWaits: {} as Record<string, number>, ages: {} as Record<string, number | null> };
  let token: string | undefined;
  do {
    const out = await target.cloudwatch!.send(
      new GetMetricDataCommand({ MetricDataQueries: queries, StartTime: new Date(now - HOUR_MS), EndTime: new Date(now), ScanBy: 'TimestampDescending', NextToken: token }),
    );
    for (const result of out.MetricDataResults ?? []) {
      const meta = ids.get(result.Id ?? '');
      if (!meta) continue;
      const values = result.Values ?? [];
      if (meta.what === 'ages') {
        // newest first; only a datapoint from the last ten minutes says how old the queue is now
        const recent = (result.Timestamps ?? []).findIndex((t) => now - new Date(t).getTime() <= 10 * 60_000);
        if (!(meta.name in figures.ages)) figures.ages[meta.name] = recent >= 0 ? values[recent] : null;
      } else {
        figures[meta.what][meta.name] = (figures[meta.what][meta.name] ?? 0) + values.reduce((a, b) => a + b, 0);
      }
    }
    token = out.NextToken;
  } while (token);
  return figures;
}
