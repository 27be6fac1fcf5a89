import { fail, pass, type Check } from '../../core/check.js';

/** Searches without `from` look back this far from `to`. */
export const DEFAULT_WINDOW_DAYS = 30;
const DAY_MS = 86_400_000;

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
// Full ISO 8601 in UTC only: a zone offset other than Z / +00:00 is refused rather than silently converted.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|\+00:00|\+0000)$/;

/**
 * A `from`/`to` (query) or `date_from`/`date_to` (body) value → epoch ms, or undefined when absent.
 * `YYYY-MM-DD` names a whole UTC day: as a start it is the day's first millisecond, as an end its last,
 * so `from=2024-06-01&to=2024-06-01` is that one day. Impossible dates (2024-02-30) are refused.
 */
export function parseDateParam(value: unknown, name: string, edge: 'start' | 'end'): Check<number | undefined> {
  if (value === undefined) return pass(undefined);
  const bad = () =>
    fail('invalid_date', `${name} must be a date (YYYY-MM-DD) or an ISO 8601 UTC time, got ${JSON.stringify(value)}`);
  if (typeof value !== 'string') return bad();
  const day = DATE_ONLY.exec(value);
  if (day) {
    const start = utc(day[1]!, day[2]!, day[3]!, '0', '0', '0', '');
    return start === null ? bad() : pass(edge === 'start' ? start : start + DAY_MS - 1);
  }
  const time = DATE_TIME.exec(value);
  if (!time) return bad();
  const ms = utc(time[1]!, time[2]!, time[3]!, time[4]!, time[5]!, time[6] ?? '0', time[7] ?? '');
  return ms === null ? bad() : pass(ms);
}

/** Field values → a UTC instant, or null when a field is out of range (Date.UTC would roll it over). */
function utc(y: string, mo: string, d: string, h: string, mi: string, s: string, fraction: string): number | null {
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const ms = fraction === '' ? 0 : Math.floor(Number(`0${fraction}`) * 1000);
  const t = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const back = new Date(t);
  const same =
    back.getUTCFullYear() === year &&
    back.getUTCMonth() === month - 1 &&
    back.getUTCDate() === day &&
    back.getUTCHours() === hour &&
    back.getUTCMinutes() === minute &&
    back.getUTCSeconds() === second;
  return same ? t : null;
}

export interface DateWindow {
  fromMs: number;
  toMs: number;
}

/** Defaults (to = now, from = to − 30 days) and the order check; a window may be a single instant. */
export function resolveWindow(fromMs: number | undefined, toMs: number | undefined, nowMs: number): Check<DateWindow> {
  const to = toMs ?? nowMs;
  const from = fromMs ?? to - DEFAULT_WINDOW_DAYS * DAY_MS;
  if (from > to) {
    return fail(
      'invalid_date',
      `from (${new Date(from).toISOString()}) is after to (${new Date(to).toISOString()})` +
        (toMs === undefined ? ', which defaults to now' : ''),
    );
  }
  return pass({ fromMs: from, toMs: to });
}

/** The STAC `datetime` interval (RFC 3339, closed). */
export const stacInterval = (window: DateWindow): string =>
  `${new Date(window.fromMs).toISOString()}/${new Date(window.toMs).toISOString()}`;

/** The names a caller widens a window with: query `from`/`to`, body `date_from`/`date_to`, a step's context. */
export interface WindowParams {
  from: string;
  to: string;
}
export const QUERY_WINDOW: WindowParams = { from: 'from', to: 'to' };

/**
 * What a `no_scenes` detail adds after the window it searched: whether that was the default, and how to widen
 * it. A first job without dates searches only the last 30 days, which a cloudy month can leave empty.
 */
export function widenHint(params: WindowParams, defaulted: { from: boolean; to: boolean }): string {
  const which = defaulted.from
    ? ` (${params.from} not given: the last ${DEFAULT_WINDOW_DAYS} days${defaulted.to ? '' : ` before ${params.to}`})`
    : '';
  return `${which}; widen the window with ${params.from} and ${params.to} (YYYY-MM-DD or ISO 8601 UTC)`;
}

/**
 * flood_classify's reference window (`reference_from`/`reference_to`): both ends or neither, in order; it names
 * the dry scene new water is judged against, so it is never defaulted.
 */
export function referenceWindow(
  from: unknown,
  to: unknown,
  names: [string, string],
): Check<{ fromMs: number; toMs: number } | undefined> {
  if (from === undefined && to === undefined) return pass(undefined);
  if (from === undefined || to === undefined) {
    return fail('invalid_date', `a reference window needs both ${names[0]} and ${names[1]}`);
  }
  const fromMs = parseDateParam(from, names[0], 'start');
  if (!fromMs.ok) return fromMs;
  const toMs = parseDateParam(to, names[1], 'end');
  if (!toMs.ok) return toMs;
  if (fromMs.value! > toMs.value!) return fail('invalid_date', `${names[0]} is after ${names[1]}`);
  return pass({ fromMs: fromMs.value!, toMs: toMs.value! });
}
