/**
 * Where the processes' pino logs go: JSON lines (for collectors) or readable lines (for a person at a
 * terminal), chosen by `LOG_FORMAT` (`auto`: readable when stdout is a TTY, else JSON). Both write to stdout
 * synchronously, as pino does by default (docs/operations.md: a stalled reader stalls the process).
 *
 * The readable form is ours (no pino-pretty dependency): `HH:MM:SS level msg key=value …`, one line per
 * record; an error's stack follows on indented lines.
 */
import { writeSync } from 'node:fs';
import { pino, type DestinationStream, type Logger } from 'pino';

export type LogFormat = 'auto' | 'pretty' | 'json';

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
const COLORS: Record<string, string> = {
  trace: '\x1b[90m',
  debug: '\x1b[36m',
  info: '\x1b[32m',
  warn: '\x1b[33m',
  error: '\x1b[31m',
  fatal: '\x1b[35m',
};
const RESET = '\x1b[0m';
/** Fields every record has that the line shows another way, or that say nothing at a terminal. */
const SHOWN_APART = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v']);

export interface PrettyOptions {
  /** Colour the level (ANSI); for a terminal. */
  color?: boolean;
  /** Clock times in UTC rather than local time. */
  utc?: boolean;
}

const two = (n: number) => String(n).padStart(2, '0');

/** A value as `key=value` shows it: bare when it is one plain word, else JSON (quotes, escapes, no newlines). */
function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=\\]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return JSON.stringify(value) ?? String(value);
}

/** One pino JSON line as a readable line; a line that is not a JSON object is passed through unchanged. */
export function prettyLine(line: string, options: PrettyOptions = {}): string {
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return line.trimEnd() + '\n';
    record = parsed as Record<string, unknown>;
  } catch {
    return line.trimEnd() + '\n';
  }
  const at = new Date(typeof record.time === 'number' ? record.time : Date.now());
  const clock = options.utc
    ? `${two(at.getUTCHours())}:${two(at.getUTCMinutes())}:${two(at.getUTCSeconds())}`
    : `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
  const name = LEVELS[record.level as number] ?? String(record.level);
  const level = options.color ? `${COLORS[name] ?? ''}${name.padEnd(5)}${RESET}` : name.padEnd(5);
  const parts = [clock, level];
  if (record.msg !== undefined) parts.push(String(record.msg).replace(/\s*\n\s*/g, ' '));
  let stack: string | undefined;
  for (const [key, value] of Object.entries(record)) {
    if (SHOWN_APART.has(key) || value === undefined) continue;
    const err = value as { message?: unknown; stack?: unknown };
    if ((key === 'err' || key === 'error') && typeof err === 'object' && err !== null && 'message' in err) {
      parts.push(`${key}=${shown(String(err.message))}`);
      if (typeof err.stack === 'string') stack = err.stack;
      continue;
    }
    parts.push(`${key}=${shown(value)}`);
  }
  const indented = stack ? `\n${stack.replace(/^/gm, '    ')}` : '';
  return `${parts.join(' ')}${indented}\n`;
}

/** A pino destination writing readable lines to a file descriptor, synchronously. */
export function prettyDestination(fd = 1, options: PrettyOptions = {}): DestinationStream {
  return {
    write(chunk: string) {
      // pino hands one record per call; split anyway in case a caller batches.
      for (const line of chunk.split('\n')) if (line.trim() !== '') writeSync(fd, prettyLine(line, options));
    },
  };
}

/** `auto` → pretty exactly when `isTty`. */
export const resolveLogFormat = (format: LogFormat, isTty: boolean): 'pretty' | 'json' =>
  format === 'auto' ? (isTty ? 'pretty' : 'json') : format;

/** The process logger: JSON on stdout (pino's own synchronous destination) or readable lines. */
export function createProcessLogger(config: { logLevel: string; logFormat: LogFormat }): Logger {
  const tty = process.stdout.isTTY === true;
  if (resolveLogFormat(config.logFormat, tty) === 'json') return pino({ level: config.logLevel });
  return pino({ level: config.logLevel }, prettyDestination(1, { color: tty }));
}
