import { ServiceError } from '../core/errors.js';
import type { ApiKeyRecord } from '../store/api-key-store.js';
import type { RateLimitStore } from '../store/types.js';

const DAY_MS = 86_400_000;

/** A message reserved against the free tier's allowance; `refund` gives it back (at most once). */
export interface ChatCharge {
  refund(): Promise<void>;
}

const FREE: ChatCharge = { refund: () => Promise.resolve() };

/**
 * The free tier's chat allowance (docs/protocol.md §8: 50 messages per day with the chat agent;
 * `FREE_MESSAGES_PER_DAY`). Reserves one message for `key` and throws 429 `quota_exceeded` once the UTC day's
 * count passes the limit, with `retry-after` set to the seconds left until 00:00 UTC. Pro and enterprise keys
 * (and configured env keys, which are pro) are unlimited and never counted.
 *
 * Only answered requests count: the caller refunds the reservation of a request that then failed (503
 * no_workers, an upstream error, a client gone). Reservations and refunds are two counters of the shared
 * rate-limit store, both atomic increments, so every gateway sharing the store counts against one allowance
 * and concurrent requests can never overshoot it: each reservation gets its own number, and a refusal
 * refunds its own reservation.
 */
export async function reserveChatMessage(
  deps: { rateLimits: RateLimitStore; clock: () => number },
  key: ApiKeyRecord,
  messagesPerDay: number,
): Promise<ChatCharge> {
  if (key.tier !== 'free') return FREE;
  const now = deps.clock();
  const dayStart = Math.floor(now / DAY_MS) * DAY_MS;
  const reserved = `chat:${key.id}`;
  const refunded = `chat-refund:${key.id}`;
  const count = await deps.rateLimits.increment(reserved, dayStart, DAY_MS);
  let done = false;
  const refund = async () => {
    if (done) return;
    done = true;
    await deps.rateLimits.increment(refunded, dayStart, DAY_MS);
  };
  if (count <= messagesPerDay) return { refund };
  // Past the raw count: only refunds can leave room. Peeked only here, so the common path is one write.
  if (count - (await deps.rateLimits.peek(refunded, dayStart)) <= messagesPerDay) return { refund };
  await refund();
  const retryAfter = Math.max(1, Math.ceil((dayStart + DAY_MS - now) / 1000));
  throw new ServiceError(
    'quota_exceeded',
    `the free tier allows ${messagesPerDay} chat messages per day per API key; the allowance renews at 00:00 UTC`,
    { 'retry-after': String(retryAfter) },
  );
}
