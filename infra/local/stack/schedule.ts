/**
 * EventBridge schedules for the local stack: `rate()` and `cron()` expressions parsed as EventBridge
 * defines them (UTC; cron has six fields `minutes hours day-of-month month day-of-week year`, one of
 * day-of-month/day-of-week must be `?`, day-of-week 1–7 = SUN–SAT), and a scheduler that invokes each
 * target with the rule's `Input` (or, without one, a `Scheduled Event` envelope as EventBridge sends).
 *
 * Not supported (they throw {@link UnsupportedScheduleError}): the `L`, `W` and `#` cron operators.
 *
 * Deviation from EventBridge: a `rate()` rule fires once when the scheduler starts, then every period
 * from there (EventBridge's first firing comes up to one period after the rule is created). The local
 * stack's start stands for a deploy, and the functions' scheduled work is due at start as upstream's is:
 * the node label resync runs shortly after start (api-manager: `-node-label-resync-delay`, 10 s; the
 * label sync's own period slot keeps it to one run per `NODE_LABEL_RESYNC_INTERVAL`), the shared-volume
 * poll polls from startup, the resync re-enqueues what is due. `cron()` rules fire only at their times.
 * `startFiring: 'period'` keeps EventBridge's behaviour.
 */
import { randomUUID } from 'node:crypto';

/** Raised for an expression this parser does not accept. */
export class UnsupportedScheduleError extends Error {
  constructor(expression: string, why: string) {
    super(`schedule ${JSON.stringify(expression)}: ${why}`);
    this.name = 'UnsupportedScheduleError';
  }
}

/** A parsed schedule: the next fire time strictly after `from`. */
export interface Schedule {
  expression: string;
  next(from: Date): Date;
}

const UNIT_MS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/** `rate(5 minutes)` → 300000; undefined if not a rate expression. */
export function rateMs(expression: string): number | undefined {
  const m = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2].replace(/s$/, '');
  if (n < 1 || (n === 1) !== !m[2].endsWith('s')) {
    throw new UnsupportedScheduleError(expression, 'use "1 <unit>" or "<n> <unit>s" with n ≥ 1');
  }
  return n * UNIT_MS[unit];
}

