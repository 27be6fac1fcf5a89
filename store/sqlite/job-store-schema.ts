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
