import type { JobRecord } from '../../core/job-record.js';
import { ServiceError } from '../../core/errors.js';
import { checkJobInput, JOB_RECORD_VERSION, parseStoredJob, recentLimit } from '../job-record-schema.js';
import { DEFAULT_JOB_RETENTION_MS, jobPruneEveryMs, type JobRetention, type JobStore } from '../job-store.js';
import type { SqliteDatabase } from './open-database.js';

interface JobRow {
  job_id: string;
  json: string;
}

type RowParams = [string, number, string, string, string, string];

/**
 * SQLite adapter of {@link JobStore} (table `compute_jobs`, store/sqlite/job-store-schema.ts). Each write is one
 * statement, so it is atomic within a process and, through SQLite's write lock, across processes sharing the
 * file: a claim is `INSERT … ON CONFLICT DO NOTHING` on the primary key, a retry and a finish are UPDATEs
 * conditional on the stored status, and only the caller whose statement changed the row reports the change.
 * Jobs last written longer ago than the retention window are deleted by claim itself, at most every
 * jobPruneEveryMs and in bounded batches (as worker outcomes, store/sqlite/worker-registry.ts).
 */
export function createSqliteJobStore(db: SqliteDatabase, retention: JobRetention = {}): JobStore {
  const retentionMs = retention.jobRetentionMs ?? DEFAULT_JOB_RETENTION_MS;
  const pruneEveryMs = jobPruneEveryMs(retentionMs);
  const insert = db.prepare<RowParams, JobRow>(`
    INSERT INTO compute_jobs (job_id, record_version, status, created_at, updated_at, json)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (job_id) DO NOTHING
    RETURNING job_id, json
  `);
  // The parameters of a transition: the new record's columns, then the job id (and the status it leaves).
  const transition = (from: 'running' | 'failed') =>
    db.prepare<[string, string, string, string, string], JobRow>(`
      UPDATE compute_jobs SET status = ?, created_at = ?, updated_at = ?, json = ?
      WHERE job_id = ? AND status = '${from}'
      RETURNING job_id, json
    `);
  const restart = transition('failed');
  const end = transition('running');
  const byId = db.prepare<[string], JobRow>('SELECT job_id, json FROM compute_jobs WHERE job_id = ?');
  const newest = db.prepare<[number], JobRow>(
    'SELECT job_id, json FROM compute_jobs ORDER BY created_at DESC, job_id DESC LIMIT ?',
  );
  const newestOf = db.prepare<[string, number], JobRow>(
    `SELECT job_id, json FROM compute_jobs WHERE json_extract(json, '$.requester_pk') = ?
     ORDER BY created_at DESC, job_id DESC LIMIT ?`,
  );
  // Keyset pages: the row-value comparison seeks the same indexes straight past the previous page's last job.
  const newestBefore = db.prepare<[string, string, number], JobRow>(
    `SELECT job_id, json FROM compute_jobs WHERE (created_at, job_id) < (?, ?)
     ORDER BY created_at DESC, job_id DESC LIMIT ?`,
  );
  const newestOfBefore = db.prepare<[string, string, string, number], JobRow>(
    `SELECT job_id, json FROM compute_jobs
     WHERE json_extract(json, '$.requester_pk') = ? AND (created_at, job_id) < (?, ?)
     ORDER BY created_at DESC, job_id DESC LIMIT ?`,
  );

  // A bounded batch per statement (a job row carries its whole answer): a first prune over a large backlog
  // never holds the write lock for long. `updated_at` is ISO 8601 UTC, so text order is time order.
  const PRUNE_BATCH = 1_000;
  const pruneJobs = db.prepare<[string, number]>(`
    DELETE FROM compute_jobs WHERE job_id IN (
      SELECT job_id FROM compute_jobs WHERE updated_at < ? LIMIT ?
    )
  `);
  let prunedAt = -Infinity;
  const pruneExpired = (nowMs: number) => {
    if (!(nowMs - prunedAt >= pruneEveryMs)) return; // NaN (no valid time) never prunes
    // A full batch leaves prunedAt as it was, so the next claim goes on with the backlog.
    const cutoff = new Date(nowMs - retentionMs).toISOString();
    if (pruneJobs.run(cutoff, PRUNE_BATCH).changes < PRUNE_BATCH) prunedAt = nowMs;
  };

  const read = (jobId: string): JobRecord | null => {
    const row = byId.get(jobId);
    return row ? toRecord(row) : null;
  };
  const columns = (job: JobRecord): [string, string, string, string] => [
    job.status,
    job.created_at,
    job.updated_at,
    JSON.stringify(job),
  ];

  return {
    async claim(input) {
      const job = checkJobInput(input, ['running'], 'claim');
      pruneExpired(Date.parse(job.updated_at));
      const [status, createdAt, updatedAt, json] = columns(job);
      const row = insert.get(job.job_id, JOB_RECORD_VERSION, status, createdAt, updatedAt, json);
      if (row) return { created: true, job: toRecord(row) };
      const stored = read(job.job_id);
      // Only a job untouched for a whole window is deleted, and no claim of it can come that late (its request
      // is stale), so a conflicting insert leaves a row to read.
      if (stored === null) throw new Error(`job ${job.job_id} conflicted on insert but is not stored`);
      return { created: false, job: stored };
    },
    async retry(input) {
      const job = checkJobInput(input, ['running'], 'retry');
      const row = restart.get(...columns(job), job.job_id);
      if (row) return { restarted: true, job: toRecord(row) };
      const stored = read(job.job_id);
      return stored === null ? null : { restarted: false, job: stored };
    },
    async finish(input) {
      const job = checkJobInput(input, ['complete', 'failed'], 'finish');
      const row = end.get(...columns(job), job.job_id);
      if (row) return toRecord(row);
      const stored = read(job.job_id);
      if (stored === null) throw new ServiceError('job_not_found', `no job with id ${job.job_id}`);
      return stored;
    },
    async get(jobId) {
      return read(jobId);
    },
    async recent(limit, filter) {
      const n = recentLimit(limit);
      const pk = filter?.requesterPk;
      const before = filter?.before;
      const rows =
        before === undefined
          ? pk === undefined
            ? newest.all(n)
            : newestOf.all(pk, n)
          : pk === undefined
            ? newestBefore.all(before.createdAt, before.jobId, n)
            : newestOfBefore.all(pk, before.createdAt, before.jobId, n);
      return rows.map(toRecord);
    },
    async close() {
      // The statements are released with the database, which belongs to the caller.
    },
  };
}

const toRecord = (row: JobRow): JobRecord => parseStoredJob(row.json, row.job_id);
