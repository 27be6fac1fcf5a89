/**
 * Integer query parameters (`hours`, `limit`, `rings`, `zoom` …) as pure checks. Only plain decimal digits
 * count: "1e1", "0x10", " 3", "3.0" and a repeated parameter are not integers a client meant to send.
 */
import { fail, pass, type Check } from './check.js';
import type { ErrorCode } from './errors.js';

export type QueryValue = string | string[] | undefined;

const DIGITS = /^[0-9]{1,6}$/;

/** The integer in `text` when it lies in [min, max]; null otherwise. */
export function integerIn(text: unknown, min: number, max: number): number | null {
  if (typeof text !== 'string' || !DIGITS.test(text)) return null;
  const value = Number(text);
  return value >= min && value <= max ? value : null;
}

/** An optional integer parameter: absent → `fallback`; outside [min, max] → `error` naming the range. */
export function integerParam(
  value: QueryValue,
  name: string,
  range: { min: number; max: number; fallback: number },
  error: ErrorCode,
): Check<number> {
  if (value === undefined) return pass(range.fallback);
  const n = integerIn(value, range.min, range.max);
  return n === null
    ? fail(error, `${name} must be one integer ${range.min}..${range.max}: ${JSON.stringify(value)}`)
    : pass(n);
}

/** Hourly statistics (tiles, inference) keep and report at most a week. */
export const MAX_STATS_HOURS = 168;
export const DEFAULT_STATS_HOURS = 24;

/** `hours` of a stats endpoint: absent → 24. */
export const checkHours = (value: QueryValue): Check<number> =>
  integerParam(value, 'hours', { min: 1, max: MAX_STATS_HOURS, fallback: DEFAULT_STATS_HOURS }, 'invalid_hours');
