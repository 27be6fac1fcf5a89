/**
 * The SQLite schema as an append-only list: a migration, once released, is never edited (databases in the
 * field have recorded its id); change the schema by appending a new one.
 */
export interface SqliteMigration {
  id: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    id: '0001-rate-limit-counters',
    sql: `
      CREATE TABLE rate_limit_counters (
        key          TEXT    NOT NULL,
        window_start INTEGER NOT NULL,
        count        INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL,
        PRIMARY KEY (key, window_start)
      ) WITHOUT ROWID;
      CREATE INDEX rate_limit_counters_expires_at ON rate_limit_counters (expires_at);
    `,
  },
];
