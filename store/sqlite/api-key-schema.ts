import type { SqliteMigration } from './migrations.js';

/**
 * The API key table (store/sqlite/api-key-store.ts); never edit once released, append a migration.
 * `key_hash` is SHA-256 of the key (store/api-key-format.ts): the key itself is never stored. Its unique
 * index is how a key is verified, one lookup. `record_version` is the row layout's version, for a future
 * migration to tell old rows from new ones. Revoking sets `revoked_at`; rows are kept, so a revoked key's
 * id stays taken and `apikey list` shows when it was revoked.
 */
export const API_KEYS_MIGRATION: SqliteMigration = {
  id: '0004-api-keys',
  sql: `
    CREATE TABLE api_keys (
      id             TEXT    NOT NULL PRIMARY KEY,
      record_version INTEGER NOT NULL DEFAULT 1,
      key_hash       TEXT    NOT NULL UNIQUE,
      name           TEXT    NOT NULL,
      tier           TEXT    NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
      created_at     TEXT    NOT NULL,
      revoked_at     TEXT
    ) WITHOUT ROWID;
  `,
};
