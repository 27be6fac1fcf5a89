import type { SqliteMigration } from './migrations.js';

/**
 * The credit ledger's tables (store/sqlite/ledger-store.ts); never edit once released, append a migration.
 *
 * - `ledger_entries`: one row per entry, never updated or deleted. `seq` (the rowid) is the posting order, the
 *   tie-break of entries created at one instant;
 *   `json` the entry as checked by store/ledger-record-schema.ts, the other columns copy what queries need:
 *   `created_ms` (the instant: ISO strings with offsets do not compare as text) and its UTC `day`.
 * - `ledger_settlements`, `ledger_anchors`: append-only records, keyed by (id, seq) and (sealer, epoch, seq);
 *   the highest seq is the current record. `ledger_settlement_entries` lists the entries each record settles.
 * - `ledger_settlement_heads`, `ledger_anchor_heads`: the current seq and status of each settlement and anchor,
 *   moved in the same transaction as the record is appended: an index for `unsettled` and the open lists, never
 *   the only copy of anything.
 */
export const LEDGER_MIGRATION: SqliteMigration = {
  id: '0008-ledger',
  sql: `
    CREATE TABLE ledger_entries (
      seq           INTEGER PRIMARY KEY,
      id            TEXT    NOT NULL UNIQUE,
      account_pk    TEXT    NOT NULL,
      kind          TEXT    NOT NULL,
      amount_units  INTEGER NOT NULL,
      job_id        TEXT,
      hardware_tier INTEGER,
      created_ms    INTEGER NOT NULL,
      day           TEXT    NOT NULL,
      json          TEXT    NOT NULL
    );
    CREATE INDEX ledger_entries_account_time ON ledger_entries (account_pk, created_ms, seq);
    CREATE INDEX ledger_entries_job ON ledger_entries (job_id, created_ms, seq) WHERE job_id IS NOT NULL;
    CREATE INDEX ledger_entries_earnings ON ledger_entries (created_ms)
      WHERE kind IN ('step_earning', 'relay_fee') AND amount_units > 0;

    CREATE TABLE ledger_settlements (
      id     TEXT    NOT NULL,
      seq    INTEGER NOT NULL CHECK (seq >= 1),
      status TEXT    NOT NULL CHECK (status IN ('pending', 'submitted', 'failed')),
      at_ms  INTEGER NOT NULL,
      json   TEXT    NOT NULL,
      PRIMARY KEY (id, seq)
    );
    CREATE TABLE ledger_settlement_entries (
      entry_id      TEXT    NOT NULL,
      settlement_id TEXT    NOT NULL,
      seq           INTEGER NOT NULL,
      PRIMARY KEY (entry_id, settlement_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE ledger_settlement_heads (
      id     TEXT    NOT NULL PRIMARY KEY,
      seq    INTEGER NOT NULL,
      status TEXT    NOT NULL,
      at_ms  INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX ledger_settlement_heads_open ON ledger_settlement_heads (status, at_ms, id);

    CREATE TABLE ledger_anchors (
      sealer_pk TEXT    NOT NULL,
      epoch     INTEGER NOT NULL CHECK (epoch >= 0),
      seq       INTEGER NOT NULL CHECK (seq >= 1),
      status    TEXT    NOT NULL CHECK (status IN ('pending', 'submitted', 'failed')),
      at_ms     INTEGER NOT NULL,
      json      TEXT    NOT NULL,
      PRIMARY KEY (sealer_pk, epoch, seq)
    );
    CREATE TABLE ledger_anchor_heads (
      sealer_pk TEXT    NOT NULL,
      epoch     INTEGER NOT NULL,
      seq       INTEGER NOT NULL,
      status    TEXT    NOT NULL,
      at_ms     INTEGER NOT NULL,
      PRIMARY KEY (sealer_pk, epoch)
    ) WITHOUT ROWID;
    CREATE INDEX ledger_anchor_heads_open ON ledger_anchor_heads (status, at_ms, sealer_pk, epoch);
  `,
};
