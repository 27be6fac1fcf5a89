import type { SqliteMigration } from './migrations.js';

/**
 * The worker registry's table (store/sqlite/worker-registry.ts); never edit once released, append a migration.
 * One row per worker key. The declaration lists (models, tools, hardware) are JSON: the registry reads
 * whole rows and filters in core/worker-selection.ts, so no query needs them as columns. `outcome_streak`
 * is the trust ladder's streak (core/worker-trust.ts), internal to the store. `record_version` is the
 * row layout's version, for a future migration to tell old rows from new ones.
 */
export const WORKER_REGISTRY_MIGRATION: SqliteMigration = {
  id: '0003-worker-registry',
  sql: `
    CREATE TABLE workers (
      pk             TEXT    NOT NULL PRIMARY KEY,
      record_version INTEGER NOT NULL DEFAULT 1,
      h3_cell        TEXT    NOT NULL,
      models         TEXT    NOT NULL,
      tools          TEXT    NOT NULL,
      hardware       TEXT    NOT NULL,
      hardware_tier  INTEGER NOT NULL CHECK (hardware_tier IN (1, 2, 3)),
      relay          INTEGER NOT NULL CHECK (relay IN (0, 1)),
      version        TEXT    NOT NULL,
      trust_tier     TEXT    NOT NULL DEFAULT 'seedling',
      jobs_completed INTEGER NOT NULL DEFAULT 0,
      jobs_failed    INTEGER NOT NULL DEFAULT 0,
      outcome_streak INTEGER NOT NULL DEFAULT 0,
      registered_at  TEXT    NOT NULL,
      last_seen_ms   INTEGER NOT NULL,
      heartbeat_seq  INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
  `,
};

/**
 * When each worker signed the declaration the row holds (ms; 0 for rows registered before this column): a
 * registration older than it is refused as a replay (store/worker-registry.ts).
 */
export const WORKER_DECLARED_AT_MIGRATION: SqliteMigration = {
  id: '0009-worker-declared-at',
  sql: `ALTER TABLE workers ADD COLUMN declared_at_ms INTEGER NOT NULL DEFAULT 0;`,
};

/**
 * When each worker announced a graceful stop (ms; NULL while it has not): store/worker-registry.ts `leave`.
 */
export const WORKER_LEFT_AT_MIGRATION: SqliteMigration = {
  id: '0011-worker-left-at',
  sql: `ALTER TABLE workers ADD COLUMN left_at_ms INTEGER;`,
};

/**
 * The outcomes already counted (store/sqlite/worker-registry.ts `recordOutcome`): one row per (worker, job), so
 * a job's outcome counts once however often it is recorded (a retried final activity, a replayed request).
 * `outcome` is the one that counted. Rows are kept for good: a job may be retried long after it ran.
 */
export const WORKER_OUTCOMES_MIGRATION: SqliteMigration = {
  id: '0006-worker-outcomes',
  sql: `
    CREATE TABLE worker_outcomes (
      pk      TEXT NOT NULL,
      job_id  TEXT NOT NULL,
      outcome TEXT NOT NULL CHECK (outcome IN ('completed', 'failed')),
      PRIMARY KEY (pk, job_id)
    ) WITHOUT ROWID;
  `,
};

/**
 * When each counted outcome was recorded (ms), so claims past the retention window can be pruned
 * (store/worker-registry.ts OutcomeRetention). Rows from before this column are stamped with the migration's
 * time: they get one whole window from now, never less than they were promised.
 */
export const WORKER_OUTCOMES_RECORDED_AT_MIGRATION: SqliteMigration = {
  id: '0014-worker-outcomes-recorded-at',
  sql: `
    ALTER TABLE worker_outcomes ADD COLUMN recorded_at_ms INTEGER NOT NULL DEFAULT 0;
    UPDATE worker_outcomes SET recorded_at_ms = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);
    CREATE INDEX worker_outcomes_recorded_at ON worker_outcomes (recorded_at_ms);
  `,
};
