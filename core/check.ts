import type { ErrorCode } from './errors.js';

/**
 * The result of a security or validation check. Checks are pure functions that return this instead of
 * throwing, so they are tested with plain values and adapted to HTTP in one place.
 */
export type Check<T> = { ok: true; value: T } | Failure;
/** `param`: the request field at fault (`messages[0].role`), when one is (OpenAI error bodies name it). */
export type Failure = { ok: false; error: ErrorCode; detail: string; param?: string };

export const pass = <T>(value: T): Check<T> => ({ ok: true, value });
export const fail = (error: ErrorCode, detail: string, param?: string): Failure =>
  param === undefined ? { ok: false, error, detail } : { ok: false, error, detail, param };
