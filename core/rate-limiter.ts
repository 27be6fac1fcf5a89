/**
 * Request rate limits as token buckets, kept with GCRA (the generic cell rate algorithm): one number per key,
 * the "theoretical arrival time" at which its bucket would be full again, so a check is O(1) and a key whose
 * bucket refilled holds nothing worth keeping. Pure: the caller passes the clock.
 *
 * Buckets live in this process. Behind several gateways each enforces its own share; the hourly
 * `max_ops_per_hour` of delegation certificates is the store-backed, cluster-wide limit (api/gates.ts).
 */

export interface RateLimitRule {
  /** Sustained rate. */
  perMinute: number;
  /** The bucket holds this many seconds of the rate (at least one request): the burst allowed at once. */
  burstSeconds: number;
}

export interface RateDecision {
  allowed: boolean;
  /** The bucket's size. */
  limit: number;
  /** Requests left right now (after this one when allowed). */
  remaining: number;
  /** Until the bucket is full again. */
  resetMs: number;
  /** When refused: until the next request would be allowed; else 0. */
  retryAfterMs: number;
}

export interface RateLimiter {
  readonly rule: RateLimitRule;
  /**
   * Counts one request of `key` at `nowMs` if its bucket allows it; `cost` units (default 1, e.g. KiB of a body)
   * at once, never more than a full bucket, so any single request can pass when its bucket is full.
   */
  take(key: string, nowMs: number, cost?: number): RateDecision;
  /** Keys held (buckets not yet known to be full). */
  size(): number;
}

/** Most keys held at once: past it, refilled buckets go first, then the oldest (which then start full). */
export const DEFAULT_MAX_KEYS = 100_000;

/** Float rounding of fractional intervals at epoch-millisecond magnitudes (~1e12) stays far below this. */
const EPSILON_MS = 0.01;

export function bucketSize(rule: RateLimitRule): number {
  return Math.max(1, Math.floor((rule.perMinute * rule.burstSeconds) / 60));
}

export function createRateLimiter(rule: RateLimitRule, maxKeys = DEFAULT_MAX_KEYS): RateLimiter {
  if (!(rule.perMinute > 0) || !(rule.burstSeconds > 0)) throw new RangeError('a rate limit needs a positive rate');
  const interval = 60_000 / rule.perMinute; // ms one request costs
  const limit = bucketSize(rule);
  const window = limit * interval; // a full bucket's worth of time
  const arrivals = new Map<string, number>();

  const evict = (nowMs: number) => {
    for (const [key, tat] of arrivals) if (tat <= nowMs) arrivals.delete(key);
    // Still over (every bucket busy, a flood of new keys): forget the oldest tenth rather than grow.
    if (arrivals.size < maxKeys) return;
    let drop = Math.ceil(maxKeys / 10);
    for (const key of arrivals.keys()) {
      if (drop-- <= 0) break;
      arrivals.delete(key);
    }
  };

  return {
    rule,
    take(key, nowMs, cost = 1) {
      const units = Math.min(limit, Math.max(1, Math.ceil(cost)));
      const tat = Math.max(arrivals.get(key) ?? nowMs, nowMs);
      const next = tat + interval * units;
      const allowAt = next - window;
      if (nowMs + EPSILON_MS < allowAt) {
        return { allowed: false, limit, remaining: 0, resetMs: tat - nowMs, retryAfterMs: allowAt - nowMs };
      }
      if (!arrivals.has(key) && arrivals.size >= maxKeys) evict(nowMs);
      arrivals.set(key, next);
      return {
        allowed: true,
        limit,
        remaining: Math.floor((nowMs + window - next + EPSILON_MS) / interval),
        resetMs: next - nowMs,
        retryAfterMs: 0,
      };
    },
    size: () => arrivals.size,
  };
}

/**
 * The key a client address is limited under: IPv4 as is (also when IPv4-mapped), IPv6 by its /64, since one
 * host commonly holds a whole /64 and could otherwise rotate through it.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('%')[0]!.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
