/**
 * `claimflow` — the operator's command line (bin/claimflow.js runs {@link main}). See README "Operating
 * claimflow" for what each command shows and what to do about it.
 *
 * Exit codes: 0 all well; 1 needs attention (`status` found something, `retry --wait` did not reconcile,
 * a redrive left messages behind); 2 usage error, or the stage could not be read.
 *
 * @example
 * const code = await main(['status', '--json'], { stdout: process.stdout, stderr: process.stderr });
 */
import { parseArgs } from 'node:util';
import { backoffEntries, retryKey, waitForRetry, type KeyState } from './backoff.ts';
import { controllerSpec, CONTROLLERS, parseKind, UsageError } from './controllers.ts';
import { readControlTable } from './control.ts';
import { peekDlq, redrive, RedriveError, type DlqMessage, type RedriveMethod } from './dlq.ts';
import { duration, parseDurationMs, relative, table, truncate } from './format.ts';
import { createProgress, type ProgressStream } from './progress.ts';
import { collectStatus, DEFAULT_THRESHOLDS, type StatusReport } from './status.ts';
import { queuesOf, resolveTarget, TargetError, type Target, type TargetOptions } from './target.ts';

export const EXIT = { ok: 0, attention: 1, error: 2 } as const;

export interface CliIo {
  stdout: ProgressStream;
  stderr: ProgressStream;
  env?: NodeJS.ProcessEnv;
  /** Tests: clients for the target. */
  clients?: TargetOptions['clients'];
  now?: () => number;
}

export const USAGE = `claimflow — operate a claimflow stage (the local stack, or a deployed stage)

usage:
  claimflow status                                  health of every controller and cluster
  claimflow backoff [--controller C] [--cluster C] [--state given-up|parked|backing-off|due]
  claimflow retry <controller> <kind> <key> [--uid UID] [--cluster C] [--wait] [--timeout 60s]
  claimflow dlq list <controller> [--max N]
  claimflow dlq show <controller> [<messageId>] [--max N]
  claimflow dlq redrive <controller> [--method auto|move-task|copy] [--max N]

where:
  (default)              the local stack: --stack-file (default .local/stack.json, written by npm start)
  --stage S              a deployed stage: its CloudFormation stack claimflow-S (--stack-name to override)
  --region R             (default: AWS_REGION; locally eu-west-1 or what stack.json says)
  --json                 machine-readable output
  --qps N, --burst N     the API budget the functions run with (default: the stack's outputs, else 20/30)
  --uid UID              retry: the key's reminder for that UID (a row \`backoff\` marks "reminder for UID …")

status thresholds: --max-age 15m  --max-parked 100  --max-heartbeat-age 5m
controllers: ${CONTROLLERS.map((c) => c.name).join(', ')}
kinds: PersistentVolume (pv), PersistentVolumeClaim (pvc), Node, StorageClass (sc), VolumeAttachment (va), Service (svc), Endpoints (ep)

exit codes: 0 all well · 1 needs attention · 2 usage error or the stage cannot be read
`;

const OPTIONS = {
  stage: { type: 'string' },
  region: { type: 'string' },
  'stack-name': { type: 'string' },
  'stack-file': { type: 'string' },
  json: { type: 'boolean' },
  qps: { type: 'string' },
  burst: { type: 'string' },
  controller: { type: 'string' },
  cluster: { type: 'string' },
  state: { type: 'string' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
  uid: { type: 'string' },
  method: { type: 'string' },
  max: { type: 'string' },
  'max-age': { type: 'string' },
  'max-parked': { type: 'string' },
  'max-heartbeat-age': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parse>['values'];
const parse = (argv: string[]) => parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });

