import type { SqliteMigration } from './migrations.js';

/**
 * The compute job table (store/sqlite/job-store.ts); never edit once released, append a migration.
 * One row per job: `json` is the whole JobRecord as last written (checked by store/job-record-schema.ts on
 * the way in and out), the other columns copy the fields the store queries: `status` for the conditional
 * updates that make retry and finish atomic, `created_at` (ISO 8601 UTC, so text order is time order) for
 * `recent`. `record_version` is the row layout's version, for a future migration to tell old rows from new.
 */
export const JOB_STORE_MIGRATION: SqliteMigration = {
  id: '0005-compute-jobs',
  sql: `
    CREATE TABLE compute_jobs (
      job_id         TEXT    NOT NULL PRIMARY KEY,
      record_version INTEGER NOT NULL DEFAULT 1,
      status         TEXT    NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
      created_at     TEXT    NOT NULL,
      updated_at     TEXT    NOT NULL,
      json           TEXT    NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX compute_jobs_recent ON compute_jobs (created_at DESC, job_id DESC);
    CREATE INDEX compute_jobs_status ON compute_jobs (status);
  `,
};

/**
 * A requester's own jobs, newest first (`recent` with `requesterPk`, GET /v1/compute/recent signed): an index
 * on the record's requester_pk, which never changes for a job, so the rows need no new column.
 */
export const JOB_REQUESTER_MIGRATION: SqliteMigration = {
  id: '0010-compute-jobs-requester',
  sql: `
    CREATE INDEX compute_jobs_requester
      ON compute_jobs (json_extract(json, '$.requester_pk'), created_at DESC, job_id DESC);
  `,
};

/**
 * Retention (docs/operations.md "Retention"): jobs are pruned by `updated_at` (their last write), blobs by
 * `stored_at_ms` (their last store) and openEO jobs by their record's `updated`, each on its own index. Blobs stored before this migration are stamped with
 * its time, so a job running across the upgrade keeps its blobs for a whole window.
 */
export const JOB_RETENTION_MIGRATION: SqliteMigration = {
  id: '0017-job-retention',
  sql: `
    CREATE INDEX compute_jobs_updated_at ON compute_jobs (updated_at);
    ALTER TABLE job_blobs ADD COLUMN stored_at_ms INTEGER NOT NULL DEFAULT 0;
    UPDATE job_blobs SET stored_at_ms = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);
    CREATE INDEX job_blobs_stored_at ON job_blobs (stored_at_ms);
    CREATE INDEX openeo_jobs_updated ON openeo_jobs (json_extract(json, '$.updated'));
  `,
};
