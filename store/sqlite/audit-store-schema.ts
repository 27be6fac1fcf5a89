import type { SqliteMigration } from './migrations.js';

/**
 * The audit chain's tables (store/sqlite/audit-store.ts); never edit once released, append a migration.
 *
 * - `audit_blocks`: one row per breadcrumb, keyed by (agent_pk, idx), holding the exact signed text. A rowid
 *   table on purpose: a block's text is often larger than a WITHOUT ROWID row stores in its page. `ts_ms` is the
 *   timestamp's instant (ms since 1970) for time ranges: ISO strings of different precisions or offsets do not
 *   compare as text. `record_version` is the row layout's version.
 * - `audit_epochs`, `audit_violations`, `audit_approvals`: the record as JSON (its own `version` inside) plus
 *   the columns queries need; each key is the claim that refuses a second record.
 */
export const AUDIT_CHAIN_MIGRATION: SqliteMigration = {
  id: '0007-audit-chain',
  sql: `
    CREATE TABLE audit_blocks (
      agent_pk       TEXT    NOT NULL,
      idx            INTEGER NOT NULL CHECK (idx >= 0),
      record_version INTEGER NOT NULL DEFAULT 1,
      timestamp      TEXT    NOT NULL,
      ts_ms          INTEGER NOT NULL,
      data_to_sign   TEXT    NOT NULL,
      signature      TEXT    NOT NULL,
      block_hash     TEXT    NOT NULL,
      PRIMARY KEY (agent_pk, idx)
    );
    CREATE INDEX audit_blocks_time ON audit_blocks (agent_pk, ts_ms, idx);

    CREATE TABLE audit_epochs (
      agent_pk    TEXT    NOT NULL,
      epoch_index INTEGER NOT NULL CHECK (epoch_index >= 0),
      json        TEXT    NOT NULL,
      PRIMARY KEY (agent_pk, epoch_index)
    );

    CREATE TABLE audit_violations (
      id       TEXT    NOT NULL PRIMARY KEY,
      agent_pk TEXT    NOT NULL,
      at       TEXT    NOT NULL,
      at_ms    INTEGER NOT NULL,
      json     TEXT    NOT NULL
    );
    CREATE INDEX audit_violations_agent_at ON audit_violations (agent_pk, at_ms, id);

    CREATE TABLE audit_approvals (
      agent_pk       TEXT    NOT NULL,
      block_index    INTEGER NOT NULL CHECK (block_index >= 0),
      approved_at    TEXT    NOT NULL,
      approved_at_ms INTEGER NOT NULL,
      json           TEXT    NOT NULL,
      PRIMARY KEY (agent_pk, block_index)
    );
    CREATE INDEX audit_approvals_agent_at ON audit_approvals (agent_pk, approved_at_ms, block_index);
  `,
};

/**
 * `audit_verified`: one row per agent, the verified-through mark (store/audit-store.ts VerifiedMark): the
 * highest block index whose chain verified, that block's hash, and the verifier's signature over both.
 */
export const AUDIT_VERIFIED_MIGRATION: SqliteMigration = {
  id: '0013-audit-verified-through',
  sql: `
    CREATE TABLE audit_verified (
      agent_pk    TEXT    NOT NULL PRIMARY KEY,
      idx         INTEGER NOT NULL CHECK (idx >= 0),
      block_hash  TEXT    NOT NULL,
      verifier_pk TEXT    NOT NULL,
      signature   TEXT    NOT NULL
    );
  `,
};
