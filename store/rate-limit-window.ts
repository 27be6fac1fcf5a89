/** Rejects windows that would silently corrupt counters (NaN, fractions, non-positive length). */
export function assertRateLimitWindow(windowStartMs: number, windowMs: number): void {
  if (!Number.isSafeInteger(windowStartMs) || !Number.isSafeInteger(windowMs) || windowMs <= 0) {
    throw new RangeError(`invalid rate-limit window: start ${windowStartMs}, length ${windowMs}`);
  }
}

/** How long a window's records are kept: one more window, so a caller whose clock lags a little still counts. */
export function rateLimitExpiry(windowStartMs: number, windowMs: number): number {
  return windowStartMs + 2 * windowMs;
}
