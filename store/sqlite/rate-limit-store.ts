import { assertRateLimitWindow, rateLimitExpiry } from '../rate-limit-window.js';
import type { RateLimitStore } from '../types.js';
import type { SqliteDatabase } from './open-database.js';

/**
 * SQLite adapter of {@link RateLimitStore}. One UPSERT … RETURNING statement per call, so the count is
 * atomic within a process and, through SQLite's write lock, across processes sharing the file.
 * Expects a database from `openSqlite` (table `rate_limit_counters`).
 */
export function createSqliteRateLimitStore(db: SqliteDatabase): RateLimitStore {
  const upsert = db.prepare<[string, number, number], { count: number }>(`
    INSERT INTO rate_limit_counters (key, window_start, count, expires_at) VALUES (?, ?, 1, ?)
    ON CONFLICT (key, window_start) DO UPDATE SET count = count + 1
    RETURNING count
  `);
  const read = db.prepare<[string, number], { count: number }>(
    'SELECT count FROM rate_limit_counters WHERE key = ? AND window_start = ?',
  );
  const prune = db.prepare<[number]>('DELETE FROM rate_limit_counters WHERE expires_at < ?');
  let prunedBefore = -Infinity;

  return {
    async increment(key, windowStartMs, windowMs) {
      assertRateLimitWindow(windowStartMs, windowMs);
      const row = upsert.get(key, windowStartMs, rateLimitExpiry(windowStartMs, windowMs));
      if (!row) throw new Error('rate_limit_counters upsert returned no row');
      // Drop expired windows once per newer window start seen: the callers' windows are this store's clock.
      if (windowStartMs > prunedBefore) {
        prunedBefore = windowStartMs;
        prune.run(windowStartMs);
      }
      return row.count;
    },
    async peek(key, windowStartMs) {
      return read.get(key, windowStartMs)?.count ?? 0;
    },
    async close() {
      // The statements are released with the database, which belongs to the caller.
    },
  };
}
