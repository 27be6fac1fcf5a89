/**
 * The bound on imagery runs per client (docs/security.md §9): `GET /v1/imagery/ndvi` and
 * `POST /v1/imagery/process` are public, and a run may read up to 16 MP per band from the catalog's COGs and
 * decode them here. A client (its verified key when it signs, else its address) may have a few runs under way at
 * once and start a few a minute; past either, 429 `rate_limit` with `retry-after`, as the other request bounds
 * answer. A run answered from the computation cache (activities/imagery/computation-cache.ts) counts like any
 * other: the catalog search it makes is upstream work too. In memory, per process, like the request rates.
 */
import { ServiceError } from '../core/errors.js';
import { createRateLimiter } from '../core/rate-limiter.js';

export interface ImageryBounds {
  /** Runs of one client under way at once. */
  concurrentPerClient: number;
  /** Runs one client may start per minute (a bucket of a third of it at once); 0: no rate. */
  perMinutePerClient: number;
}

export const DEFAULT_IMAGERY_BOUNDS: ImageryBounds = { concurrentPerClient: 2, perMinutePerClient: 30 };

export interface ImageryBound {
  /** Runs `work` for `client` within its bounds, or throws 429 `rate_limit` without running it. */
  run<T>(client: string, work: () => Promise<T>): Promise<T>;
}

export function createImageryBound(bounds: ImageryBounds, clock: () => number): ImageryBound {
  const running = new Map<string, number>();
  const rate =
    bounds.perMinutePerClient > 0
      ? createRateLimiter({ perMinute: bounds.perMinutePerClient, burstSeconds: 20 })
      : undefined;
  return {
    async run(client, work) {
      const under = running.get(client) ?? 0;
      if (under >= bounds.concurrentPerClient) {
        throw new ServiceError(
          'rate_limit',
          `this client has ${under} imagery runs under way; at most ${bounds.concurrentPerClient} at once`,
          { 'retry-after': '1' },
        );
      }
      const decision = rate?.take(client, clock());
      if (decision && !decision.allowed) {
        const seconds = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
        throw new ServiceError(
          'rate_limit',
          `too many imagery runs from this client: at most ${bounds.perMinutePerClient} a minute; retry in ${seconds} s`,
          { 'retry-after': seconds },
        );
      }
      running.set(client, under + 1);
      try {
        return await work();
      } finally {
        const left = (running.get(client) ?? 1) - 1;
        if (left > 0) running.set(client, left);
        else running.delete(client);
      }
    },
  };
}