/** Expands one cron field into the set of allowed values; `null` means any (`*` or `?`). */
function field(expression: string, text: string, min: number, max: number, names?: string[], nameBase = 0): Set<number> | null {
  if (text === '*' || text === '?') return null;
  if (/[LW#]/.test(text.replace(/[A-Z]{3}/g, (n) => (names?.includes(n) ? '0' : n)))) {
    throw new UnsupportedScheduleError(expression, `operator in "${text}" is not supported locally`);
  }
  const value = (s: string): number => {
    const idx = names?.indexOf(s.toUpperCase()) ?? -1;
    const v = idx >= 0 ? idx + nameBase : Number(s);
    if (!Number.isInteger(v) || v < min || v > max) throw new UnsupportedScheduleError(expression, `"${s}" is out of range ${min}-${max}`);
    return v;
  };
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new UnsupportedScheduleError(expression, `bad step in "${part}"`);
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [min, max];
    else if (range.includes('-')) [lo, hi] = range.split('-').map(value) as [number, number];
    else [lo, hi] = [value(range), stepText === undefined ? value(range) : max];
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

/** Parses `cron(m h dom mon dow year)` into a {@link Schedule}; undefined if not a cron expression. */
export function parseCron(expression: string): Schedule | undefined {
  const m = /^cron\((.*)\)$/.exec(expression.trim());
  if (!m) return undefined;
  const parts = m[1].trim().split(/\s+/);
  if (parts.length !== 6) throw new UnsupportedScheduleError(expression, 'cron needs 6 fields');
  const [mi, h, dom, mon, dow, yr] = parts;
  if ((dom === '?') === (dow === '?')) throw new UnsupportedScheduleError(expression, 'exactly one of day-of-month and day-of-week must be "?"');
  const minutes = field(expression, mi, 0, 59);
  const hours = field(expression, h, 0, 23);
  const days = field(expression, dom, 1, 31);
  const months = field(expression, mon, 1, 12, MONTHS, 1);
  const weekdays = field(expression, dow, 1, 7, DAYS, 1);
  const years = field(expression, yr, 1970, 2199);
  const ok = (set: Set<number> | null, v: number): boolean => set === null || set.has(v);
  return {
    expression,
    next(from: Date): Date {
      const t = new Date(from.getTime());
      t.setUTCSeconds(0, 0);
      t.setUTCMinutes(t.getUTCMinutes() + 1);
      const limit = from.getTime() + 5 * 366 * 86_400_000;
      while (t.getTime() <= limit) {
        if (!ok(years, t.getUTCFullYear())) {
          t.setUTCFullYear(t.getUTCFullYear() + 1, 0, 1);
          t.setUTCHours(0, 0);
          continue;
        }
        if (!ok(months, t.getUTCMonth() + 1)) {
          t.setUTCMonth(t.getUTCMonth() + 1, 1);
          t.setUTCHours(0, 0);
          continue;
        }
        if (!ok(days, t.getUTCDate()) || !ok(weekdays, t.getUTCDay() + 1)) {
          t.setUTCDate(t.getUTCDate() + 1);
          t.setUTCHours(0, 0);
          continue;
        }
        if (!ok(hours, t.getUTCHours())) {
          t.setUTCHours(t.getUTCHours() + 1, 0);
          continue;
        }
        if (!ok(minutes, t.getUTCMinutes())) {
          t.setUTCMinutes(t.getUTCMinutes() + 1);
          continue;
        }
        return t;
      }
      throw new UnsupportedScheduleError(expression, 'never fires within five years');
    },
  };
}

/**
 * Parses a `rate()` or `cron()` schedule expression.
 *
 * @example
 * parseSchedule('rate(1 minute)').next(new Date('2026-01-01T00:00:30Z')); // 2026-01-01T00:01:30Z
 * parseSchedule('cron(0 3 ? * MON-FRI *)').next(new Date('2026-11-21T12:00:00Z')); // Mon 2026-11-23T03:00Z
 */
export function parseSchedule(expression: string): Schedule {
  const rate = rateMs(expression);
  if (rate !== undefined) return { expression, next: (from) => new Date(from.getTime() + rate) };
  const cron = parseCron(expression);
  if (cron) return cron;
  throw new UnsupportedScheduleError(expression, 'not a rate() or cron() expression');
}

/** The event EventBridge sends to a scheduled rule's target when the rule has no Input. */
export function scheduledEvent(ruleArn: string, region: string, time: Date): Record<string, unknown> {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: time.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region,
    resources: [ruleArn],
    detail: {},
  };
}

export interface ScheduledTarget {
  /** The rule (logical id) and its expression. */
  rule: string;
  expression: string;
  /** The rule's Input as a JSON string (the event, verbatim), or none for a Scheduled Event. */
  input?: string;
  invoke(event: unknown): Promise<unknown>;
}

export interface SchedulerOptions {
  region: string;
  /** Divides every delay (tests: 600 → a 1-minute rate fires every 100 ms). Default 1. */
  speedup?: number;
  /** Called after each firing (tests and logs). */
  onFired?: (rule: string, outcome: { event: unknown; result?: unknown; error?: unknown }) => void;
  /**
   * When a `rate()` rule first fires: `'start'` (default) when {@link Scheduler.start} is called, or
   * `'period'` one period later, as EventBridge does after a rule is created.
   */
  startFiring?: 'start' | 'period';
}

interface ArmedTarget {
  target: ScheduledTarget;
  schedule: Schedule;
  timer?: NodeJS.Timeout;
  running?: Promise<void>;
}

/** Fires scheduled targets at their expressions' times until stopped. */
export class Scheduler {
  readonly #targets: ArmedTarget[] = [];
  readonly #o: SchedulerOptions;
  #stopped = false;

  constructor(targets: readonly ScheduledTarget[], options: SchedulerOptions) {
    this.#o = options;
    for (const target of targets) this.#targets.push({ target, schedule: parseSchedule(target.expression) });
  }

  /** Arms every rule; `rate()` rules fire now (unless `startFiring: 'period'`). */
  start(): void {
    const now = new Date();
    for (const t of this.#targets) {
      if ((this.#o.startFiring ?? 'start') === 'start' && rateMs(t.schedule.expression) !== undefined) this.#fire(t, now);
      else this.#arm(t, now);
    }
  }

  /** Fires a rule now (as `aws events put-events` would trigger it); resolves with the target's result. */
  async fire(rule: string): Promise<unknown[]> {
    const matches = this.#targets.filter((t) => t.target.rule === rule);
    return Promise.all(matches.map((t) => this.#invoke(t.target, new Date())));
  }

  /** Disarms every rule and waits for firings in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#targets) clearTimeout(t.timer);
    await Promise.allSettled(this.#targets.map((t) => t.running));
  }

  #arm(t: ArmedTarget, from: Date): void {
    if (this.#stopped) return;
    const at = t.schedule.next(from);
    const speedup = this.#o.speedup ?? 1;
    // real time: wait until `at`; sped up: scale the nominal interval (the nominal clock runs ahead)
    const delay = Math.max(0, speedup === 1 ? at.getTime() - Date.now() : (at.getTime() - from.getTime()) / speedup);
    t.timer = setTimeout(() => this.#fire(t, at), delay);
  }

  /** Invokes the target for the firing at `at`, then arms the next one. */
  #fire(t: ArmedTarget, at: Date): void {
    if (this.#stopped) return;
    // a slow target is not invoked twice at once: the next firing is armed after this one
    t.running = this.#invoke(t.target, at).then(
      () => this.#arm(t, at),
      () => this.#arm(t, at),
    );
  }

  async #invoke(target: ScheduledTarget, time: Date): Promise<unknown> {
    const ruleArn = `arn:aws:events:${this.#o.region}:000000000000:rule/${target.rule}`;
    const event = target.input !== undefined ? JSON.parse(target.input) : scheduledEvent(ruleArn, this.#o.region, time);
    try {
      const result = await target.invoke(event);
      this.#o.onFired?.(target.rule, { event, result });
      return result;
    } catch (error) {
      this.#o.onFired?.(target.rule, { event, error });
      throw error;
    }
  }
}
