/**
 * A one-line progress display for long operations (a DLQ redrive), drawn on a terminal only: on a pipe or a
 * file it writes nothing, so `--json` and logs stay clean (the command prints its summary either way).
 *
 * @example
 * const progress = createProgress(process.stderr, 'redriving binder DLQ');
 * progress.update(37, 120); // \r redriving binder DLQ [#######.............]  37/120
 * progress.done();          // ends the line
 */

/** The part of a stream the display needs (`process.stderr` fits). */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Progress {
  /** `done` so far of `total` (unknown: `undefined`). */
  update(done: number, total?: number): void;
  /** Draws the last state and ends the line. */
  done(): void;
}

const BAR = 20;
const MIN_INTERVAL_MS = 100;

/** A progress line on `stream` when it is a TTY, else a no-op. */
export function createProgress(stream: ProgressStream, label: string, options: { now?: () => number } = {}): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  const now = options.now ?? Date.now;
  let last = { done: 0, total: undefined as number | undefined };
  let drawnAt = -Infinity;
  let drawn = false;
  const draw = () => {
    const { done, total } = last;
    const known = total !== undefined && total > 0;
    const filled = known ? Math.min(BAR, Math.round((done / total) * BAR)) : 0;
    const bar = known ? ` [${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}]` : '';
    const count = known ? `${done}/${total}` : `${done}`;
    const text = `${label}${bar} ${count}`;
    const width = stream.columns ?? 80;
    stream.write(`\r${text.slice(0, width - 1).padEnd(Math.min(width - 1, text.length + 2))}`);
    drawn = true;
    drawnAt = now();
  };
  return {
    update(done, total) {
      last = { done, total: total ?? last.total };
      if (now() - drawnAt >= MIN_INTERVAL_MS) draw();
    },
    done() {
      draw();
      if (drawn) stream.write('\n');
    },
  };
}
