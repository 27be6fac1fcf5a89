/**
 * Persistence ports. Each port has a SQLite adapter (`sqlite/`, the embedded default) and a MongoDB adapter
 * (`mongo/`, MongoDB or FerretDB), and one contract suite under `test/store/` that every adapter passes.
 * Stores never own their connection: the caller opens the database and closes it after `close()`.
 */

/** Fixed-window operation counter behind gate 3's `max_ops_per_hour` (a delegation certificate constraint). */
export interface RateLimitStore {
  /**
   * Atomically counts one operation for `key` in the fixed window starting at `windowStartMs`; returns the
   * count including this one. Safe under concurrent callers (also across processes sharing the store):
   * n concurrent calls on a fresh window return exactly 1..n, so a limit can never be overshot by a race.
   */
  increment(key: string, windowStartMs: number, windowMs: number): Promise<number>;
  /** The count of `key` in the window starting at `windowStartMs`, without counting (0 for none). */
  peek(key: string, windowStartMs: number): Promise<number>;
  /** Releases what the store holds itself; the database connection stays open for its owner to close. */
  close(): Promise<void>;
}
