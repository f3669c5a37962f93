/**
 * Plain-text rendering for the CLI: aligned tables, ages and durations. No colours, so output pipes cleanly.
 *
 * @example
 * table(['CONTROLLER', 'DLQ'], [['binder', '0']]); // 'CONTROLLER  DLQ\nbinder        0'
 * age(90_000); // '1m30s'
 */

/** A column whose every cell is a number, a percentage or `-` is right-aligned. */
const NUMERIC = /^(\d|-|\d+(\.\d+)?%|~?\d+)$/;

/** An aligned table; cells that are numbers (or `-`) are right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => NUMERIC.test(r[i] ?? '-')));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (numeric[i] ? cell.padStart(widths[i]) : i === cells.length - 1 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A duration in ms as `850ms`, `42s`, `3m05s`, `2h10m`, `3d4h`. */
export function duration(ms: number): string {
  const negative = ms < 0;
  let rest = Math.abs(Math.round(ms));
  let text: string;
  if (rest < 1000) text = `${rest}ms`;
  else if ((rest = Math.floor(rest / 1000)) < 60) text = `${rest}s`;
  else if (rest < 3600) text = `${Math.floor(rest / 60)}m${String(rest % 60).padStart(2, '0')}s`;
  else if (rest < 86_400) text = `${Math.floor(rest / 3600)}h${String(Math.floor((rest % 3600) / 60)).padStart(2, '0')}m`;
  else text = `${Math.floor(rest / 86_400)}d${Math.floor((rest % 86_400) / 3600)}h`;
  return negative ? `-${text}` : text;
}

/** `3m05s ago`, or `in 3m05s` for a time in the future; `-` when unknown. */
export function relative(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined || !Number.isFinite(at)) return '-';
  return at <= now ? `${duration(now - at)} ago` : `in ${duration(at - now)}`;
}

/** Cuts `text` to `max` characters (one line), marking the cut. */
export function truncate(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length <= max ? one : `${one.slice(0, Math.max(0, max - 1))}…`;
}

/** Parses `15m`, `30s`, `2h`, `500ms` or plain seconds into ms. */
export function parseDurationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) throw new RangeError(`invalid duration ${JSON.stringify(text)} (e.g. 30s, 15m, 2h)`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] ?? 's']!;
  return Math.round(Number(match[1]) * factor);
}
