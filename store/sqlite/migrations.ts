/**
 * The SQLite schema as an append-only list: a migration, once released, is never edited (databases in the
 * field have recorded its id); change the schema by appending a new one.
 */
export interface SqliteMigration {
  id: string;
  sql: string;
}

import {
  WORKER_DECLARED_AT_MIGRATION,
  WORKER_LEFT_AT_MIGRATION,
  WORKER_OUTCOMES_MIGRATION,
  WORKER_OUTCOMES_RECORDED_AT_MIGRATION,
  WORKER_REGISTRY_MIGRATION,
} from './worker-registry-schema.js';
import { API_KEYS_MIGRATION } from './api-key-schema.js';
import { JOB_REQUESTER_MIGRATION, JOB_RETENTION_MIGRATION, JOB_STORE_MIGRATION } from './job-store-schema.js';
import { AUDIT_CHAIN_MIGRATION, AUDIT_VERIFIED_MIGRATION } from './audit-store-schema.js';
import { LEDGER_MIGRATION } from './ledger-store-schema.js';
import { JOB_BLOBS_MIGRATION } from './blob-store.js';
import { OPENEO_JOBS_MIGRATION } from './openeo-job-store.js';

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
  {
    // Proof store (store/sqlite/proof-store.ts). Few indexes on purpose: each one costs appends per second.
    // H3 containment is a range on cell_key (store/record-query.ts), filtered inside the order index, instead
    // of a row per ancestor cell (which measured 4x slower appends).
    id: '0002-proof-store',
    sql: `
      CREATE TABLE proof_records (
        id              TEXT    NOT NULL UNIQUE,
        pk              TEXT    NOT NULL,
        seq             INTEGER NOT NULL,
        epoch           INTEGER NOT NULL,
        h3_cell         TEXT    NOT NULL,
        cell_key        INTEGER NOT NULL,
        collection_type TEXT    NOT NULL,
        record_hash     TEXT    NOT NULL,
        json            TEXT    NOT NULL,
        synced          INTEGER NOT NULL DEFAULT 0
      );
      CREATE UNIQUE INDEX proof_records_writer_seq ON proof_records (pk, seq);
      CREATE INDEX proof_records_order ON proof_records (epoch, pk, seq, cell_key, collection_type);
      CREATE INDEX proof_records_unsynced ON proof_records (pk, seq) WHERE synced = 0;

      CREATE TABLE proof_seals (
        sealer_pk TEXT    NOT NULL,
        epoch     INTEGER NOT NULL,
        seal_hash TEXT    NOT NULL,
        json      TEXT    NOT NULL,
        synced    INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (sealer_pk, epoch)
      );
      CREATE INDEX proof_seals_unsynced ON proof_seals (sealer_pk, epoch) WHERE synced = 0;

      CREATE TABLE proof_seal_nodes (
        sealer_pk TEXT    NOT NULL,
        epoch     INTEGER NOT NULL,
        level     INTEGER NOT NULL,
        page      INTEGER NOT NULL,
        nodes     BLOB    NOT NULL,
        PRIMARY KEY (sealer_pk, epoch, level, page)
      );
    `,
  },
  WORKER_REGISTRY_MIGRATION,
  API_KEYS_MIGRATION,
  JOB_STORE_MIGRATION,
  WORKER_OUTCOMES_MIGRATION,
  AUDIT_CHAIN_MIGRATION,
  LEDGER_MIGRATION,
  WORKER_DECLARED_AT_MIGRATION,
  JOB_REQUESTER_MIGRATION,
  WORKER_LEFT_AT_MIGRATION,
  JOB_BLOBS_MIGRATION,
  AUDIT_VERIFIED_MIGRATION,
  WORKER_OUTCOMES_RECORDED_AT_MIGRATION,
  OPENEO_JOBS_MIGRATION,
  {
    // The seal log (docs/protocol.md §15.4): each sealer's complete subtrees and the heads signed over it.
    id: '0016-seal-log',
    sql: `
      CREATE TABLE proof_seal_log (
        sealer_pk   TEXT    NOT NULL,
        level       INTEGER NOT NULL,
        idx         INTEGER NOT NULL,
        first_epoch INTEGER NOT NULL,
        hash        BLOB    NOT NULL,
        PRIMARY KEY (sealer_pk, level, idx)
      );
      CREATE TABLE proof_seal_heads (
        sealer_pk TEXT    NOT NULL,
        signer_pk TEXT    NOT NULL,
        tree_size INTEGER NOT NULL,
        json      TEXT    NOT NULL,
        PRIMARY KEY (sealer_pk, signer_pk, tree_size)
      );
    `,
  },
  JOB_RETENTION_MIGRATION,
  {
    // A local store's retention (a worker's, docs/operations.md "Retention"). held: the central store answered
    // that it holds this seal (stored, or the same seal already there), and so every record of its epoch, which
    // it verified against the seal. pruned: 1 while the epoch's records and tree pages are being deleted here,
    // 2 once they are. Seals synced before now are pushed again once (the central store answers `duplicate`),
    // because a refused seal was marked synced too: only the answer tells which epochs the central store holds.
    id: '0018-worker-store-retention',
    sql: `
      ALTER TABLE proof_seals ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE proof_seals ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX proof_seals_prunable ON proof_seals (epoch) WHERE held = 1 AND pruned < 2;
      UPDATE proof_seals SET synced = 0 WHERE synced = 1;
    `,
  },
];
