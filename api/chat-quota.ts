import { ServiceError } from '../core/errors.js';
import type { ApiKeyRecord } from '../store/api-key-store.js';
import type { RateLimitStore } from '../store/types.js';

const DAY_MS = 86_400_000;

/**
 * The free tier's chat allowance (docs/protocol.md §8: 50 messages per day with the chat agent; `FREE_MESSAGES_PER_DAY`).
 * Counts one message for `key` and throws 429 `quota_exceeded` once the UTC day's count passes the limit,
 * with `retry-after` set to the seconds left until 00:00 UTC. Pro and enterprise keys (and configured env
 * keys, which are pro) are unlimited and never counted.
 *
 * A fixed UTC-day window in the shared rate-limit store, so every gateway sharing the store counts against
 * one allowance and concurrent requests can never overshoot it (the store's increment is atomic). Refused
 * requests are counted too: they change nothing (the limit is already passed) and cost one increment.
 */
export async function consumeChatQuota(
  deps: { rateLimits: RateLimitStore; clock: () => number },
  key: ApiKeyRecord,
  messagesPerDay: number,
): Promise<void> {
  if (key.tier !== 'free') return;
  const now = deps.clock();
  const dayStart = Math.floor(now / DAY_MS) * DAY_MS;
  const count = await deps.rateLimits.increment(`chat:${key.id}`, dayStart, DAY_MS);
  if (count <= messagesPerDay) return;
  const retryAfter = Math.max(1, Math.ceil((dayStart + DAY_MS - now) / 1000));
  throw new ServiceError(
    'quota_exceeded',
    `the free tier allows ${messagesPerDay} chat messages per day per API key; the allowance renews at 00:00 UTC`,
    { 'retry-after': String(retryAfter) },
  );
}