const positiveNumber = (text: string | undefined, what: string): number | undefined => {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${what} must be a positive number`);
  return n;
};
const durationOf = (text: string | undefined, what: string): number | undefined => {
  if (text === undefined) return undefined;
  try {
    return parseDurationMs(text);
  } catch (error) {
    throw new UsageError(`${what}: ${(error as Error).message}`);
  }
};

/** Runs one command; resolves with the exit code. */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const out = (text = '') => io.stdout.write(`${text}\n`);
  const err = (text: string) => io.stderr.write(`${text}\n`);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    err(`claimflow: ${(error as Error).message}\n\n${USAGE}`);
    return EXIT.error;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    (values.help ? out : err)(USAGE);
    return values.help ? EXIT.ok : EXIT.error;
  }
  let target: Target | undefined;
  try {
    const command = positionals[0];
    const known = ['status', 'backoff', 'retry', 'dlq'];
    if (!known.includes(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    validateArguments(command, positionals, values);
    target = await resolveTarget({
      stage: values.stage,
      region: values.region,
      stackName: values['stack-name'],
      stackFile: values['stack-file'],
      qps: positiveNumber(values.qps, '--qps'),
      burst: positiveNumber(values.burst, '--burst'),
      env: io.env,
      clients: io.clients,
    });
    const ctx: Context = { target, values, positionals, io, out, err, now: io.now ?? Date.now };
    switch (command) {
      case 'status':
        return await statusCommand(ctx);
      case 'backoff':
        return await backoffCommand(ctx);
      case 'retry':
        return await retryCommand(ctx);
      default:
        return await dlqCommand(ctx);
    }
  } catch (error) {
    if (error instanceof UsageError) err(`claimflow: ${error.message}\nrun claimflow --help for usage`);
    else if (error instanceof TargetError) err(`claimflow: ${error.message}`);
    else err(`claimflow: ${(error as Error).name}: ${(error as Error).message}`);
    return EXIT.error;
  } finally {
    target?.close();
  }
}

/** Usage checks that need no stage (so a typo never waits for the network). */
function validateArguments(command: string, positionals: string[], values: Values): void {
  const expect = (count: number, usage: string) => {
    if (positionals.length !== count) throw new UsageError(`usage: ${usage}`);
  };
  if (command === 'status') expect(1, 'claimflow status');
  if (command === 'backoff') {
    expect(1, 'claimflow backoff [--controller C] [--cluster C] [--state S]');
    if (values.controller) controllerSpec(values.controller);
    if (values.state && !['given-up', 'parked', 'backing-off', 'due'].includes(values.state)) throw new UsageError('--state must be given-up, parked, backing-off or due');
  }
  if (command === 'retry') {
    expect(4, 'claimflow retry <controller> <kind> <key>');
    controllerSpec(positionals[1]);
    parseKind(positionals[2]);
  }
  if (command === 'dlq') {
    const sub = positionals[1];
    if (!['list', 'show', 'redrive'].includes(sub ?? '')) throw new UsageError('usage: claimflow dlq list|show|redrive <controller>');
    if (sub === 'show') {
      if (positionals.length < 3 || positionals.length > 4) throw new UsageError('usage: claimflow dlq show <controller> [<messageId>]');
    } else expect(3, `claimflow dlq ${sub} <controller>`);
    controllerSpec(positionals[2]);
    if (values.method && !['auto', 'move-task', 'copy'].includes(values.method)) throw new UsageError('--method must be auto, move-task or copy');
  }
}

interface Context {
  target: Target;
  values: Values;
  positionals: string[];
  io: CliIo;
  out: (text?: string) => void;
  err: (text: string) => void;
  now: () => number;
}

const json = (ctx: Context, value: unknown) => ctx.out(JSON.stringify(value, null, 2));

// ----------------------------------------------------------------------------------------------- status

async function statusCommand(ctx: Context): Promise<number> {
  const { values } = ctx;
  const report = await collectStatus(ctx.target, {
    now: ctx.now,
    thresholds: {
      maxMessageAgeMs: durationOf(values['max-age'], '--max-age') ?? DEFAULT_THRESHOLDS.maxMessageAgeMs,
      maxParked: positiveNumber(values['max-parked'], '--max-parked') ?? DEFAULT_THRESHOLDS.maxParked,
      maxHeartbeatAgeMs: durationOf(values['max-heartbeat-age'], '--max-heartbeat-age') ?? DEFAULT_THRESHOLDS.maxHeartbeatAgeMs,
    },
  });
  if (values.json) json(ctx, report);
  else ctx.out(renderStatus(report));
  return report.healthy ? EXIT.ok : EXIT.attention;
}

const secondsText = (s: number | null): string => (s === null ? '-' : duration(s * 1000));

/** The human form of a status report. */
export function renderStatus(report: StatusReport): string {
  const lines = [`claimflow · ${report.target} · ${report.generatedAt}`, ''];
  const failuresHeader = report.failuresSource === 'cloudwatch' ? 'FAILURES 1H' : 'FAILING KEYS 1H';
  const header = ['CONTROLLER', 'QUEUE', 'IN FLIGHT', 'DLQ', 'OLDEST', 'PARKED', 'BACKING OFF', 'GIVEN UP', failuresHeader];
  if (report.mode === 'aws') header.push('BUDGET WAITS 1H');
  lines.push(
    table(
      header,
      report.controllers.map((c) => {
        const row = [
          c.controller,
          String(c.queue.visible + c.queue.delayed),
          String(c.queue.inFlight),
          String(c.dlq.visible + c.dlq.inFlight),
          c.queue.visible + c.queue.inFlight + c.queue.delayed === 0 ? '-' : secondsText(c.oldestMessageAgeSeconds),
          String(c.parked),
          String(c.backingOff),
          String(c.givenUp),
          c.failuresLastHour === null ? '-' : String(c.failuresLastHour),
        ];
        if (report.mode === 'aws') row.push(c.budgetWaitsLastHour === null ? '-' : String(c.budgetWaitsLastHour));
        return row;
      }),
    ),
  );
  const notes = [
    report.queueAgeSource === null ? 'OLDEST: unknown on this endpoint (never measured by receiving)' : '',
    report.failuresSource === 'backoff-records' ? 'FAILING KEYS 1H: keys whose last failure is under an hour old (no CloudWatch here)' : '',
  ].filter(Boolean);
  for (const note of notes) lines.push(`  ${note}`);
  lines.push('');
  if (report.clusters.length === 0) {
    lines.push('no cluster has written anything yet (no forwarder has run)');
  } else {
    lines.push(
      table(
        ['CLUSTER', 'FORWARDER LEADER', 'HEARTBEAT', 'LEADING FOR', 'API BUDGET'],
        report.clusters.map((c) => [
          c.cluster,
          c.forwarder ? (c.forwarder.leading ? c.forwarder.holder : `none (${c.forwarder.holder} stepped down)`) : 'unknown (no heartbeat)',
          c.forwarder ? `${duration(c.forwarder.heartbeatAgeSeconds * 1000)} ago` : '-',
          c.forwarder?.leading ? secondsText(c.forwarder.leadingSinceSeconds) : '-',
          c.budget
            ? `${Math.round(c.budget.used * 100)}% used (${c.budget.tokens}/${c.budget.burst} tokens, ${c.budget.qps}/s)${c.budget.pausedForSeconds !== null ? `, paused ${duration(c.budget.pausedForSeconds * 1000)} (429)` : ''}`
            : 'unused',
        ]),
      ),
    );
    const kinds = report.clusters.flatMap((c) =>
      c.kinds.map((k) => [c.cluster, k.kind, k.listComplete ? 'yes' : 'NO', k.listCompletedAt ?? '-', k.bookmark || '-', k.bookmarkAgeSeconds === null ? '-' : `${duration(k.bookmarkAgeSeconds * 1000)} ago`]),
    );
    if (kinds.length) {
      lines.push('');
      lines.push(table(['CLUSTER', 'KIND', 'LISTED', 'LIST COMPLETED AT', 'BOOKMARK', 'BOOKMARK MOVED'], kinds));
    }
  }
  lines.push('');
  if (report.healthy) lines.push('all well');
  else {
    lines.push('needs attention:');
    for (const f of report.attention) lines.push(`  ! ${f.subject}: ${f.message}${f.hint ? ` — ${f.hint}` : ''}`);
  }
  return lines.join('\n');
}

// ----------------------------------------------------------------------------------------------- backoff

async function backoffCommand(ctx: Context): Promise<number> {
  const now = ctx.now();
  const control = await readControlTable(ctx.target.doc, ctx.target.tables.control);
  const controller = ctx.values.controller ? controllerSpec(ctx.values.controller).name : undefined;
  const entries = backoffEntries(control.backoff, now, { controller, cluster: ctx.values.cluster, state: ctx.values.state as KeyState | undefined });
  if (ctx.values.json) {
    json(ctx, entries);
    return EXIT.ok;
  }
  if (entries.length === 0) {
    ctx.out('no keys in backoff');
    return EXIT.ok;
  }
  ctx.out(
    table(
      ['CONTROLLER', 'CLUSTER', 'KIND', 'KEY', 'STATE', 'FAILURES', 'NEXT ATTEMPT', 'LAST ERROR'],
      entries.map((e) => [
        e.controller,
        e.cluster,
        e.kind,
        e.scope ? `${e.key} (reminder for UID ${e.scope})` : e.key,
        e.state,
        String(e.failures),
        e.state === 'given-up' ? 'on change or retry' : relative(e.nextAttemptAt, now),
        truncate(e.lastError ?? '-', 100),
      ]),
    ),
  );
  ctx.out(`\n${entries.length} key(s). Retry one now: claimflow retry <controller> <kind> <key> (a reminder: --uid <UID>)`);
  return EXIT.ok;
}

// ----------------------------------------------------------------------------------------------- retry

async function retryCommand(ctx: Context): Promise<number> {
  const [, controllerName, kindText, key] = ctx.positionals;
  const controller = controllerSpec(controllerName).name;
  const kind = parseKind(kindText);
  const scope = ctx.values.uid || undefined;
  const control = await readControlTable(ctx.target.doc, ctx.target.tables.control);
  let cluster = ctx.values.cluster;
  if (!cluster) {
    const ofKey = backoffEntries(control.backoff, ctx.now()).filter((e) => e.controller === controller && e.kind === kind && e.key === key && e.scope === (scope ?? null));
    const withRecord = [...new Set(ofKey.map((e) => e.cluster))];
    const candidates = withRecord.length ? withRecord : control.clusters;
    if (candidates.length !== 1) {
      throw new UsageError(candidates.length ? `several clusters (${candidates.join(', ')}): pass --cluster` : 'no cluster known yet: pass --cluster');
    }
    cluster = candidates[0];
  }
  const retried = await retryKey(
    { doc: ctx.target.doc, sqs: ctx.target.sqs, table: ctx.target.tables.control, queueUrl: queuesOf(ctx.target, controller).queue.url, now: ctx.now },
    { controller, cluster, kind, key, ...(scope ? { scope } : {}) },
  );
  const before = retried.before;
  const summary = {
    controller,
    cluster,
    kind,
    key,
    ...(scope ? { uid: scope } : {}),
    messageId: retried.messageId,
    before: before ? { failures: before.failures, givenUp: before.givenUp === true, parked: before.dueAt !== undefined, lastError: before.lastError ?? null } : null,
    madeDue: retried.madeDue,
  };
  let outcome: Awaited<ReturnType<typeof waitForRetry>> | undefined;
  if (ctx.values.wait) {
    outcome = await waitForRetry({ doc: ctx.target.doc, table: ctx.target.tables.control }, retried, { timeoutMs: durationOf(ctx.values.timeout, '--timeout') ?? 60_000 });
  }
  if (ctx.values.json) {
    json(ctx, { ...summary, ...(outcome ? { outcome: outcome.outcome, record: outcome.record ?? null } : {}) });
  } else {
    const was = before
      ? `it had ${before.failures} failure(s)${before.givenUp ? ', given up' : before.dueAt !== undefined ? ', parked' : ''}${before.lastError ? ` (last error: ${truncate(before.lastError, 120)})` : ''}`
      : 'it had no backoff record';
    ctx.out(`requeued ${controller} ${kind} ${key}${scope ? ` (its reminder for UID ${scope})` : ''} in cluster ${cluster}: ${was}`);
    if (outcome?.outcome === 'reconciled') ctx.out('reconciled');
    else if (outcome?.outcome === 'failed') ctx.out(`failed again (${outcome.record.failures} failures): ${truncate(outcome.record.lastError ?? '', 300)}`);
    else if (outcome) ctx.out(before ? 'no outcome yet (still pending)' : 'sent (no backoff record to watch)');
  }
  if (!outcome) return EXIT.ok;
  return outcome.outcome === 'reconciled' ? EXIT.ok : EXIT.attention;
}

// ----------------------------------------------------------------------------------------------- dlq

async function dlqCommand(ctx: Context): Promise<number> {
  const [, sub, controllerName, messageId] = ctx.positionals;
  const controller = controllerSpec(controllerName).name;
  const queues = queuesOf(ctx.target, controller);
  const max = positiveNumber(ctx.values.max, '--max');
  if (sub === 'redrive') return redriveCommand(ctx, controller, queues, max);
  const peeked = await peekDlq(ctx.target.sqs, queues.dlq.url, { max: max ?? 100 });
  const now = ctx.now();
  if (sub === 'show') {
    const messages = messageId ? peeked.messages.filter((m) => m.messageId === messageId || m.sourceMessageId === messageId) : peeked.messages;
    if (messageId && messages.length === 0) {
      ctx.err(`claimflow: no message ${messageId} among the ${peeked.messages.length} read from ${queues.dlq.name}`);
      return EXIT.attention;
    }
    if (ctx.values.json) json(ctx, messages);
    else ctx.out(messages.length ? messages.map((m) => renderMessage(m, now)).join('\n\n') : `${queues.dlq.name} is empty`);
    return EXIT.ok;
  }
  if (ctx.values.json) {
    json(ctx, { dlq: queues.dlq.name, approximateTotal: peeked.approximateTotal, messages: peeked.messages });
    return EXIT.ok;
  }
  if (peeked.messages.length === 0) {
    ctx.out(`${queues.dlq.name} is empty`);
    return EXIT.ok;
  }
  ctx.out(
    table(
      ['MESSAGE ID', 'SENT', 'CLUSTER', 'KIND', 'KEY', 'WHY'],
      peeked.messages.map((m) => [m.messageId, relative(m.sentAt, now), m.event?.cluster ?? '-', m.event?.kind ?? '-', m.event?.key ?? '-', truncate(m.cause === 'poison' ? `poison: ${m.reason}` : m.reason, 140)]),
    ),
  );
  const shown = peeked.messages.length;
  ctx.out(
    `\n${shown} message(s)${peeked.approximateTotal > shown ? ` of ~${peeked.approximateTotal} (later messages of the same FIFO group stay hidden while earlier ones are read)` : ''}. ` +
      `Details: claimflow dlq show ${controller} <messageId>; back to the queue: claimflow dlq redrive ${controller}`,
  );
  return EXIT.ok;
}

function renderMessage(m: DlqMessage, now: number): string {
  let body = m.body;
  try {
    body = JSON.stringify(JSON.parse(m.body), null, 2);
  } catch {
    // not JSON: as is
  }
  return [
    `message ${m.messageId}`,
    `  sent:            ${m.sentAt ? `${new Date(m.sentAt).toISOString()} (${relative(m.sentAt, now)})` : '-'}`,
    `  why:             ${m.cause === 'poison' ? `poison message — ${m.reason}` : m.reason}`,
    ...(m.sourceMessageId ? [`  logged as:       messageId ${m.sourceMessageId} (the function's log line)`] : []),
    `  group:           ${m.groupId ?? '-'}`,
    `  deduplication:   ${m.deduplicationId ?? '-'}`,
    `  attributes:      ${Object.entries(m.attributes).map(([k, v]) => `${k}=${truncate(v, 80)}`).join(', ') || '-'}`,
    '  body:',
    ...body.split('\n').map((l) => `    ${l}`),
  ].join('\n');
}

async function redriveCommand(ctx: Context, controller: string, queues: ReturnType<typeof queuesOf>, max: number | undefined): Promise<number> {
  const progress = createProgress(ctx.io.stderr, `redriving ${queues.dlq.name} → ${queues.queue.name}`);
  try {
    const result = await redrive(ctx.target.sqs, {
      dlq: queues.dlq,
      queue: queues.queue,
      method: (ctx.values.method as RedriveMethod | undefined) ?? 'auto',
      max,
      onProgress: (moved, total) => progress.update(moved, total),
    });
    progress.done();
    if (ctx.values.json) json(ctx, { controller, ...result });
    else {
      ctx.out(`moved ${result.moved} message(s) from ${queues.dlq.name} to ${queues.queue.name} (${result.method === 'copy' ? 'receive → send → delete' : 'SQS message move task'})`);
      if (result.fallbackReason) ctx.out(`  ${result.fallbackReason}: copied instead`);
    }
    return EXIT.ok;
  } catch (error) {
    progress.done();
    if (!(error instanceof RedriveError)) throw error;
    if (ctx.values.json) json(ctx, { controller, moved: error.moved, error: error.message });
    ctx.err(`claimflow: ${error.message}`);
    return EXIT.attention;
  }
}
