import type { Context, Middleware } from 'koa';
import { ServiceError } from '../core/errors.js';
import { addressKey, createRateLimiter, type RateLimiter } from '../core/rate-limiter.js';
import { MAX_QUERY_BYTES, type HttpLimits } from './http-limits.js';
import { preReadOf } from './json-body.js';

/** The two request limits of one server: per client address and per principal; either may be off. */
export interface RequestRateLimits {
  ip: RateLimiter | undefined;
  /** Body KiB per client address (HttpLimits.ipBodyBytesPerMinute). */
  ipBytes: RateLimiter | undefined;
  principal: RateLimiter | undefined;
}

/** Seconds of RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE an address may send at once (2 s: 1 MiB at the default). */
export const BODY_BURST_SECONDS = 2;

export function createRequestRateLimits(limits: HttpLimits | undefined): RequestRateLimits {
  const make = (perMinute: number | undefined) =>
    limits !== undefined && perMinute !== undefined && perMinute > 0
      ? createRateLimiter({ perMinute, burstSeconds: limits.burstSeconds })
      : undefined;
  const bytes = limits?.ipBodyBytesPerMinute;
  return {
    ip: make(limits?.ipPerMinute),
    // Counted in KiB, so the bucket's numbers stay small; a short burst (BODY_BURST_SECONDS), since a burst of
    // bodies is a burst of CPU: any single body within the body limit still passes on a full bucket.
    ipBytes:
      bytes === undefined || bytes <= 0
        ? undefined
        : createRateLimiter({ perMinute: Math.max(1, Math.round(bytes / 1024)), burstSeconds: BODY_BURST_SECONDS }),
    principal: make(limits?.principalPerMinute),
  };
}

/**
 * The bounds every request meets before any route runs, in one middleware (each Koa layer is a promise hop on
 * every request): its client address's rate (ctx.ip: the socket's peer, or what the outermost trusted proxy
 * saw, api/proxy-trust.ts; 429 `rate_limit` with `retry-after` past it; answers carry `ratelimit-limit/-remaining/-reset`
 * as draft-ietf-httpapi-ratelimit-headers has them), then the query string's size (414 `query_too_large`).
 */
export function requestBounds(
  limiter: RateLimiter | undefined,
  clock: () => number,
  bodyBytes?: RateLimiter | undefined,
): Middleware {
  return (ctx, next) => {
    // A request the chat lane handed over (api/chat-lane.ts) was counted there already: its headers stay.
    const pre = preReadOf(ctx.req);
    if (pre?.rateHeaders) ctx.set(pre.rateHeaders);
    if (limiter && !pre?.addressCounted) enforceAddressRate(ctx, limiter, ctx.ip, clock());
    if (bodyBytes && !pre?.bytesCounted) enforceBodyBytes(ctx, bodyBytes, addressKey(ctx.ip), clock());
    if (ctx.querystring.length > MAX_QUERY_BYTES) {
      throw new ServiceError('query_too_large', `the query string exceeds ${MAX_QUERY_BYTES} bytes`);
    }
    return next();
  };
}

/**
 * A body's size against its address's byte budget, before it is read: by Content-Length, and a body of unknown
 * length (chunked) as a full bucket. Refused: 429 `rate_limit` with `retry-after`, and the connection closed
 * rather than the unread body drained.
 */
function enforceBodyBytes(ctx: Context, limiter: RateLimiter, key: string, nowMs: number): void {
  const declared = ctx.get('content-length');
  const chunked = ctx.get('transfer-encoding') !== '';
  if (declared === '' && !chunked) return;
  takeBodyBytes(limiter, key, nowMs, declared !== '' ? Number(declared) : Infinity);
}

/** Takes `bytes` of a body from its address's byte budget; refused: throws 429 (a refusal takes nothing). */
export function takeBodyBytes(limiter: RateLimiter, key: string, nowMs: number, bytes: number): void {
  if (!(bytes > 0)) return;
  const decision = limiter.take(key, nowMs, bytes / 1024);
  if (decision.allowed) return;
  const seconds = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
  throw new ServiceError(
    'rate_limit',
    `too many request body bytes from this address: at most ${limiter.rule.perMinute} KiB per minute; retry in ${seconds} s`,
    { 'retry-after': seconds, connection: 'close' },
  );
}

/** Counts a request against its client address; refused: throws 429 `rate_limit` (a refusal takes nothing). */
export function enforceAddressRate(ctx: RateHeaderTarget, limiter: RateLimiter, address: string, nowMs: number): void {
  enforce(ctx, limiter, addressKey(address), nowMs, 'this address');
}

/** Where a rate limit's headers go: a Koa context, or the tile-hit path's light request (api/tile-hits.ts). */
export interface RateHeaderTarget {
  set(headers: Record<string, string>): void;
  response: { get(field: string): unknown };
}

/**
 * Counts a request against its principal once it is authenticated (a verified signature, a valid key): a
 * forged request cannot spend somebody else's budget. `principal` is a stable id such as `pk:<hex>`.
 */
export function enforcePrincipalRate(
  ctx: RateHeaderTarget,
  limiter: RateLimiter | undefined,
  principal: string,
  nowMs: number,
): void {
  if (limiter) enforce(ctx, limiter, principal, nowMs, 'this principal');
}

function enforce(ctx: RateHeaderTarget, limiter: RateLimiter, key: string, nowMs: number, who: string): void {
  const decision = limiter.take(key, nowMs);
  const seconds = (ms: number) => String(Math.max(decision.allowed ? 0 : 1, Math.ceil(ms / 1000)));
  // The tighter of the two limits is the one a client should see.
  const shown = Number(ctx.response.get('ratelimit-remaining') || Infinity);
  if (decision.remaining <= shown) {
    ctx.set({
      'ratelimit-limit': String(decision.limit),
      'ratelimit-remaining': String(decision.remaining),
      'ratelimit-reset': seconds(decision.resetMs),
    });
  }
  if (!decision.allowed) {
    throw new ServiceError(
      'rate_limit',
      `too many requests from ${who}: at most ${limiter.rule.perMinute} per minute, ${decision.limit} at once; retry in ${seconds(decision.retryAfterMs)} s`,
      { 'retry-after': seconds(decision.retryAfterMs) },
    );
  }
}
