import cliProgress from 'cli-progress';

/**
 * Progress of a long CLI command (store audit, bulk proof verify, store sync). On a terminal it is a bar with
 * an ETA (cli-progress, redrawn in place); anywhere else (a pipe, a CI log, a file) it is a plain line every
 * `everyItems` items or `everyMs` milliseconds, whichever comes first, and a final line: redrawn bars would
 * fill a log with escape codes. It writes only to `stream`, stderr by default, so a command whose result goes
 * to stdout (JSON) keeps stdout clean.
 */
export interface ProgressStream {
  write(chunk: string): boolean;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressOptions {
  /** What runs, as the line starts: `store audit`. */
  label: string;
  /** What is counted, plural: `records`. */
  unit?: string;
  /** Items expected; unknown until `setTotal` (a counter without percentage or ETA). */
  total?: number;
  stream?: ProgressStream;
  /** Plain mode: a line at least every this many items (default: a tenth of the total, at least 100; else 1000). */
  everyItems?: number;
  /** Plain mode: a line when this long passed since the last one, checked on each tick (default 5 s). */
  everyMs?: number;
  /** Injected for tests. */
  clock?: () => number;
}

export interface Progress {
  tick(n?: number): void;
  setTotal(n: number): void;
  /** The final line (`summary` appended); later calls do nothing. */
  done(summary?: string): void;
  /** Ends without a final line (the command failed and says why itself); a no-op after `done`. */
  stop(): void;
}

const DEFAULT_EVERY_MS = 5_000;

export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  const unit = options.unit ?? 'items';
  const clock = options.clock ?? Date.now;
  const started = clock();
  let total = options.total;
  let value = 0;
  let finished = false;

  const counted = (): string => {
    if (total === undefined) return `${value} ${unit}`;
    const percent = total === 0 ? 100 : Math.floor((value / total) * 100);
    return `${value}/${total} ${unit} (${percent}%)`;
  };
  const line = (text: string) => stream.write(`${options.label}: ${text}\n`);

  // A total below the count met so far would show more than 100 %: the total grows with it.
  const raise = () => {
    if (total !== undefined && value > total) total = value;
  };

  const finalLine = (summary: string | undefined) => {
    const seconds = ((clock() - started) / 1000).toFixed(1);
    line(`${counted()} in ${seconds} s${summary ? `; ${summary}` : ''}`);
  };

  if (stream.isTTY === true) {
    const bar = new cliProgress.SingleBar({
      stream: stream as NodeJS.WritableStream,
      format: (barOptions, params, payload) =>
        cliProgress.Format.Formatter(
          {
            ...barOptions,
            format:
              total === undefined
                ? `${options.label} {value} ${unit} | {duration_formatted}`
                : `${options.label} {bar} {percentage}% | {value}/{total} ${unit} | ETA {eta_formatted}`,
          },
          params,
          payload,
        ),
      // cli-progress reports an unknown ETA as the strings 'NULL' or 'INF', which its formatter would mangle.
      formatTime: (t, timeOptions, roundTo) =>
        typeof t === 'number' && Number.isFinite(t) ? cliProgress.Format.TimeFormat(t, timeOptions, roundTo) : '?',
      // The final plain line replaces the bar, so a finished command leaves one readable line.
      clearOnComplete: true,
      hideCursor: true,
      barCompleteChar: '\u2588',
      barIncompleteChar: '\u2591',
      etaBuffer: 200,
    });
    bar.start(total ?? 0, 0);
    return {
      tick(n = 1) {
        if (finished) return;
        value += n;
        const before = total;
        raise();
        if (total !== before && total !== undefined) bar.setTotal(total);
        bar.update(value);
      },
      setTotal(n) {
        if (finished) return;
        total = Math.max(n, value);
        bar.setTotal(total);
      },
      done(summary) {
        if (finished) return;
        finished = true;
        bar.stop();
        finalLine(summary);
      },
      stop() {
        if (finished) return;
        finished = true;
        bar.stop();
      },
    };
  }

  const everyMs = options.everyMs ?? DEFAULT_EVERY_MS;
  const everyItems = () => options.everyItems ?? (total === undefined ? 1000 : Math.max(100, Math.ceil(total / 10)));
  let lastValue = 0;
  let lastAt = started;
  return {
    tick(n = 1) {
      if (finished) return;
      value += n;
      raise();
      const now = clock();
      if (value - lastValue >= everyItems() || now - lastAt >= everyMs) {
        line(counted());
        lastValue = value;
        lastAt = now;
      }
    },
    setTotal(n) {
      if (!finished) total = Math.max(n, value);
    },
    done(summary) {
      if (finished) return;
      finished = true;
      finalLine(summary);
    },
    stop() {
      finished = true;
    },
  };
}
