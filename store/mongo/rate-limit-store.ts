import { MongoServerError, type Collection, type Db } from 'mongodb';
import { assertRateLimitWindow, rateLimitExpiry } from '../rate-limit-window.js';
import type { RateLimitStore } from '../types.js';
import { ensureIndexes } from './ensure-indexes.js';

/** One counted operation: slot `n` of (key, window). The unique index makes each slot claimable once. */
interface RateLimitSlot {
  key: string;
  window_start: number;
  n: number;
  expires_at: Date;
}

/** The highest slot known to be taken: only a starting point for the next claim, never the truth. */
interface RateLimitHint {
  key: string;
  window_start: number;
  n: number;
  expires_at: Date;
}

export interface MongoRateLimitStoreOptions {
  /** Claims tried per call before giving up; each failed claim means another caller counted. */
  maxClaims?: number;
}

const DUPLICATE_KEY = 11000;

/**
 * MongoDB adapter of {@link RateLimitStore}, for MongoDB and FerretDB alike (see README.md beside this file).
 *
 * Not a `findOneAndUpdate` with `$inc`: FerretDB v1 applies update operators by reading the document and
 * writing it back whole, so concurrent increments of one counter lose updates. Inserts against a unique index
 * are atomic on every engine, so each operation claims the next free slot number (key, window_start, n);
 * the slot it gets is its count. A hint document remembers the highest slot seen, so a claim starts near the
 * top; a stale hint only costs extra claims, never a wrong count.
 */
export async function createMongoRateLimitStore(
  db: Db,
  options: MongoRateLimitStoreOptions = {},
): Promise<RateLimitStore> {
  const maxClaims = options.maxClaims ?? 1000;
  const slots = db.collection<RateLimitSlot>('rate_limit_slots');
  const hints = db.collection<RateLimitHint>('rate_limit_hints');
  // Plain indexes on expires_at: FerretDB v1 rejects TTL indexes, so this store prunes expired records itself.
  await ensureIndexes(slots, [
    { key: { key: 1, window_start: 1, n: 1 }, name: 'slot_unique', unique: true },
    { key: { expires_at: 1 }, name: 'expires_at' },
  ]);
  await ensureIndexes(hints, [
    { key: { key: 1, window_start: 1 }, name: 'hint_unique', unique: true },
    { key: { expires_at: 1 }, name: 'expires_at' },
  ]);

  let prunedBefore = -Infinity;
  let pruning: Promise<void> = Promise.resolve();

  return {
    async increment(key, windowStartMs, windowMs) {
      assertRateLimitWindow(windowStartMs, windowMs);
      const expiresAt = new Date(rateLimitExpiry(windowStartMs, windowMs));
      const hint = await hints.findOne({ key, window_start: windowStartMs }, { projection: { n: 1 } });
      let n = (hint?.n ?? 0) + 1;
      for (let claims = 1; ; claims++) {
        try {
          await slots.insertOne({ key, window_start: windowStartMs, n, expires_at: expiresAt });
          break;
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          if (claims >= maxClaims) {
            throw new Error(`rate limit for ${key}: no free slot after ${maxClaims} claims (contention)`, {
              cause: error,
            });
          }
          n += 1;
        }
      }
      await raiseHint(hints, key, windowStartMs, n, expiresAt);
      if (windowStartMs > prunedBefore) {
        prunedBefore = windowStartMs;
        // Off the caller's path; close() waits for it. A failed prune is retried at the next window and
        // counting never depends on it, so its error is dropped rather than failing a counted operation.
        pruning = pruning.then(() => prune(slots, hints, new Date(windowStartMs))).catch(() => undefined);
      }
      return n;
    },
    async peek(key, windowStartMs) {
      // Slots are claimed 1, 2, 3… and only whole expired windows are pruned: the count is the slots held.
      return slots.countDocuments({ key, window_start: windowStartMs });
    },
    async close() {
      await pruning;
    },
  };
}

/** `$max` keeps the hint monotonic on MongoDB; on FerretDB a lost update only leaves it lower. */
async function raiseHint(
  hints: Collection<RateLimitHint>,
  key: string,
  windowStart: number,
  n: number,
  expiresAt: Date,
): Promise<void> {
  try {
    await hints.updateOne(
      { key, window_start: windowStart },
      { $max: { n }, $setOnInsert: { expires_at: expiresAt } },
      { upsert: true },
    );
  } catch (error) {
    // Two first claims upserted the hint at once; the other one created it, and a hint may lag.
    if (!isDuplicateKey(error)) throw error;
  }
}

async function prune(slots: Collection<RateLimitSlot>, hints: Collection<RateLimitHint>, before: Date): Promise<void> {
  // Hints first: a slot without its hint is only slower to count past, a hint without slots would skip counts.
  await hints.deleteMany({ expires_at: { $lt: before } });
  await slots.deleteMany({ expires_at: { $lt: before } });
}

function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}
