import Database from 'better-sqlite3';
import { SQLITE_MIGRATIONS, type SqliteMigration } from './migrations.js';

export type SqliteDatabase = Database.Database;

export interface OpenSqliteOptions {
  /** How long a writer waits for another process's write lock before SQLITE_BUSY (ms). */
  busyTimeoutMs?: number;
  migrations?: readonly SqliteMigration[];
  /**
   * Largest size the database may grow to, in bytes (STORE_MAX_MB): `PRAGMA max_page_count` is set to
   * floor(maxBytes / page_size) once the schema is migrated. A write that would grow it further fails with
   * SQLITE_FULL (store/store-errors.ts isStorageFull) and changes nothing. A database already larger keeps its size and
   * takes no more growth. Undefined: no cap but the disk.
   */
  maxBytes?: number | undefined;
}

/**
 * Opens (or creates) a Geofabric SQLite database: WAL, so readers never block the single writer and several
 * processes (gateway, workers) can share the file; a busy timeout instead of immediate SQLITE_BUSY; and the
 * schema migrated to the latest version. Safe to call from processes racing on a fresh file.
 */
export function openSqlite(path: string, options: OpenSqliteOptions = {}): SqliteDatabase {
  const db = new Database(path);
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    if (path !== ':memory:') db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL'); // durable with WAL except on power loss, where the last commits may roll back
    db.pragma('foreign_keys = ON');
    migrate(db, options.migrations ?? SQLITE_MIGRATIONS);
    // After the migrations, so a cap never stops a schema upgrade half-way: it bounds the data, not the schema.
    if (options.maxBytes !== undefined) capDatabaseSize(db, options.maxBytes);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Caps the database at `maxBytes` (per connection: every connection that writes sets it). SQLite never lowers
 * the limit below the pages in use, so a database already past the cap stays readable and refuses growth.
 */
export function capDatabaseSize(db: SqliteDatabase, maxBytes: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) {
    throw new RangeError(`maxBytes must be a positive integer, got ${maxBytes}`);
  }
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.pragma(`max_page_count = ${Math.max(1, Math.floor(maxBytes / pageSize))}`);
}

/** Applies the migrations not yet recorded, each once, in order; the whole run holds the write lock. */
export function migrate(db: SqliteDatabase, migrations: readonly SqliteMigration[]): string[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const applied = db.prepare<[], { id: string }>('SELECT id FROM schema_migrations');
  const record = db.prepare<[string, string]>('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)');
  const run = db.transaction(() => {
    // Re-read inside the lock: another process may have migrated while this one waited.
    const done = new Set(applied.all().map((row) => row.id));
    const now: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.id)) continue;
      db.exec(migration.sql);
      record.run(migration.id, new Date().toISOString());
      now.push(migration.id);
    }
    return now;
  });
  return run.immediate();
}
